"""Dense (embedder + vector store) and lexical (BM25) retrieval behind one protocol.

Rankings are deterministic: equal scores are ordered by unit id (``ChunkTable.tie_order``).
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import numpy as np

from bench.chunking.table import ChunkTable
from bench.embedders import PASSAGE, QUERY, Embedder, ModelSpec, load_embedder
from bench.embedders.cache import EmbeddingCache, EmbedStats, drop_pages
from bench.embedders.engine import Engine
from bench.errors import BenchError
from bench.measure import rss_mb
from bench.retrieval import bm25, compressed
from bench.retrieval.bm25 import BM25Index, Tokenizer
from bench.retrieval.exact_search import exact_top, recall_against_exact
from bench.retrieval.faiss_index import RESCORE, IndexSpec
from bench.retrieval.index_kinds import check_index_dims
from bench.retrieval.stores.base import StoreBuild, VectorStore
from bench.retrieval.stores.faiss_store import FaissStore
from bench.text.languages import detect_mix

# Extra neighbours fetched from the store so ties at the cut-off are ordered by unit id, not by
# whichever tied vector the index happened to visit first.
TIE_MARGIN = 16


@dataclass
class BuildStats:
    dims: int | None = None
    embed_seconds: float = 0.0
    index_build_seconds: float = 0.0
    index_build_cpu_seconds: float = 0.0  # every thread of the process: what the build costs in compute
    index_bytes: int | None = None
    factory: str | None = None  # the FAISS factory string actually built, or the store's index and its settings
    store: StoreBuild | None = None  # a dense model's vector store as built
    embed: EmbedStats = field(default_factory=EmbedStats)
    chunk_tokens: np.ndarray | None = None  # per chunk, in the model's own tokenizer (dense models)
    billed_tokens: int | None = None  # what an API reported for this build's embedding calls
    index_memory_mb: float | None = None  # resident memory the index build added (its structures)
    rss_mb: dict[str, float] = field(default_factory=dict)  # resident memory after each step of the build
    tokenizer: str | None = None  # a lexical index's terms as built: language, segmenter, stopwords, stemmer


# What ``Retriever.encode`` makes and ``search``/``score`` take: a float32 matrix for a dense model,
# token lists for BM25. Only the retriever that made them reads them.
Queries = Any


class Retriever(Protocol):
    spec: ModelSpec
    lexical: bool  # ranks by term matches (BM25) rather than by vectors

    @property
    def query_stats(self) -> EmbedStats | None:
        """The questions of the last ``encode``: embedded or from the cache."""

    @property
    def query_billed(self) -> int | None:
        """Tokens an API reported for the last ``encode``."""

    def build(self, table: ChunkTable, progress: Callable[[int], None] | None = None) -> BuildStats:
        """Index every chunk of the table."""

    def encode(self, questions: list[str]) -> Queries:
        """Turn questions into whatever ``search`` and ``score`` take (from the cache when it can)."""

    def encode_live(self, questions: list[str]) -> Queries:
        """As ``encode``, always computed now: what latency is measured on."""

    def search(self, queries: Queries, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per query, up to ``n`` chunk indices and their scores, best first."""

    def score(self, queries: Queries, q: int, chunks: np.ndarray) -> np.ndarray:
        """Exact scores of the given chunks for query ``q``, retrieved or not."""

    def set_search(self, params: dict) -> None:
        """Apply one query setting of the index (no rebuild)."""

    def recall_against_exact(self, queries: Queries, n: int) -> float | None:
        """Share of the exact top-n this retriever finds; None when it is exact."""

    def count_tokens(self, texts: Sequence[str], role: str = PASSAGE) -> np.ndarray | None:
        """Tokens per text in the model's own tokenizer, as it reads them in ``role`` (its prefix
        included); None when no model reads the texts (BM25)."""

    def one_query_at_a_time(self) -> contextlib.AbstractContextManager[None]:
        """Search as a service answers: one query per request, on one thread (what latency times)."""

    def close(self) -> None:
        """Give back what the build holds outside this process (a server's table, a folder)."""


class _Billed(Protocol):
    billed_tokens: int  # tokens an API has reported so far


def _billed(embedder: Embedder) -> int:
    """Tokens an API embedder has been billed so far; only for one seen to carry ``billed_tokens``."""
    return cast(_Billed, embedder).billed_tokens


def top_n(scores: np.ndarray, tie_order: np.ndarray, n: int) -> np.ndarray:
    """Indices of the ``n`` best scores, descending, ties by ``tie_order``."""
    if n < len(scores):
        # Keep everything tied with the n-th best so the tie-break sees all of them.
        cut = np.partition(scores, len(scores) - n)[len(scores) - n]
        candidates = np.flatnonzero(scores >= cut)
    else:
        candidates = np.arange(len(scores))
    order = np.lexsort((tie_order[candidates], -scores[candidates]))
    return candidates[order][:n]


class DenseRetriever:
    """An embedder's vectors in a vector store (FAISS unless another is given). ``vectors`` are the
    model's, as cached; ``indexed`` what the store holds them as (truncated to the spec's ``dims``
    and renormalised, or the same). Queries stay the model's vectors until ``search`` and ``score``
    bring them to the index's width. The store's hits are put in order here, ties by unit id."""

    def __init__(
        self,
        spec: ModelSpec,
        index_spec: IndexSpec,
        cache: EmbeddingCache,
        batch_size: int = 64,
        embedder: Embedder | None = None,
        engine: Engine | None = None,
        store: VectorStore | None = None,
    ) -> None:
        self.spec = spec
        self.engine = engine
        self.index_spec = index_spec
        self.store = store or FaissStore(index_spec)
        self.cache = cache
        self.batch_size = batch_size
        self.embedder = embedder or load_embedder(spec, batch_size=batch_size)
        self.query_stats: EmbedStats | None = None
        self.query_billed: int | None = None
        self.rescore = 0  # binary: Hamming neighbours rescored with the float vectors (0: none)
        self.search_settings: Mapping[str, object] = {}  # the query setting as the store reports it back
        self._exact_found: tuple[tuple, np.ndarray] | None = None  # the last exact top-n, by its queries

    lexical = False

    def build(self, table: ChunkTable, progress: Callable[[int], None] | None = None) -> BuildStats:
        self.tie_order = table.tie_order
        self._exact_found = None
        t0 = time.perf_counter()
        billed_before = getattr(self.embedder, "billed_tokens", None)
        self.vectors, embed_stats = self.cache.embed(
            self.embedder, table.texts, PASSAGE, self._call_size, progress, engine=self.engine
        )
        billed = None if billed_before is None else _billed(self.embedder) - billed_before
        drop_pages(self.vectors)  # written to the mapped file; the index build reads them back in blocks
        t1, c1, server1 = time.perf_counter(), time.process_time(), self.store.server_cpu_seconds()
        rss = {"embed": rss_mb()}
        check_index_dims(self.index_spec, self.spec.name, self.vectors.shape[1])
        self.indexed = self._index_width(self.vectors)  # a truncated copy counts toward the index's memory
        built = self.store.build(self.indexed)
        drop_pages(self.vectors)
        rss["index"] = rss_mb()
        t2, c2, server2 = time.perf_counter(), time.process_time(), self.store.server_cpu_seconds()
        server_cpu = server2 - server1 if server1 is not None and server2 is not None else 0.0
        self.query_stats = EmbedStats()
        chunk_tokens = self.count_tokens(table.texts)
        rss["count tokens"] = rss_mb()
        return BuildStats(
            dims=self.indexed.shape[1],
            embed_seconds=t1 - t0,
            index_build_seconds=t2 - t1,
            index_build_cpu_seconds=c2 - c1 + server_cpu,  # a server's loading and index build count too
            index_bytes=built.bytes,
            factory=built.description,
            store=built,
            embed=embed_stats,
            chunk_tokens=chunk_tokens,
            billed_tokens=billed,
            # what the build added to this process; a server's memory is not read
            index_memory_mb=round(rss["index"] - rss["embed"], 1) if self.store.in_process else None,
            rss_mb=rss,
        )

    def count_tokens(self, texts: Sequence[str], role: str = PASSAGE) -> np.ndarray:
        """Tokens per text in the model's own tokenizer (kept in the cache beside the vectors)."""
        return self.cache.count_tokens(self.embedder, texts, role)

    @property
    def _call_size(self) -> int:
        """Texts per embedding call: an API embedder batches and parallelises within one call."""
        return getattr(self.embedder, "call_size", self.batch_size)

    def set_search(self, params: dict) -> None:
        """Apply one query setting (efSearch, nprobe, ef_search, rescore …) to the built index."""
        self.rescore = int(params.get(RESCORE, 0))
        self.search_settings = self.store.configure({k: v for k, v in params.items() if k != RESCORE})

    def close(self) -> None:
        """Give back what the store holds (a server's table, a folder)."""
        self.store.close()

    def _index_width(self, vectors: np.ndarray) -> np.ndarray:
        """Vectors as the index compares them: the first ``dims`` components, renormalised, when set."""
        dims = self.index_spec.dims
        return vectors if dims is None else compressed.truncate(vectors, dims)

    def _queries(self, queries: np.ndarray) -> np.ndarray:
        return self._index_width(np.ascontiguousarray(queries, dtype=np.float32))

    def encode(self, questions: list[str]) -> np.ndarray:
        before = getattr(self.embedder, "billed_tokens", None)
        vectors, self.query_stats = self.cache.embed(self.embedder, questions, QUERY, self._call_size)
        self.query_billed = None if before is None else _billed(self.embedder) - before
        return vectors

    def encode_live(self, questions: list[str]) -> np.ndarray:
        return self.embedder.embed(questions, QUERY)

    def recall_against_exact(self, queries: np.ndarray, n: int) -> float | None:
        """Share of the exact top-n that this index's top-n finds (None for exact indexes). The
        reference is always the model's full float vectors: a truncated index is measured on what
        the truncation loses, not against itself."""
        if self.index_spec.exact and self.index_spec.dims is None:
            return None
        approx = [units for units, _ in self.search(queries, n)]
        queries = np.asarray(queries, dtype=np.float32)
        recall = recall_against_exact(approx, self._exact(queries, n), self.vectors, queries)
        drop_pages(self.vectors)
        return recall

    def _exact(self, queries: np.ndarray, n: int) -> np.ndarray:
        """The exact top-n of ``queries``, found once for every query setting of the index (a scan
        of every vector: the query settings share the build, so they share this too)."""
        key = (n, queries.shape, queries.tobytes())
        if self._exact_found is None or self._exact_found[0] != key:
            self._exact_found = (key, exact_top(self.vectors, queries, min(n, len(self.vectors))))
        return self._exact_found[1]

    def search(self, queries: np.ndarray, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """The store's nearest, best first, ties by unit id; binary codes with ``rescore`` have that
        many (at least ``n``) of their nearest reordered by inner product with the float vectors."""
        queries = self._queries(queries)
        want = max(n, self.rescore)
        hits = self.store.search(queries, min(want + TIE_MARGIN, len(self.indexed)))
        results = []
        for query, (ids, scores) in zip(queries, hits):
            order = np.lexsort((self.tie_order[ids], -scores))[:want]
            ids, scores = ids[order].astype(np.int64), scores[order].astype(np.float64)
            if self.rescore:
                ids, scores = compressed.rescore(self.indexed, query, ids, n, self.tie_order)
            results.append((ids, scores))
        return results

    def score(self, queries: np.ndarray, q: int, chunks: np.ndarray) -> np.ndarray:
        """The scores ``search`` gives: Hamming similarity for binary codes not rescored, else inner product."""
        query = self._queries(queries[q : q + 1])
        if self.index_spec.binary and not self.rescore:
            codes = compressed.sign_bits(self.indexed[chunks])
            dist = compressed.hamming_distances(codes, compressed.sign_bits(query)[0])
            return compressed.hamming_similarity(dist, self.indexed.shape[1])
        return (self.indexed[chunks] @ query[0]).astype(np.float64)

    def one_query_at_a_time(self) -> contextlib.AbstractContextManager[None]:
        return self.store.one_query_at_a_time()


# Each chunk table's main language, found once however many lexical models are built over it.
_MAIN_LANGUAGE: weakref.WeakKeyDictionary[ChunkTable, str] = weakref.WeakKeyDictionary()


def main_language(table: ChunkTable) -> str:
    """The main language (ISO 639-1, "und" when none is clear) of a few hundred chunks spread over ``table``."""
    found = _MAIN_LANGUAGE.get(table)
    if found is None:
        found = _MAIN_LANGUAGE[table] = detect_mix(table.texts).main
    return found


class BM25Retriever:
    """Lucene BM25 (k1=1.5, b=0.75, bm25s's scores) over lower-cased words and the pieces of unspaced
    scripts (bench.text.words: the spec's ``tokenizer``), minus the stopwords of the spec's
    ``language``, Snowball-stemmed when its ``stemmer`` names one. With ``language = "auto"`` the
    language is the main one of the chunks (bench.text.languages), found when the index is built;
    ``tokenizer`` then says what was built.

    Only chunks sharing at least one term with the question are retrieved, as in any
    inverted index; so a ranking may be shorter than asked.
    """

    lexical = True
    query_stats: EmbedStats | None = None  # no model: nothing is embedded or billed
    query_billed: int | None = None

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self._tokens = Tokenizer(
            spec.option("stemmer"), spec.option("tokenizer", bm25.AUTO), spec.option("language", bm25.AUTO)
        )
        if spec.revision and spec.revision != self._tokens.revision:
            # Results are told apart by revision: one that misnames the tokenizer would mix them.
            raise BenchError(
                f"model {spec.name!r}: revision {spec.revision!r} does not describe its tokenizer; "
                f"a BM25 model's revision is {self._tokens.revision!r}"
            )

    @property
    def tokenizer(self) -> str:
        """The terms as built (or, before, as configured): language, segmenter, stopwords and stemmer."""
        return self._tokens.resolved.summary

    def build(self, table: ChunkTable, progress: Callable[[int], None] | None = None) -> BuildStats:
        self.tie_order = table.tie_order
        t0, c0, before = time.perf_counter(), time.process_time(), rss_mb()
        if self._tokens.language == bm25.AUTO:
            self._tokens.use(main_language(table))
        self.bm25 = BM25Index()
        self.bm25.build(map(self._tokens.counts, table.iter_texts()), progress)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
        return BuildStats(
            dims=None,
            embed_seconds=0.0,
            index_build_seconds=elapsed,
            index_build_cpu_seconds=cpu,
            index_bytes=self.bm25.nbytes,
            index_memory_mb=round(rss_mb() - before, 1),
            tokenizer=self.tokenizer,
        )

    def encode(self, questions: list[str]) -> list[list[str]]:
        return [self._tokens(q) for q in questions]

    encode_live = encode

    def set_search(self, params: dict) -> None:
        """BM25 has no query settings."""

    def recall_against_exact(self, queries: Queries, n: int) -> None:
        return None  # BM25 scores every matching chunk: it is exact

    def count_tokens(self, texts: Sequence[str], role: str = PASSAGE) -> None:
        return None

    @contextmanager
    def one_query_at_a_time(self) -> Iterator[None]:
        yield  # one thread already

    def close(self) -> None:
        """Nothing is held outside this process."""

    def _all_scores(self, tokens: list[str]) -> np.ndarray:
        return self.bm25.scores(tokens).astype(np.float64)

    def search(self, queries: list[list[str]], n: int) -> list[tuple[np.ndarray, np.ndarray]]:
        results = []
        for tokens in queries:
            # Only the chunks sharing a term with the question are ranked (scores are never negative):
            # a question of rare terms sorts its few matches, not every chunk tied at zero.
            scores = self.bm25.scores(tokens)
            matched = np.flatnonzero(scores > 0)
            values = scores[matched].astype(np.float64)
            best = top_n(values, self.tie_order[matched], n)
            results.append((matched[best].astype(np.int64), values[best]))
        return results

    def score(self, queries: list[list[str]], q: int, chunks: np.ndarray) -> np.ndarray:
        return self._all_scores(queries[q])[chunks]
