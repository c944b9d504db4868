"""Retrievers: FAISS against brute force, BM25 against its own full scores, ties broken by unit id."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.chunking import Chunk, chunk_id
from bench.chunking.table import ChunkTable
from bench.embedders import MODELS, load_embedder
from bench.embedders.cache import EmbeddingCache
from bench.embedders.no_cache import NoCache
from bench.retrieval.faiss_index import INDEXES
from bench.retrieval.retrievers import BM25Retriever, DenseRetriever, top_n

TEXTS = {
    "b.md": ["nightly database backups", "laptop memory and disk", "vacation days per year"],
    "a.md": ["nightly database backups", "on-call rotation on monday"],
}


def _table(texts=TEXTS) -> ChunkTable:
    chunks = []
    for doc, parts in texts.items():
        pos = 0
        for i, part in enumerate(parts):
            chunks.append(Chunk(chunk_id(doc, i), doc, pos, pos + len(part), part))
            pos += len(part) + 1
    return ChunkTable.build(sorted(texts), chunks)


def test_top_n_breaks_ties_by_tie_order():
    scores = np.array([1.0, 2.0, 2.0, 2.0, 0.5])
    tie_order = np.array([0, 3, 1, 2, 4])
    assert top_n(scores, tie_order, 2).tolist() == [2, 3]
    assert top_n(scores, tie_order, 10).tolist() == [2, 3, 1, 0, 4]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=40), st.integers(1, 45), st.randoms(use_true_random=False))
def test_top_n_equals_a_full_sort(values, n, rnd):
    scores = np.array(values, dtype=float)
    tie_order = np.array(rnd.sample(range(len(values)), len(values)))
    expected = sorted(range(len(values)), key=lambda i: (-scores[i], tie_order[i]))[:n]
    assert top_n(scores, tie_order, n).tolist() == expected


def test_dense_search_matches_brute_force_and_orders_ties_by_id(tmp_path):
    table = _table()
    retriever = DenseRetriever(MODELS.get("hash"), INDEXES.get("flat"), EmbeddingCache(tmp_path))
    build = retriever.build(table)
    assert build.dims == 256 and build.index_bytes >= len(table) * 256 * 4
    queries = retriever.encode(["database backups", "monday rotation", "zzz unrelated"])
    [(units, scores), *_] = retriever.search(queries, 5)
    # the two identical chunks tie; "a.md#0000" sorts before "b.md#0000"
    ids = [table.chunks[u].id for u in units]
    assert ids[:2] == ["a.md#0000", "b.md#0000"] and scores[0] == scores[1]
    for qi, (units, scores) in enumerate(retriever.search(queries, 5)):
        brute = retriever.vectors @ queries[qi]
        assert np.allclose(np.sort(brute)[::-1][:5], scores, atol=1e-6)
        assert np.allclose(retriever.score(queries, qi, units), scores, atol=1e-6)


def test_dense_vectors_come_from_the_cache_the_second_time(tmp_path):
    table = _table()
    spec = MODELS.get("hash")
    first = DenseRetriever(spec, INDEXES.get("flat"), EmbeddingCache(tmp_path)).build(table)
    second_retriever = DenseRetriever(spec, INDEXES.get("flat"), EmbeddingCache(tmp_path))
    second = second_retriever.build(table)
    assert first.embed.embedded == len(table) - 1  # the duplicate text is embedded once
    assert second.embed.embedded == 0 and second.embed.cached == len(table)
    fresh = DenseRetriever(spec, INDEXES.get("flat"), NoCache())
    fresh.build(table)
    assert np.array_equal(second_retriever.vectors, fresh.vectors)


def test_a_damaged_or_truncated_vector_file_is_recomputed(tmp_path):
    table = _table()
    spec = MODELS.get("hash")
    reference = load_embedder(spec).embed(table.texts, "passage")
    DenseRetriever(spec, INDEXES.get("flat"), EmbeddingCache(tmp_path)).build(table)
    [vector_file] = tmp_path.glob("*.f32")
    data = bytearray(vector_file.read_bytes())
    data[4 * spec.dims : 8 * spec.dims] = bytes(4 * spec.dims)  # row 1 zeroed
    vector_file.write_bytes(data)
    again = DenseRetriever(spec, INDEXES.get("flat"), EmbeddingCache(tmp_path))
    assert again.build(table).embed.embedded == 1
    assert np.array_equal(again.vectors, reference)

    with open(vector_file, "r+b") as f:  # the last two rows lost, as after a crash mid-write
        f.truncate(vector_file.stat().st_size - 8 * spec.dims)
    third = DenseRetriever(spec, INDEXES.get("flat"), EmbeddingCache(tmp_path))
    assert third.build(table).embed.embedded == 2
    assert np.array_equal(third.vectors, reference)


def test_bm25_retrieves_only_matching_chunks_with_exact_scores():
    table = _table()
    retriever = BM25Retriever(MODELS.get("bm25"))
    retriever.build(table)
    queries = retriever.encode(["database backups", "the of and", "laptop"])
    results = retriever.search(queries, 10)
    units, scores = results[0]
    assert sorted(table.chunks[u].id for u in units) == ["a.md#0000", "b.md#0000"]
    assert [table.chunks[u].id for u in units] == ["a.md#0000", "b.md#0000"]  # tie broken by id
    assert len(results[1][0]) == 0  # only stopwords: nothing matches
    assert [table.chunks[u].id for u in results[2][0]] == ["b.md#0001"]
    for qi, (units, scores) in enumerate(results):
        assert np.allclose(retriever.score(queries, qi, units), scores)
        assert np.all(scores > 0)
