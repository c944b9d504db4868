"""The embedding cache: vectors, token counts and latency samples kept per model; large vector
tables memory-mapped; several writers, in one process or several, sharing one cache."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

import bench.embedders.cache
from bench.embedders import MODELS, PASSAGE, load_embedder
from bench.embedders.cache import EmbeddingCache
from bench.embedders.no_cache import NoCache
from tests.helpers import random_text

# --- memory-mapped vectors ----------------------------------------------------------------------------


def test_large_vector_tables_are_memory_mapped_unlinked_and_identical(tmp_path: Path, monkeypatch):
    rng = random.Random(7)
    texts = [random_text(rng, rng.randint(1, 12)) for _ in range(300)]  # repeats included
    embedder = load_embedder(MODELS.get("hash"))
    expected = embedder.embed(texts, PASSAGE)
    in_memory, _ = EmbeddingCache(tmp_path / "a").embed(embedder, texts, PASSAGE, batch_size=16)
    monkeypatch.setattr(bench.embedders.cache, "IN_MEMORY_BYTES", 0)
    cache = EmbeddingCache(tmp_path / "b")
    cold, cold_stats = cache.embed(embedder, texts, PASSAGE, batch_size=16)
    warm, warm_stats = cache.embed(embedder, texts, PASSAGE, batch_size=16)
    uncached, _ = NoCache().embed(embedder, texts, PASSAGE, batch_size=16)
    assert isinstance(cold, np.memmap) and isinstance(warm, np.memmap) and isinstance(uncached, np.memmap)
    for got in (in_memory, cold, warm, uncached):
        assert np.array_equal(got, expected)
    assert cold_stats.embedded == len(set(texts)) and warm_stats.embedded == 0 and warm_stats.cached == len(texts)
    assert list((tmp_path / "b" / "tmp").iterdir()) == []  # the scratch files are already unlinked


def test_two_caches_appending_to_one_model_file_never_share_rows(tmp_path: Path):
    embedder = load_embedder(MODELS.get("hash"))
    first, second = EmbeddingCache(tmp_path), EmbeddingCache(tmp_path)
    a = [f"alpha {i}" for i in range(40)]
    b = [f"beta {i}" for i in range(40)]
    first.embed(embedder, a[:20], PASSAGE, batch_size=7)
    second.embed(embedder, b, PASSAGE, batch_size=9)
    first.embed(embedder, a, PASSAGE, batch_size=7)
    found = EmbeddingCache(tmp_path).lookup(
        embedder.spec.cache_key, embedder.dims, [bench.embedders.cache.text_key(PASSAGE, t) for t in a + b]
    )
    assert len(found) == 80
    expected = embedder.embed(a + b, PASSAGE)
    assert all(np.array_equal(found[bench.embedders.cache.text_key(PASSAGE, t)], v) for t, v in zip(a + b, expected))


def test_token_counts_are_counted_once_and_kept_beside_the_vectors(tmp_path):
    embedder = load_embedder(MODELS.get("hash"))
    calls = []
    real_count = embedder.count_tokens
    embedder.count_tokens = lambda texts: calls.append(list(texts)) or real_count(texts)
    cache = EmbeddingCache(tmp_path)
    texts = ["one two three", "four five", "one two three", "six"]
    first = cache.count_tokens(embedder, texts)
    assert calls == [["one two three", "four five", "six"]]  # each distinct text once
    again = cache.count_tokens(embedder, [*texts, "seven eight"])
    assert calls[1:] == [["seven eight"]]
    assert first.tolist() == real_count(texts).tolist() == again[:4].tolist()
    assert NoCache().count_tokens(embedder, texts).tolist() == first.tolist()


def test_latency_samples_round_trip_and_other_keys_miss(tmp_path):
    cache = EmbeddingCache(tmp_path)
    assert cache.latency("m", b"k") is None
    cache.store_latency("m", b"k", [0.001, 0.0025], "2026-01-01T00:00:00+00:00")
    assert cache.latency("m", b"k") == ([0.001, 0.0025], "2026-01-01T00:00:00+00:00")
    assert cache.latency("m", b"other") is None and cache.latency("other model", b"k") is None


def test_two_processes_can_fill_one_cache_at_once(tmp_path):
    """Concurrent writers wait for each other's batches; both get every vector, identical to a fresh embed."""
    import subprocess
    import sys

    from tests.helpers import REPO

    script = (
        "import sys, numpy as np\n"
        "from bench.embedders.cache import EmbeddingCache\n"
        "from bench.embedders import MODELS, load_embedder\n"
        "texts = [f'text number {i} about topic {i % 7}' for i in range(3000)]\n"
        "v, stats = EmbeddingCache(sys.argv[1]).embed(load_embedder(MODELS.get('hash')), texts, 'passage', 50)\n"
        "np.save(sys.argv[2], v)\n"
    )
    env = {"PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "cache"), str(tmp_path / f"v{i}.npy")], env=env)
        for i in range(2)
    ]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    first, second = np.load(tmp_path / "v0.npy"), np.load(tmp_path / "v1.npy")
    texts = [f"text number {i} about topic {i % 7}" for i in range(3000)]
    fresh = load_embedder(MODELS.get("hash")).embed(texts, "passage")
    assert np.array_equal(first, fresh) and np.array_equal(second, fresh)
