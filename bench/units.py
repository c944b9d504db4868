"""The chunked corpus as arrays: what retrievers index and what relevance judges."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from bench.chunking import Chunk, Chunker
from bench.corpus import Corpus


@dataclass(frozen=True)
class ChunkTable:
    """Every chunk of a corpus under one chunker, in document order then start offset.

    Row ``i`` of every array describes chunk ``i``; ``doc`` holds the document's ordinal in
    ``doc_ids``. ``tie_order`` is each chunk's position in unit-id order: ranking ties are
    broken by unit id, so results never depend on index internals.
    """

    chunks: tuple[Chunk, ...]
    doc_ids: tuple[str, ...]
    doc: np.ndarray  # int32, per chunk
    start: np.ndarray  # int64, per chunk
    end: np.ndarray  # int64, per chunk
    doc_first: np.ndarray  # int64, per document: index of its first chunk (len(chunks) if none)
    doc_stop: np.ndarray  # int64, per document: one past its last chunk

    @classmethod
    def build(cls, doc_ids: Iterable[str], chunks: Iterable[Chunk]) -> ChunkTable:
        doc_ids = tuple(doc_ids)
        ordinal = {d: i for i, d in enumerate(doc_ids)}
        chunks = tuple(sorted(chunks, key=lambda c: (ordinal[c.doc_id], c.start, c.end)))
        doc = np.fromiter((ordinal[c.doc_id] for c in chunks), dtype=np.int32, count=len(chunks))
        start = np.fromiter((c.start for c in chunks), dtype=np.int64, count=len(chunks))
        end = np.fromiter((c.end for c in chunks), dtype=np.int64, count=len(chunks))
        ids = np.arange(len(doc_ids))
        doc_first = np.searchsorted(doc, ids, side="left").astype(np.int64)
        doc_stop = np.searchsorted(doc, ids, side="right").astype(np.int64)
        return cls(chunks, doc_ids, doc, start, end, doc_first, doc_stop)

    @classmethod
    def chunk_corpus(cls, corpus: Corpus, chunker: Chunker, progress=None) -> ChunkTable:
        """Chunk every document; ``progress(n)`` is called after each document."""
        chunks: list[Chunk] = []
        for d in corpus.documents:
            chunks.extend(chunker.chunk(d.id, d.text))
            if progress:
                progress(1)
        return cls.build((d.id for d in corpus.documents), chunks)

    def __len__(self) -> int:
        return len(self.chunks)

    @cached_property
    def ids(self) -> list[str]:
        return [c.id for c in self.chunks]

    @cached_property
    def texts(self) -> list[str]:
        return [c.text for c in self.chunks]

    @cached_property
    def tie_order(self) -> np.ndarray:
        return _rank_of(self.ids)

    @cached_property
    def doc_tie_order(self) -> np.ndarray:
        return _rank_of(list(self.doc_ids))

    def chunks_of(self, doc_ordinal: int) -> range:
        return range(int(self.doc_first[doc_ordinal]), int(self.doc_stop[doc_ordinal]))


def _rank_of(ids: list[str]) -> np.ndarray:
    """Position of each id in sorted order (ids are unique)."""
    order = sorted(range(len(ids)), key=ids.__getitem__)
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids))
    return rank
