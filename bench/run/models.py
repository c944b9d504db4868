"""The models of a run: each loaded once, the retrievers over the shared cache (single models, and
pipelines made of them), and query latency."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from rich.console import Console

from bench import measure
from bench.chunking.table import ChunkTable
from bench.config import Candidate, Config
from bench.embedders import PASSAGE, Embedder, ModelSpec, load_embedder, preparation_note
from bench.embedders.cache import EmbeddingCache
from bench.embedders.engine import Engine, LocalEngine
from bench.retrieval.pipelines import FusedRetriever, RerankedRetriever
from bench.retrieval.rerankers import Reranker, load_reranker
from bench.retrieval.retrievers import BM25Retriever, DenseRetriever, Retriever


class ModelPool:
    """Loads each model's weights once per run and hands out retrievers over the shared cache."""

    def __init__(
        self,
        config: Config,
        cache: EmbeddingCache,
        models_dir: Path,
        console: Console,
        remeasure: bool = False,
        measured_at: str = "",
        engine: Engine | None = None,
    ) -> None:
        self.config, self.cache, self.models_dir, self.console = config, cache, models_dir, console
        self.remeasure, self.measured_at = remeasure, measured_at
        self.engine = engine or LocalEngine()
        self._embedders: dict[str, Embedder] = {}
        self._latency: dict[str, dict] = {}
        self._seconds: dict[str, tuple[list[float], str, bool]] = {}  # model -> per question, when, from cache
        self._rerankers: dict[str, Reranker] = {}

    def embedder(self, name: str) -> Embedder:
        if name not in self._embedders:
            spec = self.config.model(name)
            note = preparation_note(spec, self.models_dir)
            if note:
                self.console.print(note)
            self._embedders[name] = load_embedder(
                self.config.model(name), batch_size=self.config.batch_size, models_dir=self.models_dir
            )
        return self._embedders[name]

    def query_latency(self, cand: Candidate, retriever: Retriever, questions: list[str]) -> dict:
        """Query-encoding latency depends on the model and the machine, not on chunks, index or
        reranker. A fusion encodes each question with every part in turn: its time per question is
        the sum of its parts' times for that question, each measured (or kept) once per model."""
        name = cand.model
        if name not in self._latency:
            first = retriever.first if isinstance(retriever, RerankedRetriever) else retriever
            parts = first.parts if isinstance(first, FusedRetriever) else [first]
            timed = [self._query_seconds(p.model, r, questions) for p, r in zip(self.config.parts(cand), parts)]
            seconds = [sum(per_part) for per_part in zip(*(t[0] for t in timed))]
            self._latency[name] = {
                **measure.latency_summary("query_embed", seconds),
                "query_embed_measured": min(t[1] for t in timed),
                "query_embed_from_cache": all(t[2] for t in timed),
            }
        return self._latency[name]

    def _query_seconds(self, name: str, retriever: Retriever, questions: list[str]) -> tuple[list[float], str, bool]:
        """One model's encoding time per question, measured once per run.

        A model running in this process keeps its timings in the cache under this machine, the
        library versions and the questions, so a rerun need not load the model. An API's latency
        is always measured again: the service may have changed. ``remeasure`` measures everything
        again.
        """
        if name not in self._seconds:
            spec = self.config.model(name)
            keep = not spec.lexical and not spec.remote
            key = _latency_key(spec, questions)
            stored = self.cache.latency(spec.cache_key, key) if keep and not self.remeasure else None
            if stored is not None:
                self._seconds[name] = (stored[0], stored[1], True)
            else:
                seconds = _query_embed_seconds(retriever, questions)
                if keep and seconds:
                    self.cache.store_latency(spec.cache_key, key, seconds, self.measured_at)
                self._seconds[name] = (seconds, self.measured_at, False)
        return self._seconds[name]

    def passage_embedding(self, name: str):
        """``texts -> vectors`` through the cache, for chunkers that split by meaning."""
        embedder = self.embedder(name)
        return lambda texts: self.cache.embed(embedder, list(texts), PASSAGE, self.config.batch_size)[0]

    def reranker(self, name: str) -> Reranker:
        """A reranker, loaded once per run (a bi-encoder shares its model's weights and cached vectors)."""
        if name not in self._rerankers:
            spec = self.config.reranker(name)
            embedder = self.embedder(spec.model) if spec.model else None
            self._rerankers[name] = load_reranker(spec, embedder, self.cache, self.config.batch_size)
        return self._rerankers[name]

    def pipeline(self, cand: Candidate, parts: list[Retriever], table: ChunkTable) -> Retriever:
        """The candidate's retriever over its built single-model ``parts`` (``config.parts(cand)``)."""
        first = parts[0]
        if cand.fused:
            first = FusedRetriever(self.config.fusion(cand.model), self.config.fusion_settings(cand), parts, table)
        if cand.reranker:
            return RerankedRetriever(first, self.reranker(cand.reranker), cand.top, table)
        return first

    def retriever(self, cand: Candidate) -> Retriever:
        """A single-model first stage, not yet built."""
        spec = self.config.model(cand.model)
        if spec.lexical:
            return BM25Retriever(spec)
        return DenseRetriever(
            spec,
            self.config.index(cand.index),
            self.cache,
            self.config.batch_size,
            embedder=self.embedder(cand.model),
            engine=self.engine,
        )


def _query_embed_seconds(retriever: Retriever, questions: list[str]) -> list[float]:
    """Each question encoded alone, live (never from the vector cache), after a warm-up call."""
    if not questions:
        return []
    retriever.encode_live(questions[:1])
    seconds = []
    for text in questions:
        t0 = time.perf_counter()
        retriever.encode_live([text])
        seconds.append(time.perf_counter() - t0)
    return seconds


def _latency_key(spec: ModelSpec, questions: list[str]) -> bytes:
    """What a latency measurement depends on: the model as configured, this machine, the
    libraries that run it and the questions timed."""
    identity = {
        "spec": repr(spec),
        "machine": measure.machine(),
        "versions": measure.versions(),
        "questions": questions,
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).digest()
