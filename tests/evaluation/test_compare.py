"""Head-to-head statistics and the rank matrix, checked against scipy and hand-computed values."""

from __future__ import annotations

import csv
import itertools
import math
import time
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats

from bench.core.records import QuestionRecord
from bench.core.summary import RunSummary
from bench.errors import BenchError
from bench.evaluation import significance

A = np.array([0.5, 1, 0.33, 0, 1, 0.25, 1, 0.2, 0.5, 1])
B = np.array([0.25, 0.5, 0.33, 0.5, 0, 0.25, 1, 0.5, 0.2, 0.33])
# d = A - B = [.25, .5, 0, -.5, 1, 0, 0, -.3, .3, .67]


# ---------------------------------------------------------------------------------------------------
# A tiny run: 3 candidates × 8 questions, k = 3, depth = 5

K, DEPTH = 3, 5
FIRST = {  # first-relevant rank per question q1..q8; None = miss within depth
    "alpha": [1, 1, 2, None, 1, 3, 1, 2],
    "beta": [1, 2, None, None, 3, 1, 1, 2],
    "gamma": [2, None, 1, 4, None, 1, 1, 5],
}
TAGS = [["hr", "easy"], ["hr"], ["it", "easy"], ["it"], ["hr"], ["it"], ["easy"], []]
QIDS = [f"q{i}" for i in range(1, 9)]


def _metrics(rank: int | None) -> dict[str, float]:
    """Single-relevant-unit metrics at k: rank beyond k counts as not found."""
    found = rank is not None and rank <= K
    return {
        "mrr@3": 1 / rank if found else 0.0,
        "hit_rate@3": float(found),
        "recall@3": float(found),
        "ndcg@3": 1 / math.log2(rank + 1) if found else 0.0,
        "precision@3": found / 3,
    }


def _typed(summary: dict, records: list[dict]) -> tuple[RunSummary, list[QuestionRecord]]:
    """A hand-built run as the schema's values; what these tests leave out gets empty defaults."""
    filled = {
        "unit": "chunk",
        "ndcg_gain": "exponential",
        "min_overlap": 0.5,
        **summary,
        "candidates": [
            {"model": "m", "chunker": "c", "index": "flat", "search": None, **c} for c in summary["candidates"]
        ],
    }
    rows = [{"question": "", "ranking": [], "expected": [], "evidence": [], **r} for r in records]
    return RunSummary.from_dict(filled), [QuestionRecord.from_dict(r) for r in rows]


def _run() -> tuple[RunSummary, list[QuestionRecord]]:
    records = [
        {
            "candidate": cid,
            "question_id": qid,
            "question": f"question {qid}?",
            "tags": tags,
            "first_relevant_rank": rank,
            "metrics": _metrics(rank),
        }
        for qid, tags, i in zip(QIDS, TAGS, range(8))
        for cid, ranks in FIRST.items()
        for rank in [ranks[i]]
    ]
    candidates = []
    for position, cid in enumerate(FIRST, start=1):
        per_q = [r["metrics"] for r in records if r["candidate"] == cid]
        # precision@3 left out of quality: the default metric list must skip it
        quality = {m: float(np.mean([q[m] for q in per_q])) for m in ("mrr@3", "hit_rate@3", "recall@3", "ndcg@3")}
        candidates.append({"id": cid, "rank": position, "quality": quality})
    return _typed({"k": K, "depth": DEPTH, "unit": "chunk", "candidates": candidates}, records)


def _mrr(cid: str) -> np.ndarray:
    return np.array([_metrics(r)["mrr@3"] for r in FIRST[cid]])


# ---------------------------------------------------------------------------------------------------
# paired_tests


def test_paired_tests_match_scipy_and_hand_effect_sizes():
    res = significance.paired_tests(A, B)
    w = stats.wilcoxon(A, B, zero_method="wilcox")
    t = stats.ttest_rel(A, B)
    assert res["n"] == 10
    assert res["mean_a"] == pytest.approx(A.mean()) and res["mean_b"] == pytest.approx(B.mean())
    assert res["mean_diff"] == pytest.approx(1.92 / 10)
    assert res["wilcoxon_p"] == pytest.approx(w.pvalue, rel=1e-12)
    assert res["wilcoxon_statistic"] == pytest.approx(w.statistic)
    assert res["t_p"] == pytest.approx(t.pvalue, rel=1e-9)
    assert res["t_statistic"] == pytest.approx(t.statistic, rel=1e-9)
    # Non-zero |d| sorted: .25 (rank 1), .3 .3 (2.5 each), .5 .5 (4.5 each), .67 (6), 1 (7).
    # R+ = .25, .5, 1, .3, .67 -> 1 + 4.5 + 7 + 2.5 + 6 = 21;  R- = -.5, -.3 -> 4.5 + 2.5 = 7.
    assert res["rank_biserial"] == pytest.approx((21 - 7) / (21 + 7))
    # sum d = 1.92, sum d² = .0625 + .25 + .25 + 1 + .09 + .09 + .4489 = 2.1914
    # sd = sqrt((2.1914 - 10 * .192²) / 9)
    sd = math.sqrt((2.1914 - 10 * 0.192**2) / 9)
    assert res["cohens_dz"] == pytest.approx(0.192 / sd)


@settings(max_examples=30, deadline=None)  # scipy's way takes up to a second for one sample
@given(st.lists(st.sampled_from([-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 2 / 3, -1 / 3]), min_size=2, max_size=10))
@example([0.5, -0.25, 0.0, 1.0, 1.0, -1.0, 0.25, 2 / 3, -1 / 3, 0.5, -0.5, 0.25, 1.0])  # 13: the most flips
def test_small_samples_with_zeros_or_ties_get_scipys_exact_wilcoxon_bit_for_bit(values):
    """Reciprocal ranks and hits give few distinct differences: scipy's every-flip permutation test is
    what answers, and bench's enumeration of the same flips must give the very same figures."""
    d = np.asarray(values)
    if not np.any(d):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = stats.wilcoxon(d, zero_method="wilcox", alternative="two-sided")
    assert significance._wilcoxon(d) == (float(expected.statistic), float(expected.pvalue))


def test_floating_point_noise_does_not_break_ties():
    a = np.array([1, 1 / 3, 0.9, 0.2, 0.5, 0.6, 0.1])
    b = np.array([2 / 3, 0, 0.2, 0.6, 0.1, 0.6, 0.0])
    assert 1 - 2 / 3 != 1 / 3  # equal on paper, not in floats: the two differences must still tie
    res = significance.paired_tests(a, b)
    assert res["wilcoxon_p"] == pytest.approx(stats.wilcoxon(np.round(a - b, 12)).pvalue)
    assert res["rank_biserial"] == pytest.approx(significance._rank_biserial(np.round(a - b, 12)))
    # |d| = 1/3 1/3 .7 .4 .4 .1 ranked 2.5 2.5 6 4.5 4.5 1 (zero dropped); R- = 4.5 (0.2 - 0.6)
    assert res["rank_biserial"] == pytest.approx((16.5 - 4.5) / 21)


def test_randomisation_p_is_seeded_and_close_to_the_exact_sign_flip_p():
    first, again = significance.paired_tests(A, B, seed=1), significance.paired_tests(A, B, seed=1)
    other = significance.paired_tests(A, B, seed=2)
    assert first["randomisation_p"] == again["randomisation_p"]
    assert first["randomisation_p"] != other["randomisation_p"]
    assert first["randomisation_p"] == pytest.approx(other["randomisation_p"], abs=0.03)

    d = np.round(A - B, 12)
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=len(d))))  # all 2**10 sign vectors
    exact = np.mean(np.abs(signs @ d / len(d)) >= abs(d.mean()) - 1e-12)
    sampled = significance.paired_tests(A, B, permutations=20_000)["randomisation_p"]
    assert sampled == pytest.approx(exact, abs=0.01)


def test_randomisation_p_never_below_its_floor():
    a, b = np.ones(40), np.zeros(40)
    assert significance.paired_tests(a, b, permutations=999)["randomisation_p"] == pytest.approx(1 / 1000)


def test_identical_vectors_give_p_one_and_no_effect():
    res = significance.paired_tests(A, A.copy())
    for key in ("wilcoxon_p", "t_p", "randomisation_p"):
        assert res[key] == 1.0
    for key in ("rank_biserial", "cohens_dz", "mean_diff", "wilcoxon_statistic", "t_statistic"):
        assert res[key] == 0.0


def test_single_question_gives_p_one():
    res = significance.paired_tests(np.array([1.0]), np.array([0.0]))
    assert (res["wilcoxon_p"], res["t_p"], res["randomisation_p"]) == (1.0, 1.0, 1.0)
    assert res["cohens_dz"] == 0.0 and res["rank_biserial"] == 1.0 and res["mean_diff"] == 1.0


def test_all_equal_nonzero_differences():
    a, b = np.ones(4), np.full(4, 0.5)
    res = significance.paired_tests(a, b)
    assert res["t_p"] == 0.0 and res["t_statistic"] == math.inf
    assert res["cohens_dz"] == 0.0 and res["rank_biserial"] == 1.0
    assert res["wilcoxon_p"] == pytest.approx(stats.wilcoxon(a, b).pvalue)  # exact: 2 / 2**4
    assert res["randomisation_p"] == pytest.approx(2 / 16, abs=0.02)
    worse = significance.paired_tests(b, a)
    assert worse["t_statistic"] == -math.inf and worse["rank_biserial"] == -1.0


def test_empty_input_and_length_mismatch():
    res = significance.paired_tests(np.array([]), np.array([]))
    assert res["n"] == 0 and res["t_p"] == 1.0 and res["wilcoxon_p"] == 1.0 and res["randomisation_p"] == 1.0
    assert math.isnan(res["mean_a"])
    with pytest.raises(ValueError):
        significance.paired_tests(np.ones(3), np.ones(4))


# ---------------------------------------------------------------------------------------------------
# holm, bootstrap, counts


def test_holm_hand_example():
    # sorted: .005×4 = .02, .01×3 = .03, .03×2 = .06, .04×1 = .04 -> running max keeps .06
    assert significance.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert significance.holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])  # .5×2 = 1, capped
    assert significance.holm([0.02]) == pytest.approx([0.02])
    assert len(significance.holm([])) == 0


@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=30))
def test_holm_properties(pvalues):
    raw = np.array(pvalues)
    adjusted = significance.holm(pvalues)
    assert np.all(adjusted >= raw - 1e-15) and np.all(adjusted <= 1.0)
    for i, j in itertools.combinations(range(len(raw)), 2):
        if raw[i] < raw[j]:
            assert adjusted[i] <= adjusted[j]


def test_bootstrap_ci():
    rng = np.random.default_rng(7)
    small, large = rng.random(20), rng.random(2000)
    lo, hi = significance.bootstrap_ci(small, seed=3)
    assert lo < small.mean() < hi
    assert significance.bootstrap_ci(small, seed=3) == (lo, hi)
    big_lo, big_hi = significance.bootstrap_ci(large, seed=3)
    assert big_hi - big_lo < hi - lo
    assert significance.bootstrap_ci(np.full(9, 0.1)) == (0.1, 0.1)
    assert all(math.isnan(x) for x in significance.bootstrap_ci(np.array([])))


def test_wins_ties_losses():
    a, b = [1.0, 0.5, 0.0, 0.3, 0.2], [0.5, 0.5, 1.0, 0.3 + 1e-15, 0.1]
    assert significance.wins_ties_losses(a, b) == (2, 2, 1)
    assert significance.wins_ties_losses(a, b, higher_is_better=False) == (1, 2, 2)


def test_rank_outcomes_with_misses():
    # 1<2 win; miss vs 4 loss; 3 vs miss win; two misses tie; 2=2 tie
    assert significance.rank_outcomes([1, None, 3, None, 2], [2, 4, None, None, 2]) == (2, 2, 1)


# ---------------------------------------------------------------------------------------------------
# head_to_head and all_pairs on the tiny run


def test_head_to_head_counts_holm_and_advice():
    summary, records = _run()
    res = significance.head_to_head(summary, records, "alpha", "beta", seed=5, permutations=2000)
    assert (res["a"], res["b"], res["n_questions"]) == ("alpha", "beta", 8)
    assert list(res["metrics"]) == ["mrr@3", "recall@3", "ndcg@3", "hit_rate@3"]  # precision not in quality
    # ranks alpha/beta: 1/1 tie, 1/2 win, 2/- win, -/- tie, 1/3 win, 3/1 loss, 1/1 tie, 2/2 tie
    assert res["first_relevant_rank"] == {"wins": 3, "ties": 4, "losses": 1}
    mrr = res["metrics"]["mrr@3"]
    assert (mrr["wins"], mrr["ties"], mrr["losses"]) == (3, 4, 1)
    alone = significance.paired_tests(_mrr("alpha"), _mrr("beta"), seed=5, permutations=2000)
    assert {key: mrr[key] for key in alone} == pytest.approx(alone)
    for test in ("wilcoxon_p", "t_p", "randomisation_p"):
        raw = [row[test] for row in res["metrics"].values()]
        holm = [row[f"{test}_holm"] for row in res["metrics"].values()]
        assert holm == pytest.approx(list(significance.holm(raw)))
    assert mrr["ci_a"][0] <= mrr["mean_a"] <= mrr["ci_a"][1]
    assert res["small_sample"] is True and "Wilcoxon" in res["advice"]


def test_head_to_head_disagreements():
    summary, records = _run()
    res = significance.head_to_head(summary, records, "alpha", "gamma", metrics=["mrr@3"], permutations=100)
    # miss = depth + 1 = 6: |alpha - gamma| = q1 1, q2 5, q3 1, q4 2, q5 5, q6 2, q7 0, q8 3
    assert [d["question_id"] for d in res["disagreements"]] == ["q2", "q5", "q8", "q4", "q6", "q1", "q3"]
    assert res["disagreements"][0] == {"question_id": "q2", "question": "question q2?", "rank_a": 1, "rank_b": None}
    assert res["first_relevant_rank"] == {"wins": 4, "ties": 1, "losses": 3}
    mrr = res["metrics"]["mrr@3"]
    assert (mrr["wins"], mrr["ties"], mrr["losses"]) == (4, 2, 2)
    assert mrr["wilcoxon_p_holm"] == mrr["wilcoxon_p"]  # a family of one


def test_unknown_candidate_is_named():
    summary, records = _run()
    with pytest.raises(BenchError, match="'alpah'") as err:
        significance.head_to_head(summary, records, "alpah", "beta")
    assert "alpha" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(BenchError, match="nothing-like-it"):
        significance.head_to_head(summary, records, "alpha", "nothing-like-it")


def test_all_pairs_counts_and_holm():
    summary, records = _run()
    rows = significance.all_pairs(summary, records, seed=3, permutations=2000)
    assert [(r["a"], r["b"]) for r in rows] == [("alpha", "beta"), ("alpha", "gamma"), ("beta", "gamma")]
    # mrr beta vs gamma: q1 1 v .5 W, q2 .5 v 0 W, q3 0 v 1 L, q4 0 v 0 T, q5 1/3 v 0 W, q6 T, q7 T, q8 .5 v 0 W
    assert [(r["wins"], r["ties"], r["losses"]) for r in rows] == [(3, 4, 1), (4, 2, 2), (4, 3, 1)]
    for row in rows:
        alone = significance.paired_tests(_mrr(row["a"]), _mrr(row["b"]), seed=3, permutations=2000)
        assert {key: row[key] for key in alone} == pytest.approx(alone)
    for test in ("wilcoxon_p", "t_p", "randomisation_p"):
        assert [r[f"{test}_holm"] for r in rows] == pytest.approx(list(significance.holm([r[test] for r in rows])))


def test_all_pairs_is_fast_on_a_full_sized_run():
    rng = np.random.default_rng(0)
    ids = [f"cand{j}" for j in range(9)]
    summary = {"k": 5, "depth": 20, "candidates": [{"id": c, "rank": j + 1, "quality": {}} for j, c in enumerate(ids)]}
    records = []
    for i in range(170):
        for c in ids:
            rank = int(rng.integers(1, 22))
            rank = None if rank == 21 else rank
            records.append(
                {
                    "candidate": c,
                    "question_id": f"q{i:03d}",
                    "tags": [],
                    "first_relevant_rank": rank,
                    "metrics": {"mrr@5": 1 / rank if rank and rank <= 5 else 0.0},
                }
            )
    typed = _typed(summary, records)
    start = time.perf_counter()
    rows = significance.all_pairs(*typed)
    assert time.perf_counter() - start < 5.0
    assert len(rows) == 36 and all(0 < r["randomisation_p"] <= 1 for r in rows)


def test_advice_for_large_samples():
    agree = {"wilcoxon_p_holm": 0.01, "t_p_holm": 0.02, "randomisation_p_holm": 0.03}
    split = {"wilcoxon_p_holm": 0.01, "t_p_holm": 0.2, "randomisation_p_holm": 0.03}
    assert "agree" in significance._advice(100, {"mrr@5": agree})
    advice = significance._advice(100, {"mrr@5": agree, "recall@5": split})
    assert "recall@5" in advice and "mrr@5" not in advice and "randomisation" in advice


def test_confidence_intervals_are_paired():
    summary, records = _run()
    cis = significance.confidence_intervals(summary, records, seed=4)
    assert set(cis) == set(FIRST)
    assert set(cis["alpha"]) == {"mrr@3", "hit_rate@3", "recall@3", "ndcg@3"}
    for cid in FIRST:  # same seed, same question indices: equal to the single-vector interval
        assert cis[cid]["mrr@3"] == pytest.approx(list(significance.bootstrap_ci(_mrr(cid), seed=4)))
    only = significance.confidence_intervals(summary, records, metrics=["precision@3"])
    assert set(only["beta"]) == {"precision@3"}


# ---------------------------------------------------------------------------------------------------
# Rank matrix and tags


def test_rank_matrix_puts_disagreement_first():
    summary, records = _run()
    questions, candidates, matrix = significance.rank_matrix(summary, records)
    assert candidates == ["alpha", "beta", "gamma"]
    # std of 1/rank (miss 0): q5 .416, q2 = q3 .408 (one miss each -> by id), q6 .314, q1 .236, q8 .141,
    # q4 .118, q7 0 (everyone at rank 1)
    assert questions == ["q5", "q2", "q3", "q6", "q1", "q8", "q4", "q7"]
    assert matrix[0] == [1, 3, None] and matrix[-1] == [1, 1, 1]


def test_rank_matrix_all_missed_before_all_found():
    records = [
        {"candidate": c, "question_id": q, "tags": [], "first_relevant_rank": r, "metrics": {}}
        for q, r in (("a-found", 1), ("b-missed", None))
        for c in ("x", "y")
    ]
    summary = {"k": 1, "depth": 3, "candidates": [{"id": "x", "rank": 1}, {"id": "y", "rank": 2}]}
    assert significance.rank_matrix(*_typed(summary, records))[0] == ["b-missed", "a-found"]


def test_rank_matrix_csv_round_trip(tmp_path):
    summary, records = _run()
    questions, candidates, matrix = significance.rank_matrix(summary, records)
    path = tmp_path / "out" / "rank_matrix.csv"
    significance.write_rank_matrix_csv(path, questions, candidates, matrix)
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["question_id", "alpha", "beta", "gamma"]
    assert [r[0] for r in rows[1:]] == questions
    assert [[int(c) if c else None for c in r[1:]] for r in rows[1:]] == matrix
    assert rows[1] == ["q5", "1", "3", ""]


def test_per_tag_means():
    summary, records = _run()
    res = significance.per_tag(summary, records)
    assert list(res["tags"]) == ["easy", "hr", "it"]
    assert res["tags"] == {"easy": 3, "hr": 3, "it": 3}
    # hr = q1, q2, q5: alpha 1, 1, 1; beta 1, .5, 1/3; easy = q1, q3, q7: gamma .5, 1, 1
    assert res["means"]["hr"]["alpha"] == pytest.approx(1.0)
    assert res["means"]["hr"]["beta"] == pytest.approx((1 + 0.5 + 1 / 3) / 3)
    assert res["means"]["easy"]["gamma"] == pytest.approx((0.5 + 1 + 1) / 3)
    # it = q3, q4, q6 on hit_rate@3: gamma 1, 0 (rank 4 > k), 1
    assert significance.per_tag(summary, records, "hit_rate@3")["means"]["it"]["gamma"] == pytest.approx(2 / 3)
