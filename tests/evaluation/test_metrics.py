"""Quality metrics: hand-computed values, edge cases, and differential checks against
trec_eval (pytrec_eval) and ranx on random rankings and judgments.

Notation in the comments: L = log2, so the discount at rank r is 1/L(r+1):
rank 1 -> 1/L(2) = 1, rank 2 -> 1/L(3) ~ 0.6309, rank 3 -> 1/L(4) = 0.5, rank 4 -> 1/L(5) ~ 0.4307.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.core.measures import QUALITY_METRICS, metric_key
from bench.evaluation.metrics import (
    Grades,
    first_relevant_rank,
    hit_curve,
    means,
    quality,
)

TOL = 1e-9
L = math.log2


def make_grades(ranked, ideal, n_relevant) -> Grades:
    return Grades(
        ranked=np.asarray(ranked, dtype=np.int64),
        ideal=np.asarray(ideal, dtype=np.int64),
        n_relevant=np.asarray(n_relevant, dtype=np.int64),
    )


# --- hand-made fixture (depth 5) -----------------------------------------------------------
#
# q0: graded; E(q0) = {A:2, B:1, C:1}; ranking A(2), x(0), B(1), y(0), z(0); C never retrieved.
# q1: nothing relevant retrieved; E(q1) = {D:1}; five non-relevant units returned.
# q2: only two units returned (fewer than k=5), both relevant; E(q2) = {F:1, G:1}.
# q3: grade 3; E(q3) = {H:3, I:1}; ranking x(0), H(3), y(0), I(1), z(0).
# q4: empty ranking (nothing came back); E(q4) = {J:2}.
# q5: |E(q5)| = 0 (no expected unit at all), nothing relevant can be retrieved.
RANKED = [
    [2, 0, 1, 0, 0],
    [0, 0, 0, 0, 0],
    [1, 1, 0, 0, 0],
    [0, 3, 0, 1, 0],
    [0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0],
]
IDEAL = [
    [2, 1, 1, 0, 0],
    [1, 0, 0, 0, 0],
    [1, 1, 0, 0, 0],
    [3, 1, 0, 0, 0],
    [2, 0, 0, 0, 0],
    [0, 0, 0, 0, 0],
]
N_RELEVANT = [3, 1, 2, 2, 1, 0]


@pytest.fixture
def grades() -> Grades:
    return make_grades(RANKED, IDEAL, N_RELEVANT)


def row(result: dict[str, np.ndarray], q: int, k: int) -> dict[str, float]:
    return {name: float(result[metric_key(name, k)][q]) for name in QUALITY_METRICS}


def assert_row(actual: dict[str, float], expected: dict[str, float]) -> None:
    assert set(actual) == set(expected)
    for name, value in expected.items():
        assert actual[name] == pytest.approx(value, abs=TOL), name


ZEROS = {name: 0.0 for name in QUALITY_METRICS}


def test_keys_carry_cutoff(grades):
    result = quality(grades, 3)
    assert set(result) == {f"{m}@3" for m in QUALITY_METRICS}
    for v in result.values():
        assert v.shape == (6,)


# --- one test per metric, on q0 at k=3 -------------------------------------------------------
# q0 top 3: grades [2, 0, 1]; relevant at ranks 1 and 3; n_hit = 2; |E| = 3.


def test_hit_rate_q0(grades):
    # a relevant unit (grade 2) at rank 1 -> 1
    assert quality(grades, 3)["hit_rate@3"][0] == 1.0


def test_recall_q0(grades):
    # 2 relevant in top 3 / |E| = 3 -> 2/3
    assert quality(grades, 3)["recall@3"][0] == pytest.approx(2 / 3, abs=TOL)


def test_precision_q0(grades):
    # 2 relevant in top 3 / k = 3 -> 2/3
    assert quality(grades, 3)["precision@3"][0] == pytest.approx(2 / 3, abs=TOL)


def test_f1_q0(grades):
    # P = R = 2/3 -> F1 = 2 * (4/9) / (4/3) = 2/3
    assert quality(grades, 3)["f1@3"][0] == pytest.approx(2 / 3, abs=TOL)


def test_mrr_q0(grades):
    # first relevant at rank 1 -> 1/1
    assert quality(grades, 3)["mrr@3"][0] == 1.0


def test_ndcg_exponential_q0(grades):
    # gains 2^g - 1: ranked [3, 0, 1], ideal [3, 1, 1]
    # DCG  = 3/L(2) + 0/L(3) + 1/L(4) = 3 + 0.5 = 3.5
    # IDCG = 3/L(2) + 1/L(3) + 1/L(4) = 3.5 + 1/L(3) ~ 4.1309
    # nDCG = 3.5 / 4.1309 ~ 0.84727
    expected = 3.5 / (3.5 + 1 / L(3))
    assert quality(grades, 3)["ndcg@3"][0] == pytest.approx(expected, abs=TOL)
    assert quality(grades, 3, gain="exponential")["ndcg@3"][0] == pytest.approx(expected, abs=TOL)


def test_ndcg_linear_q0(grades):
    # gains g: ranked [2, 0, 1], ideal [2, 1, 1]
    # DCG  = 2 + 0 + 1/L(4) = 2.5
    # IDCG = 2 + 1/L(3) + 1/L(4) = 2.5 + 1/L(3) ~ 3.1309
    # nDCG = 2.5 / 3.1309 ~ 0.79849
    expected = 2.5 / (2.5 + 1 / L(3))
    assert quality(grades, 3, gain="linear")["ndcg@3"][0] == pytest.approx(expected, abs=TOL)


def test_map_q0(grades):
    # relevant at ranks 1 and 3: P@1 = 1/1, P@3 = 2/3; sum = 5/3; / |E| = 3 -> 5/9
    assert quality(grades, 3)["map@3"][0] == pytest.approx(5 / 9, abs=TOL)


# --- the cases -------------------------------------------------------------------------------


def test_nothing_relevant_retrieved(grades):
    # q1: five non-relevant units; |E| = 1 -> every metric 0 at every k (IDCG > 0, DCG = 0)
    for k in range(1, 6):
        for gain in ("exponential", "linear"):
            assert_row(row(quality(grades, k, gain), 1, k), ZEROS)


def test_fewer_than_k_results_precision_divides_by_k(grades):
    # q2 at k=5: two units came back, both relevant.
    # precision = 2 / 5 = 0.4 (not 2/2); recall = 2/2 = 1
    # f1 = 2 * 0.4 * 1 / 1.4 = 0.8 / 1.4 = 4/7
    # mrr = 1; map = (P@1 + P@2) / 2 = (1 + 1) / 2 = 1
    # ndcg = (1 + 1/L(3)) / (1 + 1/L(3)) = 1 (same in both gains: binary)
    expected = {"hit_rate": 1.0, "recall": 1.0, "precision": 0.4, "f1": 4 / 7, "mrr": 1.0, "ndcg": 1.0, "map": 1.0}
    assert_row(row(quality(grades, 5), 2, 5), expected)
    assert_row(row(quality(grades, 5, "linear"), 2, 5), expected)
    # k=4: precision = 2/4
    assert quality(grades, 4)["precision@4"][2] == pytest.approx(0.5, abs=TOL)


def test_grade_above_one(grades):
    # q3 at k=5: ranked [0, 3, 0, 1, 0], ideal [3, 1, 0, 0, 0], |E| = 2
    # hit 1; n_hit 2; recall 2/2 = 1; precision 2/5; f1 = 2*0.4*1/1.4 = 4/7
    # mrr: first relevant at rank 2 -> 1/2
    # map: P@2 = 1/2, P@4 = 2/4 -> (0.5 + 0.5) / 2 = 0.5
    # exponential: gains 2^3-1 = 7 and 2^1-1 = 1
    #   DCG  = 7/L(3) + 1/L(5);  IDCG = 7/L(2) + 1/L(3) = 7 + 1/L(3)
    # linear: DCG = 3/L(3) + 1/L(5); IDCG = 3 + 1/L(3)
    base = {"hit_rate": 1.0, "recall": 1.0, "precision": 0.4, "f1": 4 / 7, "mrr": 0.5, "map": 0.5}
    exp_ndcg = (7 / L(3) + 1 / L(5)) / (7 + 1 / L(3))
    lin_ndcg = (3 / L(3) + 1 / L(5)) / (3 + 1 / L(3))
    assert_row(row(quality(grades, 5), 3, 5), {**base, "ndcg": exp_ndcg})
    assert_row(row(quality(grades, 5, "linear"), 3, 5), {**base, "ndcg": lin_ndcg})


def test_empty_ranking(grades):
    # q4: nothing came back (all-zero row) but |E| = 1 -> all zeros; IDCG = 2^2-1 = 3 > 0
    for k in range(1, 6):
        assert_row(row(quality(grades, k), 4, k), ZEROS)


def test_no_expected_units_gives_zeros_without_warnings(grades):
    # q5: |E| = 0 -> IDCG = 0, recall's denominator 0, map's denominator 0: all defined as 0.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            for k in range(1, 6):
                for gain in ("exponential", "linear"):
                    result = quality(grades, k, gain)
                    for values in result.values():
                        assert np.all(np.isfinite(values))
                    assert_row(row(result, 5, k), ZEROS)
            # a set made only of such questions
            only_empty = make_grades([[0, 0]], [[0, 0]], [0])
            for k in (1, 2):
                result = quality(only_empty, k)
                assert_row(row(result, 0, k), ZEROS)
                assert means(result) == {metric_key(m, k): 0.0 for m in QUALITY_METRICS}


def test_k_equals_one(grades):
    # q0 at k=1: top [2]; hit 1; recall 1/3; precision 1/1; f1 = 2*1*(1/3)/(4/3) = 0.5
    # mrr 1; ndcg: DCG = 3 = IDCG (ideal top-1 is also grade 2) -> 1; map = P@1 / |E| = 1/3
    assert_row(
        row(quality(grades, 1), 0, 1),
        {"hit_rate": 1.0, "recall": 1 / 3, "precision": 1.0, "f1": 0.5, "mrr": 1.0, "ndcg": 1.0, "map": 1 / 3},
    )
    # q3 at k=1: top [0] -> everything 0, mrr is cut at k (first relevant is at rank 2)
    assert_row(row(quality(grades, 1), 3, 1), ZEROS)


def test_k_equals_depth(grades):
    # q0 at k=5 (= depth): ranked [2, 0, 1, 0, 0]; n_hit 2
    # recall 2/3; precision 2/5; f1 = 2*(2/5)*(2/3) / (2/5 + 2/3) = (8/15) / (16/15) = 0.5
    # mrr 1; map = (1 + 2/3) / 3 = 5/9
    # ndcg (exp): DCG = 3 + 1/L(4) = 3.5; IDCG = 3 + 1/L(3) + 1/L(4) (ideal ranks 4, 5 are 0)
    expected = {
        "hit_rate": 1.0,
        "recall": 2 / 3,
        "precision": 0.4,
        "f1": 0.5,
        "mrr": 1.0,
        "ndcg": 3.5 / (3.5 + 1 / L(3)),
        "map": 5 / 9,
    }
    assert_row(row(quality(grades, 5), 0, 5), expected)


def test_linear_and_exponential_gain(grades):
    exp = quality(grades, 3, "exponential")["ndcg@3"]
    lin = quality(grades, 3, "linear")["ndcg@3"]
    # graded q0: 0.84727 vs 0.79849 (see test_ndcg_*_q0)
    assert abs(exp[0] - lin[0]) > 0.01
    # binary data: 2^1 - 1 = 1, so both gains give the same nDCG
    binary = make_grades(
        [[0, 1, 1, 0], [1, 0, 0, 1], [0, 0, 0, 0]], [[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]], [3, 2, 1]
    )
    for k in range(1, 5):
        e = quality(binary, k, "exponential")[f"ndcg@{k}"]
        li = quality(binary, k, "linear")[f"ndcg@{k}"]
        np.testing.assert_allclose(e, li, rtol=0, atol=TOL)
    # and a hand value for the binary case: row 0 at k=3: DCG = 1/L(3) + 1/L(4); IDCG = 1 + 1/L(3) + 1/L(4)
    assert quality(binary, 3, "linear")["ndcg@3"][0] == pytest.approx((1 / L(3) + 0.5) / (1 + 1 / L(3) + 0.5), abs=TOL)


def test_ndcg_ideal_uses_all_expected_units():
    # The ideal comes from all of E(q), not just what was retrieved: ranked [1, 0], E = {2, 1}.
    # exponential: DCG = 1; IDCG = 3 + 1/L(3) -> 1 / (3 + 1/L(3))
    g = make_grades([[1, 0]], [[2, 1]], [2])
    assert quality(g, 2)["ndcg@2"][0] == pytest.approx(1 / (3 + 1 / L(3)), abs=TOL)


def test_hit_curve(grades):
    curve = hit_curve(grades)
    assert list(curve) == [f"hit_rate@{k}" for k in range(1, 6)]
    values = list(curve.values())
    assert all(a <= b for a, b in zip(values, values[1:]))
    for k in range(1, 6):
        assert curve[f"hit_rate@{k}"] == pytest.approx(float(np.mean(quality(grades, k)[f"hit_rate@{k}"])), abs=TOL)
    # by hand: @1 hits q0, q2 -> 2/6; from @2 on also q3 -> 3/6
    assert values == pytest.approx([2 / 6, 3 / 6, 3 / 6, 3 / 6, 3 / 6], abs=TOL)


def test_first_relevant_rank(grades):
    # q0 rank 1; q1 miss; q2 rank 1; q3 rank 2; q4 miss (empty); q5 miss
    assert first_relevant_rank(grades).tolist() == [1, 0, 1, 2, 0, 0]
    # beyond the cutoff still counts (first_relevant_rank looks at the whole depth)
    assert first_relevant_rank(make_grades([[0, 0, 0, 3]], [[3, 0, 0, 0]], [1])).tolist() == [4]


def test_means_include_zero_rows(grades):
    m = means(quality(grades, 5))
    # mrr@5 per question: [1, 0, 1, 1/2, 0, 0] -> 2.5 / 6
    assert m["mrr@5"] == pytest.approx(2.5 / 6, abs=TOL)
    # hit_rate@5: [1, 0, 1, 1, 0, 0] -> 3/6
    assert m["hit_rate@5"] == pytest.approx(0.5, abs=TOL)
    # recall@5: [2/3, 0, 1, 1, 0, 0] -> (8/3) / 6 = 4/9
    assert m["recall@5"] == pytest.approx(4 / 9, abs=TOL)
    # precision@5: [2/5, 0, 2/5, 2/5, 0, 0] -> 1.2 / 6 = 0.2
    assert m["precision@5"] == pytest.approx(0.2, abs=TOL)
    assert all(isinstance(v, float) for v in m.values())
    assert means({"x@1": np.array([])}) == {"x@1": 0.0}


@pytest.mark.parametrize("k", [0, -1, 6])
def test_bad_k_raises(grades, k):
    # the message names the bad k (so an incidental ValueError from numpy does not count)
    with pytest.raises(ValueError, match=rf"k={k}\b"):
        quality(grades, k)


def test_unknown_gain_raises(grades):
    with pytest.raises(ValueError, match="'log'"):
        quality(grades, 3, gain="log")
    with pytest.raises(ValueError, match="'Linear'"):
        quality(grades, 3, gain="Linear")


# --- random rankings and judgments -----------------------------------------------------------


@st.composite
def rankings(draw, min_relevant: int = 1):
    """(depth, qrels, run, k): qrels graded 0..3 (0 = judged non-relevant), runs without ties."""
    depth = draw(st.integers(1, 8))
    universe = [f"d{i}" for i in range(draw(st.integers(1, 20)))]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(draw(st.integers(1, 5))):
        qid = f"q{q}"
        judged = draw(st.lists(st.sampled_from(universe), unique=True, max_size=len(universe)))
        grades_ = draw(st.lists(st.integers(0, 3), min_size=len(judged), max_size=len(judged)))
        qrel = dict(zip(judged, grades_))
        if sum(g > 0 for g in qrel.values()) < min_relevant:
            # a relevant unit that no ranking can retrieve (outside the universe)
            qrel[f"hidden-{qid}"] = draw(st.integers(1, 3))
        docs = draw(st.lists(st.sampled_from(universe), unique=True, max_size=min(depth, len(universe))))
        scores = sorted(
            draw(st.lists(st.integers(-(10**6), 10**6), unique=True, min_size=len(docs), max_size=len(docs))),
            reverse=True,
        )
        qrels[qid] = qrel
        run[qid] = {doc: float(s) for doc, s in zip(docs, scores)}
    k = draw(st.integers(1, depth))
    return depth, qrels, run, k


def grades_from(depth: int, qrels: dict, run: dict) -> Grades:
    """Build Grades the straightforward way; ``run`` dicts are in rank order."""
    n = len(qrels)
    ranked = np.zeros((n, depth), dtype=np.int64)
    ideal = np.zeros((n, depth), dtype=np.int64)
    n_rel = np.zeros(n, dtype=np.int64)
    for i, qid in enumerate(qrels):
        ordered = sorted(run[qid], key=lambda d: -run[qid][d])
        assert ordered == list(run[qid])
        for r, doc in enumerate(ordered):
            ranked[i, r] = qrels[qid].get(doc, 0)
        best = sorted(qrels[qid].values(), reverse=True)[:depth]
        ideal[i, : len(best)] = best
        n_rel[i] = sum(g > 0 for g in qrels[qid].values())
    return Grades(ranked, ideal, n_rel)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore:unsafe cast")
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rankings())
def test_agrees_with_trec_eval_and_ranx(case):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    ranx = pytest.importorskip("ranx")
    depth, qrels, run, k = case
    grades = grades_from(depth, qrels, run)
    exp = quality(grades, k, "exponential")
    lin = quality(grades, k, "linear")
    qids = list(qrels)

    def ours(result, name, qid):
        return float(result[metric_key(name, k)][qids.index(qid)])

    # Queries with an empty ranking: neither tool accepts them; ours must give zeros.
    for qid in qids:
        if not run[qid]:
            assert_row({m: ours(exp, m, qid) for m in QUALITY_METRICS}, ZEROS)
            assert_row({m: ours(lin, m, qid) for m in QUALITY_METRICS}, ZEROS)
    present = [qid for qid in qids if run[qid]]
    if not present:
        return

    # trec_eval
    p_run = {qid: run[qid] for qid in present}
    measures = {f"P_{k}", f"recall_{k}", f"ndcg_cut_{k}", f"map_cut_{k}"}
    trec = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(p_run)
    cut_run = {qid: dict(list(run[qid].items())[:k]) for qid in present}
    trec_rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(cut_run)
    for qid in present:
        pairs = [
            ("precision", lin, trec[qid][f"P_{k}"]),
            ("recall", lin, trec[qid][f"recall_{k}"]),
            ("ndcg", lin, trec[qid][f"ndcg_cut_{k}"]),
            ("map", lin, trec[qid][f"map_cut_{k}"]),
            ("mrr", lin, trec_rr[qid]["recip_rank"]),
        ]
        for name, result, theirs in pairs:
            assert ours(result, name, qid) == pytest.approx(theirs, abs=TOL), (name, qid, case)

    # ranx (query order of qrels and run must match: both follow `present`)
    r_qrels = {qid: qrels[qid] for qid in present}
    r_run = {qid: run[qid] for qid in present}
    names = {
        "ndcg_burges": ("ndcg", exp),
        "ndcg": ("ndcg", lin),
        "hit_rate": ("hit_rate", exp),
        "mrr": ("mrr", exp),
        "precision": ("precision", exp),
        "recall": ("recall", exp),
        "f1": ("f1", exp),
        "map": ("map", exp),
    }
    scores = ranx.evaluate(r_qrels, r_run, [f"{m}@{k}" for m in names], return_mean=False)
    for ranx_name, (name, result) in names.items():
        theirs = scores[f"{ranx_name}@{k}"]
        for i, qid in enumerate(present):
            assert ours(result, name, qid) == pytest.approx(float(theirs[i]), abs=TOL), (ranx_name, qid, case)


@settings(max_examples=200, deadline=None)
@given(rankings(min_relevant=0), st.sampled_from(["exponential", "linear"]))
def test_metrics_bounded_on_random_grades(case, gain):
    depth, qrels, run, _ = case
    # also questions with |E(q)| = 0 (judged non-relevant only, or nothing judged)
    grades = grades_from(depth, qrels, run)
    curve = hit_curve(grades)
    previous = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in range(1, depth + 1):
            result = quality(grades, k, gain)
            assert set(result) == {metric_key(m, k) for m in QUALITY_METRICS}
            for key, values in result.items():
                assert values.shape == (len(qrels),)
                assert np.all(np.isfinite(values)), key
                assert np.all((values >= 0.0) & (values <= 1.0 + TOL)), (key, values)
            zero = grades.n_relevant == 0
            for key, values in result.items():
                assert np.all(values[zero] == 0.0), key
            # hit_curve is monotone and matches mean hit_rate@k
            assert curve[f"hit_rate@{k}"] == pytest.approx(float(np.mean(result[f"hit_rate@{k}"])), abs=TOL)
            assert curve[f"hit_rate@{k}"] >= previous
            previous = curve[f"hit_rate@{k}"]
