"""The terminal's shootout and dry-run tables: the monthly cost beside the quality, end-to-end latency,
ids never cut at 100 columns, and money with the precision that shows it."""

from __future__ import annotations

import io

from rich.console import Console

from bench.config import Candidate
from bench.core.operating import Operating
from bench.core.summary import CandidateResult, RunSummary
from bench.report.terminal import plan_table, shootout_table
from bench.run.dry_run import PlannedCandidate

IDS = ("minilm+bm25/md256/flat@convex0.7", "openai-small/md256/flat", "bm25/md256/inverted>cohere@50")


def _render(renderable, width: int = 100) -> str:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.export_text()


def _summary() -> RunSummary:
    quality = {f"{m}@5": 0.5 for m in ("mrr", "recall", "ndcg", "precision", "map", "hit_rate")}
    ops = [
        {"monthly_cost_usd": 1.8123, "query_embed_ms_p50": 17.0, "query_embed_ms_p95": 40.0, "search_ms_p50": 0.5},
        {"monthly_cost_usd": 0.000021, "cost_per_1k_queries_usd": 0.000021, "query_embed_ms_p50": 120.0},
        {"monthly_cost_usd": 12_345.0, "cost_per_1k_queries_usd": 2.0, "rerank_ms_p50": 300.0, "rerank_ms_p95": 900},
    ]
    cands = [
        CandidateResult(
            id=cid,
            model="m",
            chunker="md256",
            index="flat",
            search="",
            rank=rank,
            quality=quality,
            ops=Operating.from_dict(o),
        )
        for rank, (cid, o) in enumerate(zip(IDS, ops), start=1)
    ]
    rec = {"scale": {"documents": 20000, "queries_per_month": 300000, "reindexes_per_month": 4.0, "replicas": 2}}
    return RunSummary(
        k=5, depth=20, unit="chunk", ndcg_gain="exponential", min_overlap=0.5, candidates=cands, recommendation=rec
    )


def test_the_shootout_shows_monthly_cost_and_latency_and_fits_100_columns():
    text = _render(shootout_table(_summary()))
    assert max(len(line) for line in text.splitlines()) <= 100
    for cid in IDS:
        assert cid in text
    assert "$ / month" in text and "p50/p95 ms" in text
    assert "$1.81" in text and "$0.000021" in text and "$12,345" in text  # never $0.0000
    assert "17.5/40.0" in text  # query embedding + search, end to end
    assert "300.0/900.0" in text  # a reranked candidate's reranking counts
    assert "$2,000" in text  # $2 per 1k queries is $2,000 per million
    assert "20,000 documents, 300,000 queries a month" in text


def test_the_dry_run_shows_a_cheap_model_in_its_own_precision():
    cand = Candidate(model="openai-small", chunker="md256", index="flat")
    planned = [
        PlannedCandidate(
            candidate=cand,
            chunks=467,
            corpus_tokens=49_550,
            question_tokens=4_202,
            price_per_mtok=0.02,
            monthly_embedding_usd=0.0199,
        )
    ]
    text = _render(plan_table(planned))
    assert "0.0000" not in text
    assert "$0.00099" in text  # 49,550 tokens at $0.02 per million
    assert "$0.020" in text  # the month: re-indexing and queries
