"""Sentence windows: ``sentences`` consecutive sentences per chunk, sliding by ``sentences - overlap``.

Sentences are found as spans of the document (:func:`sentence_spans`), never by searching the
text for strings, so every chunk is an exact slice ``text[start:end]``.
"""

from __future__ import annotations

import regex

from bench.chunking.base import Chunk, chunk_id, strip_span
from bench.chunking.boundaries import SENTENCE, joins_previous
from bench.chunking.recursive import RecursiveChunker
from bench.chunking.tokens import count_tokens
from bench.errors import BenchError

# A sentence ends right after: the recursive splitter's sentence rule (terminal punctuation with
# closing quotes and whitespace; 。！？ and other marks that need no space; a half-width mark or an
# ellipsis right before CJK text; a space between Thai phrases), or any newline, so markdown
# headings, list items and table rows never glue onto the next line.
SENTENCE_END = regex.compile(f"{SENTENCE.pattern}|\n")


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Sentences of ``text[start:end]`` as ``(start, end)`` offsets into ``text``.

    Spans are ordered, disjoint, non-empty and stripped of surrounding whitespace; together they
    hold every non-whitespace character of the range.
    """
    end = len(text) if end is None else end
    cuts = [m.end() for m in SENTENCE_END.finditer(text, start, end) if start < m.end() < end]
    if not text.isascii():
        cuts = [c for c in cuts if not joins_previous(text, c)]
    spans: list[tuple[int, int]] = []
    for s, e in zip([start, *cuts], [*cuts, end]):
        s, e = strip_span(text, s, e)
        if s < e:
            spans.append((s, e))
    return spans


def _whole_number(kind: str, name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BenchError(f"{kind} chunker: {name} must be a whole number, got {value!r}")
    if value < minimum:
        raise BenchError(f"{kind} chunker: {name} must be at least {minimum}, got {name}={value}")
    return value


def split_long_spans(text: str, spans: list[tuple[int, int]], size: int | None) -> list[tuple[int, int]]:
    """``spans`` with each one over ``size`` tokens cut into pieces that fit (recursive splitter:
    at word boundaries where it can, token windows where it cannot)."""
    if size is None:
        return spans
    splitter = RecursiveChunker(size)
    out: list[tuple[int, int]] = []
    for s, e in spans:
        if count_tokens(text[s:e]) <= size:
            out.append((s, e))
        else:
            out.extend((s + c.start, s + c.end) for c in splitter.chunk("", text[s:e]))
    return out


class SentenceWindowChunker:
    """Windows of ``sentences`` consecutive sentences, each starting ``sentences - overlap`` after
    the previous one, so consecutive chunks share exactly ``overlap`` sentences.

    With ``size`` (cl100k tokens), a sentence longer than ``size`` is first cut into pieces that
    fit (each piece then counts as a sentence), and a window stops growing before it would exceed
    ``size`` tokens. The next window then starts after the last sentence it did hold, carrying at
    most ``overlap`` of its trailing sentences (fewer when they would not leave room for a new
    one), so nothing is skipped and no chunk lies inside the previous one.

    Chunks start and end on sentence boundaries and are stripped of surrounding whitespace. The
    only chunk that can exceed ``size`` is a single character that alone needs more tokens.
    """

    def __init__(self, sentences: int = 3, overlap: int = 1, size: int | None = None) -> None:
        _whole_number("sentences", "sentences", sentences, 1)
        _whole_number("sentences", "overlap", overlap, 0)
        if overlap >= sentences:
            raise BenchError(
                f"sentences chunker: overlap must be smaller than sentences, got sentences={sentences}, "
                f"overlap={overlap}; lower overlap or raise sentences"
            )
        if size is not None:
            _whole_number("sentences", "size", size, 1)
        self.sentences = sentences
        self.overlap = overlap
        self.size = size

    def __repr__(self) -> str:
        return f"SentenceWindowChunker(sentences={self.sentences}, overlap={self.overlap}, size={self.size})"

    def _fits(self, text: str, start: int, end: int) -> bool:
        return self.size is None or count_tokens(text[start:end]) <= self.size

    def chunk(self, doc_id: str, text: str) -> list[Chunk]:
        units = split_long_spans(text, sentence_spans(text), self.size)
        chunks: list[Chunk] = []
        first = 0
        while first < len(units):
            last = first
            limit = min(first + self.sentences, len(units)) - 1
            while last < limit and self._fits(text, units[first][0], units[last + 1][1]):
                last += 1
            start, end = units[first][0], units[last][1]
            chunks.append(Chunk(chunk_id(doc_id, len(chunks)), doc_id, start, end, text[start:end]))
            if last == len(units) - 1:
                break
            first = self._next_first(text, units, first, last)
        return chunks

    def _next_first(self, text: str, units: list[tuple[int, int]], first: int, last: int) -> int:
        """First unit of the next window: carry as many trailing units (at most ``overlap``) as
        still leave room for unit ``last + 1``, so the next window always reaches past ``last``."""
        nxt = last + 1
        for k in range(max(first + 1, nxt - self.overlap), nxt):
            if self._fits(text, units[k][0], units[nxt][1]):
                return k
        return nxt
