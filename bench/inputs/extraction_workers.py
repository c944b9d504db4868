"""Extracting a corpus folder's documents in worker processes, one per core.

Extraction is pure-Python parsing (pdfminer, lxml, mammoth) and holds one core, so a folder of PDFs
extracts at one core's pace unless documents go to other processes. ``Extractions`` takes the
documents the extraction cache lacks and gives each one's text (or the reason it cannot be read)
back as it finishes, in any order; the caller writes the cache and puts results in file order, so
the corpus is the same whichever way it was extracted.

- Every document is extracted by ``extract_file``, here or in a worker: the same code, the same
  ``[documents]`` limits. A worker runs it in its main thread, so the timer of ``max_seconds`` holds.
- At most ``2 × workers`` documents are in flight, so a corpus's texts never pile up in memory.
- Workers start from a fresh interpreter (``forkserver``), never as a fork of this process, which
  may hold threads (torch, tokenizers) whose locks a fork would copy mid-use. They ignore Ctrl-C;
  this process stops them on it, and on any error, so none is left behind.
- A lone document to extract is extracted here: starting workers costs more than it saves.
- Like any ``forkserver`` or ``spawn`` worker, each imports the main module of the program (not as
  ``__main__``), so a script that reads a corpus folder keeps its work under
  ``if __name__ == "__main__":``, or sets ``workers = 1``.
"""

from __future__ import annotations

import hashlib
import importlib
import multiprocessing
import os
import signal
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing.context import BaseContext
from pathlib import Path
from types import TracebackType

from bench.errors import BenchError
from bench.inputs.extraction_cache import extract_within
from bench.inputs.formats import EXTRACTORS, Extracted, Limits, Unreadable

_IN_FLIGHT_PER_WORKER = 2  # enough to keep each worker busy while this process writes the cache
# The libraries the formats load on first use, imported once in the fork server (each worker is a
# fork of it) and so never on a worker's first document, where their second of imports would count
# against ``max_seconds``.
_LIBRARIES = (
    "bench.inputs.extraction_workers",
    "pdfplumber",
    "pdfminer.layout",
    "pdfminer.pdfdocument",
    "pdfminer.pdfpage",
    "pdfminer.pdfparser",
    "trafilatura",
    "lxml.etree",
    "bs4",
    "markdownify",
    "mammoth",
    "pptx",
    "openpyxl",
)


def cores() -> int:
    """The cores this process may run on (its affinity, where the system says), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def worker_count(limits: Limits) -> int:
    """``[documents] workers``, else one per core."""
    return limits.workers or cores()


def extract_file(file: str, extractor: str, sha256: str, limits: Limits, data: bytes | None = None) -> Extracted | str:
    """The text of ``file`` (whose bytes are ``data`` when given) within ``limits``, or the one-line
    reason it cannot be read. Read again from disk, the bytes must still be those hashed as ``sha256``."""
    if data is None:
        try:
            data = Path(file).read_bytes()
        except OSError as e:
            return f"cannot read it ({e.strerror}); check its permissions"
        if hashlib.sha256(data).hexdigest() != sha256:
            return "it changed while bench was reading the corpus; run again"
    try:
        return extract_within(EXTRACTORS[extractor], data, limits)
    except Unreadable as e:
        return str(e)


@dataclass(slots=True)
class _Task:
    tag: int
    file: str
    extractor: str
    sha256: str
    data: bytes | None = field(default=None, repr=False)


class Extractions:
    """Documents submitted for extraction, their results taken back as they finish.

    ``submit`` may hand back results already finished (it waits for one when too many are in flight);
    ``finish`` hands back the rest. Use it as a context manager: leaving it on an error or Ctrl-C stops
    the workers at once.
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.workers = worker_count(limits)
        self._held: _Task | None = None  # the first document, extracted here if it stays the only one
        self._executor: ProcessPoolExecutor | None = None
        self._running: dict[Future[Extracted | str], _Task] = {}

    def submit(
        self, tag: int, file: Path, extractor: str, sha256: str, data: bytes
    ) -> Iterator[tuple[int, Extracted | str]]:
        """Extract ``file`` (``data`` are its bytes, hashed as ``sha256``); yields ``(tag, result)`` of
        documents that finished meanwhile."""
        task = _Task(tag, str(file), extractor, sha256)
        if self.workers == 1:
            yield tag, extract_file(task.file, extractor, sha256, self.limits, data)
            return
        if self._executor is None and self._held is None:
            task.data = data  # kept only while it is the one document to extract
            self._held = task
            return
        if self._executor is None:
            self._executor = self._start()
            held, self._held = self._held, None
            assert held is not None
            held.data = None  # a worker reads the file again: bytes are not sent through a pipe
            self._send(held)
        self._send(task)
        while len(self._running) >= _IN_FLIGHT_PER_WORKER * self.workers:
            yield from self._collect(block=True)
        yield from self._collect(block=False)

    def finish(self) -> Iterator[tuple[int, Extracted | str]]:
        """The results not yet handed back."""
        if self._held is not None:
            held, self._held = self._held, None
            yield held.tag, extract_file(held.file, held.extractor, held.sha256, self.limits, held.data)
        while self._running:
            yield from self._collect(block=True)

    def _start(self) -> ProcessPoolExecutor:
        context: BaseContext = multiprocessing.get_context("spawn")
        if "forkserver" in multiprocessing.get_all_start_methods():
            server = multiprocessing.get_context("forkserver")
            server.set_forkserver_preload(list(_LIBRARIES))  # no effect on a fork server already running
            context = server
        return ProcessPoolExecutor(self.workers, mp_context=context, initializer=_prepare)

    def _send(self, task: _Task) -> None:
        assert self._executor is not None
        future = self._executor.submit(extract_file, task.file, task.extractor, task.sha256, self.limits)
        self._running[future] = task

    def _collect(self, block: bool) -> Iterator[tuple[int, Extracted | str]]:
        if block:
            done, _ = wait(self._running, return_when=FIRST_COMPLETED)
        else:
            done = {f for f in self._running if f.done()}
        for future in sorted(done, key=lambda f: self._running[f].tag):
            task = self._running.pop(future)
            try:
                result = future.result()
            except BrokenProcessPool:
                names = ", ".join(sorted(Path(t.file).name for t in (task, *self._running.values())))
                raise BenchError(
                    f"a worker process extracting documents stopped while reading one of: {names} (out of memory, "
                    "or a script that reads a corpus without `if __name__ == '__main__':`); set [documents] "
                    "workers = 1 to read them one at a time here and find it"
                ) from None
            yield task.tag, result

    def __enter__(self) -> Extractions:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close(stop=kind is not None)

    def close(self, stop: bool = False) -> None:
        """Let the workers go; with ``stop`` (an error, Ctrl-C), end them mid-document."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        if stop:
            # ProcessPoolExecutor waits for running tasks on shutdown; a 300 s PDF must not hold Ctrl-C up
            for process in list(getattr(executor, "_processes", {}).values()):
                process.terminate()
        executor.shutdown(wait=True, cancel_futures=True)
        self._running.clear()


def _prepare() -> None:
    """A worker ignores Ctrl-C, which reaches it too (one process group): this process stops it,
    without a traceback from each. It imports the formats' libraries before its first document."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in _LIBRARIES:
        try:
            importlib.import_module(name)
        except ImportError:  # a format whose library is missing says so when it is used
            pass
