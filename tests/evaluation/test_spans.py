"""Span metrics (bench.evaluation.spans): hand-computed cases and a differential test against a naive model.

Notation in the comments: R = top-k retrieved chunks lying in an evidence document, H = union of
the evidence spans, I = |union(R) ∩ H|, Σ = Σ|c ∈ R| (with multiplicity).
recall = I/|H|, precision = I/Σ, iou = I/(Σ + |H| − I).
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.evaluation.spans import SPAN_METRICS, covered, merge, span_keys, span_metrics


def metrics(retrieved, evidence, k, min_overlap=0.5):
    """span_metrics with the ``@k`` suffix stripped, for short assertions."""
    out = span_metrics(retrieved, evidence, k, min_overlap)
    assert list(out) == span_keys(k)
    return {key.split("@")[0]: value for key, value in out.items()}


def expect(recall, precision, iou, evidence_recall):
    return {
        "span_recall": pytest.approx(recall, abs=1e-12),
        "span_precision": pytest.approx(precision, abs=1e-12),
        "span_iou": pytest.approx(iou, abs=1e-12),
        "evidence_recall": pytest.approx(evidence_recall, abs=1e-12),
    }


# ---------------------------------------------------------------------------------------------
# merge / covered


def test_span_keys_carry_the_cutoff():
    assert span_keys(3) == ["span_recall@3", "span_precision@3", "span_iou@3", "evidence_recall@3"]
    assert SPAN_METRICS == ("span_recall", "span_precision", "span_iou", "evidence_recall")


def test_merge_joins_touching_intervals():
    # [0,5) and [5,10) share no character but touch: one interval [0,10)
    assert merge([(0, 5), (5, 10)]) == [(0, 10)]


def test_merge_keeps_a_gap_of_one_character():
    # [0,5) and [6,8) leave character 5 uncovered: stay separate
    assert merge([(0, 5), (6, 8)]) == [(0, 5), (6, 8)]


def test_merge_absorbs_nested_intervals():
    # [2,3) and [4,9) lie inside [0,10); a nested interval must not shrink the outer end
    assert merge([(0, 10), (2, 3), (4, 9)]) == [(0, 10)]
    assert merge([(2, 3), (0, 10)]) == [(0, 10)]


def test_merge_sorts_unsorted_input():
    # sorted: (0,5) (3,8) (20,30) (25,26) -> [0,8) and [20,30)
    assert merge([(20, 30), (0, 5), (25, 26), (3, 8)]) == [(0, 8), (20, 30)]


def test_merge_drops_empty_intervals_and_accepts_generators():
    assert merge([]) == []
    assert merge([(5, 5)]) == []
    assert merge(iter([(7, 7), (1, 3)])) == [(1, 3)]


def test_covered_simple_overlap():
    # [0,10) ∩ [5,15) = [5,10) -> 5
    assert covered([(0, 10)], [(5, 15)]) == 5
    assert covered([(5, 15)], [(0, 10)]) == 5


def test_covered_touching_intervals_share_nothing():
    assert covered([(0, 5)], [(5, 10)]) == 0


def test_covered_several_intervals_each_side():
    a = [(0, 5), (10, 20)]
    b = [(3, 12), (15, 30)]
    # [3,5) -> 2, [10,12) -> 2, [15,20) -> 5: total 9
    assert covered(a, b) == 9
    assert covered(b, a) == 9


def test_covered_one_long_interval_over_many():
    # [1,9) against [0,2) [4,6) [8,10): 1 + 2 + 1 = 4
    assert covered([(0, 2), (4, 6), (8, 10)], [(1, 9)]) == 4
    assert covered([(1, 9)], [(0, 2), (4, 6), (8, 10)]) == 4


def test_covered_nested_and_empty():
    assert covered([(0, 100)], [(10, 20), (30, 35)]) == 15  # 10 + 5
    assert covered([], [(0, 10)]) == 0
    assert covered([(0, 10)], []) == 0


# ---------------------------------------------------------------------------------------------
# span_metrics, by hand


def test_chunk_exactly_the_evidence():
    # I = 10, |H| = 10, Σ = 10: recall 10/10, precision 10/10, iou 10/(10+10-10)
    got = metrics([("a", 10, 20)], [("a", 10, 20)], k=1)
    assert got == expect(1.0, 1.0, 1.0, 1.0)


def test_chunk_twice_the_evidence():
    # chunk [0,20), evidence [5,15): I = 10, |H| = 10, Σ = 20
    # recall 10/10 = 1, precision 10/20 = 0.5, iou 10/(20+10-10) = 0.5
    got = metrics([("a", 0, 20)], [("a", 5, 15)], k=1)
    assert got == expect(1.0, 0.5, 0.5, 1.0)


def test_overlapping_chunks_multiplicity_in_precision_union_in_intersection():
    # chunks [0,20) and [10,30) overlap on [10,20); union(R) = [0,30); evidence [15,35), |H| = 20
    # I = |[0,30) ∩ [15,35)| = 15 (not 5 + 15 = 20 counted per chunk)
    # Σ = 20 + 20 = 40 (not the union's 30)
    # recall 15/20 = 0.75, precision 15/40 = 0.375, iou 15/(40+20-15) = 15/45 = 1/3
    got = metrics([("a", 0, 20), ("a", 10, 30)], [("a", 15, 35)], k=2, min_overlap=0.75)
    # evidence_recall: 15 >= 0.75 * 20 = 15 -> found
    assert got == expect(0.75, 0.375, 1 / 3, 1.0)


def test_evidence_split_across_a_chunk_boundary_one_side_retrieved():
    # chunks of doc a: [0,50) and [50,100); evidence [40,60) straddles the boundary, |H| = 20
    # only [50,100) retrieved: I = 10, Σ = 50
    # recall 10/20 = 0.5, precision 10/50 = 0.2, iou 10/(50+20-10) = 10/60 = 1/6
    retrieved = [("a", 50, 100)]
    evidence = [("a", 40, 60)]
    assert metrics(retrieved, evidence, k=1, min_overlap=0.5) == expect(0.5, 0.2, 1 / 6, 1.0)  # 10 >= 0.5*20
    assert metrics(retrieved, evidence, k=1, min_overlap=0.6)["evidence_recall"] == 0.0  # 10 < 0.6*20 = 12
    # both halves retrieved: I = 20, Σ = 100 -> recall 1, precision 0.2, iou 20/(100+20-20) = 0.2;
    # the item is fully covered by the union even though each chunk holds only half of it
    both = metrics([("a", 0, 50), ("a", 50, 100)], evidence, k=2, min_overlap=1.0)
    assert both == expect(1.0, 0.2, 0.2, 1.0)


def test_evidence_in_a_document_with_no_retrieved_chunk():
    # evidence: a [0,10) and b [0,30) -> |H| = 40; retrieved only a [0,20): I = 10, Σ = 20
    # recall 10/40 = 0.25, precision 10/20 = 0.5, iou 10/(20+40-10) = 0.2
    # evidence_recall: item a found, item b not -> 1/2
    got = metrics([("a", 0, 20)], [("a", 0, 10), ("b", 0, 30)], k=3)
    assert got == expect(0.25, 0.5, 0.2, 0.5)


def test_intersection_is_per_document():
    # same character positions in another evidence document do not count: chunk b [0,10)
    # against evidence a [0,10) and b [20,30): I = 0 -> everything 0
    got = metrics([("b", 0, 10)], [("a", 0, 10), ("b", 20, 30)], k=1)
    assert got == expect(0.0, 0.0, 0.0, 0.0)


def test_chunks_from_an_unrelated_document_count_as_text_but_never_as_evidence():
    # z is no evidence document: its chunks add to Σ (text handed on) but never to I, even at
    # the same positions. R = z[0,1000), z[5,15), a[0,20); evidence a[5,15):
    # I = 10, |H| = 10, Σ = 1000 + 10 + 20 = 1030 -> recall 1, precision 10/1030,
    # iou 10 / (1030 + 10 - 10) = 10/1030, evidence recall 1
    retrieved = [("z", 0, 1000), ("z", 5, 15), ("a", 0, 20)]
    got = metrics(retrieved, [("a", 5, 15)], k=3)
    assert got == expect(1.0, 10 / 1030, 10 / 1030, 1.0)


def test_unrelated_chunks_take_their_rank():
    # with k = 1 the top chunk is z: nothing of the evidence, Σ = 10 -> all 0;
    # with k = 2: I = 10, Σ = 20, |H| = 10 -> recall 1, precision 0.5, iou 10/20, evidence 1
    retrieved = [("z", 0, 10), ("a", 0, 10)]
    assert metrics(retrieved, [("a", 0, 10)], k=1) == expect(0.0, 0.0, 0.0, 0.0)
    assert metrics(retrieved, [("a", 0, 10)], k=2) == expect(1.0, 0.5, 0.5, 1.0)


def test_fewer_chunks_than_k():
    # k = 5 but only 2 chunks: [0,10) and [20,30); evidence [0,30), |H| = 30
    # I = 20, Σ = 20: recall 20/30, precision 20/20, iou 20/(20+30-20) = 2/3
    got = metrics([("a", 0, 10), ("a", 20, 30)], [("a", 0, 30)], k=5, min_overlap=0.5)
    assert got == expect(2 / 3, 1.0, 2 / 3, 1.0)  # 20 >= 0.5*30


def test_chunk_beyond_rank_k_is_ignored():
    # k = 1: R = [[0,10)] only; evidence [0,20): I = 10, Σ = 10, |H| = 20
    # recall 0.5, precision 1, iou 10/(10+20-10) = 0.5; evidence_recall 10 >= 0.5*20 -> 1
    retrieved = [("a", 0, 10), ("a", 10, 20)]
    assert metrics(retrieved, [("a", 0, 20)], k=1, min_overlap=0.5) == expect(0.5, 1.0, 0.5, 1.0)
    # with min_overlap 0.75 the second chunk would be needed: 10 < 15 -> 0
    assert metrics(retrieved, [("a", 0, 20)], k=1, min_overlap=0.75)["evidence_recall"] == 0.0
    # k = 2 takes both: everything 1
    assert metrics(retrieved, [("a", 0, 20)], k=2, min_overlap=0.75) == expect(1.0, 1.0, 1.0, 1.0)


def test_evidence_recall_exactly_at_a_decimal_threshold():
    # min_overlap 0.07, evidence [0,100): threshold 0.07 * 100 = 7 exactly (in floats 7.000000000000001)
    evidence = [("a", 0, 100)]
    # chunk [93,120): overlap 7 -> reaches the threshold -> found
    assert metrics([("a", 93, 120)], evidence, k=1, min_overlap=0.07)["evidence_recall"] == 1.0
    # chunk [94,120): overlap 6 < 7 -> not found
    assert metrics([("a", 94, 120)], evidence, k=1, min_overlap=0.07)["evidence_recall"] == 0.0


def test_evidence_recall_threshold_is_relative_to_the_evidence_length():
    # chunk [0,10) inside evidence [0,100): overlap 10; 0.5 * 100 = 50 > 10 -> not found
    # (the chunk-relevance rule's min(len(chunk), len(evidence)) = 10 would accept it; this must not)
    got = metrics([("a", 0, 10)], [("a", 0, 100)], k=1, min_overlap=0.5)
    # I = 10, |H| = 100, Σ = 10: recall 0.1, precision 1, iou 10/(10+100-10) = 0.1
    assert got == expect(0.1, 1.0, 0.1, 0.0)
    # two items, one short one long: [0,10) fully covered, [20,100) covered 10/80 -> 1 of 2
    got = metrics([("a", 0, 30)], [("a", 0, 10), ("a", 20, 100)], k=1, min_overlap=0.5)
    assert got["evidence_recall"] == 0.5


def test_evidence_recall_needs_a_positive_overlap():
    # min_overlap 0: 0 >= 0 * 10 holds, but an item with no overlap is never found
    assert metrics([("a", 10, 20)], [("a", 0, 10)], k=1, min_overlap=0.0)["evidence_recall"] == 0.0
    assert metrics([("a", 9, 20)], [("a", 0, 10)], k=1, min_overlap=0.0)["evidence_recall"] == 1.0


def test_overlapping_evidence_items_count_once_in_h_but_separately_in_evidence_recall():
    # evidence [0,20) and [10,30): H = [0,30), |H| = 30; chunk [0,20): I = 20, Σ = 20
    # recall 20/30, precision 1, iou 20/(20+30-20) = 2/3
    # items: [0,20) covered 20/20 -> found; [10,30) covered 10/20 = 0.5 < 0.75 -> not: 1/2
    got = metrics([("a", 0, 20)], [("a", 0, 20), ("a", 10, 30)], k=1, min_overlap=0.75)
    assert got == expect(2 / 3, 1.0, 2 / 3, 0.5)


def test_empty_ranking_gives_zeros():
    got = metrics([], [("a", 0, 10), ("b", 5, 6)], k=3)
    assert got == {"span_recall": 0.0, "span_precision": 0.0, "span_iou": 0.0, "evidence_recall": 0.0}


def test_no_evidence_gives_zeros():
    # no evidence document: every retrieved chunk is ignored and every denominator is 0
    got = metrics([("a", 0, 10)], [], k=1)
    assert got == {"span_recall": 0.0, "span_precision": 0.0, "span_iou": 0.0, "evidence_recall": 0.0}


def test_values_are_plain_floats():
    got = span_metrics([("a", 0, 20)], [("a", 5, 15)], 1, 0.5)
    assert all(type(v) is float for v in got.values())


# ---------------------------------------------------------------------------------------------
# differential test against a naive model on sets of (doc, character)


def naive(retrieved, evidence, k, min_overlap):
    top = retrieved[:k]
    chars_r = {(d, i) for d, s, e in top for i in range(s, e)}
    chars_h = {(d, i) for d, s, e in evidence for i in range(s, e)}
    inter = len(chars_r & chars_h)
    sigma = sum(e - s for _, s, e in top)
    union = sigma + len(chars_h) - inter
    threshold = Fraction(str(min_overlap))
    found = 0
    for d, s, e in evidence:
        overlap = len(chars_r & {(d, i) for i in range(s, e)})
        if overlap > 0 and overlap >= threshold * (e - s):
            found += 1

    def ratio(num, den):
        return Fraction(num, den) if den else Fraction(0)

    return {
        f"span_recall@{k}": ratio(inter, len(chars_h)),
        f"span_precision@{k}": ratio(inter, sigma),
        f"span_iou@{k}": ratio(inter, union),
        f"evidence_recall@{k}": ratio(found, len(evidence)),
    }


@st.composite
def spans(draw, docs=("a", "b")):
    doc = draw(st.sampled_from(docs))
    start = draw(st.integers(0, 59))
    end = draw(st.integers(start + 1, 60))
    return doc, start, end


@settings(max_examples=300, deadline=None)
@given(
    retrieved=st.lists(spans(), max_size=8),
    evidence=st.lists(spans(), min_size=1, max_size=3),
    k=st.integers(1, 8),
    min_overlap=st.sampled_from([0.1, 0.25, 0.5, 0.75, 1.0]),
)
def test_matches_naive_character_sets(retrieved, evidence, k, min_overlap):
    got = span_metrics(retrieved, evidence, k, min_overlap)
    want = naive(retrieved, evidence, k, min_overlap)
    assert list(got) == list(want)
    for key, value in want.items():
        assert got[key] == pytest.approx(float(value), abs=1e-12), key
