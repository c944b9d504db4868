"""judged@k and the holes (bench.evaluation.holes), by hand on small records."""

from __future__ import annotations

from bench.core.records import EvidenceSpan, RankedUnit, Retrieved
from bench.evaluation.holes import covered, holes, judged_at_k


def _unit(uid: str, doc: str, start: int, end: int) -> RankedUnit:
    return RankedUnit(id=uid, doc_id=doc, start=start, end=end, score=1.0, grade=0)


EVIDENCE = [EvidenceSpan(doc="a", start=100, end=150, grade=2)]


def _asked(candidate: str, qid: str, ranking: list[RankedUnit], evidence=EVIDENCE) -> Retrieved:
    return Retrieved(
        candidate=candidate, question_id=qid, question=f"question {qid}", tags=[], ranking=ranking,
        expected=[], evidence=evidence,
    )  # fmt: skip


def test_a_unit_is_covered_when_it_shares_text_with_evidence_of_its_document() -> None:
    assert covered(_unit("x", "a", 140, 200), EVIDENCE)  # overlaps 140..150
    assert not covered(_unit("x", "a", 150, 200), EVIDENCE)  # touches, shares nothing
    assert not covered(_unit("x", "b", 100, 150), EVIDENCE)  # another document
    assert covered(_unit("x", "b", 0, 10), [EvidenceSpan(doc="b", start=None, end=None, grade=1)])  # whole document


def test_judged_at_k_is_the_mean_share_of_each_top_k_covered() -> None:
    first = _asked("c", "q1", [_unit("1", "a", 90, 110), _unit("2", "a", 300, 400), _unit("3", "b", 0, 5)])
    second = _asked("c", "q2", [_unit("4", "a", 120, 130), _unit("5", "a", 0, 50)])
    assert judged_at_k([first, second], k=2) == (1 / 2 + 1 / 2) / 2
    assert judged_at_k([first, second], k=3) == (1 / 3 + 1 / 2) / 2
    assert judged_at_k([_asked("c", "q3", [])], k=3) is None


def test_holes_are_unjudged_units_by_how_many_candidates_ranked_them_then_how_high() -> None:
    shared = _unit("s", "a", 300, 400)  # not evidence, in three candidates' top 2
    once = _unit("o", "b", 0, 50)
    records = [
        _asked("x", "q1", [shared, _unit("e", "a", 100, 150)]),
        _asked("y", "q1", [_unit("e", "a", 100, 150), shared]),
        _asked("z", "q1", [once, shared]),
        _asked("z", "q2", [shared]),  # the same extent for another question is another hole
    ]
    found = holes(records, k=2)
    assert [(h["unit"], h["question_id"], h["candidates"], h["best_rank"], h["mean_rank"]) for h in found] == [
        ("s", "q1", 3, 1, round(5 / 3, 2)),
        ("o", "q1", 1, 1, 1.0),  # as many and as high: by question, then unit
        ("s", "q2", 1, 1, 1.0),
    ]
    assert holes(records, k=2, most=1)[0]["unit"] == "s"
