"""How much of one document bench will read, so that a hostile or broken file (a zip bomb, a PDF of
a million pages, a page nested a hundred thousand tags deep) cannot take the run's memory or hours
of its time.

A document over a limit raises ``Unreadable`` with a reason naming the limit and the setting that
raises it, so the corpus leaves it out as it does any unreadable file and reads the rest. Limits
refuse, they never cut: a document is read whole or not at all, so text extracted under one set of
limits is the same under any other, and the extraction cache needs no key for them.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, fields

from bench.errors import BenchError
from bench.inputs.formats.base import Unreadable

MB = 10**6
TABLE = "documents"  # where the settings are named in the reasons: ``documents.max_file_mb``
RATIO_FLOOR = MB  # members smaller than this unpacked may compress as well as they like


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits on one document; the defaults fit any real document and stop a hostile one."""

    max_file_mb: float = 100  # a file's size on disk, checked before it is read
    max_unpacked_mb: float = 200  # an Office file's or EPUB's members unpacked, all together
    max_zip_ratio: float = 100  # unpacked to packed size of one member over RATIO_FLOOR unpacked
    max_zip_entries: int = 10_000  # an Office file's or EPUB's members: each costs ~0.5 KB and 10 µs to list
    max_pages: int = 2000  # a PDF's pages
    max_html_elements: int = 500_000  # a web page's elements (DOCX and EPUB chapters too): ~1 KB each parsed
    max_seconds: float = 300  # extracting one document
    # processes extracting documents at once (0: one per core); how fast, never what is read
    workers: int = 0

    @classmethod
    def from_settings(cls, table: Mapping[str, object], where: str) -> Limits:
        """Limits from a config table (``{"max_pages": 5000}``), the defaults for keys it leaves out."""
        known = {f.name: f for f in fields(cls)}
        values: dict[str, float | int] = {}
        for key, value in table.items():
            if key not in known:
                raise BenchError(f"{where}: unknown setting {TABLE}.{key}; known: {', '.join(known)}")
            whole = known[key].type == "int"
            if isinstance(value, bool) or not isinstance(value, int if whole else int | float) or not value > 0:
                kind = "a whole number" if whole else "a number"
                raise BenchError(f"{where}: {TABLE}.{key} must be {kind} above 0, not {value!r}")
            values[key] = value
        return cls(**values)  # type: ignore[arg-type]

    def over(self, what: str, setting: str, unit: str = "", fix: str = "split it") -> Unreadable:
        """The reason for a document over the limit ``setting``: ``what`` it is, the limit and how to go on."""
        limit = getattr(self, setting)
        shown = f"{limit:,}{unit}" if isinstance(limit, int) else f"{limit:,g}{unit}"
        return Unreadable(f"{what}, over the limit of {shown} ({TABLE}.{setting}); {fix} or raise the limit")

    def too_slow(self) -> Unreadable:
        return self.over("extracting it took too long", "max_seconds", " s")

    def check_size(self, size: int) -> None:
        """Unreadable when a file of ``size`` bytes is over ``max_file_mb``."""
        if size > self.max_file_mb * MB:
            mb = size / MB
            raise self.over(f"a file of {f'{mb:,.0f}' if mb >= 10 else f'{mb:.2g}'} MB", "max_file_mb", " MB")


LIMITS = Limits()


_RETRY_SECONDS = 0.05  # after the time limit, how often the timer fires again until it stops the parser


class _Expired(BaseException):
    """The timer ran out inside an extractor. Not an Exception: the libraries' ``except Exception``
    blocks must not take it for a broken file and carry on."""


@contextmanager
def time_limit(limits: Limits) -> Iterator[None]:
    """Stops the extraction inside after ``max_seconds``, with ``limits.too_slow()``.

    A timer signal interrupts the pure-Python parsers mid-page, so it works only in the main thread
    and when no other timer is set; elsewhere the PDF format's check between pages still holds.
    """
    if (
        not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
        or signal.getitimer(signal.ITIMER_REAL)[0] > 0
    ):
        yield
        return
    armed, expired = True, False

    def expire(signum: int, frame: object) -> None:
        nonlocal expired
        if armed:  # a signal delivered after the timer was stopped is ignored
            expired = True
            raise _Expired

    previous = signal.signal(signal.SIGALRM, expire)
    try:
        try:
            # The timer repeats: a raise that lands in a garbage-collector callback or a __del__ is
            # swallowed there, and is raised again a moment later in the parser's own code.
            signal.setitimer(signal.ITIMER_REAL, limits.max_seconds, _RETRY_SECONDS)
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            armed = False
    except _Expired:
        raise limits.too_slow() from None
    finally:
        signal.signal(signal.SIGALRM, previous)
    if expired:  # every raise was swallowed, and the extraction finished late all the same
        raise limits.too_slow()
