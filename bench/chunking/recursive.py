"""Recursive paragraph / line / sentence / clause / word splitting, sized in cl100k tokens.

Works like LangChain's RecursiveCharacterTextSplitter, but on character spans of the document
from start to finish: pieces always tile the document, so every chunk is an exact slice
``text[start:end]`` and nothing is re-located by searching for strings.
"""

from __future__ import annotations

import re
from typing import Any

from bench.chunking.base import Chunk, chunk_id, strip_span
from bench.chunking.boundaries import CLAUSE, SENTENCE, CutPoints, joins_previous, plain
from bench.chunking.fixed_tokens import validate_size_overlap
from bench.chunking.tokens import count_tokens, token_char_offsets

# Coarsest first. A span is cut right after each match, so a separator stays with the text
# before it and the pieces of a span always cover it exactly. After the last, words of Chinese
# and Japanese (no spaces between them) are found by jieba; then token windows.
SEPARATORS: tuple[Any, ...] = (
    re.compile(r"\n\s*\n"),  # blank lines: paragraphs (and a markdown heading from its body)
    re.compile(r"\n"),  # lines
    SENTENCE,  # sentence ends: . ! ? and a space, 。！？ , a space between Thai phrases
    CLAUSE,  # clause ends of CJK: ，；、： (and , ; : between CJK characters)
    re.compile(r"\s+"),  # words
)
_WORDS = len(SEPARATORS)  # the level of unspaced words


class RecursiveChunker:
    """Chunks of at most ``size`` tokens that break at the coarsest boundary that makes them fit.

    A span over ``size`` tokens is cut at every occurrence of the coarsest separator it contains;
    pieces still too big are cut with the next separator, and text with none of them falls back
    to hard token windows. Adjacent pieces are then merged greedily in document order, with the
    token count of the real merged text as the limit. With ``overlap``, a new chunk starts with
    the trailing whole pieces of the previous chunk that total at most ``overlap`` tokens.

    Chinese and Japanese text, with no spaces, is cut at clauses (，；、：) and then between
    words (jieba's), never inside one unless a word alone exceeds ``size``. Token windows, the
    last resort, end on grapheme cluster boundaries (a letter with its marks, an emoji sequence).

    Chunks are stripped of surrounding whitespace. The only chunk that can exceed ``size`` is a
    single grapheme cluster that alone needs more tokens (possible only when ``size`` < 4, or for
    a letter with many marks).
    """

    def __init__(self, size: int, overlap: int = 0) -> None:
        validate_size_overlap("recursive", size, overlap)
        self.size = size
        self.overlap = overlap

    def __repr__(self) -> str:
        return f"RecursiveChunker(size={self.size}, overlap={self.overlap})"

    def chunk(self, doc_id: str, text: str) -> list[Chunk]:
        points = None if plain(text) else CutPoints(text)
        pieces = self._split(text, 0, len(text), 0, points)
        chunks: list[Chunk] = []
        first, prev_end = 0, 0
        while first < len(pieces):
            last = self._extend(text, pieces, first, max(first, prev_end))
            start, end = strip_span(text, pieces[first][0], pieces[last][1])
            if start < end and not (chunks and chunks[-1].start <= start and end <= chunks[-1].end):
                chunks.append(Chunk(chunk_id(doc_id, len(chunks)), doc_id, start, end, text[start:end]))
            if last == len(pieces) - 1:
                break
            first, prev_end = self._overlap_start(text, pieces, first, last), last + 1
        return chunks

    def _tokens(self, text: str, start: int, end: int) -> int:
        """Tokens of the span as it would be emitted, i.e. without surrounding whitespace."""
        start, end = strip_span(text, start, end)
        return count_tokens(text[start:end]) if start < end else 0

    def _split(self, text: str, start: int, end: int, level: int, points: CutPoints | None) -> list[tuple[int, int]]:
        """Pieces tiling ``[start, end)``, each within ``size`` tokens unless it is one grapheme cluster."""
        if start >= end:
            return []
        if self._tokens(text, start, end) <= self.size:
            return [(start, end)]
        for depth in range(level, _WORDS + 1):
            cuts = self._cuts(text, start, end, depth, points)
            if cuts:
                pieces: list[tuple[int, int]] = []
                for s, e in zip([start, *cuts], [*cuts, end]):
                    pieces.extend(self._split(text, s, e, depth + 1, points))
                return pieces
        return self._windows(text, start, end, self.size, points)

    @staticmethod
    def _cuts(text: str, start: int, end: int, depth: int, points: CutPoints | None) -> list[int]:
        """Offsets inside ``(start, end)`` where level ``depth`` cuts: after each separator, or
        between words of unspaced text; never inside a grapheme cluster."""
        if depth == _WORDS:
            return [] if points is None else points.words(start, end)
        cuts = [m.end() for m in SEPARATORS[depth].finditer(text, start, end) if start < m.end() < end]
        if points is not None:
            cuts = [c for c in cuts if not joins_previous(text, c)]
        return cuts

    def _windows(
        self, text: str, start: int, end: int, per_window: int, points: CutPoints | None
    ) -> list[tuple[int, int]]:
        """Last resort: cut every ``per_window`` tokens, smaller where re-tokenising a window grows
        it; a cut inside a grapheme cluster moves back to the cluster's start."""
        _, offsets = token_char_offsets(text[start:end])
        cuts = sorted({start + o for o in offsets[per_window::per_window]} - {start})
        if points is not None:
            snapped: list[int] = []
            for c in cuts:
                c = points.before(c, snapped[-1] if snapped else start)
                if c < end and (not snapped or c > snapped[-1]):
                    snapped.append(c)
            cuts = snapped
        pieces: list[tuple[int, int]] = []
        for s, e in zip([start, *cuts], [*cuts, end]):
            single = e - s == 1 if points is None else points.single_cluster(s, e)
            if single or self._tokens(text, s, e) <= self.size:
                pieces.append((s, e))
            elif per_window > 1:
                pieces.extend(self._windows(text, s, e, per_window // 2, points))
            elif points is None:
                pieces.extend((i, i + 1) for i in range(s, e))
            else:
                bounds = points.cluster_starts(s, e)
                pieces.extend(zip(bounds, bounds[1:]))
        return pieces

    def _extend(self, text: str, pieces: list[tuple[int, int]], first: int, known: int) -> int:
        """Index of the last piece of a chunk starting at ``first``; ``pieces[first..known]`` fits.

        Exponential then binary search keeps re-tokenising to a few passes over each chunk.
        """
        start = pieces[first][0]

        def fits(last: int) -> bool:
            return self._tokens(text, start, pieces[last][1]) <= self.size

        good, step = known, 1
        while good + step < len(pieces) and fits(good + step):
            good, step = good + step, step * 2
        bad = min(good + step, len(pieces))
        while bad - good > 1:
            mid = (good + bad) // 2
            good, bad = (mid, bad) if fits(mid) else (good, mid)
        return good

    def _overlap_start(self, text: str, pieces: list[tuple[int, int]], first: int, last: int) -> int:
        """First piece of the next chunk: carry trailing pieces worth at most ``overlap`` tokens.

        The carried pieces must also leave room for the next new piece, so the next chunk always
        reaches past ``last``.
        """
        nxt = last + 1
        if self.overlap == 0:
            return nxt
        begin = nxt
        for k in range(last, first, -1):
            if self._tokens(text, pieces[k][0], pieces[last][1]) > self.overlap:
                break
            if self._tokens(text, pieces[k][0], pieces[nxt][1]) <= self.size:
                begin = k
        return begin
