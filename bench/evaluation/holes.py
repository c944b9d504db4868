"""How much of what candidates retrieve a person ever judged, and the holes: unjudged units that
reached many candidates' top k.

A goldset marks what someone found, not everything that answers: a unit that overlaps no evidence
counts as a miss though it may hold the same fact. ``judged@k`` says how much of a candidate's top k
a person's judgment covers (a unit overlapping one of the question's evidence spans); the holes are
the unjudged units many candidates ranked high, the first places to look for answers the goldset
lacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bench.core.records import EvidenceSpan, RankedUnit, Retrieved
from bench.core.sections import JsonObject

MOST_HOLES = 50  # kept in summary.json, biggest first


def covered(unit: RankedUnit, evidence: Sequence[EvidenceSpan]) -> bool:
    """Whether a person's judgment covers ``unit``: it shares text with one of the evidence spans."""
    for span in evidence:
        if span.doc != unit.doc_id:
            continue
        if span.start is None or span.end is None or (unit.start < span.end and span.start < unit.end):
            return True
    return False


def judged_at_k(records: Sequence[Retrieved], k: int) -> float | None:
    """The mean, over questions, of the share of a candidate's top k that a judgment covers."""
    shares = []
    for rec in records:
        top = rec.ranking[:k]
        if top:
            shares.append(sum(covered(u, rec.evidence) for u in top) / len(top))
    return sum(shares) / len(shares) if shares else None


@dataclass
class _Hole:
    question_id: str
    question: str
    unit: RankedUnit
    ranks: list[int]


def holes(records: Sequence[Retrieved], k: int, most: int = MOST_HOLES) -> list[JsonObject]:
    """Unjudged units in some candidate's top k, by how many candidates ranked them there, then how
    high (mean rank): per question, one entry per unit extent."""
    found: dict[tuple[str, str, int, int], _Hole] = {}
    for rec in records:
        for rank, unit in enumerate(rec.ranking[:k], start=1):
            if covered(unit, rec.evidence):
                continue
            key = (rec.question_id, unit.doc_id, unit.start, unit.end)
            hole = found.setdefault(key, _Hole(rec.question_id, rec.question, unit, []))
            hole.ranks.append(rank)
    ordered = sorted(
        found.values(), key=lambda h: (-len(h.ranks), sum(h.ranks) / len(h.ranks), h.question_id, h.unit.id)
    )
    return [
        {
            "question_id": h.question_id,
            "question": h.question,
            "unit": h.unit.id,
            "doc_id": h.unit.doc_id,
            "start": h.unit.start,
            "end": h.unit.end,
            "candidates": len(h.ranks),
            "best_rank": min(h.ranks),
            "mean_rank": round(sum(h.ranks) / len(h.ranks), 2),
        }
        for h in ordered[:most]
    ]
