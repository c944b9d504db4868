"""The chunked corpus as arrays: what retrievers index and what relevance judges."""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cached_property

import numpy as np

from bench import measure
from bench.chunking import Chunk, Chunker
from bench.chunking.chunk_texts import ChunkTexts
from bench.inputs.corpus import Corpus
from bench.inputs.lazy import Lazy

_AHEAD = 64  # documents handed to the chunking threads ahead of the one being collected


class ChunkTable:
    """Every chunk of a corpus under one chunker, in document order then start offset.

    Row ``i`` of every array describes chunk ``i``; ``doc`` holds the document's ordinal in
    ``doc_ids``. ``tie_order`` is each chunk's position in unit-id order: ranking ties are
    broken by unit id, so results never depend on index internals.

    Chunk texts are not kept in memory: a chunk is ``document.text[start:end]``, read when it is
    asked for (``texts``, ``iter_texts``, ``chunks``), so a table of millions of chunks is a few
    arrays. A chunked corpus keeps its documents' texts in a temporary file (``ChunkTexts``), so a
    chunk read out of order costs a read of its own bytes, not of its document.
    """

    def __init__(
        self,
        doc_ids: Sequence[str],
        doc: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
        ids: Sequence[str],
        document_text: Callable[[int], str],
        headings: Sequence[str] | None = None,
    ):
        self.doc_ids = tuple(doc_ids)
        self.doc = doc  # int32, per chunk
        self.start = start  # int64, per chunk
        self.end = end  # int64, per chunk
        self.ids = ids
        self.headings = headings  # markdown heading path per chunk, when the chunker gives one
        self._document_text = document_text  # document ordinal -> its text
        positions = np.arange(len(self.doc_ids))
        self.doc_first = np.searchsorted(doc, positions, side="left").astype(np.int64)  # len(chunks) if none
        self.doc_stop = np.searchsorted(doc, positions, side="right").astype(np.int64)

    @classmethod
    def build(cls, doc_ids: Iterable[str], chunks: Iterable[Chunk]) -> ChunkTable:
        """A table of chunks given with their texts."""
        doc_ids = tuple(doc_ids)
        ordinal = {d: i for i, d in enumerate(doc_ids)}
        chunks = sorted(chunks, key=lambda c: (ordinal[c.doc_id], c.start, c.end))
        texts = [c.text for c in chunks]
        table = cls(
            doc_ids,
            np.fromiter((ordinal[c.doc_id] for c in chunks), dtype=np.int32, count=len(chunks)),
            np.fromiter((c.start for c in chunks), dtype=np.int64, count=len(chunks)),
            np.fromiter((c.end for c in chunks), dtype=np.int64, count=len(chunks)),
            [c.id for c in chunks],
            _no_document_text,
            _headings(c.heading for c in chunks),
        )
        table.__dict__["_texts"] = texts
        return table

    @classmethod
    def chunk_corpus(
        cls, corpus: Corpus, chunker: Chunker, progress: Callable[[int], object] | None = None
    ) -> ChunkTable:
        """Chunk every document, one at a time; ``progress(n)`` is called after each document."""
        doc, start, end = array("i"), array("q"), array("q")
        ids: list[str] = []
        headings: list[str] = []
        kept: ChunkTexts | None = ChunkTexts()
        for ordinal, (text, found) in enumerate(_chunked(corpus, chunker)):
            chunks = sorted(found, key=lambda c: (c.start, c.end))
            doc.extend([ordinal] * len(chunks))
            start.extend(c.start for c in chunks)
            end.extend(c.end for c in chunks)
            ids.extend(c.id for c in chunks)
            headings.extend(c.heading for c in chunks)
            kept = _keep(kept, text, chunks)
            if progress:
                progress(1)
        table = cls(
            corpus.ids,
            np.frombuffer(doc, dtype=np.int32),
            np.frombuffer(start, dtype=np.int64),
            np.frombuffer(end, dtype=np.int64),
            ids,
            lambda i: corpus.at(i).text,
            _headings(headings),
        )
        if kept is not None:
            kept.close_writing()
            table.__dict__["_kept"] = kept
        return table

    def __len__(self) -> int:
        return len(self.ids)

    def text(self, i: int) -> str:
        texts = self.__dict__.get("_texts")
        if texts is not None:
            return texts[i]
        kept = self.__dict__.get("_kept")
        if kept is not None:
            return kept.text(i)
        return self._document_text(int(self.doc[i]))[int(self.start[i]) : int(self.end[i])]

    def iter_texts(self, lo: int = 0, hi: int | None = None) -> Iterator[str]:
        """Chunk texts in table order, each document read once."""
        hi = len(self) if hi is None else hi
        texts = self.__dict__.get("_texts")
        if texts is not None:
            yield from texts[lo:hi]
            return
        kept = self.__dict__.get("_kept")
        if kept is not None:
            yield from kept.run(lo, hi)
            return
        doc, start, end = self.doc, self.start, self.end
        i = lo
        while i < hi:
            d = int(doc[i])
            text = self._document_text(d)
            stop = min(hi, int(self.doc_stop[d]))
            for j in range(i, stop):
                yield text[int(start[j]) : int(end[j])]
            i = stop

    @property
    def texts(self) -> Lazy[str]:
        """Every chunk's text, read on demand (a sequence, not a list)."""
        return Lazy(len(self), self.text, self.iter_texts)

    @property
    def chunks(self) -> Lazy[Chunk]:
        return Lazy(len(self), self.chunk)

    def chunk(self, i: int) -> Chunk:
        return Chunk(
            self.ids[i],
            self.doc_ids[int(self.doc[i])],
            int(self.start[i]),
            int(self.end[i]),
            self.text(i),
            self.headings[i] if self.headings is not None else "",
        )

    @cached_property
    def tie_order(self) -> np.ndarray:
        return _rank_of(self.ids)

    @cached_property
    def doc_tie_order(self) -> np.ndarray:
        return _rank_of(list(self.doc_ids))

    def chunks_of(self, doc_ordinal: int) -> range:
        return range(int(self.doc_first[doc_ordinal]), int(self.doc_stop[doc_ordinal]))


def _chunked(corpus: Corpus, chunker: Chunker) -> Iterator[tuple[str, list[Chunk]]]:
    """Each document's text and chunks in corpus order: chunked ahead on a thread per core when the
    chunker is ``thread_safe`` (its tokenizer works with the GIL released), else one document at a
    time. Documents are read here, on the calling thread."""
    threads = measure.cores() if getattr(chunker, "thread_safe", False) else 1
    if threads < 2:
        yield from ((d.text, chunker.chunk(d.id, d.text)) for d in corpus.documents)
        return
    with ThreadPoolExecutor(threads) as pool:
        pending: deque[tuple[str, Future[list[Chunk]]]] = deque()
        for d in corpus.documents:
            pending.append((d.text, pool.submit(chunker.chunk, d.id, d.text)))
            if len(pending) >= _AHEAD:
                text, chunks = pending.popleft()
                yield text, chunks.result()
        while pending:
            text, chunks = pending.popleft()
            yield text, chunks.result()


def _keep(kept: ChunkTexts | None, text: str, chunks: list[Chunk]) -> ChunkTexts | None:
    """The document's text added to the kept chunk texts; None from now on once the temporary file
    cannot be written (a full disk, say): the texts are then sliced from their documents again."""
    if kept is None or not chunks:
        return kept
    try:
        kept.add(text, [c.start for c in chunks], [c.end for c in chunks])
    except OSError:
        return None
    return kept


def _headings(headings: Iterable[str]) -> list[str] | None:
    """Heading paths, or None when no chunk has one (every chunker but markdown)."""
    headings = list(headings)
    return headings if any(headings) else None


def _no_document_text(ordinal: int) -> str:
    raise LookupError("this table was built from chunks; its texts are the chunks' own")


def _rank_of(ids: Sequence[str]) -> np.ndarray:
    """Position of each id in sorted order (ids are unique)."""
    order = sorted(range(len(ids)), key=ids.__getitem__)
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids))
    return rank
