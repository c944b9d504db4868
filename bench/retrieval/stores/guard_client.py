"""Starting the guard (``guard.py``) and telling it what a run made that must not outlive it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.errors import EnvironmentFault

CLOSE_SECONDS = 90  # stopping a server and removing its folder; beyond this the run ends without waiting


class Guard:
    """One guard process per run. Each registration returns once the guard has it, so nothing is
    made that the guard does not know of; ``close`` has it undo everything and waits."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "bench.retrieval.stores.guard"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,  # a Ctrl-C at the terminal reaches the run, not the guard
        )

    @property
    def pid(self) -> int:
        return self._process.pid

    def _tell(self, step: dict) -> None:
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(json.dumps(step) + "\n")
            process.stdin.flush()
            answer = process.stdout.readline()
        except OSError:
            answer = ""
        if answer.strip() != "ok":
            raise EnvironmentFault("the process that cleans up after the run's stores stopped; run again")

    def remove(self, path: Path) -> None:
        self._tell({"remove": str(path)})

    def stop_postgres(self, bin_dir: Path, data: Path, user: str | None) -> None:
        self._tell({"postgres": str(bin_dir), "data": str(data), "user": user})

    def drop_schema(self, dsn: str, schema: str) -> None:
        self._tell({"dsn": dsn, "schema": schema})

    def close(self) -> None:
        process = self._process
        if process.stdin is not None and not process.stdin.closed:
            process.stdin.close()
        try:
            process.wait(CLOSE_SECONDS)
        except subprocess.TimeoutExpired:
            pass  # it goes on in its own session and finishes on its own
        if process.stdout is not None:
            process.stdout.close()
