"""What lets retrieval scale to millions of chunks, checked at small sizes against the plain path:
the streaming BM25 index against bm25s itself, blocked exact search and index building, and
memory-mapped vectors searched like vectors in memory."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import bm25s
import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import bench.embedders.cache
import bench.retrieval.faiss_index
from bench.chunking import FixedTokenChunker
from bench.chunking.table import ChunkTable
from bench.embedders import MODELS, load_embedder
from bench.embedders.cache import EmbeddingCache
from bench.inputs.corpus import load_corpus
from bench.retrieval.bm25 import BM25Index, Tokenizer
from bench.retrieval.exact_search import exact_top
from bench.retrieval.faiss_index import INDEXES
from bench.retrieval.retrievers import DenseRetriever
from tests.helpers import WORDS, random_text

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
    rows = [{"id": f"doc{i:02d}", "text": random_text(rng, 60)} for i in range(30)]
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    table = ChunkTable.chunk_corpus(load_corpus(tmp_path / "c.jsonl"), FixedTokenChunker(12))
    spec = MODELS.get("hash")
    queries = load_embedder(spec).embed([random_text(rng, 4) for _ in range(20)], "query")

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
