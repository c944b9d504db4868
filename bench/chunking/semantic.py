"""Semantic chunking (Greg Kamradt's method): cut where consecutive sentences change topic.

Each sentence is embedded together with ``buffer`` neighbouring sentences on each side; the
cosine distance between consecutive sentence groups is computed, and the document is cut after
every sentence whose distance to the next exceeds the ``breakpoint_percentile``-th percentile of
this document's distances. Groups are then kept within ``size`` tokens and tiny ones merged into
a neighbour. All boundaries are sentence spans of the document, never searched-for strings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from bench.chunking.base import Chunk, chunk_id
from bench.chunking.recursive import RecursiveChunker
from bench.chunking.sentences import sentence_spans
from bench.chunking.tokens import count_tokens
from bench.errors import BenchError

Embed = Callable[[list[str]], "np.ndarray"]


class SemanticChunker:
    """Chunks that break where the embedding of the running text jumps.

    ``embed`` maps a list of texts to one row per text (L2-normalised rows expected; rows are
    normalised again here, and an all-zero row counts as unrelated to everything). It is called
    once per document with more than one sentence, with one text per sentence: the document
    slice from ``buffer`` sentences before to ``buffer`` sentences after it.

    Steps: sentences (:func:`~bench.chunking.sentences.sentence_spans`); cosine distance
    ``1 - cos`` between consecutive groups; cut after sentence ``i`` where that distance is
    strictly above the ``breakpoint_percentile``-th percentile (numpy's linear interpolation) of
    the document's distances — ties never cut, so 2-sentence documents and uniform distances
    give one group; groups over ``size`` cl100k tokens are cut by :class:`RecursiveChunker`
    (no overlap); then each piece under ``min_tokens`` tokens is merged into the neighbour across
    the smaller distance (a cut made by the size rule counts as distance 0, the previous
    neighbour on ties), provided the merged chunk stays within ``size``; a piece with no
    neighbour it fits with stays small.

    A one-sentence document gives one chunk (several if that sentence exceeds ``size``). Chunks
    never overlap, are stripped of surrounding whitespace, and hold every non-whitespace
    character. Deterministic whenever ``embed`` is.
    """

    def __init__(
        self,
        embed: Embed,
        size: int = 512,
        breakpoint_percentile: float = 90.0,
        buffer: int = 1,
        min_tokens: int = 32,
    ) -> None:
        if not callable(embed):
            raise BenchError(f"semantic chunker: embed must be a function of a list of texts, got {embed!r}")
        for name, value, minimum in (("size", size, 1), ("buffer", buffer, 0), ("min_tokens", min_tokens, 0)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise BenchError(f"semantic chunker: {name} must be a whole number, got {value!r}")
            if value < minimum:
                raise BenchError(f"semantic chunker: {name} must be at least {minimum}, got {name}={value}")
        if min_tokens > size:
            raise BenchError(
                f"semantic chunker: min_tokens must not exceed size, got size={size}, min_tokens={min_tokens}"
            )
        p = breakpoint_percentile
        if isinstance(p, bool) or not isinstance(p, int | float) or not math.isfinite(p) or not 0 <= p <= 100:
            raise BenchError(f"semantic chunker: breakpoint_percentile must be a number from 0 to 100, got {p!r}")
        self.embed = embed
        self.size = size
        self.breakpoint_percentile = float(p)
        self.buffer = buffer
        self.min_tokens = min_tokens
        self._splitter = RecursiveChunker(size)

    def __repr__(self) -> str:
        return (
            f"SemanticChunker(size={self.size}, breakpoint_percentile={self.breakpoint_percentile}, "
            f"buffer={self.buffer}, min_tokens={self.min_tokens})"
        )

    def distances(self, text: str, sentences: Sequence[tuple[int, int]]) -> np.ndarray:
        """Cosine distance between the buffered groups of sentence ``i`` and ``i + 1``."""
        n = len(sentences)
        groups = [
            text[sentences[max(0, i - self.buffer)][0] : sentences[min(n - 1, i + self.buffer)][1]] for i in range(n)
        ]
        vectors = np.asarray(self.embed(groups), dtype=np.float64)
        if vectors.ndim != 2 or vectors.shape[0] != n:
            raise BenchError(
                f"semantic chunker: the embedder returned shape {vectors.shape} for {n} texts; "
                "expected one row per text"
            )
        if not np.isfinite(vectors).all():
            raise BenchError("semantic chunker: the embedder returned NaN or infinite values")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
        cosine = np.einsum("ij,ij->i", unit[:-1], unit[1:])
        return 1.0 - np.clip(cosine, -1.0, 1.0)

    def chunk(self, doc_id: str, text: str) -> list[Chunk]:
        sentences = sentence_spans(text)
        if not sentences:
            return []
        # Groups of consecutive sentences: (first, last) indices; cut[i] = distance after sentence i.
        cuts: list[int] = []
        dist: np.ndarray = np.zeros(0)
        if len(sentences) > 1:
            dist = self.distances(text, sentences)
            threshold = np.percentile(dist, self.breakpoint_percentile)
            cuts = [i for i, d in enumerate(dist) if d > threshold]
        # Pieces: (start, end, distance to the previous piece).
        pieces: list[tuple[int, int, float]] = []
        for first, last in zip([0, *(c + 1 for c in cuts)], [*cuts, len(sentences) - 1]):
            start, end = sentences[first][0], sentences[last][1]
            left = float(dist[first - 1]) if first > 0 else 0.0
            if count_tokens(text[start:end]) <= self.size:
                pieces.append((start, end, left))
                continue
            for k, c in enumerate(self._splitter.chunk("", text[start:end])):
                pieces.append((start + c.start, start + c.end, left if k == 0 else 0.0))
        pieces = self._merge_small(text, pieces)
        return [Chunk(chunk_id(doc_id, i), doc_id, s, e, text[s:e]) for i, (s, e, _) in enumerate(pieces)]

    def _merge_small(self, text: str, pieces: list[tuple[int, int, float]]) -> list[tuple[int, int, float]]:
        """Merge each piece under ``min_tokens`` into the closer neighbour it fits with."""
        pieces = list(pieces)
        tokens = [count_tokens(text[s:e]) for s, e, _ in pieces]
        i = 0
        while i < len(pieces):
            if tokens[i] >= self.min_tokens or len(pieces) == 1:
                i += 1
                continue
            options: list[tuple[float, int, int, int]] = []  # (distance, side, left index, tokens)
            if i > 0:
                n = count_tokens(text[pieces[i - 1][0] : pieces[i][1]])
                if n <= self.size:
                    options.append((pieces[i][2], 0, i - 1, n))
            if i + 1 < len(pieces):
                n = count_tokens(text[pieces[i][0] : pieces[i + 1][1]])
                if n <= self.size:
                    options.append((pieces[i + 1][2], 1, i, n))
            if not options:
                i += 1
                continue
            _, _, j, n = min(options)
            pieces[j : j + 2] = [(pieces[j][0], pieces[j + 1][1], pieces[j][2])]
            tokens[j : j + 2] = [n]
            i = j
        return pieces
