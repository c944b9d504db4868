"""Cost arithmetic, query latency end to end and the best-scoring candidate (bench.evaluation.costs)."""

from __future__ import annotations

import pytest

from bench.core.operating import Operating
from bench.core.summary import CandidateResult
from bench.evaluation import costs
from bench.evaluation.costs import (
    best_candidate,
    compute_cost_usd,
    cost_per_1k_queries_usd,
    index_cost_usd,
    run_cost_usd,
)
from bench.formatting import usd

# --- arithmetic, checked against sums done by hand -------------------------------------------------


def test_index_cost_hand_computed():
    # 52,754 tokens x $0.02 per million = 52,754 x 0.00000002 = $0.00105508
    assert index_cost_usd(52_754, 0.02) == pytest.approx(0.00105508, rel=1e-12)
    # 1,000,000 tokens x $0.13/M = $0.13 exactly
    assert index_cost_usd(1_000_000, 0.13) == pytest.approx(0.13, rel=1e-12)
    assert index_cost_usd(0, 0.13) == 0.0


def test_cost_per_1k_queries_hand_computed():
    # 12.5 tokens per question x 1,000 questions = 12,500 tokens; x $0.02/M = $0.00025
    assert cost_per_1k_queries_usd(12.5, 0.02) == pytest.approx(0.00025, rel=1e-12)
    # 9.4 tokens x 1,000 = 9,400 tokens; x $0.13/M = $0.001222
    assert cost_per_1k_queries_usd(9.4, 0.13) == pytest.approx(0.001222, rel=1e-12)


def test_run_cost_counts_billed_tokens_only():
    # 80,000 tokens sent x $0.10/M = $0.008; a fully cached rerun sends 0 tokens and costs $0
    assert run_cost_usd(80_000, 0.10) == pytest.approx(0.008, rel=1e-12)
    assert run_cost_usd(0, 0.10) == 0.0


def test_compute_cost_hand_computed():
    # 90 s on a $1.20/hour machine = 90/3600 h x 1.20 = 0.025 h x 1.20 = $0.03
    assert compute_cost_usd(90, 1.20) == pytest.approx(0.03, rel=1e-12)
    # one hour at $0.50/h = $0.50
    assert compute_cost_usd(3600, 0.5) == pytest.approx(0.5, rel=1e-12)


@pytest.mark.parametrize("fn", [index_cost_usd, cost_per_1k_queries_usd, run_cost_usd, compute_cost_usd])
def test_none_propagates_never_zero(fn):
    assert fn(None, 0.02) is None
    assert fn(1000, None) is None
    assert fn(None, None) is None
    assert fn(1000, 0.0) == 0.0  # a known zero price stays a real zero


# --- the best-scoring candidate ------------------------------------------------------------------


def _result(cid: str, quality: dict, ops: dict) -> CandidateResult:
    return CandidateResult(
        id=cid, model="m", chunker="c", index="flat", search=None, quality=quality, ops=Operating.from_dict(ops)
    )


def test_best_candidate_is_the_highest_score_ties_to_the_lowest_id():
    cands = [_result("b", {"mrr@5": 0.8}, {}), _result("a", {"mrr@5": 0.8}, {}), _result("c", {"mrr@5": 0.7}, {})]
    assert best_candidate(cands, "mrr@5").id == "a"
    unscored = [_result("x", {"mrr@5": None}, {}), _result("y", {"mrr@5": float("nan")}, {}), _result("z", {}, {})]
    assert best_candidate(unscored, "mrr@5") is None
    assert best_candidate([*unscored, _result("w", {"mrr@5": 0.1}, {})], "mrr@5").id == "w"


def test_usd_never_hides_small_costs():
    assert usd(0.0) == "$0"
    assert usd(0.00105508) == "$0.0011"
    assert usd(0.000021) == "$0.000021"
    assert usd(0.00002) == "$0.000020"
    assert usd(None) == "unknown"


# --- latency end to end ----------------------------------------------------------------------------


def test_end_to_end_p95_adds_embedding_and_search():
    def p95(embed, search) -> float | None:
        return costs.end_to_end_p95_ms(_result("a", {}, {"query_embed_ms_p95": embed, "search_ms_p95": search}))

    assert p95(10.0, 1.5) == 11.5
    assert p95(None, 0.2) == 0.2  # BM25 embeds nothing
    assert p95(50.0, None) == 50.0
    assert p95(None, None) is None
    assert costs.end_to_end_p95_ms(_result("a", {}, {})) is None
