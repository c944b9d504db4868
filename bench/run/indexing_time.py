"""How long embedding the whole corpus takes, for the hours to index the team's corpus and the
compute it costs. A build that embedded the corpus measured it; a build served from the embedding
cache did not, so the speed is kept per model and machine (as query latency is) and, for a model
that runs in this process and was never timed here, measured on a sample of chunks."""

from __future__ import annotations

import hashlib
import json
import time

import numpy as np

from bench import measure
from bench.chunking.table import ChunkTable
from bench.embedders import PASSAGE
from bench.embedders.base import ModelSpec
from bench.retrieval.retrievers import BuildStats
from bench.run.models import ModelPool

SAMPLE = 32  # chunks: enough to time a batch, few enough to take seconds even for a slow model


def corpus_embed_seconds(
    models: ModelPool, spec: ModelSpec, build: BuildStats, table: ChunkTable, phases: measure.Phases
) -> float | None:
    """Seconds to embed all of ``table`` with ``spec``: 0 for BM25; this build's time when it embedded
    at least ``SAMPLE`` chunks (extrapolated to the rows the cache served); else the speed kept from an
    earlier run on this machine; else a sample timed now. None for an API model none of whose corpus
    this run sent: timing it would bill it."""
    if build.dims is None or build.chunk_tokens is None:
        return 0.0
    tokens = float(np.sum(build.chunk_tokens))
    embedded, cached = build.embed.embedded, build.embed.cached
    measured = build.embed_seconds * (embedded + cached) / embedded if embedded and build.embed_seconds > 0 else None
    keep = not spec.remote and tokens > 0
    key = _speed_key(spec, models.config.batch_size)
    if measured is not None and embedded >= min(SAMPLE, len(table)):
        if keep:
            models.cache.store_latency(spec.cache_key, key, [measured / tokens], models.measured_at)
        return measured
    stored = models.cache.latency(spec.cache_key, key) if keep and not models.remeasure else None
    if stored is not None and stored[0]:
        return stored[0][0] * tokens
    if measured is not None or not keep:
        return measured
    with phases(f"time passages {spec.name}"):
        per_token = _sample_seconds_per_token(models, spec, build, table)
    if per_token is None:
        return None
    models.cache.store_latency(spec.cache_key, key, [per_token], models.measured_at)
    return per_token * tokens


def _sample_seconds_per_token(models: ModelPool, spec: ModelSpec, build: BuildStats, table: ChunkTable) -> float | None:
    """Seconds per token of embedding ``SAMPLE`` chunks spread over the table, in the run's batches,
    after a one-text warm-up."""
    assert build.chunk_tokens is not None
    n = len(table)
    if not n:
        return None
    picks = np.unique(np.linspace(0, n - 1, min(SAMPLE, n)).astype(int))
    texts = [table.text(int(i)) for i in picks]
    embedder = models.embedder(spec.name)
    embedder.embed(texts[:1], PASSAGE)
    batch = models.config.batch_size
    t0 = time.perf_counter()
    for lo in range(0, len(texts), batch):
        embedder.embed(texts[lo : lo + batch], PASSAGE)
    seconds = time.perf_counter() - t0
    sampled = float(np.sum(build.chunk_tokens[picks]))
    return seconds / sampled if sampled > 0 else None


def _speed_key(spec: ModelSpec, batch_size: int) -> bytes:
    """What a model's corpus embedding speed depends on: the model as configured, its batches, this
    machine and the libraries that run it."""
    identity = {
        "measure": "passage seconds per token",
        "spec": repr(spec),
        "batch_size": batch_size,
        "machine": measure.machine(),
        "versions": measure.versions(),
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).digest()
