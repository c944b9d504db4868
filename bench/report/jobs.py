"""Report work spread over the machine's cores: drawing and statistics are CPU-bound and hold the GIL.

Jobs run in forked worker processes on Linux with more than one core (the inputs are inherited by
the fork, never pickled), else one after another in this process; either way results come back
in the order given.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable

_JOBS: dict[str, Callable[[], object]] = {}


class Jobs:
    """Start named zero-argument jobs at once; ``results()`` waits for them."""

    def __init__(self, jobs: dict[str, Callable[[], object]]) -> None:
        global _JOBS
        _JOBS = dict(jobs)  # set before the fork, so workers inherit the closures and their data
        self._names = list(jobs)
        self._pool = self._pending = None
        workers = min(len(self._names), os.cpu_count() or 1)
        if workers > 1 and sys.platform == "linux":
            self._pool = multiprocessing.get_context("fork").Pool(workers)
            self._pending = self._pool.map_async(_run, self._names, chunksize=1)

    def results(self) -> dict[str, object]:
        global _JOBS
        try:
            values = self._pending.get() if self._pending is not None else [_run(n) for n in self._names]
            if self._pool is not None:
                self._pool.close()
        except BaseException:  # a failed job or Ctrl-C: stop the other workers rather than wait for them
            if self._pool is not None:
                self._pool.terminate()
            raise
        finally:
            if self._pool is not None:
                self._pool.join()
            _JOBS = {}
        return dict(zip(self._names, values))


def _run(name: str) -> object:
    return _JOBS[name]()
