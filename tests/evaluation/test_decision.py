"""The recommendation (bench.evaluation.decision, in words by bench.report.decision_text) on constructed
per-question data: who is tied with the best, what Holm's correction changes, what each preference picks,
and how many questions would separate two candidates the goldset cannot."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.core.operating import Operating
from bench.core.records import QuestionRecord
from bench.core.summary import CandidateResult, RunSummary
from bench.evaluation import significance
from bench.evaluation.decision import ALPHA, TEST, Recommendation, questions_needed, recommend
from bench.report.decision_text import recommendation, recommendation_line, stored

M = "mrr@5"
# equivalence=None: the rule of runs written before equivalence was tested (tied when not significantly
# worse), which `bench check` still recomputes them with; the equivalence rule has tests of its own below


def _records(cid: str, values) -> list[QuestionRecord]:
    return [
        QuestionRecord(
            candidate=cid,
            question_id=f"q{i}",
            question=f"question {i}",
            tags=[],
            ranking=[],
            expected=[],
            evidence=[],
            metrics={M: float(v)},
        )
        for i, v in enumerate(values)
    ]


def _run(columns: dict[str, np.ndarray], ops: dict[str, dict] | None = None):
    """Candidates ranked by their mean, each with its ops, and their records."""
    order = sorted(columns, key=lambda cid: (-float(np.mean(columns[cid])), cid))
    cands = [
        CandidateResult(
            id=cid,
            model="m",
            chunker="c",
            index="flat",
            search="",
            rank=rank,
            quality={M: float(np.mean(columns[cid])), "recall@5": 0.0},
            ops=Operating.from_dict((ops or {}).get(cid, {})),
        )
        for rank, cid in enumerate(order, start=1)
    ]
    records = [r for cid in columns for r in _records(cid, columns[cid])]
    return cands, records


N = 60
BEST = np.ones(N)
BEST[50:] = 0.0  # ten misses


def _worse(lost: range, won: range) -> np.ndarray:
    """The best's values with ``lost`` questions missed and ``won`` questions found where it missed."""
    v = BEST.copy()
    v[list(lost)] = 0.0
    v[list(won)] = 1.0
    return v


def test_a_clearly_worse_candidate_is_not_tied_and_a_near_identical_one_is():
    near = _worse(range(0, 1), range(50, 51))  # one question lost, one won: the same system
    far = _worse(range(0, 30), range(0, 0))  # thirty questions lost
    cands, records = _run({"best": BEST, "near": near, "far": far})
    rec = recommendation(cands, records, k=5, margin=0.02, prefer="quality", equivalence=None)
    assert rec["best"] == "best" and rec["tied"] == ["near"]
    rows = {r["candidate"]: r for r in rec["comparisons"]}
    assert rows["far"]["p_holm"] < ALPHA and not rows["far"]["tied"]
    assert rows["near"]["p_holm"] >= ALPHA and rows["near"]["tied"]
    assert rec["test"] == TEST and rec["alpha"] == 0.05 and rec["n_questions"] == N


def test_holm_turns_a_borderline_difference_into_a_tie():
    d = _worse(range(0, 9), range(50, 52))  # 9 lost, 2 won: Wilcoxon p ≈ 0.035
    e = _worse(range(20, 31), range(52, 55))  # 11 lost, 3 won: p ≈ 0.033
    p_d = significance.paired_tests(BEST, d, permutations=0)["wilcoxon_p"]
    p_e = significance.paired_tests(BEST, e, permutations=0)["wilcoxon_p"]
    assert 0.025 < p_e < p_d < ALPHA  # each alone is significant
    alone, records = _run({"best": BEST, "d": d})
    assert recommendation(alone, records, 5, 0.02, "quality", equivalence=None)["tied"] == []
    both, records = _run({"best": BEST, "d": d, "e": e})
    rec = recommendation(both, records, 5, 0.02, "quality", equivalence=None)
    # Holm: the smaller p doubles (≈ 0.065), the larger keeps its own but no less than that
    rows = {r["candidate"]: r for r in rec["comparisons"]}
    assert rows["e"]["p_holm"] == pytest.approx(2 * p_e)
    assert rows["d"]["p_holm"] == pytest.approx(2 * p_e)
    assert sorted(rec["tied"]) == ["d", "e"]


def test_each_preference_picks_its_own_among_the_tied():
    cheap = _worse(range(0, 1), range(50, 51))
    fast = _worse(range(1, 2), range(51, 52))
    far = _worse(range(0, 30), range(0, 0))
    ops = {
        "best": {"monthly_cost_usd": 10.0, "cost_per_1k_queries_usd": 0.0, "end_to_end_ms_p95": 50.0},
        "cheap": {"monthly_cost_usd": 5.0, "cost_per_1k_queries_usd": 0.0, "end_to_end_ms_p95": 100.0},
        "fast": {"monthly_cost_usd": 8.0, "cost_per_1k_queries_usd": 0.0, "end_to_end_ms_p95": 20.0},
        "far": {"monthly_cost_usd": 0.5, "cost_per_1k_queries_usd": 0.0, "end_to_end_ms_p95": 1.0},  # not tied
    }
    cands, records = _run({"best": BEST, "cheap": cheap, "fast": fast, "far": far}, ops)
    picks = {
        prefer: recommendation(cands, records, 5, 0.02, prefer, equivalence=None)
        for prefer in ("cost", "latency", "quality")
    }
    assert {p: r["pick"] for p, r in picks.items()} == {"cost": "cheap", "latency": "fast", "quality": "best"}
    cost = picks["cost"]
    assert cost["p_value"] == next(r["p_holm"] for r in cost["comparisons"] if r["candidate"] == "cheap")
    assert cost["reason"] == (
        f"cheap is tied with the best, best (mrr@5 0.833 vs 0.833, p = {cost['p_value']:.2g} after Holm, "
        f'n = 60), and costs $5.00 a month less ($5.00 against $10.00); prefer = "cost".'
    )
    assert cost["reason"].count(". ") == 0  # one sentence
    assert picks["latency"]["reason"].endswith('answers in 20.0 ms at p95 against 50.0 ms; prefer = "latency".')
    assert picks["quality"]["p_value"] is None and picks["quality"]["value"] == pytest.approx(50 / 60)
    lo, hi = picks["quality"]["ci"]
    assert lo < 50 / 60 < hi


def test_a_difference_within_timing_noise_does_not_give_up_quality():
    tied = _worse(range(0, 1), range(0, 0))
    ops = {
        "best": {"monthly_cost_usd": 2.3107, "cost_per_1k_queries_usd": 0.0, "end_to_end_ms_p95": 558.6},
        "tied": {"monthly_cost_usd": 2.3100, "cost_per_1k_queries_usd": 0.0, "end_to_end_ms_p95": 558.5},
    }
    cands, records = _run({"best": BEST, "tied": tied}, ops)
    for prefer in ("cost", "latency"):
        rec = recommendation(cands, records, 5, 0.02, prefer, equivalence=None)
        assert rec["tied"] == ["tied"] and rec["pick"] == "best", prefer
    assert (
        "none of the 1 candidate tied with it"
        in recommendation(cands, records, 5, 0.02, "cost", equivalence=None)["reason"]
    )
    # beyond the tolerance (5% of cost, 10% of latency) the cheaper or faster one is picked
    ops["tied"] = {**ops["tied"], "monthly_cost_usd": 2.0, "end_to_end_ms_p95": 500.0}
    cands, records = _run({"best": BEST, "tied": tied}, ops)
    assert recommendation(cands, records, 5, 0.02, "cost", equivalence=None)["pick"] == "tied"
    assert recommendation(cands, records, 5, 0.02, "latency", equivalence=None)["pick"] == "tied"


def test_the_result_keeps_every_older_key():
    cands, records = _run({"best": BEST, "other": _worse(range(0, 1), range(0, 0))})
    rec = recommendation(cands, records, 5, 0.02, "cost")
    for key in ("metric", "margin", "cost_key", "pick", "line"):  # what readers of older runs use
        assert key in rec
    for key in ("best", "value", "ci", "tied", "test", "alpha", "prefer", "p_value", "n_questions", "reason"):
        assert key in rec
    assert rec["metric"] == M and rec["margin"] == 0.02 and rec["reason"] in rec["line"]


def test_questions_needed_against_a_hand_computed_value():
    # d: 5 questions of 40 differ by +1, one by −1, the rest by 0: mean 0.1,
    # sd = sqrt((5 × 0.9² + 1.1² + 34 × 0.1²) / 39) = sqrt(5.6 / 39) = 0.378932
    # n = ((1.959964 + 0.841621) × 0.378932 / 0.1)² = 10.6161² = 112.70 → 113
    assert questions_needed(0.1, math.sqrt(5.6 / 39)) == 113
    assert questions_needed(0.0, 0.3) is None
    best, runner = np.zeros(40), np.zeros(40)
    best[:5] = 1.0
    runner[5] = 1.0
    cands, records = _run({"best": best, "runner": runner})
    rec = recommendation(cands, records, 5, 0.02, "quality", equivalence=None)
    assert rec["tied"] == ["runner"]  # five wins and one loss of forty: Wilcoxon p ≈ 0.10
    assert rec["questions_needed"] == 113
    assert "The goldset cannot separate best from runner: about 113 questions would" in rec["line"]


def test_eleven_questions_cannot_separate_them():
    best = np.array([1, 1, 1, 0.5, 1, 0.5, 1, 0, 1, 1, 0.5])
    other = np.array([1, 0.5, 1, 0.5, 1, 0.33, 1, 0, 0.5, 1, 0.5])
    cands, records = _run({"best": best, "other": other})
    rec = recommendation(cands, records, 5, 0.02, "cost", equivalence=None)
    assert rec["n_questions"] == 11 and rec["tied"] == ["other"]
    d = best - other
    assert rec["questions_needed"] == questions_needed(float(d.mean()), float(d.std(ddof=1)))
    assert rec["questions_needed"] > 11
    assert "With only 11 questions the goldset cannot separate best from other" in rec["line"]


def test_no_candidates_and_one_candidate():
    rec = recommendation([], [], 5, 0.02, "cost")
    assert rec["pick"] is None and rec["line"].startswith("no recommendation")
    cands, records = _run({"alone": BEST})
    rec = recommendation(cands, records, 5, 0.02, "cost")
    assert rec["pick"] == "alone" and rec["tied"] == [] and "only candidate" in rec["reason"]


def test_the_figures_hold_no_sentences_and_survive_summary_json():
    cheap = _worse(range(0, 1), range(50, 51))
    ops = {"best": {"monthly_cost_usd": 10.0}, "cheap": {"monthly_cost_usd": 5.0}}
    cands, records = _run({"best": BEST, "cheap": cheap, "far": _worse(range(0, 30), range(0, 0))}, ops)
    rec = recommend(cands, records, 5, 0.02, "cost", equivalence=None)
    assert (rec.pick, rec.best, rec.against, rec.why, rec.tied) == ("cheap", "best", "cheap", "tied_pick", ("cheap",))
    assert rec.advantage is not None and (rec.advantage.code, rec.advantage.pick, rec.advantage.best) == (
        "monthly",
        5.0,
        10.0,
    )
    figures = rec.to_dict()
    assert not set(figures) & {"line", "reason"}
    words = [v for v in figures.values() if isinstance(v, str) and " " in v]
    assert words == [TEST]  # the test's name; every sentence is the report's
    assert Recommendation.from_dict(figures) == rec
    written = stored(rec, cands)
    assert list(written)[:9] == ["metric", "margin", "cost_key", "prefer", "test", "alpha", "pick", "line", "best"]
    assert written["reason"].startswith("cheap is tied with the best, best") and written["reason"] in written["line"]
    again = Recommendation.from_dict(written)
    assert again is not None and stored(again, cands) == written


def test_the_terminal_line_is_rendered_from_the_figures_or_read_from_an_older_run():
    cands, records = _run({"best": BEST, "other": _worse(range(0, 30), range(0, 0))})
    written = recommendation(cands, records, 5, 0.02, "cost")
    summary = RunSummary(
        k=5, depth=20, unit="chunk", ndcg_gain="exponential", min_overlap=0.5, candidates=cands, recommendation=written
    )
    assert recommendation_line(summary) == written["line"]
    moved = {**written, "line": "a line the figures do not give"}  # the figures decide, not the stored words
    assert recommendation_line(RunSummary(**{**vars(summary), "recommendation": moved})) == written["line"]
    old = {key: written[key] for key in ("metric", "margin", "cost_key", "pick", "line")}  # before the figures
    assert Recommendation.from_dict(old) is None
    assert recommendation_line(RunSummary(**{**vars(summary), "recommendation": old})) == written["line"]
    assert recommendation_line(RunSummary(**{**vars(summary), "recommendation": None})) == ""


def test_the_recommendation_says_what_picking_the_best_is_worth_on_held_out_questions():
    # twelve candidates of the same quality, each lucky on other questions: the best looks better than it is
    rng = np.random.default_rng(7)
    columns = {f"c{i:02d}": (rng.random(40) < 0.5).astype(float) for i in range(12)}
    cands, records = _run(columns)
    rec = recommendation(cands, records, k=5, margin=0.02, prefer="quality")
    chosen = rec["selection"]
    assert chosen["naive"] == max(float(np.mean(v)) for v in columns.values())
    assert chosen["adjusted"] < chosen["naive"] - 0.05 and chosen["large"] is True  # every true mean is 0.5
    assert chosen["candidates"] == 12 and chosen["questions"] == 40 and chosen["folds"] == 5
    assert "flatters itself" in rec["line"] and "on questions not used to pick it" in rec["line"]
    assert Recommendation.from_dict(rec).selection.adjusted == chosen["adjusted"]
    # one candidate clearly best on every fold: no gap worth saying
    sure = {"best": BEST, "far": _worse(range(0, 30), range(0, 0))}
    cands, records = _run(sure)
    rec = recommendation(cands, records, k=5, margin=0.02, prefer="quality")
    assert rec["selection"]["picked"] == {"best": 1.0} and rec["selection"]["large"] is False
    assert "flatters" not in rec["line"]
