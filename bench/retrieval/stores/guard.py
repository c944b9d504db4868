"""The guard: a small process that cleans up after a run however the run ends.

A run that starts a database server or writes a store's folders starts one guard and tells it, one
JSON line on its standard input at a time, what to undo: a schema to drop, a server to stop, a
folder to remove. When its input closes (the run finished, failed, was interrupted, or was killed
outright, SIGKILL included), the guard undoes them, newest first, and exits. It runs in a session
of its own, so a Ctrl-C at the terminal reaches the run, not the guard.

Standard library only (psycopg for a schema, when one was registered), so that it starts fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

STOP_SECONDS = 20


def drop_schema(dsn: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def stop_postgres(bin_dir: str, data: str, user: str | None) -> None:
    """A fast shutdown (connections closed, no checkpoint wait beyond the end), immediate if it hangs,
    and the postmaster killed if even that fails."""
    pg_ctl = str(Path(bin_dir) / "pg_ctl")
    for mode in ("fast", "immediate"):
        done = subprocess.run(
            [pg_ctl, "-D", data, "-m", mode, "-w", "-t", str(STOP_SECONDS), "stop"],
            user=user,
            capture_output=True,
            check=False,
        )
        if done.returncode == 0 or not (Path(data) / "postmaster.pid").exists():
            return
    with contextlib.suppress(OSError, ValueError, IndexError):
        pid = int((Path(data) / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)


def undo(step: dict) -> None:
    if "schema" in step:
        drop_schema(step["dsn"], step["schema"])
    elif "postgres" in step:
        stop_postgres(step["postgres"], step["data"], step.get("user"))
    elif "remove" in step:
        shutil.rmtree(step["remove"], ignore_errors=True)


class _Stop(Exception):
    """SIGTERM: clean up now."""


def _stop(signum: int, frame: object) -> None:
    raise _Stop


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop)
    steps: list[dict] = []
    try:
        for line in sys.stdin:
            steps.append(json.loads(line))
            print("ok", flush=True)
    except (_Stop, ValueError, OSError):
        pass
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the clean-up itself runs to its end
    for step in reversed(steps):
        try:
            undo(step)
        except Exception as e:  # one step failing must not leave the others undone
            print(f"guard: could not undo {step}: {e}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
