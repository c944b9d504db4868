"""Diagnostics (bench.evaluation.diagnostics) and scoring.score_candidate on hand-made stored records.

Scores are dyadic fractions (0.75, 0.625, ...) so every mean, difference and median is exact.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from bench.core.measures import QUALITY_METRICS, metric_key
from bench.core.records import QuestionRecord
from bench.core.scores import QuestionDiagnostics as QD
from bench.evaluation.diagnostics import question_diagnostics, rank_distribution, summarise
from bench.evaluation.scoring import score_candidate
from bench.evaluation.spans import span_keys

CHUNK_SIZE = 20


def chunk(uid: str, score, grade: int) -> dict:
    """A stored chunk entry; ``uid`` is ``doc#i``, the chunk spanning [20i, 20i + 20) of doc."""
    doc, i = uid.split("#")
    start = int(i) * CHUNK_SIZE
    return {"id": uid, "doc_id": doc, "start": start, "end": start + CHUNK_SIZE, "score": score, "grade": grade}


def record(ranking, expected, evidence=(), qid="q") -> QuestionRecord:
    return stored(
        {
            "question_id": qid,
            "ranking": [chunk(*r) for r in ranking],
            "expected": [chunk(*e) for e in expected],
            "evidence": [{"doc": d, "start": s, "end": e, "grade": g} for d, s, e, g in evidence],
        }
    )


def stored(row: dict) -> QuestionRecord:
    """A per_question.jsonl row as the run reads it; what these tests leave out gets empty values."""
    return QuestionRecord.from_dict({"candidate": "c", "question": "?", "tags": [], **row})


def scored(records, **kwargs) -> tuple[list[dict], dict]:
    """score_candidate's records and candidate figures, as the files hold them."""
    out, scores = score_candidate(records, **kwargs)
    figures = {"quality": scores.quality, "curve": scores.curve, "diagnostics": scores.diagnostics}
    return [r.to_dict() for r in out], {name: part.to_dict() for name, part in figures.items()}


# ---------------------------------------------------------------------------------------------
# question_diagnostics


def test_positive_score_gap():
    rec = record(
        ranking=[("a#0", 0.75, 2), ("a#1", 0.5, 1), ("b#0", 0.25, 0), ("b#1", 0.125, 0)],
        expected=[("a#0", 0.75, 2), ("a#1", 0.5, 1)],
    )
    d = question_diagnostics(rec, k=2)
    assert d["best_relevant_score"] == 0.75  # max(0.75, 0.5)
    assert d["mean_relevant_score"] == 0.625  # (0.75 + 0.5) / 2
    assert d["top_distractor_score"] == 0.25  # first grade-0 entry: b#0 (not b#1)
    assert d["score_gap"] == 0.5  # 0.75 - 0.25
    assert d["missed"] == []


def test_negative_score_gap():
    # two distractors ahead of the only expected unit, which was not even retrieved
    rec = record(ranking=[("b#0", 0.75, 0), ("b#1", 0.5, 0)], expected=[("a#0", 0.25, 1)])
    d = question_diagnostics(rec, k=2)
    assert d["best_relevant_score"] == 0.25
    assert d["mean_relevant_score"] == 0.25
    assert d["top_distractor_score"] == 0.75
    assert d["score_gap"] == -0.5  # 0.25 - 0.75
    assert d["missed"] == ["a#0"]


def test_no_distractor_retrieved():
    rec = record(ranking=[("a#0", 0.75, 2), ("a#1", 0.5, 1)], expected=[("a#0", 0.75, 2), ("a#1", 0.5, 1)])
    d = question_diagnostics(rec, k=2)
    assert d["top_distractor_score"] is None
    assert d["score_gap"] is None
    assert d["best_relevant_score"] == 0.75


def test_no_expected_units():
    rec = record(ranking=[("b#0", 0.5, 0), ("b#1", 0.25, 0)], expected=[])
    d = question_diagnostics(rec, k=2)
    assert d["best_relevant_score"] is None
    assert d["mean_relevant_score"] is None
    assert d["top_distractor_score"] == 0.5
    assert d["score_gap"] is None
    assert d["missed"] == []


def test_expected_unit_not_retrieved_contributes_its_exact_score():
    # a#3 was missed by the (approximate) search, yet it scores 0.875 exactly: it is the best
    rec = record(ranking=[("a#0", 0.5, 1), ("b#0", 0.375, 0)], expected=[("a#0", 0.5, 1), ("a#3", 0.875, 2)])
    d = question_diagnostics(rec, k=2)
    assert d["best_relevant_score"] == 0.875  # not 0.5, the best retrieved relevant score
    assert d["mean_relevant_score"] == 0.6875  # (0.5 + 0.875) / 2
    assert d["score_gap"] == 0.5  # 0.875 - 0.375
    assert d["missed"] == ["a#3"]


def test_missed_lists_expected_units_outside_the_top_k():
    # k = 2: a#2 is retrieved at rank 3 (> k) and a#4 not at all; both are missed, in expected order
    rec = record(
        ranking=[("a#0", 0.75, 1), ("b#0", 0.625, 0), ("a#2", 0.5, 1), ("b#1", 0.25, 0)],
        expected=[("a#0", 0.75, 1), ("a#2", 0.5, 1), ("a#4", 0.125, 1)],
    )
    assert question_diagnostics(rec, k=2)["missed"] == ["a#2", "a#4"]
    assert question_diagnostics(rec, k=3)["missed"] == ["a#4"]
    assert question_diagnostics(rec, k=1)["missed"] == ["a#2", "a#4"]
    # distractors do not count as missed, and the top distractor is searched over the whole ranking
    assert question_diagnostics(rec, k=1)["top_distractor_score"] == 0.625


def test_ties_follow_the_stored_order():
    # Equal scores are stored by unit id: a#1 (relevant) then b#0, b#1 (distractors), all 0.5.
    rec = record(
        ranking=[("a#1", 0.5, 1), ("b#0", 0.5, 0), ("b#1", 0.5, 0), ("b#2", 0.25, 0)], expected=[("a#1", 0.5, 1)]
    )
    d = question_diagnostics(rec, k=1)
    assert d["top_distractor_score"] == 0.5  # b#0, the first grade-0 entry
    assert d["score_gap"] == 0.0  # a tie is no negative gap
    assert d["missed"] == []  # a#1 sits at rank 1 of the stored order
    # the other way round: a distractor stored first among equals pushes the relevant unit to rank 2
    rec = record(ranking=[("a#0", 0.5, 0), ("a#1", 0.5, 1)], expected=[("a#1", 0.5, 1)])
    d = question_diagnostics(rec, k=1)
    assert d["top_distractor_score"] == 0.5
    assert d["missed"] == ["a#1"]  # not taken into the top 1 by its equal score
    summary = summarise([d], np.array([2]), depth=2, n_relevant=np.array([1]))
    assert summary["negative_gap_share"] == 0.0  # gap 0 is not negative


def test_expected_units_with_unknown_score_are_skipped():
    # a stored score of None (NaN at run time) takes no part in best/mean, but the unit can be missed
    rec = record(ranking=[("b#0", 0.25, 0)], expected=[("a#0", None, 1), ("a#1", 0.5, 1)])
    d = question_diagnostics(rec, k=1)
    assert d["best_relevant_score"] == 0.5
    assert d["mean_relevant_score"] == 0.5
    assert d["missed"] == ["a#0", "a#1"]


# ---------------------------------------------------------------------------------------------
# rank_distribution / summarise


def test_rank_distribution_with_misses_sums_to_question_count():
    ranks = np.array([1, 3, 0, 1, 0, 5])
    dist = rank_distribution(ranks, depth=5)
    assert dist == {"1": 2, "2": 0, "3": 1, "4": 0, "5": 1, "miss": 2}
    assert list(dist) == ["1", "2", "3", "4", "5", "miss"]
    assert sum(dist.values()) == len(ranks)


def test_summarise_by_hand():
    per_question = [
        QD(score_gap=0.5, mean_relevant_score=0.75, top_distractor_score=0.25, missed=[]),
        QD(score_gap=None, mean_relevant_score=0.5, top_distractor_score=None, missed=["x"]),
        QD(score_gap=-0.25, mean_relevant_score=0.25, top_distractor_score=0.5, missed=["y"]),
        QD(score_gap=0.5, mean_relevant_score=0.625, top_distractor_score=0.125, missed=[]),
        QD(score_gap=None, mean_relevant_score=None, top_distractor_score=0.75, missed=[]),
    ]
    first = np.array([1, 0, 2, 1, 0])
    s = summarise(per_question, first, depth=3, n_relevant=np.array([2, 1, 1, 3, 0]))
    assert s.n_questions == 5
    assert s.first_relevant_rank == {"1": 2, "2": 1, "3": 0, "miss": 2}
    assert sum(s.first_relevant_rank.values()) == 5
    # gaps defined for 3 questions: 0.5, -0.25, 0.5 (None excluded, not counted as 0)
    assert s.score_gap_questions == 3
    assert s.score_gap_mean == 0.25  # 0.75 / 3
    assert s.score_gap_median == 0.5  # sorted -0.25, 0.5, 0.5
    assert s.negative_gap_share == pytest.approx(1 / 3, abs=1e-15)
    assert s.mean_relevant_score == 0.53125  # (0.75 + 0.5 + 0.25 + 0.625) / 4
    assert s.mean_top_distractor_score == 0.40625  # (0.25 + 0.5 + 0.125 + 0.75) / 4
    assert s.questions_without_relevant_unit == 1  # n_relevant == 0 for the last
    assert s.questions_missing_expected_units == 2


def test_summarise_without_any_gap():
    per_question = [QD(score_gap=None, mean_relevant_score=None, top_distractor_score=None, missed=[])]
    s = summarise(per_question, np.array([0]), depth=2, n_relevant=np.array([0]))
    assert s.score_gap_mean is None and s.score_gap_median is None
    assert s.negative_gap_share is None and s.score_gap_questions == 0
    assert s.mean_relevant_score is None and s.mean_top_distractor_score is None
    assert s.questions_without_relevant_unit == 1
    assert s.first_relevant_rank == {"1": 0, "2": 0, "miss": 1}


def test_summarise_from_question_diagnostics_with_missing_relevant_unit():
    records = [
        record(ranking=[("a#0", 0.75, 1), ("b#0", 0.5, 0)], expected=[("a#0", 0.75, 1)]),  # gap +0.25
        record(ranking=[("b#0", 0.5, 0)], expected=[]),  # no expected unit: gap None
        record(ranking=[("a#1", 0.625, 1)], expected=[("a#1", 0.625, 1)]),  # no distractor: gap None
    ]
    per_question = [question_diagnostics(r, k=1) for r in records]
    s = summarise(per_question, np.array([1, 0, 1]), depth=2, n_relevant=np.array([1, 0, 1]))
    assert s["score_gap_questions"] == 1
    assert s["score_gap_mean"] == 0.25 and s["score_gap_median"] == 0.25
    assert s["questions_without_relevant_unit"] == 1
    assert s["mean_relevant_score"] == 0.6875  # (0.75 + 0.625) / 2
    assert s["mean_top_distractor_score"] == 0.5  # (0.5 + 0.5) / 2


# ---------------------------------------------------------------------------------------------
# score_candidate end to end (chunk unit: chunks of 20 characters, k = 2, depth = 3)


def chunk_records() -> list[QuestionRecord]:
    return [
        # q1: evidence a[5,15) in chunk a#0. R@2 = [a#0, b#1] (b#1 is text too, never evidence)
        #     I = 10, |H| = 10, Σ = 40 -> span recall 1, precision 0.25, iou 10/(40+10-10) = 0.25, ev 1
        record(
            qid="q1",
            ranking=[("a#0", 0.75, 2), ("b#1", 0.5, 0), ("a#1", 0.25, 0)],
            expected=[("a#0", 0.75, 2)],
            evidence=[("a", 5, 15, 2)],
        ),
        # q2: evidence a[30,50) over a#1 and a#2. R@2 = [b#0, a#2 = [40,60)]: I = 10, |H| = 20, Σ = 40
        #     -> recall 0.5, precision 0.25, iou 10/(40+20-10) = 0.2, ev: 10 >= 0.5*20 -> 1
        record(
            qid="q2",
            ranking=[("b#0", 0.875, 0), ("a#2", 0.625, 1), ("a#1", 0.5, 1)],
            expected=[("a#1", 0.5, 1), ("a#2", 0.625, 1)],
            evidence=[("a", 30, 50, 1)],
        ),
        # q3: evidence b[50,70) over b#2 and b#3, none retrieved: I = 0 -> all span metrics 0
        record(
            qid="q3",
            ranking=[("a#3", 0.75, 0), ("a#4", 0.5, 0), ("b#4", 0.375, 0)],
            expected=[("b#2", 0.25, 1), ("b#3", 0.125, 1)],
            evidence=[("b", 50, 70, 1)],
        ),
        # q4: evidence b[0,40) = b#0 + b#1, both retrieved (only 2 results, fewer than depth)
        #     I = 40, |H| = 40, Σ = 40 -> all 1
        record(
            qid="q4",
            ranking=[("b#0", 0.5, 2), ("b#1", 0.375, 2)],
            expected=[("b#0", 0.5, 2), ("b#1", 0.375, 2)],
            evidence=[("b", 0, 40, 2)],
        ),
    ]


def run_chunk(records=None, **overrides):
    records = chunk_records() if records is None else records
    kwargs = {"k": 2, "depth": 3, "gain": "exponential", "unit": "chunk", "min_overlap": 0.5} | overrides
    return scored(records, **kwargs)


def test_score_candidate_chunk_unit_by_hand():
    records, out = run_chunk()
    q = out["quality"]
    # per question recall@2 = 1/1, 1/2, 0/2, 2/2; precision@2 = 1/2, 1/2, 0, 2/2; mrr@2 = 1, 1/2, 0, 1
    assert q["recall@2"] == pytest.approx(0.625, abs=1e-12)
    assert q["precision@2"] == pytest.approx(0.5, abs=1e-12)
    assert q["mrr@2"] == pytest.approx(0.625, abs=1e-12)
    assert q["hit_rate@2"] == pytest.approx(0.75, abs=1e-12)
    # span metrics: recall (1 + 0.5 + 0 + 1)/4, precision (0.25 + 0.25 + 0 + 1)/4,
    # iou (0.25 + 0.2 + 0 + 1)/4 = 0.3625, evidence_recall (1 + 1 + 0 + 1)/4
    assert q["span_recall@2"] == pytest.approx(0.625, abs=1e-12)
    assert q["span_precision@2"] == pytest.approx(0.375, abs=1e-12)
    assert q["span_iou@2"] == pytest.approx(0.3625, abs=1e-12)
    assert q["evidence_recall@2"] == pytest.approx(0.75, abs=1e-12)
    assert records[1]["metrics"]["span_iou@2"] == pytest.approx(0.2, abs=1e-12)
    assert records[2]["metrics"]["span_recall@2"] == 0.0
    # hit curve: rank 1 hits for q1, q4; by rank 2 also q2; q3 never
    assert out["curve"] == {"hit_rate@1": 0.5, "hit_rate@2": 0.75, "hit_rate@3": 0.75}
    assert [r["first_relevant_rank"] for r in records] == [1, 2, None, 1]
    # per-question diagnostics
    gaps = [r["diagnostics"]["score_gap"] for r in records]
    assert gaps == [0.25, -0.25, -0.5, None]  # 0.75-0.5, 0.625-0.875, 0.25-0.75, no distractor
    assert [r["diagnostics"]["missed"] for r in records] == [[], ["a#1"], ["b#2", "b#3"], []]
    d = out["diagnostics"]
    assert d["n_questions"] == 4
    assert d["first_relevant_rank"] == {"1": 2, "2": 1, "3": 0, "miss": 1}
    assert sum(d["first_relevant_rank"].values()) == len(records)
    assert d["score_gap_questions"] == 3
    assert d["score_gap_mean"] == pytest.approx(-1 / 6, abs=1e-12)  # (0.25 - 0.25 - 0.5) / 3
    assert d["score_gap_median"] == -0.25
    assert d["negative_gap_share"] == pytest.approx(2 / 3, abs=1e-12)
    # mean relevant: means 0.75, 0.5625, 0.1875, 0.4375 -> 1.9375 / 4
    assert d["mean_relevant_score"] == 0.484375
    assert d["mean_top_distractor_score"] == pytest.approx((0.5 + 0.875 + 0.75) / 3, abs=1e-12)
    assert d["questions_without_relevant_unit"] == 0
    assert d["questions_missing_expected_units"] == 2


def test_score_candidate_quality_means_equal_per_record_means():
    records, out = run_chunk()
    assert set(out["quality"]) == {metric_key(m, 2) for m in QUALITY_METRICS} | set(span_keys(2))
    for key, value in out["quality"].items():
        per_record = [r["metrics"][key] for r in records]
        assert value == pytest.approx(float(np.mean(per_record)), abs=1e-12), key
    for r in records:
        assert set(r["metrics"]) == set(out["quality"])


def test_score_candidate_rank_beyond_k_counts_in_distribution_not_in_metrics():
    # k = 1: q2's first relevant unit sits at rank 2, inside depth 3 -> "2", but mrr@1 is 0 for it
    records, out = run_chunk(k=1)
    assert out["diagnostics"]["first_relevant_rank"] == {"1": 2, "2": 1, "3": 0, "miss": 1}
    assert records[1]["metrics"]["mrr@1"] == 0.0
    assert out["quality"]["mrr@1"] == 0.5  # (1 + 0 + 0 + 1) / 4
    # span metrics at k = 1: q2 R = [] (b#0 takes rank 1) -> 0; q4 R = [b#0]: I = 20, |H| = 40 -> 0.5
    assert [r["metrics"]["span_recall@1"] for r in records] == [1.0, 0.0, 0.0, 0.5]
    assert records[1]["diagnostics"]["missed"] == ["a#1", "a#2"]


def test_score_candidate_document_unit_has_no_span_metrics():
    def doc(d, score, grade):
        return {"id": d, "doc_id": d, "start": 0, "end": 100, "score": score, "grade": grade}

    records = [
        stored(
            {
                "question_id": "q1",
                "ranking": [doc("a", 0.75, 2), doc("b", 0.5, 0)],
                "expected": [doc("a", 0.75, 2)],
                "evidence": [{"doc": "a", "start": 5, "end": 15, "grade": 2}],
            }
        ),
        stored(
            {
                "question_id": "q2",
                "ranking": [doc("a", 0.75, 0), doc("b", 0.25, 1)],
                "expected": [doc("b", 0.25, 1)],
                "evidence": [{"doc": "b", "start": 0, "end": 10, "grade": 1}],
            }
        ),
    ]
    records, out = scored(records, k=1, depth=2, gain="linear", unit="document", min_overlap=0.5)
    assert set(out["quality"]) == {metric_key(m, 1) for m in QUALITY_METRICS}
    assert not any(key.startswith(("span_", "evidence_recall")) for r in records for key in r["metrics"])
    assert out["quality"]["hit_rate@1"] == 0.5
    assert [r["diagnostics"]["score_gap"] for r in records] == [0.25, -0.5]
    assert out["diagnostics"]["first_relevant_rank"] == {"1": 1, "2": 1, "miss": 0}


def test_score_candidate_is_deterministic_and_leaves_its_input_alone():
    base = chunk_records()
    kept = copy.deepcopy(base)
    options = {"k": 2, "depth": 3, "gain": "linear", "unit": "chunk", "min_overlap": 0.5}
    first_records, first = scored(base, **options)
    second_records, second = scored(copy.deepcopy(base), **options)
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    assert json.dumps(first_records, sort_keys=True) == json.dumps(second_records, sort_keys=True)
    assert base == kept and all(r.metrics == {} and r.first_relevant_rank is None for r in base)
    # and scoring the scored records again (as ``bench report`` does from disk) changes nothing
    again_records, again = scored([QuestionRecord.from_dict(r) for r in first_records], **options)
    assert json.dumps(again, sort_keys=True) == json.dumps(first, sort_keys=True)
    assert json.dumps(again_records, sort_keys=True) == json.dumps(first_records, sort_keys=True)
