"""The dict → grade matrix builder (bench.evaluation.from_dicts), its C reader and its numpy path, against
a plain per-question ranking and against each other."""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bench.errors import BenchError
from bench.evaluation import from_dicts
from bench.evaluation.from_dicts import grades_from_dicts


def reference(qrels: dict, run: dict, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """trec_eval's order spelt out: score descending, then doc id descending; grade ≤ 0 not relevant."""
    ranked, ideal, n_relevant = [], [], []
    for qid, judged in qrels.items():
        relevant = {doc: int(g) for doc, g in judged.items() if g > 0}
        scores = run.get(qid, {})
        by_id = sorted(scores, reverse=True)
        order = sorted(by_id, key=lambda doc: -scores[doc])[:depth]  # stable: ties keep id order
        ranked.append([relevant.get(doc, 0) for doc in order] + [0] * (depth - len(order)))
        top = sorted(relevant.values(), reverse=True)[:depth]
        ideal.append(top + [0] * (depth - len(top)))
        n_relevant.append(len(relevant))
    shape = (len(qrels), depth)
    return (
        np.array(ranked, dtype=np.int64).reshape(shape),
        np.array(ideal, dtype=np.int64).reshape(shape),
        np.array(n_relevant),
    )


@st.composite
def cases(draw):
    docs = draw(st.lists(st.text("abé\x00z", max_size=3), min_size=1, max_size=40, unique=True))
    scores = draw(st.sampled_from([[0.5], [0.1, 0.9], [0.0, 1.0, 2.0, float("inf"), float("-inf")]]))
    qrels, run = {}, {}
    for q in range(draw(st.integers(0, 6))):
        qid = f"q{q}"
        judged = draw(st.lists(st.sampled_from(docs), max_size=8, unique=True))
        qrels[qid] = {d: draw(st.sampled_from([-1, 0, 0.5, 1, 2, 3, 2.7])) for d in judged}
        if draw(st.booleans()):  # else the question is missing from the run
            retrieved = draw(st.lists(st.sampled_from(docs), max_size=len(docs), unique=True))
            if draw(st.booleans()):
                got = draw(st.lists(st.sampled_from(scores), min_size=len(retrieved), max_size=len(retrieved)))
            else:  # distinct, sometimes already descending as retrievers hand them over
                got = draw(st.permutations(range(len(retrieved))))
                got = sorted(got, reverse=True) if draw(st.booleans()) else got
            run[qid] = {d: float(s) for d, s in zip(retrieved, got)}
    run["only-in-run"] = {docs[0]: 1.0}
    return qrels, run, draw(st.integers(1, 8)), draw(st.sampled_from([0, 2, 1000]))


def in_numpy(qrels: dict, run: dict, depth: int):
    """The numpy path, which reads what the C reader leaves (and everything where it is not built)."""
    return from_dicts._grades_in_numpy(list(qrels.values()), [run.get(q, {}) for q in qrels], depth)


def assert_grades(got, want) -> None:
    assert np.array_equal(got.ranked, want[0]) and np.array_equal(got.ideal, want[1])
    assert np.array_equal(got.n_relevant, want[2])


def test_the_c_reader_is_built():
    # `make` builds it with the install; without it every evaluation takes the numpy path, ~10× slower
    assert from_dicts._compiled is not None, "bench/evaluation/_from_dicts.c is not built: pip install -e . again"
    ranked, ideal, n_relevant = np.zeros((1, 2), np.int64), np.zeros((1, 2), np.int64), np.zeros(1, np.int64)
    assert from_dicts._compiled.fill_grades([{"a": 1}], [{"b": 0.9, "a": 0.5}], 2, ranked, ideal, n_relevant)
    assert ranked.tolist() == [[0, 1]] and ideal.tolist() == [[1, 0]] and n_relevant.tolist() == [1]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_equals_the_plain_ranking(case):
    qrels, run, depth, pad_factor = case
    want = reference(qrels, run, depth)
    assert_grades(grades_from_dicts(qrels, run, depth), want)
    saved = from_dicts._PAD_FACTOR
    from_dicts._PAD_FACTOR = pad_factor  # both ways of sorting a ragged run: padded matrix and flat
    try:
        assert_grades(in_numpy(qrels, run, depth), want)
    finally:
        from_dicts._PAD_FACTOR = saved


class Grade(int):
    """A number whose type is defined in Python: its conversion could run any code, so C leaves it."""


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.data())
def test_numbers_of_other_types(case, data):
    # numpy scalars and bools are read in C; a Python-defined number sends the call to numpy
    qrels, run, depth, _ = case
    assume(qrels)
    qid = data.draw(st.sampled_from(sorted(qrels)))
    odd = data.draw(st.sampled_from(["numpy score", "bool grade", "numpy grade", "python grade"]))
    if odd == "numpy score" and run.get(qid):
        run[qid] = {d: np.float32(s) for d, s in run[qid].items()}
    elif odd == "bool grade":
        qrels[qid] = {d: g > 1 for d, g in qrels[qid].items()}
    elif odd == "numpy grade":
        qrels[qid] = {d: np.int16(int(g)) for d, g in qrels[qid].items()}
    else:
        qrels[qid] = {d: Grade(int(g)) for d, g in qrels[qid].items()}
    assert_grades(grades_from_dicts(qrels, run, depth), reference(qrels, run, depth))
    assert_grades(in_numpy(qrels, run, depth), reference(qrels, run, depth))


def test_what_the_c_reader_reads_and_leaves():
    def read(judged, scores):
        out = np.zeros((1, 2), np.int64), np.zeros((1, 2), np.int64), np.zeros(1, np.int64)
        return from_dicts._compiled.fill_grades([judged], [scores], 2, *out), out[0].tolist()

    assert read({"a": np.int64(2)}, {"b": np.float32(0.9), "a": np.float64(0.5)}) == (True, [[0, 2]])
    assert read({"a": True}, {"a": 1, "b": 2**80}) == (True, [[0, 1]])
    assert read({"a": Grade(1)}, {"a": 1.0})[0] is False
    assert read({"a": 1}, {"a": "0.5"})[0] is False  # not a number: numpy's reader says so
    assert read({1: 1}, {1: 1.0})[0] is False  # int doc ids: compared and hashed in Python


def test_int_doc_ids_and_large_ints():
    qrels = {"q": {1: 2, 2: 1}, "r": {"a": 1}}
    run = {"q": {1: 0.5, 2: 0.9, 3: 0.7}, "r": {"a": 2**80, "b": 3}}
    assert grades_from_dicts(qrels, run, 3).ranked.tolist() == [[1, 0, 2], [1, 0, 0]]


def test_ties_at_the_cutoff_go_to_the_larger_doc_id():
    # ten docs share the top score; at depth 2 only the two largest ids make it, whatever the insertion order
    run = {"q": {f"d{i}": 1.0 for i in range(10)} | {"top": 2.0}}
    qrels = {"q": {"d9": 3, "d8": 2, "d0": 1}}
    assert grades_from_dicts(qrels, run, 3).ranked.tolist() == [[0, 3, 2]]
    assert grades_from_dicts(qrels, run, 1).ranked.tolist() == [[0]]


def test_mappings_other_than_dicts_and_empty_input():
    qrels = {"q": MappingProxyType({"a": 1})}
    run = MappingProxyType({"q": MappingProxyType({"b": 0.9, "a": 0.5})})
    assert grades_from_dicts(qrels, run, 2).ranked.tolist() == [[0, 1]]
    empty = grades_from_dicts({}, {"q": {"a": 1.0}}, 3)
    assert empty.ranked.shape == (0, 3) and empty.ideal.shape == (0, 3) and len(empty.n_relevant) == 0
    nothing_run = grades_from_dicts({"q": {"a": 2}}, {}, 2)
    assert nothing_run.ranked.tolist() == [[0, 0]] and nothing_run.ideal.tolist() == [[2, 0]]


def test_a_nan_score_is_refused():
    with pytest.raises(BenchError, match="NaN"):
        grades_from_dicts({"q": {"a": 1}}, {"q": {"a": float("nan")}}, 1)
    with pytest.raises(BenchError, match="NaN"):  # in a later question, after the C reader has begun
        grades_from_dicts({"p": {"a": 1}, "q": {"a": 1}}, {"p": {"a": 1.0}, "q": {"b": float("nan")}}, 1)
    with pytest.raises(BenchError, match="NaN"):
        in_numpy({"q": {"a": 1}}, {"q": {"b": 0.5, "a": float("nan")}}, 1)


def test_a_score_or_grade_that_is_not_a_number_is_refused():
    with pytest.raises(BenchError, match="not a number"):
        grades_from_dicts({"q": {"a": 1}}, {"q": {"a": "high"}}, 1)
    with pytest.raises(BenchError, match="not a number"):
        grades_from_dicts({"q": {"a": [1]}}, {"q": {"a": 0.5}}, 1)
