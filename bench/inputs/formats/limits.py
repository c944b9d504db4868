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
from dataclasses import dataclass

from bench.core.tables import read_table, setting
from bench.inputs.formats.base import Unreadable

MB = 10**6
TABLE = "documents"  # where the settings are named in the reasons: ``documents.max_file_mb``
RATIO_FLOOR = MB  # members smaller than this unpacked may compress as well as they like


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits on one document; the defaults fit any real document and stop a hostile one. A
    number is kept as written (``int | float``), so a limit reads in a reason as the file gave it."""

    # a file's size on disk, checked before it is read
    max_file_mb: int | float = setting(100, above=0)
    # an Office file's or EPUB's members unpacked, all together
    max_unpacked_mb: int | float = setting(200, above=0)
    # unpacked to packed size of one member over RATIO_FLOOR unpacked
    max_zip_ratio: int | float = setting(100, above=0)
    # an Office file's or EPUB's members: each costs ~0.5 KB and 10 µs to list
    max_zip_entries: int = setting(10_000, minimum=1)
    max_pages: int = setting(2000, minimum=1)  # a PDF's pages
    # a web page's elements (DOCX and EPUB chapters too): ~1 KB each parsed
    max_html_elements: int = setting(500_000, minimum=1)
    max_seconds: int | float = setting(300, above=0)  # extracting one document
    # processes extracting documents at once (0: one per core); how fast, never what is read
    workers: int = setting(0, minimum=1, note="or leave it out for one per core")

    @classmethod
    def from_settings(cls, table: Mapping[str, object], where: str) -> Limits:
        """Limits from a config's ``[documents]`` table (``{"max_pages": 5000}``), the defaults for
        keys it leaves out; ``where`` is the config file."""
        return read_table(cls, table, f"{where}: [{TABLE}]", example=f"[{TABLE}] max_pages = 5000")

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
