"""How long embedding the whole corpus takes, for the hours to index the team's corpus and the
compute it costs. A model that runs in this process is timed on a sample of chunks, on one thread, by
its CPU time, and the corpus takes that many CPU seconds shared by the machine's cores: other work on
the machine does not inflate it, as it inflates the wall time of a build. The speed is kept per model
and machine (as query latency is), unless it was timed on a busy machine. An API model's time is what
its build took, when the build sent it the corpus."""

from __future__ import annotations

import functools
import hashlib
import json

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
    """Seconds to embed all of ``table`` with ``spec`` on this machine: 0 for BM25; for a model in this
    process, CPU seconds per token (kept from an earlier run, else timed now on ``SAMPLE`` chunks) times
    the corpus's tokens, over the machine's cores; for an API, this build's time when it embedded the
    corpus (extrapolated to the rows the cache served), else None: timing it would bill it."""
    if build.dims is None or build.chunk_tokens is None:
        return 0.0
    tokens = float(np.sum(build.chunk_tokens))
    if spec.remote or tokens <= 0:
        embedded, cached = build.embed.embedded, build.embed.cached
        return build.embed_seconds * (embedded + cached) / embedded if embedded and build.embed_seconds > 0 else None
    if spec.name not in models.passage_speed:  # sampled (or read) once per model and run, for every chunking
        key = _speed_key(spec, models.config.batch_size)
        stored = None if models.remeasure else models.cache.latency(spec.cache_key, key)
        if stored is not None and stored[0]:
            models.passage_speed[spec.name] = stored[0][0]
            models.passage_speed_kept[spec.name] = stored[1]
        else:
            with phases(f"time passages {spec.name}"):
                sampled = _sample_cpu_seconds_per_token(models, spec, build, table)
            if sampled is None:
                return None
            models.passage_speed[spec.name], timings = sampled
            models.timing.add(f"passage encoding {spec.name}", timings)
            if not timings.busy:
                models.cache.store_latency(spec.cache_key, key, [sampled[0]], models.measured_at)
    return models.passage_speed[spec.name] * tokens / measure.cores()


def _sample_cpu_seconds_per_token(
    models: ModelPool, spec: ModelSpec, build: BuildStats, table: ChunkTable
) -> tuple[float, measure.Timings] | None:
    """CPU seconds per token of embedding ``SAMPLE`` chunks spread over the table, in the run's batches,
    on one thread, after a one-text warm-up."""
    assert build.chunk_tokens is not None
    n = len(table)
    if not n:
        return None
    picks = np.unique(np.linspace(0, n - 1, min(SAMPLE, n)).astype(int))
    texts = [table.text(int(i)) for i in picks]
    embedder = models.embedder(spec.name)
    batch = models.config.batch_size
    batches = [texts[lo : lo + batch] for lo in range(0, len(texts), batch)]
    timings = measure.time_on_one_thread(
        functools.partial(embedder.embed, texts[:1], PASSAGE),
        [functools.partial(embedder.embed, b, PASSAGE) for b in batches],
    )
    sampled = float(np.sum(build.chunk_tokens[picks]))
    return (sum(timings.cpu) / sampled, timings) if sampled > 0 else None


def _speed_key(spec: ModelSpec, batch_size: int) -> bytes:
    """What a model's corpus embedding speed depends on: the model as configured, its batches, this
    machine and the libraries that run it."""
    identity = {
        "measure": "passage CPU seconds per token, one thread",
        "spec": repr(spec),
        "batch_size": batch_size,
        "machine": measure.machine(),
        "versions": measure.versions(),
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).digest()
