"""What every chunker returns: spans of one document, never bare strings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bench.chunking.boundaries import CONTROL, JOINS, PREPEND


@dataclass(frozen=True, slots=True)
class Chunk:
    """A span of one document; ``text == document.text[start:end]`` (character offsets, end exclusive).

    ``heading`` is the markdown heading path the span sits under (``"Policy > Leave > Requests"``),
    filled in by the markdown chunker only; every other chunker leaves it empty.
    """

    id: str
    doc_id: str
    start: int
    end: int
    text: str
    heading: str = ""

    def __len__(self) -> int:
        return self.end - self.start


def chunk_id(doc_id: str, ordinal: int) -> str:
    """Chunk ids are stable for a given document and chunker: ``<doc_id>#<ordinal, 4 digits>``."""
    return f"{doc_id}#{ordinal:04d}"


def strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Narrow ``[start, end)`` to exclude leading and trailing whitespace, in whole grapheme clusters:
    a space that carries a mark or follows a prepended sign is part of visible text and stays."""
    while start < end and text[start].isspace():
        nxt = start + 1
        if nxt < end and not text[nxt].isascii() and JOINS.match(text, nxt) and not CONTROL.match(text, start):
            break
        start = nxt
    while end > start and text[end - 1].isspace():
        before = end - 2
        prepended = before >= start and not text[before].isascii() and PREPEND.match(text, before)
        if prepended and not CONTROL.match(text, end - 1):  # a prepended sign takes the space after it
            break
        end -= 1
    return start, end


class Chunker(Protocol):
    """Splits one document into ordered, non-empty spans."""

    def chunk(self, doc_id: str, text: str) -> list[Chunk]: ...
