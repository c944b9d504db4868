"""What lets a run scale to millions of chunks, checked at small sizes against the plain path:
streaming corpora, chunk tables without texts, memory-mapped vectors, blocked exact search and
index building, and the streaming BM25 index against bm25s itself."""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from pathlib import Path

import bm25s
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import bench.embedders.cache
import bench.retrieval.faiss_index
from bench.chunking import FixedTokenChunker, MarkdownSectionChunker, RecursiveChunker
from bench.chunking.table import ChunkTable
from bench.embedders import MODELS, PASSAGE, load_embedder
from bench.embedders.cache import EmbeddingCache, NoCache
from bench.inputs.corpus import load_corpus
from bench.retrieval.bm25 import BM25Index, Tokenizer
from bench.retrieval.exact_search import exact_top
from bench.retrieval.faiss_index import INDEXES
from bench.retrieval.retrievers import DenseRetriever
from tests.conftest import finished_runs, run_cli, write_project

WORDS = [
    "backup",
    "nightly",
    "laptop",
    "memory",
    "vacation",
    "days",
    "on-call",
    "rotation",
    "the",
    "and",
    "of",
    "disk",
    "région",
    "日本",
    "policy",
    "leave",
    "a",
    "is",
]


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


# --- BM25: the streaming index against bm25s -------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(WORDS), max_size=30), min_size=1, max_size=60),
    st.lists(st.lists(st.sampled_from([*WORDS, "unknown"]), max_size=6), min_size=1, max_size=10),
)
def test_bm25_scores_equal_bm25s_to_the_last_bit(docs, queries):
    tokenize = Tokenizer()
    tokens = [tokenize(" ".join(d)) for d in docs]
    assume(any(tokens))  # bm25s cannot index a corpus without a single term (see the test below)
    ours = BM25Index()
    ours.build(tokenize.counts(" ".join(d)) for d in docs)
    theirs = bm25s.BM25()
    theirs.index(tokens, show_progress=False)
    for q in queries:
        q_tokens = tokenize(" ".join(q))
        expected = (
            np.asarray(theirs.get_scores(q_tokens), dtype=np.float32)
            if q_tokens
            else np.zeros(len(docs), dtype=np.float32)
        )
        assert np.array_equal(ours.scores(q_tokens), expected)


def test_bm25_over_documents_without_terms_scores_zero():
    index = BM25Index()
    index.build(Counter() for _ in range(3))
    assert index.scores(["anything"]).tolist() == [0.0, 0.0, 0.0] and index.scores([]).tolist() == [0.0] * 3


def test_bm25_index_reports_progress_and_size():
    seen = []
    index = BM25Index()
    index.build((Counter([w]) for w in ["a", "b", "a"] * 7), progress=seen.append, every=10)
    assert sum(seen) == 21 and seen == [10, 10, 1]
    assert index.nbytes == index.data.nbytes + index.indices.nbytes + index.indptr.nbytes > 0


# --- corpora read on demand -------------------------------------------------------------------------


def _reference_fingerprint(docs: dict[str, str]) -> str:
    h = hashlib.sha256()
    for doc_id in sorted(docs):
        h.update(doc_id.encode() + b"\0" + docs[doc_id].encode() + b"\0")
    return h.hexdigest()


@pytest.mark.parametrize("sorted_ids", [True, False])
def test_a_jsonl_corpus_is_read_back_on_demand_with_the_same_fingerprint(tmp_path: Path, sorted_ids: bool):
    rng = random.Random(3)
    docs = {f"d{i:03d}": _text(rng, rng.randint(1, 40)) + "\nline two" for i in range(50)}
    docs["crlf"] = "one\r\ntwo"
    ids = sorted(docs) if sorted_ids else list(reversed(sorted(docs)))
    path = tmp_path / "c.jsonl"
    path.write_text("\n\n".join(json.dumps({"id": i, "text": docs[i]}) for i in ids) + "\n", encoding="utf-8")
    corpus = load_corpus(path)
    docs["crlf"] = "one\ntwo"
    assert list(corpus.ids) == sorted(docs)
    assert [d.text for d in corpus.documents] == [docs[i] for i in sorted(docs)]
    assert corpus.get("d017").text == docs["d017"] and corpus.documents[-1].id == "d049"
    assert corpus.fingerprint == _reference_fingerprint(docs)


def test_a_folder_corpus_reads_each_file_when_asked(tmp_path: Path):
    for name, text in {"a.md": "alpha", "sub/b.txt": "beta"}.items():
        (tmp_path / "c" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "c" / name).write_text(text)
    corpus = load_corpus(tmp_path / "c")
    (tmp_path / "c" / "a.md").write_text("changed")  # read now, not at load time
    assert corpus.get("a.md").text == "changed"


# --- chunk tables without texts ---------------------------------------------------------------------


@pytest.mark.parametrize("chunker", [FixedTokenChunker(16, 4), RecursiveChunker(20), MarkdownSectionChunker(24)])
def test_a_chunked_corpus_slices_the_same_texts_the_chunker_made(tmp_path: Path, chunker):
    rng = random.Random(5)
    rows = [
        {"id": f"doc{i}", "text": f"# Title {i}\n\n{_text(rng, 50)}\n\n## Part\n\n{_text(rng, 30)}"} for i in range(12)
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    corpus = load_corpus(path)
    table = ChunkTable.chunk_corpus(corpus, chunker)
    made = [c for d in corpus.documents for c in sorted(chunker.chunk(d.id, d.text), key=lambda c: (c.start, c.end))]
    assert [c.text for c in made] == list(table.texts) == list(table.iter_texts())
    assert list(table.chunks) == made  # ids, offsets, texts and markdown headings alike
    assert list(table.iter_texts(3, 11)) == [c.text for c in made[3:11]] == table.texts[3:11]
    assert table.texts[-1] == made[-1].text


def test_chunk_sizes_of_a_very_large_table_come_from_an_even_sample(tmp_path: Path, monkeypatch):
    import bench.chunking.sizes
    from bench.chunking.sizes import chunk_sizes
    from bench.chunking.tokens import count_tokens

    rng = random.Random(9)
    rows = [{"id": f"doc{i:02d}", "text": _text(rng, rng.randint(5, 80))} for i in range(40)]
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    table = ChunkTable.chunk_corpus(load_corpus(tmp_path / "c.jsonl"), FixedTokenChunker(10))
    exact = chunk_sizes(table)
    assert exact["tokens_sampled"] is None and exact["tokens"] == sum(count_tokens(t) for t in table.texts)
    monkeypatch.setattr(bench.chunking.sizes, "SIZE_SAMPLE", 25)
    sampled = chunk_sizes(table)
    rows_measured = np.unique(np.linspace(0, len(table) - 1, 25).astype(np.int64))
    sizes = [count_tokens(table.text(int(i))) for i in rows_measured]
    assert sampled["tokens_sampled"] == len(sizes) == sum(sampled["token_histogram"]["counts"])
    assert sampled["tokens"] == round(np.mean(sizes) * len(table)) and sampled["chunks"] == len(table)
    assert sampled["char_sizes"] == exact["char_sizes"]  # characters are always exact


# --- memory-mapped vectors ----------------------------------------------------------------------------


def test_large_vector_tables_are_memory_mapped_unlinked_and_identical(tmp_path: Path, monkeypatch):
    rng = random.Random(7)
    texts = [_text(rng, rng.randint(1, 12)) for _ in range(300)]  # repeats included
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


# --- blocked exact search and index building ------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 120), st.integers(1, 30), st.integers(1, 17), st.integers(0, 2**32 - 1))
def test_blocked_exact_search_equals_one_pass_ties_included(n, top, block, seed):
    rng = np.random.default_rng(seed)
    vectors = rng.integers(-2, 3, size=(n, 4)).astype(np.float32)  # small integers: many exact ties
    queries = rng.integers(-2, 3, size=(5, 4)).astype(np.float32)
    assert np.array_equal(exact_top(vectors, queries, top, block=block), exact_top(vectors, queries, top))
    scores = queries @ vectors.T
    for row, ids in zip(scores, exact_top(vectors, queries, top, block=block)):
        reference = sorted(range(n), key=lambda i: (-row[i], i))[:top]
        assert ids.tolist() == reference


def test_indexes_built_block_by_block_from_a_sample_search_like_one_pass(monkeypatch):
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(3000, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = vectors[:50] + 0.01
    whole = INDEXES.get("flat").build(vectors)
    monkeypatch.setattr(bench.retrieval.faiss_index, "ADD_BLOCK", 700)
    monkeypatch.setattr(bench.retrieval.faiss_index, "TRAIN_MAX", 1000)
    blocks = INDEXES.get("flat").build(vectors)
    assert blocks.ntotal == whole.ntotal == 3000
    assert np.array_equal(blocks.search(queries, 10)[1], whole.search(queries, 10)[1])
    ivf = INDEXES.get("ivf").build(vectors)  # trained on 1,000 sampled vectors, all 3,000 added
    assert ivf.ntotal == 3000 and ivf.is_trained


def test_a_memory_mapped_table_gives_the_same_rankings(tmp_path: Path, monkeypatch):
    rng = random.Random(11)
    rows = [{"id": f"doc{i:02d}", "text": _text(rng, 60)} for i in range(30)]
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    table = ChunkTable.chunk_corpus(load_corpus(tmp_path / "c.jsonl"), FixedTokenChunker(12))
    spec = MODELS.get("hash")
    queries = load_embedder(spec).embed([_text(rng, 4) for _ in range(20)], "query")

    def rankings(cache_dir: Path):
        retriever = DenseRetriever(spec, INDEXES.get("hnsw"), EmbeddingCache(cache_dir))
        retriever.build(table)
        return retriever, retriever.search(queries, 10), retriever.recall_against_exact(queries, 10)

    plain, plain_rankings, plain_recall = rankings(tmp_path / "plain")
    monkeypatch.setattr(bench.embedders.cache, "IN_MEMORY_BYTES", 0)
    mapped, mapped_rankings, mapped_recall = rankings(tmp_path / "mapped")
    assert isinstance(mapped.vectors, np.memmap) and not isinstance(plain.vectors, np.memmap)
    assert np.array_equal(mapped.vectors, plain.vectors) and mapped_recall == plain_recall
    for (u1, s1), (u2, s2) in zip(plain_rankings, mapped_rankings):
        assert np.array_equal(u1, u2) and np.array_equal(s1, s2)


# --- what a run records of its phases ---------------------------------------------------------------------


def test_a_run_records_each_phase_with_time_and_memory(tmp_path: Path):
    config = write_project(tmp_path)
    result = run_cli("run", str(config), cwd=tmp_path, reports=True)
    assert result.returncode == 0, result.stderr
    [run] = finished_runs(tmp_path / "results")
    phases = json.loads((run / "manifest.json").read_text())["phases"]
    names = [p["phase"] for p in phases]
    assert names[:3] == ["load corpus", "load goldset", "check lock"]
    for expected in (
        "chunk tok24",
        "judge relevance",
        "embed hash/tok24",
        "index hash/tok24/flat",
        "index bm25/tok24/inverted",
        "search hash/tok24/flat",
        "recall vs exact hash/tok24/flat",
        "measure chunk sizes",
        "write results",
    ):
        assert expected in names
    assert names[-1] == "reports"
    assert all(p["seconds"] >= 0 and p["rss_mb"] > 0 and p["peak_rss_mb"] >= p["rss_mb"] * 0.5 for p in phases)
