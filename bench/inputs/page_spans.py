"""Pages as evidence: a document's physical pages (1-based, as a PDF viewer counts them; a deck's
slides, a workbook's sheets) turned into character spans of its text."""

from __future__ import annotations

from collections.abc import Iterable

from bench.errors import BenchError
from bench.inputs.corpus import Document

PAGE_KEYS = ("page", "pages", "page_label")
_NOUNS = {"p.": "page", "slide": "slide", "sheet": "sheet"}


class PageError(ValueError):
    """A page that cannot be evidence; ``str(e)`` says why and what to give instead."""


def page_noun(doc: Document) -> str:
    """What the document's pages are called: "page", "slide", "sheet"."""
    return _NOUNS.get(doc.page_label, "page")


def page_count(doc: Document) -> int:
    return len(doc.pages)


def page_span(doc: Document, first: int, last: int | None = None) -> tuple[int, int]:
    """The characters of pages ``first``..``last`` (1-based, inclusive): from where the first starts to
    where the last ends, less the blank lines at either edge (the separator between two pages belongs
    to neither). Raises PageError for a document without pages, a page out of range or no text."""
    last = first if last is None else last
    noun, n = page_noun(doc), page_count(doc)
    if not n:
        raise PageError(
            f"{doc.id!r} has no pages (only PDFs, slides and spreadsheets do); give a quote or start/end instead"
        )
    for p in (first, last):
        if not 1 <= p <= n:
            raise PageError(
                f"{noun} {p} is not in {doc.id!r}, which has {n} {noun}s ({doc.page_label} 1–{n}); "
                f"{noun}s count from 1, as a viewer shows them"
            )
    text = doc.text
    start = doc.pages[first - 1]
    end = doc.pages[last] if last < n else len(text)
    chunk = text[start:end]
    stripped = chunk.strip()
    if not stripped:
        which = f"{noun} {first}" if first == last else f"{noun}s {first}–{last}"
        verb = "has" if first == last else "have"
        raise PageError(f"{which} of {doc.id!r} {verb} no text (scanned?); OCR it or give another {noun}")
    start += len(chunk) - len(chunk.lstrip())
    end -= len(chunk) - len(chunk.rstrip())
    return start, end


def runs(numbers: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted distinct numbers as runs of consecutive ones: [3, 1, 2, 5] → [(1, 3), (5, 5)]."""
    out: list[tuple[int, int]] = []
    for p in sorted(set(numbers)):
        if out and p == out[-1][1] + 1:
            out[-1] = (out[-1][0], p)
        else:
            out.append((p, p))
    return out


def page_evidence(doc: Document, item: dict, where: str) -> list[tuple[int, int]]:
    """The spans a goldset evidence item's ``page`` or ``pages`` names: one per run of contiguous pages."""
    if "page_label" in item:
        raise BenchError(
            f'{where}: "page_label" is not supported: bench keeps no printed page labels; give "page", '
            f"the physical {page_noun(doc)} counted from 1 as a viewer shows it"
        )
    if "page" in item and "pages" in item:
        raise BenchError(f'{where}: give either "page" (one number) or "pages" (a list), not both')
    numbers = [item["page"]] if "page" in item else item["pages"]
    if "pages" in item and (not isinstance(numbers, list) or not numbers):
        raise BenchError(f'{where}: "pages" must be a non-empty list of page numbers, like [48, 49]')
    for p in numbers:
        if isinstance(p, bool) or not isinstance(p, int) or p < 1:
            raise BenchError(
                f"{where}: page {p!r} must be a whole number from 1 (the physical {page_noun(doc)}, "
                "as a viewer counts it)"
            )
    try:
        return [page_span(doc, first, last) for first, last in runs(numbers)]
    except PageError as e:
        raise BenchError(f"{where}: {e}") from None
