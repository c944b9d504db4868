"""The relevance rule (grade_units) and its judgments: hand-made chunks and evidence with hand-computed answers."""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.chunking import Chunk, chunk_id
from bench.chunking.table import ChunkTable
from bench.evaluation.relevance import Judgment, grade_units, overlap_relevant
from bench.inputs.corpus import load_corpus
from bench.inputs.goldset import CHUNK, DOCUMENT, Evidence, Goldset, Question, load_goldset

# --- helpers -------------------------------------------------------------------------------

LENGTH = 1000  # every hand-made document is this long


def doc_text(doc_id: str, n: int = LENGTH) -> str:
    return (doc_id * n)[:n]


def table_of(spans: dict[str, list[tuple[int, int]]]) -> ChunkTable:
    """Chunks given as (start, end) per document, documents in the dict's order."""
    chunks = []
    for doc_id, ss in spans.items():
        text = doc_text(doc_id)
        chunks += [Chunk(chunk_id(doc_id, i), doc_id, s, e, text[s:e]) for i, (s, e) in enumerate(ss)]
    return ChunkTable.build(spans, chunks)


def goldset_of(*questions: list[Evidence], unit: str = CHUNK) -> Goldset:
    qs = tuple(Question(f"q{i}", f"question {i}?", tuple(ev)) for i, ev in enumerate(questions))
    return Goldset(path=Path("gold.jsonl"), questions=qs, unit=unit, fingerprint="")


def judge_one(table: ChunkTable, evidence: list[Evidence], min_overlap: float = 0.5) -> dict[int, int]:
    """Judgment of a single question as {unit: grade}, after checking the arrays' shape."""
    (j,) = grade_units(goldset_of(evidence), table, min_overlap)
    return as_dict(j)


def as_dict(j: Judgment) -> dict[int, int]:
    assert j.units.shape == j.grades.shape
    assert list(j.units) == sorted(set(j.units.tolist())), "units must be ascending and unique"
    assert all(g > 0 for g in j.grades.tolist())
    return dict(zip(j.units.tolist(), j.grades.tolist()))


def E(doc: str, start: int, end: int, grade: int = 1) -> Evidence:
    return Evidence(doc, grade, start, end)


# --- the overlap rule ----------------------------------------------------------------------


def test_exactly_at_threshold_is_relevant_just_below_is_not() -> None:
    # chunk [0,100), evidence 200 long: shorter = 100, need 50 characters at 0.5.
    t = table_of({"a": [(0, 100)]})
    assert judge_one(t, [E("a", 50, 250)]) == {0: 1}  # overlap 50 == 0.5 * 100
    assert judge_one(t, [E("a", 51, 251)]) == {}  # overlap 49
    # Evidence shorter than the chunk: shorter = evidence length 40, need 20.
    t = table_of({"a": [(100, 300)]})
    assert judge_one(t, [E("a", 80, 120)]) == {0: 1}  # overlap 20
    assert judge_one(t, [E("a", 79, 119)]) == {}  # overlap 19
    assert judge_one(t, [E("a", 280, 320)]) == {0: 1}  # overlap 20 at the other end
    assert judge_one(t, [E("a", 281, 321)]) == {}


@pytest.mark.parametrize(
    ("min_overlap", "shorter", "need"),
    [
        (0.07, 100, 7),
        (0.14, 50, 7),
        (0.28, 25, 7),
        (0.55, 20, 11),
        (0.3, 10, 3),
        (0.1, 30, 3),
        (0.7, 10, 7),
        (1.0, 37, 37),
        (0.25, 4, 1),
    ],
)
def test_threshold_is_exact_for_decimal_min_overlap(min_overlap: float, shorter: int, need: int) -> None:
    # Mathematically min_overlap * shorter == need, so an overlap of exactly `need` is "at least" it,
    # even where the float product rounds up (0.07 * 100 == 7.000000000000001).
    assert Fraction(str(min_overlap)) * shorter == need
    t = table_of({"a": [(0, shorter)]})
    ev_long = E("a", shorter - need, shorter + 500)  # evidence longer: the chunk is the shorter span
    assert judge_one(t, [ev_long], min_overlap) == {0: 1}
    assert judge_one(t, [E("a", shorter - need + 1, shorter + 500)], min_overlap) == {}
    assert overlap_relevant([0], [shorter], shorter - need, shorter + 500, min_overlap).tolist() == [True]
    assert overlap_relevant([0], [shorter], shorter - need + 1, shorter + 500, min_overlap).tolist() == [False]


def test_evidence_longer_than_chunk_contains_it() -> None:
    t = table_of({"a": [(0, 200), (200, 300), (300, 1000)]})
    # Evidence [150, 400): chunk 1 lies fully inside (100 of 100); chunk 0 has 50 of 200 (< 100);
    # chunk 2 has 100 of min(700, 250) = 250 (< 125).
    assert judge_one(t, [E("a", 150, 400)], 0.5) == {1: 1}
    assert judge_one(t, [E("a", 150, 400)], 1.0) == {1: 1}
    # Evidence covering everything: each chunk is fully inside.
    assert judge_one(t, [E("a", 0, 1000)], 1.0) == {0: 1, 1: 1, 2: 1}


def test_chunk_longer_than_evidence_contains_it() -> None:
    t = table_of({"a": [(0, 500), (500, 1000)]})
    assert judge_one(t, [E("a", 10, 20)], 1.0) == {0: 1}  # 10 of 10 even though the chunk is 500 long
    assert judge_one(t, [E("a", 495, 505)], 0.5) == {0: 1, 1: 1}  # 5 of 10 each side
    assert judge_one(t, [E("a", 495, 505)], 0.6) == {}


def test_evidence_split_evenly_across_a_boundary() -> None:
    t = table_of({"a": [(0, 150), (150, 300)]})
    ev = [E("a", 100, 200)]  # 50 characters in each chunk, shorter = 100
    assert judge_one(t, ev, 0.5) == {0: 1, 1: 1}
    assert judge_one(t, ev, 0.6) == {}
    assert judge_one(t, ev, 0.5001) == {}


def test_evidence_split_40_60() -> None:
    t = table_of({"a": [(0, 150), (150, 300)]})
    ev = [E("a", 110, 210)]  # 40 in chunk 0, 60 in chunk 1
    assert judge_one(t, ev, 0.5) == {1: 1}
    assert judge_one(t, ev, 0.6) == {1: 1}
    assert judge_one(t, ev, 0.61) == {}
    assert judge_one(t, ev, 0.4) == {0: 1, 1: 1}


def test_overlapping_chunks() -> None:
    t = table_of({"a": [(0, 100), (50, 150), (100, 200)]})
    # Evidence [60, 100), 40 long: fully inside chunks 0 and 1, touches chunk 2 only at its edge.
    assert judge_one(t, [E("a", 60, 100)]) == {0: 1, 1: 1}
    # Evidence [90, 130): chunk 0 has 10 (< 20), chunk 1 has 40, chunk 2 has 30.
    assert judge_one(t, [E("a", 90, 130)]) == {1: 1, 2: 1}
    assert judge_one(t, [E("a", 90, 130)], 0.8) == {1: 1}


def test_touching_and_disjoint_spans_are_never_relevant() -> None:
    t = table_of({"a": [(0, 100), (100, 200), (300, 400)]})
    assert judge_one(t, [E("a", 200, 300)], 0.001) == {}  # touches chunk 1's end and chunk 2's start
    # The "overlap > 0" clause is what rules out touching spans when the threshold itself is 0.
    got = overlap_relevant(np.array([0, 100, 300]), np.array([100, 200, 400]), 200, 300, 0.0)
    assert got.tolist() == [False, False, False]
    got = overlap_relevant(np.array([0, 100, 300]), np.array([100, 200, 400]), 199, 300, 0.0)
    assert got.tolist() == [False, True, False]


def test_two_evidence_items_on_one_chunk_take_the_max_grade() -> None:
    t = table_of({"a": [(0, 100), (100, 200), (200, 300)]})
    high_first = [E("a", 10, 50, grade=3), E("a", 20, 60, grade=1), E("a", 150, 250, grade=2)]
    # chunk 0: grades 3 and 1 -> 3; chunk 1: 50 of 100 from the grade-2 item; chunk 2: same.
    assert judge_one(t, high_first) == {0: 3, 1: 2, 2: 2}
    low_first = [E("a", 20, 60, grade=1), E("a", 150, 250, grade=2), E("a", 10, 50, grade=3)]
    assert judge_one(t, low_first) == {0: 3, 1: 2, 2: 2}
    # A higher grade that does not satisfy the rule does not count.
    assert judge_one(t, [E("a", 10, 90, grade=1), E("a", 90, 190, grade=2)]) == {0: 1, 1: 2}


def test_evidence_in_another_document_never_matches() -> None:
    # Identical offsets in three documents; only chunks of the evidence's own document count.
    t = table_of({"a": [(0, 100), (100, 200)], "b": [(0, 100), (100, 200)], "c": [(0, 100)]})
    assert t.ids == ["a#0000", "a#0001", "b#0000", "b#0001", "c#0000"]
    assert judge_one(t, [E("b", 0, 100, 2)]) == {2: 2}
    assert judge_one(t, [E("c", 0, 100)]) == {4: 1}
    assert judge_one(t, [E("a", 100, 200), E("c", 0, 50, 2)]) == {1: 1, 4: 2}


def test_document_without_chunks() -> None:
    t = table_of({"a": [(0, 100)], "b": [], "c": [(0, 100)]})
    assert judge_one(t, [E("b", 0, 100)]) == {}
    assert judge_one(t, [E("c", 0, 100)]) == {1: 1}


def test_unit_indices_follow_the_tables_sorted_order() -> None:
    spans = [("a", 200, 300), ("z", 100, 200), ("a", 0, 100), ("z", 0, 100), ("a", 100, 200)]
    chunks = [Chunk(f"{d}#{s}", d, s, e, doc_text(d)[s:e]) for d, s, e in spans]
    random.Random(0).shuffle(chunks)
    t = ChunkTable.build(["z", "a"], chunks)  # doc order given by doc_ids, not by name
    assert t.ids == ["z#0", "z#100", "a#0", "a#100", "a#200"]
    (j,) = grade_units(goldset_of([E("a", 150, 250)]), t, 0.5)
    assert j.units.tolist() == [3, 4]
    assert [t.ids[u] for u in j.units] == ["a#100", "a#200"]
    (j,) = grade_units(goldset_of([E("z", 0, 100, 2)]), t, 0.5)
    assert as_dict(j) == {0: 2}


def test_unsatisfied_question_gets_an_empty_judgment() -> None:
    t = table_of({"a": [(0, 100), (100, 200)], "b": [(0, 1000)]})
    gs = goldset_of([E("a", 500, 600)], [E("a", 0, 100)], [E("a", 90, 300, 2)])
    j_empty, j_one, j_partial = grade_units(gs, t, 0.5)
    assert len(j_empty.units) == 0 and len(j_empty.grades) == 0
    assert j_empty.grade_of(np.arange(len(t))).tolist() == [0, 0, 0]
    assert as_dict(j_one) == {0: 1}
    # [90, 300): chunk 0 has 10 of 100, chunk 1 has 100 of 100.
    assert as_dict(j_partial) == {1: 2}


def test_judgments_come_in_question_order() -> None:
    t = table_of({"a": [(0, 100), (100, 200), (200, 300)]})
    gs = goldset_of([E("a", 200, 300)], [E("a", 0, 100, 2)], [E("a", 100, 200)])
    assert [as_dict(j) for j in grade_units(gs, t, 0.5)] == [{2: 1}, {0: 2}, {1: 1}]


# --- document unit -------------------------------------------------------------------------


def test_document_unit_judgments() -> None:
    t = table_of({"a": [(0, 100)], "b": [(0, 100)], "c": [], "d": [(0, 500)]})
    gs = goldset_of(
        [Evidence("d", 2), Evidence("b", 1)],
        [Evidence("b", 1), Evidence("b", 3), Evidence("b", 2)],
        [Evidence("c", 1)],  # no chunks, still a relevant document
        unit=DOCUMENT,
    )
    j0, j1, j2 = grade_units(gs, t, 0.5)
    assert as_dict(j0) == {1: 1, 3: 2}  # ordinals of b and d, ascending whatever the evidence order
    assert j0.units.tolist() == [1, 3] and j0.grades.tolist() == [1, 2]
    assert as_dict(j1) == {1: 3}
    assert as_dict(j2) == {2: 1}
    # min_overlap plays no part for whole documents.
    assert [as_dict(j) for j in grade_units(gs, t, 1.0)] == [as_dict(j0), as_dict(j1), as_dict(j2)]


def test_end_to_end_from_files(tmp_path: Path) -> None:
    root = tmp_path / "c"
    (root / "sub").mkdir(parents=True)
    (root / "one.md").write_text("Alpha beta gamma. Delta epsilon zeta. Eta theta iota.")
    (root / "sub" / "two.txt").write_text("Kappa lambda mu. Nu xi omicron.")
    corpus = load_corpus(root)
    gold = tmp_path / "g.jsonl"
    gold.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "id": "q1",
                    "question": "delta?",
                    "evidence": [{"doc": "one.md", "quote": "Delta epsilon zeta.", "grade": 2}],
                },
                {"id": "q2", "question": "nu?", "evidence": [{"doc": "sub/two.txt", "quote": "Nu xi"}]},
            ]
        )
    )
    g = load_goldset(gold, corpus)
    chunks = []
    for d in corpus.documents:  # split at each ". "
        start = 0
        for i, part in enumerate(d.text.split(". ")):
            end = start + len(part) + (2 if start + len(part) < len(d.text) else 0)
            chunks.append(Chunk(chunk_id(d.id, i), d.id, start, end, d.text[start:end]))
            start = end
    t = ChunkTable.build([d.id for d in corpus.documents], chunks)
    assert t.texts[1] == "Delta epsilon zeta. "
    j1, j2 = grade_units(g, t, 0.5)
    assert [t.ids[u] for u in j1.units] == ["one.md#0001"] and j1.grades.tolist() == [2]
    assert [t.ids[u] for u in j2.units] == ["sub/two.txt#0001"] and j2.grades.tolist() == [1]


# --- Judgment.grade_of ---------------------------------------------------------------------


def test_grade_of() -> None:
    j = Judgment(np.array([2, 5, 9], dtype=np.int64), np.array([1, 3, 2], dtype=np.int64))
    got = j.grade_of(np.array([0, 2, 3, 5, 9, 10, 100, 1, 6, 8]))
    assert got.tolist() == [0, 1, 0, 3, 2, 0, 0, 0, 0, 0]
    assert j.grade_of([9, 9, 2]).tolist() == [2, 2, 1]
    assert j.grade_of(np.array([], dtype=np.int64)).tolist() == []
    single = Judgment(np.array([0], dtype=np.int64), np.array([2], dtype=np.int64))
    assert single.grade_of([0, 1, 2]).tolist() == [2, 0, 0]


def test_grade_of_empty_judgment() -> None:
    j = Judgment(np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    got = j.grade_of(np.array([0, 1, 7]))
    assert got.tolist() == [0, 0, 0]
    assert len(j.grade_of([])) == 0


# --- property: grade_units() equals the rule written as a loop -----------------------------------

DOCS = ("a", "b", "c")


@st.composite
def span(draw, n: int = 60) -> tuple[int, int]:
    s = draw(st.integers(0, n - 1))
    return s, draw(st.integers(s + 1, n))


@st.composite
def scenario(draw):
    chunk_spans = {d: draw(st.lists(span(), max_size=6)) for d in DOCS}
    questions = draw(
        st.lists(
            st.lists(st.tuples(st.sampled_from(DOCS), span(), st.integers(1, 3)), min_size=1, max_size=4),
            min_size=1,
            max_size=4,
        )
    )
    percent = draw(st.integers(1, 100))
    return chunk_spans, questions, percent


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_judge_matches_brute_force(case) -> None:
    chunk_spans, questions, percent = case
    min_overlap = percent / 100
    exact = Fraction(percent, 100)  # the rule on the decimal the user wrote, in exact arithmetic
    t = table_of(chunk_spans)
    gs = goldset_of(*[[E(d, s, e, g) for d, (s, e), g in q] for q in questions])
    judgments = grade_units(gs, t, min_overlap)
    assert len(judgments) == len(questions)
    for q, j in zip(gs.questions, judgments):
        expected: dict[int, int] = {}
        for i, c in enumerate(t.chunks):
            for ev in q.evidence:
                if ev.doc != c.doc_id:
                    continue
                overlap = min(c.end, ev.end) - max(c.start, ev.start)
                shorter = min(c.end - c.start, ev.end - ev.start)
                if overlap > 0 and overlap >= exact * shorter:
                    expected[i] = max(expected.get(i, 0), ev.grade)
        assert as_dict(j) == expected
        assert j.grade_of(np.arange(len(t) + 2)).tolist() == [expected.get(i, 0) for i in range(len(t) + 2)]
