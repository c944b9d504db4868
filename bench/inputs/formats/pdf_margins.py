"""Running headers and footers: the lines a PDF repeats in the top or bottom margin of most pages.

A company name, a report title, "Table of Contents" links, "Page 12 of 80" and bare page numbers
are printed on every page; kept in the text they land in every chunk that starts a page, where they
match every question about the company and none in particular. A line is running when, among the
first few lines at the top of the page (or the last few at the bottom), the same text — digits
aside, so page numbers match — stands on most pages. Such lines are left out of the text and named in the document's
notes, never dropped silently.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

EDGE_LINES = 2  # lines at the top, and at the bottom, of a page where running lines stand
_MOST = 0.5  # on at least this share of the pages
_MIN_PAGES = 3  # and on at least this many: a short document has no running lines to speak of
_MAX_WORDS = 12  # a running line is short: a longer line repeated but for its numbers is body text
_NAMED = 3  # running lines quoted in the note
_QUOTED = 60  # characters of a running line quoted in the note

_DIGITS = re.compile(r"\d+")
_ROMAN = re.compile(r"^(?=[ivxlc]+$)c{0,3}(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})$")


@dataclass(frozen=True, slots=True)
class MarginLine:
    """A line of text among the first or last lines of a page."""

    page: int  # 0-based
    text: str
    top: bool


def key(text: str, top: bool) -> tuple[str, bool]:
    """What two running lines share: the text with its numbers (arabic or roman) as ``#``, case
    and spacing aside, and the margin it stands in."""
    words = " ".join(text.split()).casefold()
    words = " ".join("#" if _ROMAN.match(w) else w for w in words.split(" "))
    return _DIGITS.sub("#", words), top


def running(lines: Sequence[MarginLine], pages: int) -> dict[tuple[str, bool], str]:
    """The keys of the running lines among ``lines`` of a document of ``pages`` pages, each with
    the first text it was seen as."""
    if pages < _MIN_PAGES:
        return {}
    on: dict[tuple[str, bool], set[int]] = {}
    first: dict[tuple[str, bool], str] = {}
    for line in lines:
        k = key(line.text, line.top)
        if k[0].strip():
            on.setdefault(k, set()).add(line.page)
            first.setdefault(k, line.text)
    need = max(_MIN_PAGES, _MOST * pages)
    return {k: first[k] for k, seen in on.items() if len(seen) >= need and len(k[0].split()) <= _MAX_WORDS}


def note(left_out: Counter[tuple[str, bool]], examples: dict[tuple[str, bool], str], pages: int) -> str:
    """One line for the document's notes: which running lines were left out, on how many pages."""
    named = [
        f"{_name(k, examples[k])} ({'top' if k[1] else 'bottom'}, {n} of {pages} pages)"
        # most pages first, then top before bottom, then by text: the same note in every process
        for k, n in sorted(left_out.items(), key=lambda kn: (-kn[1], not kn[0][1], kn[0][0]))[:_NAMED]
    ]
    more = len(left_out) - len(named)
    rest = f" and {more} more" if more > 0 else ""
    return "running headers and footers left out of the text: " + "; ".join(named) + rest


def _name(k: tuple[str, bool], example: str) -> str:
    return "page numbers" if k[0] == "#" else f"“{_quote(example)}”"


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _QUOTED else text[: _QUOTED - 1] + "…"
