"""A candidate at the team's scale (bench.evaluation.scale): every monthly figure worked out by hand for
a dense model, BM25, a reranked pipeline that calls an API and a fusion of an API model with BM25."""

from __future__ import annotations

import pytest

from bench.core.operating import OPERATING_KEYS, Operating
from bench.evaluation import scale
from bench.evaluation.scale import Scale

# The team's corpus is 100 times this run's 10 documents; three replicas serve 100,000 queries a
# month, the corpus is indexed twice a month.
SCALE = Scale(
    documents=1000,
    queries_per_month=100_000,
    reindexes_per_month=2,
    replicas=3,
    storage_usd_per_gb_month=0.5,
    hourly_usd=0.2,
)
DOCS = 10


def at_scale(figures: dict, search: str, documents: int, at: Scale) -> dict:
    return scale.at_scale(Operating.from_dict(figures), search, documents, at)


def stored_bytes(figures: dict, search: str) -> int | float | None:
    return scale.stored_bytes(Operating.from_dict(figures), search)


def corpus_embed_seconds(figures: dict) -> float | None:
    return scale.corpus_embed_seconds(Operating.from_dict(figures))


DENSE = {  # minilm over a flat index: local, free per token
    "dims": 384,
    "n_chunks": 100,
    "vector_bytes": 153_600,
    "index_bytes": 153_645,
    "index_factory": "Flat",
    "embed_seconds": 2.0,
    "chunks_embedded": 100,
    "chunks_from_cache": 0,
    "corpus_embed_seconds": 2.0,
    "index_build_seconds": 0.5,
    "price_source": "local model",
    "index_cost_usd": 0.0,
    "cost_per_1k_queries_usd": 0.0,
    "query_embed_ms_mean": 10.0,
    "query_embed_ms_p50": 9.0,
    "query_embed_ms_p95": 20.0,
    "search_ms_mean": 1.0,
    "search_ms_p50": 0.8,
    "search_ms_p95": 2.0,
    "rerank_top": None,
    "rerank_ms_mean": None,
    "rerank_ms_p50": None,
    "rerank_ms_p95": None,
}

BM25 = {  # stored by a run that predates corpus_embed_seconds: BM25 embeds nothing anyway
    "dims": None,
    "n_chunks": 100,
    "vector_bytes": None,
    "index_bytes": 50_000,
    "index_factory": None,
    "embed_seconds": 0.0,
    "chunks_embedded": 0,
    "chunks_from_cache": 0,
    "index_build_seconds": 0.1,
    "price_source": "local model",
    "index_cost_usd": 0.0,
    "cost_per_1k_queries_usd": 0.0,
    "query_embed_ms_mean": 0.01,
    "query_embed_ms_p50": 0.01,
    "query_embed_ms_p95": 0.02,
    "search_ms_mean": 0.5,
    "search_ms_p50": 0.4,
    "search_ms_p95": 0.9,
    "rerank_top": None,
}

RERANKED_API = {  # BM25's top 20 re-scored by a rerank API at $2 per 1,000 searches
    **BM25,
    "cost_per_1k_queries_usd": 2.0,
    "rerank_top": 20,
    "rerank_price_source": "$2 per 1k searches in [reranker.cohere]",
    "rerank_cost_per_1k_queries_usd": 2.0,
    "rerank_ms_mean": 200.0,
    "rerank_ms_p50": 180.0,
    "rerank_ms_p95": 400.0,
}

FUSION = {  # text-embedding-3-small (an API) + BM25, sizes and times added up, money too
    "dims": 1536,
    "n_chunks": 100,
    "vector_bytes": 614_400,
    "index_bytes": 614_445 + 50_000,
    "index_factory": "Flat",
    "corpus_embed_seconds": 3.0 + 0.0,
    "index_build_seconds": 0.5 + 0.1,
    "price_source": "https://openai.com/api/pricing; local model",
    "index_cost_usd": 0.001,
    "cost_per_1k_queries_usd": 0.0005,
    "query_embed_ms_mean": 150.0,
    "query_embed_ms_p50": 140.0,
    "query_embed_ms_p95": 300.0,
    "search_ms_mean": 1.5,
    "search_ms_p50": 1.2,
    "search_ms_p95": 3.0,
    "rerank_top": None,
}


def test_a_dense_local_candidate_by_hand():
    o = at_scale(DENSE, "", DOCS, SCALE)
    assert o["end_to_end_ms_p50"] == pytest.approx(9.8)
    assert o["end_to_end_ms_p95"] == pytest.approx(22.0)
    assert o["qps_single_thread"] == pytest.approx(1000 / 11.0)
    assert o["cpu_seconds_per_1k_queries"] == pytest.approx(11.0)  # 11 ms a query, all of it here
    assert o["index_hours_at_scale"] == pytest.approx((2.0 + 0.5) * 100 / 3600)
    assert o["storage_gb_at_scale"] == pytest.approx(153_645 * 100 * 3 / 1e9)  # flat holds its vectors
    assert o["monthly_embedding_usd"] == 0.0
    assert o["monthly_storage_usd"] == pytest.approx(0.0460935 * 0.5)
    # 11 s per 1k queries × 100 = 1,100 s a month, plus 2 re-indexes of 250 s
    compute = (1100 / 3600 + 2 * 250 / 3600) * 0.2
    assert o["monthly_compute_usd"] == pytest.approx(compute)
    assert compute == pytest.approx(0.0888889, rel=1e-6)
    assert o["monthly_cost_usd"] == pytest.approx(0.02304675 + 0.0888889, rel=1e-6)
    assert o["monthly_cost_includes"] == ["embedding", "storage", "compute"]


def test_bm25_by_hand():
    o = at_scale(BM25, "", DOCS, SCALE)
    assert o["cpu_seconds_per_1k_queries"] == pytest.approx(0.51)  # tokenising and searching
    assert o["index_hours_at_scale"] == pytest.approx(0.1 * 100 / 3600)  # nothing to embed
    assert o["storage_gb_at_scale"] == pytest.approx(0.015)
    assert o["monthly_storage_usd"] == pytest.approx(0.0075)
    assert o["monthly_compute_usd"] == pytest.approx((0.51 * 100 + 2 * 10) / 3600 * 0.2)
    assert o["monthly_cost_usd"] == pytest.approx(0.0075 + 71 / 3600 * 0.2)


def test_a_reranked_api_candidate_pays_the_api_not_the_machine():
    o = at_scale(RERANKED_API, "", DOCS, SCALE)
    assert o["end_to_end_ms_p95"] == pytest.approx(0.02 + 0.9 + 400.0)
    assert o["qps_single_thread"] == pytest.approx(1000 / 200.51)
    assert o["cpu_seconds_per_1k_queries"] == pytest.approx(0.51)  # the API's 200 ms are not ours
    assert o["monthly_embedding_usd"] == pytest.approx(200.0)  # $2 per 1k queries × 100k
    assert o["monthly_compute_usd"] == pytest.approx((0.51 * 100 + 2 * 10) / 3600 * 0.2)
    assert o["monthly_cost_usd"] == pytest.approx(200.0 + 0.0075 + 71 / 3600 * 0.2)


def test_a_local_reranker_runs_on_the_machine():
    local = {**RERANKED_API, "cost_per_1k_queries_usd": 0.0, "rerank_price_source": "local model"}
    o = at_scale(local, "", DOCS, SCALE)
    assert o["cpu_seconds_per_1k_queries"] == pytest.approx(200.51)
    assert o["monthly_embedding_usd"] == 0.0
    assert o["monthly_compute_usd"] == pytest.approx((200.51 * 100 + 2 * 10) / 3600 * 0.2)


def test_a_fusion_with_an_api_model_by_hand():
    o = at_scale(FUSION, "rrf", DOCS, SCALE)
    # re-indexing twice a month at 100 times the corpus, and 100k queries
    assert o["monthly_embedding_usd"] == pytest.approx(0.001 * 100 * 2 + 0.0005 * 100)
    assert o["monthly_embedding_usd"] == pytest.approx(0.25)
    assert o["index_hours_at_scale"] == pytest.approx(3.6 * 100 / 3600)  # waiting on the API included
    assert o["cpu_seconds_per_1k_queries"] == pytest.approx(1.5)  # the search alone runs here
    gb = 664_445 * 100 * 3 / 1e9
    assert o["storage_gb_at_scale"] == pytest.approx(gb)
    compute = (1.5 * 100 / 3600 + 2 * 0.6 * 100 / 3600) * 0.2  # the index builds, not the API's embedding
    assert o["monthly_compute_usd"] == pytest.approx(compute)
    assert o["monthly_cost_usd"] == pytest.approx(0.25 + gb * 0.5 + compute)


def test_without_prices_the_monthly_cost_is_the_embedding_and_says_so():
    bare = Scale(documents=1000, queries_per_month=100_000)
    o = at_scale(FUSION, "rrf", DOCS, bare)
    assert o["monthly_storage_usd"] is None and o["monthly_compute_usd"] is None
    assert o["monthly_cost_usd"] == pytest.approx(0.001 * 100 + 0.0005 * 100)
    assert o["monthly_cost_includes"] == ["embedding"]
    assert o["storage_gb_at_scale"] is not None and o["cpu_seconds_per_1k_queries"] == pytest.approx(1.5)


def test_unknown_stays_unknown():
    o = at_scale({**FUSION, "cost_per_1k_queries_usd": None}, "rrf", DOCS, SCALE)
    assert o["monthly_embedding_usd"] is None and o["monthly_cost_usd"] is None
    o = at_scale({**DENSE, "corpus_embed_seconds": None}, "", DOCS, SCALE)
    assert o["index_hours_at_scale"] is None and o["monthly_compute_usd"] is None and o["monthly_cost_usd"] is None
    assert o["monthly_storage_usd"] is not None  # what is known is still reported
    once = Scale(documents=1000, reindexes_per_month=0, hourly_usd=0.2)
    assert at_scale({**DENSE, "corpus_embed_seconds": None}, "", DOCS, once)["monthly_compute_usd"] is not None


def test_a_binary_index_stores_the_float_copy_its_rescoring_reads():
    binary = {**DENSE, "index_factory": "BFlat", "index_bytes": 4_833}
    assert stored_bytes(binary, "rescore=100") == 4_833 + 153_600
    assert stored_bytes(binary, "rescore=0") == 4_833
    assert stored_bytes({**DENSE, "index_factory": "SQ8", "index_bytes": 39_000}, "") == 39_000
    assert stored_bytes({**BM25, "index_factory": "BFlat"}, "rrf") == 50_000  # no vectors at all


def test_an_older_run_extrapolates_what_it_embedded():
    old = {k: v for k, v in DENSE.items() if k != "corpus_embed_seconds"}
    assert corpus_embed_seconds({**old, "chunks_embedded": 25, "chunks_from_cache": 75}) == pytest.approx(8.0)
    assert corpus_embed_seconds({**old, "chunks_embedded": 0, "chunks_from_cache": 100}) is None


def test_every_figure_is_an_ops_key_and_the_scale_round_trips_the_manifest():
    assert set(scale.SCALE_KEYS) <= set(OPERATING_KEYS)
    assert set(at_scale(DENSE, "", DOCS, SCALE)) == set(scale.SCALE_KEYS)
    import dataclasses

    assert Scale.from_manifest(dataclasses.asdict(SCALE)) == SCALE
    assert Scale.from_manifest(None) == Scale() and Scale().factor(36) == 1.0
    assert SCALE.factor(DOCS) == 100.0
