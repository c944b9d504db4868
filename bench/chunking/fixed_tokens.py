"""Fixed windows of cl100k tokens: the baseline every smarter chunker has to beat."""

from __future__ import annotations

from bisect import bisect_left

from bench.chunking.base import Chunk, chunk_id
from bench.chunking.boundaries import CutPoints, plain
from bench.chunking.tokens import token_char_offsets
from bench.errors import BenchError


def validate_size_overlap(kind: str, size: object, overlap: object) -> None:
    """Reject sizes that would loop forever or make empty chunks, before any document is read."""
    for name, value in (("size", size), ("overlap", overlap)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise BenchError(f"{kind} chunker: {name} must be a whole number of tokens, got {value!r}")
    assert isinstance(size, int) and isinstance(overlap, int)
    if size < 1:
        raise BenchError(f"{kind} chunker: size must be at least 1 token, got size={size}")
    if not 0 <= overlap < size:
        raise BenchError(
            f"{kind} chunker: overlap must be >= 0 and smaller than size, got size={size}, "
            f"overlap={overlap}; lower overlap or raise size"
        )


class FixedTokenChunker:
    """Windows of ``size`` tokens, each starting ``size - overlap`` tokens after the previous one.

    Window boundaries are token boundaries mapped to character offsets; a token that starts
    inside a multi-byte character maps to that character, so such a character belongs to the
    window where its later bytes are (and to both, with overlap). Whitespace-only windows are
    skipped, so the last window may hold fewer than ``size`` tokens.

    A boundary never falls inside a grapheme cluster (a letter with its marks, an emoji sequence):
    one that would moves back to the cluster's start, and in Chinese and Japanese back to the start
    of the word it would cut (jieba's words), so that window holds fewer tokens and the next starts
    there. A word or cluster longer than the window is cut at a cluster boundary, a single cluster
    longer than the window is a window of its own. ASCII text has nothing to move.
    """

    thread_safe = True  # no state between documents; cl100k encodes with the GIL released

    def __init__(self, size: int, overlap: int = 0) -> None:
        validate_size_overlap("tokens", size, overlap)
        self.size = size
        self.overlap = overlap

    def __repr__(self) -> str:
        return f"FixedTokenChunker(size={self.size}, overlap={self.overlap})"

    def chunk(self, doc_id: str, text: str) -> list[Chunk]:
        _, offsets = token_char_offsets(text)
        if not plain(text):
            return self._chunk_at_boundaries(doc_id, text, offsets)
        bounds = [*offsets, len(text)]
        n = len(offsets)
        chunks: list[Chunk] = []
        for first in range(0, n, self.size - self.overlap):
            last = min(first + self.size, n)
            start, end = bounds[first], bounds[last]
            if text[start:end].strip():
                chunks.append(Chunk(chunk_id(doc_id, len(chunks)), doc_id, start, end, text[start:end]))
            if last == n:
                break
        return chunks

    def _chunk_at_boundaries(self, doc_id: str, text: str, offsets: list[int]) -> list[Chunk]:
        """The windows of :meth:`chunk`, their edges moved back to where the text may be cut.

        Where no edge moves, these are exactly the windows of the plain path: a window starts at
        token ``first`` and the next at ``first + size - overlap``; after a moved edge, the next
        window starts at the first token at or after it."""
        points = CutPoints(text)
        bounds = [*offsets, len(text)]
        n = len(offsets)
        chunks: list[Chunk] = []
        first, start, reached = 0, 0, 0
        while True:
            last = min(first + self.size, n)
            end = len(text) if last == n else points.before(bounds[last], start)
            if end > reached and text[start:end].strip():  # a window inside the one before adds nothing
                chunks.append(Chunk(chunk_id(doc_id, len(chunks)), doc_id, start, end, text[start:end]))
            if end == len(text):
                break
            reached = max(reached, end)
            step = first + self.size - self.overlap
            nxt = points.before(bounds[step], start) if step < last else end  # step == last: no overlap
            nxt = min(nxt, end)
            first = step if nxt == bounds[step] else bisect_left(offsets, nxt)
            start = nxt
        return chunks
