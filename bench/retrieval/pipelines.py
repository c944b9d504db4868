"""Retrievers made of retrievers: a hybrid first stage (several first stages fused) and a reranked
one (a first stage whose top N a reranker re-scores). Both speak the ``Retriever`` protocol, so a
pipeline is asked, scored and timed exactly as a single model is.

Their parts are built elsewhere (``bench.run``) and may serve other candidates too: these
classes never build or release them.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.chunking.table import ChunkTable
from bench.embedders import PASSAGE, ModelSpec
from bench.embedders.cache import EmbedStats
from bench.retrieval.fusion import FusionSpec, Ranked
from bench.retrieval.rerankers import Reranker
from bench.retrieval.retrievers import BuildStats, Retriever


@dataclass
class FusedQueries:
    """Each part's encoded questions, and the fused lists already computed (per question, per depth)."""

    parts: list[Any]
    fused: dict[tuple[int, int], Ranked] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.parts[0])

    def __getitem__(self, rows: slice) -> FusedQueries:
        return FusedQueries([part[rows] for part in self.parts])


class FusedRetriever:
    """Each part searched ``spec.depth`` deep (deeper when more is asked) and the lists fused with
    one of the spec's variants. A unit outside every part's list scores 0, as in ranx."""

    def __init__(self, spec: FusionSpec, settings: dict, parts: Sequence[Retriever], table: ChunkTable) -> None:
        self.fusion, self.settings, self.parts = spec, settings, list(parts)
        self.tie_order = table.tie_order
        self.lexical = all(p.lexical for p in self.parts)
        dense = [p for p in self.parts if not p.lexical]
        self.spec: ModelSpec = (dense or self.parts)[0].spec  # the part a model reads text with, if any

    def build(self, table: ChunkTable, progress: Callable[[int], None] | None = None) -> BuildStats:
        raise TypeError("a fused retriever's parts are built on their own; nothing is left to build")

    @property
    def query_stats(self) -> EmbedStats | None:
        stats = [p.query_stats for p in self.parts if p.query_stats is not None]
        if not stats:
            return None
        return EmbedStats(embedded=sum(s.embedded for s in stats), cached=sum(s.cached for s in stats))

    @property
    def query_billed(self) -> int | None:
        billed = [p.query_billed for p in self.parts if p.query_billed is not None]
        return sum(billed) if billed else None

    def encode(self, questions: list[str]) -> FusedQueries:
        return FusedQueries([p.encode(questions) for p in self.parts])

    def encode_live(self, questions: list[str]) -> FusedQueries:
        return FusedQueries([p.encode_live(questions) for p in self.parts])

    def _fused(self, queries: FusedQueries, q: int, n: int) -> Ranked:
        depth = max(self.fusion.depth, n)
        key = (q, depth)
        if key not in queries.fused:
            lists = [p.search(part[q : q + 1], depth)[0] for p, part in zip(self.parts, queries.parts)]
            queries.fused[key] = self.fusion.fuse(lists, self.settings, None, self.tie_order)
        return queries.fused[key]

    def search(self, queries: FusedQueries, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
        out = []
        for q in range(len(queries)):
            units, scores = self._fused(queries, q, n)
            out.append((units[:n], scores[:n]))
        return out

    def score(self, queries: FusedQueries, q: int, chunks: np.ndarray) -> np.ndarray:
        units, scores = self._fused(queries, q, 0)
        where = dict(zip(units.tolist(), scores.tolist()))
        return np.array([where.get(int(c), 0.0) for c in chunks], dtype=np.float64)

    def set_search(self, params: dict) -> None:
        """The parts keep the query settings they were given; fusion has none of its own."""

    def recall_against_exact(self, queries: FusedQueries, n: int) -> float | None:
        return None  # each part's own candidate reports how well its index finds its exact neighbours

    def count_tokens(self, texts: Sequence[str], role: str = PASSAGE) -> np.ndarray | None:
        counts = [c for p in self.parts if (c := p.count_tokens(texts, role)) is not None]
        return np.sum(counts, axis=0) if counts else None

    def close(self) -> None:
        """The parts are released by whoever built them."""

    @contextlib.contextmanager
    def one_query_at_a_time(self) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for p in self.parts:
                stack.enter_context(p.one_query_at_a_time())
            yield


class OverFirstStage:
    """A pipeline over a first stage built elsewhere, which may serve other candidates too: what the
    pipeline does not change (its build, its queries' cache and bills, its query settings, its token
    counts) is the first stage's, and releasing the first stage is whoever built it's."""

    first: Retriever

    def build(self, table: ChunkTable, progress: Callable[[int], None] | None = None) -> BuildStats:
        raise TypeError(f"{type(self).__name__}'s first stage is built on its own; nothing is left to build")

    @property
    def query_stats(self) -> EmbedStats | None:
        return self.first.query_stats

    @property
    def query_billed(self) -> int | None:
        return self.first.query_billed

    def set_search(self, params: dict) -> None:
        self.first.set_search(params)

    def count_tokens(self, texts: Sequence[str], role: str = PASSAGE) -> np.ndarray | None:
        return self.first.count_tokens(texts, role)

    def close(self) -> None:
        """The first stage is released by whoever built it."""


@dataclass
class RerankQueries:
    """The first stage's encoded questions and the questions' text, which a reranker reads."""

    first: Any
    texts: list[str]

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, rows: slice) -> RerankQueries:
        return RerankQueries(self.first[rows], self.texts[rows])


class RerankedRetriever(OverFirstStage):
    """A first stage's top ``top`` re-scored by a reranker and put in its order; results past
    ``top`` (when more are asked) follow in the first stage's order, with no score.

    While ``one_query_at_a_time`` is active (what latency is measured in) the reranker scores live,
    with nothing cached, and ``rerank_seconds`` collects the wall and CPU seconds of each search's
    reranking."""

    def __init__(self, first: Retriever, reranker: Reranker, top: int, table: ChunkTable) -> None:
        self.first, self.reranker, self.top, self.table = first, reranker, top, table
        self.tie_order = table.tie_order
        self.spec, self.lexical = first.spec, first.lexical
        self.rerank_seconds: list[tuple[float, float]] = []  # (wall, CPU) per live search
        self._live = False
        # one reranker serves several pipelines of a run: count this pipeline's calls only
        self._calls_before = (reranker.searches, reranker.billed_tokens)

    @property
    def searches(self) -> int:
        """Scoring calls this pipeline made (each one a billed search for an API)."""
        return self.reranker.searches - self._calls_before[0]

    @property
    def billed_tokens(self) -> int:
        return self.reranker.billed_tokens - self._calls_before[1]

    def encode(self, questions: list[str]) -> RerankQueries:
        return RerankQueries(self.first.encode(questions), list(questions))

    def encode_live(self, questions: list[str]) -> RerankQueries:
        return RerankQueries(self.first.encode_live(questions), list(questions))

    def _rescore(self, question: str, units: np.ndarray) -> np.ndarray:
        texts = [self.table.text(int(u)) for u in units]
        if not self._live:
            return np.asarray(self.reranker.score(question, texts), dtype=np.float64)
        t0, c0 = time.perf_counter(), time.process_time()
        scores = np.asarray(self.reranker.score_live(question, texts), dtype=np.float64)
        self.rerank_seconds.append((time.perf_counter() - t0, time.process_time() - c0))
        return scores

    def search(self, queries: RerankQueries, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
        out = []
        for question, (units, _) in zip(queries.texts, self.first.search(queries.first, max(n, self.top))):
            head, tail = units[: self.top], units[self.top : n]
            scores = self._rescore(question, head) if len(head) else np.empty(0)
            order = np.lexsort((self.tie_order[head], -scores))
            ranked = np.concatenate([head[order], tail]).astype(np.int64)
            out.append((ranked[:n], np.concatenate([scores[order], np.full(len(tail), np.nan)])[:n]))
        return out

    def score(self, queries: RerankQueries, q: int, chunks: np.ndarray) -> np.ndarray:
        """The reranker's score of each chunk, surfaced by the first stage or not."""
        if not len(chunks):
            return np.empty(0)
        return np.asarray(
            self.reranker.score(queries.texts[q], [self.table.text(int(c)) for c in chunks]), dtype=np.float64
        )

    def recall_against_exact(self, queries: RerankQueries, n: int) -> float | None:
        return self.first.recall_against_exact(queries.first, n)

    @contextlib.contextmanager
    def one_query_at_a_time(self) -> Iterator[None]:
        self.rerank_seconds, self._live = [], True
        try:
            with self.first.one_query_at_a_time():
                yield
        finally:
            self._live = False
