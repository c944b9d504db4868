"""From stored per-question records to metrics, diagnostics and the ranked candidate summary.

``bench run`` and ``bench report`` both call this on the same records, so a report recomputed
from disk equals what the run wrote.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.core.measures import metric_key
from bench.core.records import EvidenceSpan, QuestionRecord, Retrieved
from bench.core.scores import Curve, Diagnostics, Quality
from bench.core.summary import CandidateResult
from bench.errors import BenchError
from bench.evaluation import diagnostics, metrics
from bench.evaluation.holes import judged_at_k
from bench.evaluation.metrics import Grades
from bench.evaluation.spans import span_keys, span_metrics
from bench.inputs.goldset import CHUNK


@dataclass(frozen=True)
class CandidateScores:
    """What a candidate's questions add up to in summary.json."""

    quality: Quality  # the mean of every metric over all questions
    curve: Curve  # hit rate at every cutoff 1..depth
    diagnostics: Diagnostics


def grades_from_records(records: Sequence[Retrieved], depth: int) -> Grades:
    """Grades of the stored rankings and expected units of one candidate's questions."""
    n = len(records)
    ranked = np.zeros((n, depth), dtype=np.int64)
    ideal = np.zeros((n, depth), dtype=np.int64)
    n_relevant = np.zeros(n, dtype=np.int64)
    for q, rec in enumerate(records):
        ids = [r.id for r in rec.ranking]
        if len(set(ids)) != len(ids):
            raise ValueError(f"question {rec.question_id!r}: ranking repeats a unit")
        got = [r.grade for r in rec.ranking[:depth]]
        ranked[q, : len(got)] = got
        top = sorted((e.grade for e in rec.expected), reverse=True)[:depth]
        ideal[q, : len(top)] = top
        n_relevant[q] = len(rec.expected)
    return Grades(ranked, ideal, n_relevant)


def score_candidate(
    records: Sequence[Retrieved], *, k: int, depth: int, gain: str, unit: str, min_overlap: float
) -> tuple[list[QuestionRecord], CandidateScores]:
    """Each question's record with its metrics, first relevant rank and diagnostics, and the
    candidate's means; the records given are left as they are."""
    grades = grades_from_records(records, depth)
    per_question = metrics.quality(grades, k, gain)
    if unit == CHUNK:
        spans = [
            span_metrics(
                [(e.doc_id, e.start, e.end) for e in rec.ranking],
                [_evidence_span(rec, e) for e in rec.evidence if e.grade > 0],
                k,
                min_overlap,
            )
            for rec in records
        ]
        per_question.update({key: np.array([s[key] for s in spans], dtype=float) for key in span_keys(k)})
    first = metrics.first_relevant_rank(grades)
    scored = [
        _scored(
            rec,
            first_relevant_rank=int(first[q]) or None,
            metrics={key: float(values[q]) for key, values in per_question.items()},
            diagnostics=diagnostics.question_diagnostics(rec, k),
        )
        for q, rec in enumerate(records)
    ]
    summary = CandidateScores(
        quality=Quality(metrics.means(per_question)),
        curve=Curve(metrics.hit_curve(grades)),
        diagnostics=dataclasses.replace(
            diagnostics.summarise([r.diagnostics for r in scored], first, depth, grades.n_relevant),
            judged_at_k=judged_at_k(records, k),
        ),
    )
    return scored, summary


def _evidence_span(rec: Retrieved, evidence: EvidenceSpan) -> tuple[str, int, int]:
    """``(doc, start, end)`` of an evidence item in a chunk-unit run, where every item has a span."""
    if evidence.start is None or evidence.end is None:
        raise BenchError(
            f"question {rec.question_id!r}: evidence in {evidence.doc!r} has no start/end, but the run is in chunk unit"
        )
    return evidence.doc, evidence.start, evidence.end


def _scored(rec: Retrieved, **scores: Any) -> QuestionRecord:  # Any: each score field of its own type
    fields = {f.name: getattr(rec, f.name) for f in dataclasses.fields(Retrieved)}
    return QuestionRecord(**fields, **scores)


RANK_ORDER = ("mrr", "recall")


def rank_candidates(
    candidates: Sequence[CandidateResult], k: int, order: tuple[str, str] = RANK_ORDER
) -> list[CandidateResult]:
    """Ordered by mrr@k, then recall@k (both descending; ``order`` names two other metrics), then id,
    each with its ``rank`` (1-based)."""
    first, second = metric_key(order[0], k), metric_key(order[1], k)
    ordered = sorted(candidates, key=lambda c: (-c.quality[first], -c.quality[second], c.id))
    return [dataclasses.replace(c, rank=rank) for rank, c in enumerate(ordered, start=1)]
