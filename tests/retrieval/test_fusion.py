"""Rank fusion: RRF and the convex combination by hand (exact fractions), and against ranx.fuse."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.retrieval.fusion import convex, min_max, rrf


def _ranked(units, scores):
    return np.asarray(units, dtype=np.int64), np.asarray(scores, dtype=np.float64)


# Three lists of different lengths; unit 4 is only in the third, unit 3 misses the first.
LISTS = [
    _ranked([0, 1, 2], [3.0, 2.0, 1.0]),
    _ranked([2, 3], [0.9, 0.1]),
    _ranked([1, 0, 4, 3], [10.0, 8.0, 6.0, 2.0]),
]


def _assert_exact(result, expected):
    units, scores = result
    assert units.dtype == np.int64 and scores.dtype == np.float64
    assert units.tolist() == [u for u, _ in expected]
    for got, (_, want) in zip(scores.tolist(), expected):
        assert got == pytest.approx(float(want), rel=0, abs=1e-15)


def test_rrf_by_hand():
    f = lambda r: Fraction(1, 60 + r)  # noqa: E731
    tied = f(1) + f(2)  # unit 0 (ranks 1, 2) and unit 1 (ranks 2, 1): tie, unit index decides
    expected = [(0, tied), (1, tied), (2, f(3) + f(1)), (3, f(2) + f(4)), (4, f(3))]
    _assert_exact(rrf(LISTS), expected)
    _assert_exact(rrf(LISTS, n=2), expected[:2])
    k10 = lambda r: Fraction(1, 10 + r)  # noqa: E731
    _assert_exact(rrf(LISTS, k=10, n=1), [(0, k10(1) + k10(2))])


def test_convex_by_hand():
    # min-max per list: [1, 1/2, 0]; [1, 0]; (s - 2) / 8 = [1, 3/4, 1/2, 0]
    w = [Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)]
    expected = [
        (0, w[0] * 1 + w[2] * Fraction(3, 4)),
        (1, w[0] * Fraction(1, 2) + w[2] * 1),
        (2, w[0] * 0 + w[1] * 1),
        (4, w[2] * Fraction(1, 2)),
        (3, w[1] * 0 + w[2] * 0),  # the worst of both lists it is in: 0, the same as being absent
    ]
    _assert_exact(convex(LISTS, [float(x) for x in w]), expected)
    _assert_exact(convex(LISTS, [0.5, 0.25, 0.25], n=3), expected[:3])
    # raw scores
    raw = convex(LISTS, [0.5, 0.25, 0.25], norm=None)
    assert dict(zip(*(a.tolist() for a in raw)))[3] == pytest.approx(0.25 * 0.1 + 0.25 * 2.0)


def test_min_max_of_equal_scores_is_zero():
    assert min_max(np.array([2.5, 2.5, 2.5])).tolist() == [0.0, 0.0, 0.0]
    assert min_max(np.array([7.0])).tolist() == [0.0]
    assert min_max(np.array([])).tolist() == []
    # a list whose scores are all equal adds nothing to the combination
    flat = _ranked([5, 6, 0], [2.0, 2.0, 2.0])
    units, scores = convex([LISTS[0], flat], [0.5, 0.5])
    assert units.tolist() == [0, 1, 2, 5, 6]
    assert scores.tolist() == [0.5, 0.25, 0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "weights, message",
    [
        ([0.5, 0.25], "one weight per list"),
        ([0.5, 0.25, 0.5], "sum to 1"),
        ([0.2, 0.2, 0.2], "sum to 1"),
        ([1.5, -0.25, -0.25], "non-negative"),
        ([0.5, float("nan"), 0.5], "non-negative"),
    ],
)
def test_weights_are_checked(weights, message):
    with pytest.raises(ValueError, match=message):
        convex(LISTS, weights)


def test_bad_inputs():
    with pytest.raises(ValueError, match="norm"):
        convex(LISTS, [0.5, 0.25, 0.25], norm="z-score")
    with pytest.raises(ValueError, match="best first"):
        rrf([_ranked([0, 1], [1.0, 2.0])])
    with pytest.raises(ValueError, match="more than once"):
        rrf([_ranked([0, 0], [2.0, 1.0])])
    with pytest.raises(ValueError, match="one length"):
        rrf([_ranked([0, 1], [2.0])])
    with pytest.raises(ValueError, match="not finite"):
        convex([_ranked([0], [float("inf")])], [1.0])
    with pytest.raises(ValueError, match="tie_order"):
        rrf(LISTS, tie_order=np.arange(3))
    units, scores = rrf([])
    assert len(units) == len(scores) == 0
    units, _ = rrf([_ranked([], []), _ranked([3], [1.0])])
    assert units.tolist() == [3]


def test_ties_follow_tie_order():
    # units 0 and 1 tie under RRF; a tie order that puts unit 1 first (e.g. its unit id sorts first)
    tie_order = np.array([4, 0, 1, 2, 3])
    units, scores = rrf(LISTS, tie_order=tie_order)
    assert units[:2].tolist() == [1, 0] and scores[0] == scores[1]
    assert units[2:].tolist() == [2, 3, 4]
    # equal-score list: ties at 0 among units 2, 5, 6 follow tie_order
    flat = _ranked([5, 6, 0], [2.0, 2.0, 2.0])
    units, _ = convex([LISTS[0], flat], [0.5, 0.5], tie_order=np.array([0, 1, 9, 0, 0, 5, 3]))
    assert units.tolist() == [0, 1, 6, 5, 2]


# ---- against ranx -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ranx():
    ranx = pytest.importorskip("ranx")
    # first calls compile (numba): keep them out of hypothesis's timing
    runs = [ranx.Run({"q": {"a": 2.0, "b": 1.0}}), ranx.Run({"q": {"b": 3.0, "c": 1.0}})]
    ranx.fuse(runs=runs, norm=None, method="rrf", params={"k": 60})
    ranx.fuse(runs=runs, norm="min-max", method="wsum", params={"weights": [0.5, 0.5]})
    return ranx


@st.composite
def fusion_cases(draw):
    n_lists = draw(st.integers(2, 3))
    n_queries = draw(st.integers(1, 3))
    queries = []
    for _ in range(n_queries):
        lists = []
        for _ in range(n_lists):
            units = draw(st.lists(st.integers(0, 24), min_size=1, max_size=15, unique=True))
            # distinct scores: ties inside a list are where ranx's ordering is arbitrary
            scores = draw(
                st.lists(
                    st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False),
                    min_size=len(units),
                    max_size=len(units),
                    unique=True,
                )
            )
            order = np.argsort(-np.asarray(scores), kind="stable")
            lists.append(_ranked(np.asarray(units)[order], np.asarray(scores)[order]))
        queries.append(lists)
    raw = draw(st.lists(st.integers(1, 100), min_size=n_lists, max_size=n_lists))
    weights = [x / sum(raw) for x in raw]
    return queries, weights


def _ranx_runs(ranx, queries):
    n_lists = len(queries[0])
    return [
        ranx.Run({f"q{q}": {f"d{u}": float(s) for u, s in zip(*lists[i])} for q, lists in enumerate(queries)})
        for i in range(n_lists)
    ]


def _assert_agrees(ours, theirs: dict[str, float]):
    units, scores = ours
    ours_by_unit = {f"d{u}": s for u, s in zip(units.tolist(), scores.tolist())}
    assert set(ours_by_unit) == set(theirs)
    for doc, score in theirs.items():
        assert ours_by_unit[doc] == pytest.approx(score, rel=0, abs=1e-9), doc
    # order: wherever ranx's scores differ, ours put the better unit first
    position = {doc: i for i, doc in enumerate(ours_by_unit)}
    ranked = sorted(theirs.items(), key=lambda kv: -kv[1])
    for i, (a, sa) in enumerate(ranked):
        for b, sb in ranked[i + 1 :]:
            if sa > sb + 1e-9:
                assert position[a] < position[b], (a, b)
    # and ours is best first, ties by unit index
    keys = list(zip((-scores).tolist(), units.tolist()))
    assert keys == sorted(keys)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore:unsafe cast")
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fusion_cases())
def test_agrees_with_ranx(ranx, case):
    queries, weights = case
    runs = _ranx_runs(ranx, queries)
    fused_rrf = ranx.fuse(runs=runs, norm=None, method="rrf", params={"k": 60}).to_dict()
    fused_wsum = ranx.fuse(runs=runs, norm="min-max", method="wsum", params={"weights": weights}).to_dict()
    for q, lists in enumerate(queries):
        _assert_agrees(rrf(lists, k=60), fused_rrf[f"q{q}"])
        _assert_agrees(convex(lists, weights), fused_wsum[f"q{q}"])
