"""The results layout (docs/design.md, "Results on disk"): atomic writes, run ids, and loading old runs.

A run is written into ``results/.<run_id>.partial/`` and renamed to ``results/<run_id>/``
only when every file is complete, so a run that dies never leaves a folder that looks whole.
The writer holds a lock inside its staging folder while it lives; a folder whose lock nobody
holds was left by a killed run and is removed by the next run.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import IO, Any

from bench import files
from bench.errors import MACHINE, RESULTS_ELSEWHERE, UNSUPPORTED, BenchError, EnvironmentFault, fault_of

fcntl: ModuleType | None
try:
    fcntl = importlib.import_module("fcntl")
except ImportError:  # Windows: abandoned staging folders are left for the user to delete
    fcntl = None

MANIFEST, SUMMARY, PER_QUESTION = "manifest.json", "summary.json", "per_question.jsonl"
# The answer layer, scored after the run (`bench answers score`) and read beside it.
ANSWERS_SUMMARY, ANSWERS_PER_QUESTION = "answers_summary.json", "answers_per_question.jsonl"
PERTURBED_QUESTIONS = "perturbed_questions.jsonl"  # every question as each perturbation asked it
JUDGMENTS = "judgments.jsonl"  # a relevance judge's grades of units (bench judge, runs with questions only)
TEXTS = "texts.jsonl"  # the text of every unit a ranking or an expected list names, once each
PARTIAL = ".partial"  # suffix of a staging folder, ``.<run_id>.partial``
WRITER = ".writer"  # in a staging folder: the writer's pid, locked for as long as the writer lives
# A staging folder without a writer file is either being set up this instant or was left by an older
# bench; only the latter is this old.
_UNCLAIMED_GRACE_SECONDS = 24 * 3600


def new_run_id(results: Path, config_hash: str, now: datetime | None = None) -> str:
    """``<UTC time>-<config hash>``; a second run in the same second gets ``-2``, ``-3`` …"""
    now = now or datetime.now(UTC)
    base = f"{now.strftime('%Y%m%dT%H%M%SZ')}-{config_hash}"
    run_id, n = base, 1
    while (results / run_id).exists() or (results / f".{run_id}.partial").exists():
        n += 1
        run_id = f"{base}-{n}"
    return run_id


@contextmanager
def run_folder(results: Path, run_id: str) -> Iterator[Path]:
    """Yield a staging folder; on success it becomes ``results/<run_id>``, on failure it is removed.

    A results folder the machine will not let a run finish in (read-only, full, on a filesystem
    without the locks or renames a run needs) is an EnvironmentFault that says which and suggests
    ``--results DIR``; so is such a fault while the run writes its files.
    """
    try:
        results.mkdir(parents=True, exist_ok=True)
        probe = results / f".{run_id}.write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise _results_fault(e, results) from e
    final = results / run_id
    if final.exists():
        raise BenchError(f"{final}: a run with this id already exists; wait a second and rerun")
    staging = results / f".{run_id}{PARTIAL}"
    try:
        staging.mkdir()
    except FileExistsError:  # another live run took this id: its folder is not ours to remove
        raise BenchError(f"{staging}: another run is writing this run id; wait a second and rerun") from None
    except OSError as e:
        raise _results_fault(e, results) from e
    writer = None
    try:
        writer = _claim(staging)
        remove_abandoned(results)  # once claimed: a folder where locks fail is refused before others' are swept
        yield staging
        if writer is not None:
            # Unlinked while still locked: a sweeping run finds a fresh folder without a writer and leaves it be.
            (staging / WRITER).unlink()
        try:
            os.replace(staging, final)
        except OSError as e:
            raise _results_fault(e, final, "renaming a folder, which is how a finished run appears") from e
    except BaseException as e:
        shutil.rmtree(staging, ignore_errors=True)
        fault = _fault_within(e, results)
        if fault is None or fault is e:
            raise
        raise fault from e
    finally:
        if writer is not None:
            writer.close()


def _claim(staging: Path) -> IO[str] | None:
    """Lock the staging folder for this process and note its pid; the kernel drops the lock when
    the process dies, however it dies, which is how a later run tells an abandoned folder."""
    if fcntl is None:
        return None
    locking = staging / f"{WRITER}.tmp"
    try:
        writer = open(locking, "w", encoding="utf-8")  # noqa: SIM115 - open for the whole run: it is the lock
    except OSError as e:
        raise _results_fault(e, staging) from e
    doing = "file locks (flock), which tell a live run's folder from an abandoned one"
    try:
        fcntl.flock(writer, fcntl.LOCK_EX | fcntl.LOCK_NB)
        writer.write(f"{os.getpid()}\n")
        writer.flush()
        doing = "renaming a file"
        os.replace(locking, staging / WRITER)  # it appears already locked: no sweeper can take it in between
    except OSError as e:
        writer.close()
        raise _results_fault(e, staging, doing) from e
    return writer


def _results_fault(e: OSError, path: Path, doing: str | None = None) -> BenchError:
    """What the machine refused about the results folder, as one line suggesting ``--results DIR``."""
    fault = fault_of(e, path, switch=RESULTS_ELSEWHERE, doing=doing, codes=MACHINE | UNSUPPORTED)
    return fault or BenchError(f"{path}: cannot write results there ({e.strerror}); pass --results DIR")


def _fault_within(e: BaseException, results: Path) -> EnvironmentFault | None:
    """A fault on a path inside ``results``, advising ``--results DIR``; None for any other exception."""
    if isinstance(e, EnvironmentFault):
        where = e.path
    elif isinstance(e, OSError):
        where = e.filename
    else:
        return None
    inside = where is not None and os.path.abspath(where).startswith(os.path.join(os.path.abspath(results), ""))
    if isinstance(e, EnvironmentFault):
        return e.elsewhere(RESULTS_ELSEWHERE) if inside else e
    return fault_of(e, switch=RESULTS_ELSEWHERE) if inside else None


def _abandoned(staging: Path) -> bool:
    """True when no live process is writing ``staging``."""
    if fcntl is None:
        return False
    try:
        if not (staging / WRITER).exists():
            return time.time() - staging.stat().st_mtime > _UNCLAIMED_GRACE_SECONDS
        with open(staging / WRITER, "rb") as writer:
            fcntl.flock(writer, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # its writer lives
        return False
    except FileNotFoundError:  # finished (renamed) or removed meanwhile
        return False
    return True


def remove_abandoned(results: Path) -> list[Path]:
    """Remove staging folders whose writer died without cleaning up (SIGKILL, a power cut);
    never one a live run is writing. Returns the folders removed."""
    removed = []
    for folder in sorted(results.glob(f".*{PARTIAL}")):
        if folder.is_dir() and _abandoned(folder):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def is_staging(path: Path) -> bool:
    """A run still being written, or abandoned: never a finished run, whatever files it holds."""
    return path.name.startswith(".") and path.name.endswith(PARTIAL)


def find_run(ref: str | Path, results: Path = Path("results")) -> Path:
    """A run folder from a path, a run id, or ``latest``."""
    ref = str(ref)
    candidates = [Path(ref), results / ref]
    if ref == "latest":
        finished = [p for p in results.glob("*") if not p.name.startswith(".") and (p / SUMMARY).is_file()]
        # Ids start with the second a run started; two runs of that second (other configs, so other
        # hashes) are told apart by when their results were written, not by their hashes.
        runs = sorted(finished, key=lambda p: (p.name[:16], (p / SUMMARY).stat().st_mtime_ns, p.name))
        if not runs:
            raise BenchError(f"{results}: no finished runs yet; run `bench run` first")
        candidates = [runs[-1]]
    for path in candidates:
        if is_staging(path.resolve()):
            raise BenchError(f"{ref}: an unfinished run (staging folder), not a finished run; rerun `bench run`")
        if (path / SUMMARY).is_file() and (path / PER_QUESTION).is_file():
            return path
    raise BenchError(f"{ref}: not a finished run (no {SUMMARY} and {PER_QUESTION}); give results/<run_id>")


def load_json(path: Path) -> Any:  # Any: the JSON as stored, of whatever shape; readers check it
    return files.read_json(path, "the run folder is damaged")


def load_jsonl(path: Path) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise BenchError(f"{path}:{lineno}: unreadable ({e.msg}); the run folder is damaged") from None
    return rows
