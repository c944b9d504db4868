"""Ties that mean equivalence (bench.evaluation.equivalence, the recommendation's rule): TOST by hand,
the rule's error rates by simulation, and what a goldset too small to decide says."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from bench.core.operating import Operating
from bench.core.summary import CandidateResult
from bench.evaluation.equivalence import questions_for_equivalence, tost_p
from bench.report.decision_text import recommendation
from tests.evaluation.test_decision import BEST, M, _run, _worse


def test_tost_by_hand() -> None:
    d = np.array([0.1, -0.05, 0.0, 0.05, 0.02, -0.01])
    mean, se = d.mean(), d.std(ddof=1) / math.sqrt(6)
    by_hand = max(stats.t.sf((mean + 0.1) / se, 5), stats.t.cdf((mean - 0.1) / se, 5))
    assert tost_p(d, 0.1) == pytest.approx(by_hand)
    assert tost_p(np.zeros(3), 0.0) == 0.0  # the same system, whatever the margin
    assert tost_p(np.full(4, 0.2), 0.1) == 1.0 and tost_p(np.full(4, 0.05), 0.1) == 0.0
    assert tost_p(np.array([0.3]), 0.1) == 1.0  # one question shows nothing


def test_questions_for_equivalence_by_hand() -> None:
    z = stats.norm.ppf(0.95) + stats.norm.ppf(0.9)
    assert questions_for_equivalence(0.01, 0.2, 0.05) == math.ceil((z * 0.2 / 0.04) ** 2)
    assert questions_for_equivalence(0.06, 0.2, 0.05) is None  # outside the margin: never equivalent


def test_the_rules_error_rates_by_simulation() -> None:
    """Paired differences of sd 0.3 on 400 questions, margin 0.05: a true difference at 1.5 × the
    margin passes for equivalent at most alpha of the time; a true difference of 0 is shown
    equivalent most of the time (the test's power)."""
    rng = np.random.default_rng(0)
    far = [tost_p(rng.normal(0.075, 0.3, 400), 0.05) < 0.05 for _ in range(400)]
    same = [tost_p(rng.normal(0.0, 0.3, 400), 0.05) < 0.05 for _ in range(400)]
    assert np.mean(far) <= 0.05
    assert np.mean(same) >= 0.8


def _priced(cands: list[CandidateResult], cheap: str) -> list[CandidateResult]:
    return [
        CandidateResult(
            **{**c.__dict__, "ops": Operating.from_dict({"monthly_cost_usd": 1.0 if c.id == cheap else 9.0})}
        )
        for c in cands
    ]


def test_an_identical_cheaper_candidate_is_equivalent_and_picked() -> None:
    cands, records = _run({"best": BEST, "same": BEST.copy()})
    rec = recommendation(_priced(cands, "same"), records, k=5, margin=0.02, prefer="cost")
    assert rec["tied"] == ["same"] and rec["undecided"] == [] and rec["pick"] == "same"
    assert rec["comparisons"][0]["status"] == "equivalent" and rec["equivalence"] == 0.05
    assert "is equivalent to the best" in rec["reason"] and "within ±" in rec["reason"]


def test_a_cheaper_candidate_the_goldset_cannot_decide_is_never_picked() -> None:
    # ten questions: the cheaper one misses two more; neither a difference nor equivalence can be shown
    ten = np.array([1, 1, 1, 1, 1, 1, 1, 0, 1, 1], dtype=float)
    lower = ten.copy()
    lower[[0, 1]] = 0.0
    cands, records = _run({"best": ten, "cheaper": lower})
    rec = recommendation(_priced(cands, "cheaper"), records, k=5, margin=0.02, prefer="cost")
    assert rec["pick"] == "best" and rec["tied"] == [] and rec["undecided"] == ["cheaper"]
    assert rec["why"] == "undecided" and rec["separation"] == "undecided"
    assert "undecided, too few questions" in rec["reason"]
    assert "Undecided: 10 questions show neither" in rec["line"] and rec["questions_needed"] > 10
    # the old rule would have tied them and picked the cheaper one
    old = recommendation(_priced(cands, "cheaper"), records, k=5, margin=0.02, prefer="cost", equivalence=None)
    assert old["pick"] == "cheaper" and "equivalence" not in old


def test_a_significantly_worse_candidate_is_worse_not_undecided() -> None:
    cands, records = _run({"best": BEST, "far": _worse(range(0, 30), range(0, 0))})
    rec = recommendation(cands, records, k=5, margin=0.02, prefer="cost")
    assert rec["comparisons"][0]["status"] == "worse" and rec["why"] == "all_worse"
    assert rec["metric"] == M
