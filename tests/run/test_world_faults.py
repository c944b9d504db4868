"""Faults of the machine, made real, end in one line and lose nothing.

A results folder or cache on a filesystem too small or read-only, a filesystem without the locks or
renames a run needs, the open-files limit: each ends `bench run` in one line, exit 3, no traceback,
no staging folder, no half-written file; what was there stays whole, and a rerun once the fault is
gone concludes as an undisturbed run. A cache file damaged between runs costs one warning.

A tiny tmpfs (or a read-only remount) makes the fault where the tests may mount (as root); a wrapper
around the call the kernel would fail makes it everywhere, and where no filesystem at hand can (no
locks, too many open files). run_cli runs the command line in this process, so wrappers reach it.
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path

import numpy as np
import pytest

from bench.errors import EnvironmentFault
from bench.results import store
from tests.helpers import CONFIG, DOCS, QUESTIONS, finished_runs, run_cli, write_project

SIZE = r"[\d.]+ (?:B|KB|MB|GB)"
MOVE_RESULTS = re.escape("(--results DIR writes runs elsewhere)")
MOVE_CACHE = re.escape("(--cache-dir DIR or $BENCH_CACHE_DIR moves the cache)")
STATIC_CONFIG = CONFIG.replace('models = ["hash", "bm25"]', 'models = ["static"]').split("\n[chunkers.rec24]")[0]


# --- helpers ---------------------------------------------------------------------------------------------


def _run(config: Path) -> subprocess.CompletedProcess:
    return run_cli("run", str(config), cwd=config.parent)


def _quality(run: Path, field: str = "quality") -> dict[str, dict]:
    """Each candidate's quality figures (or another of its fields) in the run's summary.json."""
    return {c["id"]: c[field] for c in json.loads((run / store.SUMMARY).read_text())["candidates"]}


def _rerun_concludes_as(config: Path, expected: dict[str, dict]) -> Path:
    """An undisturbed run, now that the fault is gone: it succeeds and its figures are the expected ones."""
    done = _run(config)
    assert done.returncode == 0, done.stderr
    run = finished_runs(config.parent / "results")[-1]
    assert _quality(run) == expected
    return run


def _one_line(result: subprocess.CompletedProcess, pattern: str) -> str:
    """The run failed with exit 3 and one line, the last on stderr, that matches ``pattern``."""
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("bench: error:")]
    assert len(errors) == 1 and result.stderr.rstrip().endswith(errors[0]), result.stderr
    assert re.fullmatch(pattern, errors[0]), errors[0]
    return errors[0]


def _one_warning(result: subprocess.CompletedProcess, pattern: str) -> None:
    """The run succeeded with one warning of bench's own, matching ``pattern``."""
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    warned = [line for line in result.stderr.splitlines() if line.startswith("bench: warning:")]
    assert len(warned) == 1 and re.fullmatch(pattern, warned[0]), warned


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``, hidden ones included, by path: what a failed run must leave as it was."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _whole(db: Path) -> None:
    with closing(sqlite3.connect(db)) as con:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)


@contextmanager
def _tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``path`` for the test, where this machine allows one."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small filesystem needs root")
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _remount(path: Path, options: str) -> None:
    """Resize a test tmpfs or make it read-only (or writable again); its files stay."""
    subprocess.run(["mount", "-o", f"remount,{options}", str(path)], check=True)


def _fail(
    m: pytest.MonkeyPatch,
    owner: object,
    name: str,
    code: int,
    after: int = 0,
    times: int | None = None,
    when: Callable[..., bool] = lambda *a: True,
) -> None:
    """``owner.name`` fails with OSError ``code`` from the ``after``-th call that ``when`` picks, for
    ``times`` calls (all, by default), as the kernel fails it (naming the file where the call got one)."""
    real = getattr(owner, name)
    picked = itertools.count()

    def failing(*args, **kwargs):
        if when(*args) and after <= next(picked) < after + (times if times is not None else sys.maxsize):
            named = [args[0]] if args and isinstance(args[0], str | os.PathLike) else []
            raise OSError(code, os.strerror(code), *named)
        return real(*args, **kwargs)

    m.setattr(owner, name, failing)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, dict]:
    """The quality figures of an undisturbed run of the tiny project."""
    config = write_project(tmp_path_factory.mktemp("reference"))
    assert _run(config).returncode == 0
    return _quality(finished_runs(config.parent / "results")[0])


# --- a full disk -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("disk", ["tmpfs", "wrapper"])
def test_a_full_results_disk_ends_in_one_line_and_keeps_the_runs_already_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: dict, disk: str
):
    config = write_project(tmp_path)
    results = tmp_path / "results"
    with ExitStack() as stack:
        if disk == "tmpfs":  # room for one run of the tiny project (about 70 KB), not two
            stack.enter_context(_tmpfs(results, "100k"))
        assert _run(config).returncode == 0
        [previous] = finished_runs(results)
        before = _snapshot(results)
        with monkeypatch.context() as m:
            if disk == "wrapper":  # the cache is warm: every write is a result file's; the second fails
                _fail(m, os, "write", errno.ENOSPC, after=1)
            failed = _run(config)
        _one_line(
            failed,
            rf"bench: error: no space left on \S+ for {re.escape(str(results))}/\.\S+\.partial/[a-z_]+\.jsonl? "
            rf"\(needed {SIZE}, {SIZE} free\); free space there {MOVE_RESULTS}",
        )
        assert _snapshot(results) == before  # the earlier run whole; no staging folder, no temporary file
        shutil.rmtree(previous)  # space freed
        _rerun_concludes_as(config, reference)


@pytest.mark.parametrize("disk", ["tmpfs", "wrapper"])
def test_a_full_cache_disk_ends_in_one_line_and_the_cache_survives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: dict, disk: str
):
    config = write_project(tmp_path)
    embeddings = tmp_path / "cache" / "embeddings"
    with ExitStack() as stack:
        if disk == "tmpfs":  # too small for SQLite's files and the vectors
            stack.enter_context(_tmpfs(embeddings, "64k"))
            which = r"\S+\.(?:sqlite|256d\.f32)"
        else:  # the first batch is kept; writing the second finds the disk full
            which = r"\S+\.256d\.f32"
        with monkeypatch.context() as m:
            if disk == "wrapper":
                _fail(m, os, "pwrite", errno.ENOSPC, after=1)
            failed = _run(config)
        _one_line(
            failed,
            rf"bench: error: no space left on \S+ for {re.escape(str(embeddings))}/{which}"
            rf"(?: \(needed {SIZE}, {SIZE} free\))?; free space there {MOVE_CACHE}",
        )
        assert list((tmp_path / "results").iterdir()) == []  # no run folder, no staging folder
        for db in embeddings.glob("*.sqlite"):
            _whole(db)
        if disk == "tmpfs":
            _remount(embeddings, "size=8m")
        run = _rerun_concludes_as(config, reference)
        if disk == "wrapper":  # what was embedded before the disk filled was kept
            assert any(ops.get("chunks_from_cache", 0) > 0 for ops in _quality(run, "ops").values())


def test_a_scratch_file_with_no_room_is_refused_before_it_is_mapped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: dict
):
    """Vectors too many for memory are assembled in a memory-mapped scratch file in the cache: on a disk
    without room for it the run ends in one line, not in a SIGBUS at some later write into the map."""
    from bench.embedders import cache

    config = write_project(tmp_path)
    scratch = tmp_path / "cache" / "embeddings" / "tmp"
    with _tmpfs(scratch, "4k"):
        with monkeypatch.context() as m:
            m.setattr(cache, "IN_MEMORY_BYTES", 0)  # every table to a scratch file; the smallest needs 11 KB
            failed = _run(config)
        _one_line(
            failed,
            rf"bench: error: no space left on {re.escape(str(scratch))} for {re.escape(str(scratch))} "
            rf"\(needed {SIZE}, {SIZE} free\); free space there {MOVE_CACHE}",
        )
        assert list(scratch.iterdir()) == [] and list((tmp_path / "results").iterdir()) == []
        _remount(scratch, "size=8m")
        with monkeypatch.context() as m:
            m.setattr(cache, "IN_MEMORY_BYTES", 0)
            _rerun_concludes_as(config, reference)


# --- read-only folders -----------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["read-only filesystem", "no write permission"])
@pytest.mark.parametrize("folder", ["results", "cache"])
def test_a_folder_bench_may_not_write_ends_in_one_line(tmp_path: Path, reference: dict, folder: str, how: str):
    config = write_project(tmp_path)
    where = tmp_path / ("results" if folder == "results" else "cache/embeddings")
    with ExitStack() as stack:
        if how == "read-only filesystem":
            stack.enter_context(_tmpfs(where, "4m"))
        else:
            if os.geteuid() == 0:
                pytest.skip("root writes whatever a folder's permissions say")
            where.mkdir(parents=True)
        if folder == "results":  # a run from before the folder became read-only
            assert _run(config).returncode == 0
        before = _snapshot(where)
        if how == "read-only filesystem":
            _remount(where, "ro")
        else:
            where.chmod(0o500)
            stack.callback(where.chmod, 0o700)
        failed = _run(config)
        if folder == "results":
            reason = "the filesystem is read-only" if how == "read-only filesystem" else "permission denied"
            _one_line(failed, rf"bench: error: {re.escape(str(where))}: {reason}; .+ {MOVE_RESULTS}")
        else:
            _one_line(failed, rf"bench: error: {re.escape(str(where))}/\S+\.sqlite: cannot be created: .+ {MOVE_CACHE}")
            assert list((tmp_path / "results").iterdir()) == []
        assert _snapshot(where) == before
        if how == "read-only filesystem":
            _remount(where, "rw")
        else:
            where.chmod(0o700)
        _rerun_concludes_as(config, reference)


def test_the_results_store_refuses_a_read_only_folder_in_one_line(tmp_path: Path):
    results = tmp_path / "results"
    with _tmpfs(results, "1m"):
        _remount(results, "ro")
        with pytest.raises(EnvironmentFault) as refused, store.run_folder(results, "run"):
            pass
        assert str(refused.value) == (
            f"{results}: the filesystem is read-only; choose a writable folder (--results DIR writes runs elsewhere)"
        )
        assert list(results.iterdir()) == []


# --- filesystems without locks or renames ----------------------------------------------------------------


def _in_staging(*args) -> bool:
    return store.PARTIAL in str(args[0])


@pytest.mark.parametrize("lacks", ["locks", "renaming a file", "renaming a folder"])
def test_a_results_filesystem_without_locks_or_renames_ends_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: dict, lacks: str
):
    import fcntl

    config = write_project(tmp_path)
    results = tmp_path / "results"
    assert _run(config).returncode == 0
    before = _snapshot(results)
    with monkeypatch.context() as m:
        if lacks == "locks":  # as NFS without its lock daemon answers
            _fail(m, fcntl, "flock", errno.ENOLCK)
            where, what = r"\.\S+\.partial", "file locks (flock), which tell a live run's folder from an abandoned one"
        elif lacks == "renaming a file":
            _fail(m, os, "replace", errno.EINVAL, when=lambda src, *_: _in_staging(src) and not Path(src).is_dir())
            where, what = r"\.\S+\.partial", "renaming a file"
        else:
            _fail(m, os, "replace", errno.ENOTSUP, when=lambda src, *_: _in_staging(src) and Path(src).is_dir())
            where, what = r"[^./]\S+", "renaming a folder, which is how a finished run appears"
        failed = _run(config)
    _one_line(
        failed,
        rf"bench: error: {re.escape(str(results))}/{where}: the filesystem does not support {re.escape(what)}; "
        rf"use a folder on a local disk {MOVE_RESULTS}",
    )
    assert _snapshot(results) == before
    _rerun_concludes_as(config, reference)


# --- the open-files limit --------------------------------------------------------------------------------


@pytest.mark.parametrize("opening", ["a cache file", "a result file"])
def test_too_many_open_files_ends_in_one_line_suggesting_ulimit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: dict, opening: str
):
    config = write_project(tmp_path)
    if opening == "a result file":  # a warm cache: the first file opened is a result's
        assert _run(config).returncode == 0
    before = _snapshot(tmp_path / "results") if opening == "a result file" else {}
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft > 1024:  # a common default, under a higher hard limit: the line says how far to raise it
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
    try:
        with monkeypatch.context() as m:
            # at the limit until the failed step lets go of its files; the project's own files, not the
            # chunk texts' temporary file (its run goes on without it, slicing the documents again)
            in_project = lambda path, *a: str(path).startswith(str(tmp_path))  # noqa: E731
            _fail(m, os, "open", errno.EMFILE, times=1, when=in_project)
            failed = _run(config)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    where = r"cache/embeddings/\S+\.f32" if opening == "a cache file" else r"results/\.\S+\.partial/\S+"
    limit = min(soft, 1024)
    fix = (
        r"; raise the limit, e\.g\. `ulimit -n \d+`, and rerun"
        if hard == resource.RLIM_INFINITY or hard > limit
        else re.escape(", its hard limit; raise that (`ulimit -Hn` as root, or limits.conf)")
    )
    _one_line(
        failed,
        rf"bench: error: too many open files \(at {re.escape(str(tmp_path))}/{where}\); "
        rf"this process may open {limit}{fix}",
    )
    assert _snapshot(tmp_path / "results") == before
    _rerun_concludes_as(config, reference)


# --- faults no wrapper named ------------------------------------------------------------------------------


def _safetensors_full() -> Exception:
    import safetensors

    return safetensors.SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")


@pytest.mark.parametrize(
    ("raised", "line"),
    [
        (lambda: OSError(errno.EIO, "Input/output error", "/data/corpus.db"), "/data/corpus.db: input/output error"),
        (lambda: sqlite3.OperationalError("database or disk is full"), "no space left on the disk for a file"),
        (lambda: sqlite3.OperationalError("database is locked"), "the embedding cache's database: locked"),
        (_safetensors_full, "no space left on the disk for a file"),
    ],
    ids=["EIO", "sqlite full", "sqlite locked", "safetensors full"],
)
def test_a_fault_raised_where_nothing_names_it_still_ends_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raised: Callable[[], Exception], line: str
):
    from bench.run import shootout

    def fails(*args, **kwargs):
        raise raised()

    config = write_project(tmp_path)
    with monkeypatch.context() as m:
        m.setattr(shootout, "chunk_all", fails)
        failed = _run(config)
    _one_line(failed, rf"bench: error: {re.escape(line)}[ ;].+")
    assert list((tmp_path / "results").iterdir()) == []


# --- damage between runs ---------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["cut short", "overwritten"])
def test_a_vector_file_damaged_between_runs_costs_one_warning_and_its_rows(tmp_path: Path, reference: dict, damage):
    config = write_project(tmp_path)
    assert _run(config).returncode == 0
    [vectors] = (tmp_path / "cache" / "embeddings").glob("*.f32")
    data = vectors.read_bytes()
    if damage == "cut short":
        vectors.write_bytes(data[: len(data) // 2])
    else:
        noise = np.random.default_rng(7).integers(0, 256, len(data) // 4, dtype=np.uint8).tobytes()
        vectors.write_bytes(data[: len(data) // 2] + noise + data[len(data) // 2 + len(noise) :])
    _one_warning(
        _run(config),
        rf"bench: warning: {re.escape(str(vectors))}: \d+ cached vectors? missing or damaged \(cut short or "
        r"changed\); embedded again",
    )
    run = finished_runs(tmp_path / "results")[-1]
    assert _quality(run) == reference
    assert any(ops.get("chunks_embedded", 0) > 0 for ops in _quality(run, "ops").values())  # the rows lost
    again = _rerun_concludes_as(config, reference)  # repaired: nothing to warn about, nothing to embed
    assert all(ops.get("chunks_embedded", 0) == 0 for ops in _quality(again, "ops").values())


@pytest.mark.parametrize("damage", ["not a database", "cut short"])
def test_a_damaged_cache_database_is_moved_aside_and_rebuilt_with_one_warning(
    tmp_path: Path, reference: dict, damage: str
):
    config = write_project(tmp_path)
    assert _run(config).returncode == 0
    [db] = (tmp_path / "cache" / "embeddings").glob("*.sqlite")
    data = db.read_bytes()
    db.write_bytes(b"not a database " * 300 if damage == "not a database" else data[: len(data) // 2])
    damaged = db.read_bytes()
    _one_warning(
        _run(config),
        rf"bench: warning: {re.escape(str(db))}: damaged \(.+\); moved aside to {re.escape(db.name)}\.corrupt and "
        r"rebuilt",
    )
    assert Path(f"{db}.corrupt").read_bytes() == damaged  # kept for whoever wants to look
    _whole(db)
    assert _quality(finished_runs(tmp_path / "results")[-1]) == reference
    again = _run(config)
    assert again.returncode == 0 and "bench: warning:" not in again.stderr


# --- distilling the static model -------------------------------------------------------------------------


def _fake_distiller(m: pytest.MonkeyPatch) -> None:
    """model2vec's distiller, as a module that returns the same small static model every time: the real
    one loads torch and transformers (seconds) and distils for a minute; the subject here is the save."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.normalizers import Lowercase
    from tokenizers.pre_tokenizers import Whitespace

    text = " ".join([*DOCS.values(), *(q[1] for q in QUESTIONS)]).lower()
    words = ["[PAD]", "[UNK]", *sorted(set(re.findall(r"\w+|[^\w\s]", text)))]
    tokenizer = Tokenizer(WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tokenizer.normalizer, tokenizer.pre_tokenizer = Lowercase(), Whitespace()
    vectors = np.random.default_rng(11).standard_normal((len(words), 256)).astype(np.float32)
    distiller = types.ModuleType("model2vec.distill")
    distiller.distill = lambda **_: StaticModel(vectors, tokenizer)  # type: ignore[attr-defined]
    m.setitem(sys.modules, "model2vec.distill", distiller)
    if "transformers" not in sys.modules:  # only its logging switch is wanted
        hf = types.ModuleType("transformers.utils")
        hf.logging = types.SimpleNamespace(set_verbosity_error=lambda: None)  # type: ignore[attr-defined]
        m.setitem(sys.modules, "transformers", types.ModuleType("transformers"))
        m.setitem(sys.modules, "transformers.utils", hf)


@pytest.mark.parametrize("disk", ["tmpfs", "wrapper"])
def test_a_full_disk_while_saving_the_distilled_static_model_ends_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, disk: str
):
    from model2vec.persistence import persistence

    _fake_distiller(monkeypatch)
    undisturbed = write_project(tmp_path / "undisturbed", STATIC_CONFIG)
    assert _run(undisturbed).returncode == 0
    expected = _quality(finished_runs(undisturbed.parent / "results")[0])

    config = write_project(tmp_path / "full", STATIC_CONFIG)
    models = config.parent / "cache" / "models"
    with ExitStack() as stack:
        if disk == "tmpfs":  # smaller than the model's vectors (140 KB)
            stack.enter_context(_tmpfs(models, "64k"))
        with monkeypatch.context() as m:
            if disk == "wrapper":

                def full(tensors, path, *args, **kwargs):
                    Path(path).write_bytes(b"\0" * 4096)  # what fitted
                    raise _safetensors_full()

                m.setattr(persistence, "save_file", full)
            failed = _run(config)
        _one_line(
            failed,
            rf"bench: error: no space left on \S+ for {re.escape(str(models))}/static-\S+ "
            rf"\(needed {SIZE}, {SIZE} free\); free space there {MOVE_CACHE}",
        )
        assert list(models.iterdir()) == []  # no model folder, whole or half, and no staging folder
        assert list((config.parent / "results").iterdir()) == []
        if disk == "tmpfs":
            _remount(models, "size=8m")
        _rerun_concludes_as(config, expected)
