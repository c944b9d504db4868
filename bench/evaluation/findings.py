"""Diagnosis: the findings on a finished run, each a pattern in the figures (``finding_rules``) that
``bench.report.findings_text`` puts in words with what to try.

``diagnose(summary, records)`` maps every candidate id, in summary order, to its findings, and ``"*"`` (listed
first) to run-level findings that compare candidates. ``records`` (the run's per_question.jsonl) is optional: with
it the precision ceiling is exact and the per-question rules (near_duplicates, missed_by_all) can run. The rules
and their thresholds are in ``bench.evaluation.finding_rules``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from bench.core.records import QuestionRecord
from bench.core.summary import CandidateResult, RunSummary
from bench.evaluation import pipeline_gains
from bench.evaluation.finding_rules import CANDIDATE_RULES, RUN_RULES, CandidateView, Finding, Severity

RUN = "*"

__all__ = ["RUN", "Finding", "Severity", "diagnose"]


def diagnose(summary: RunSummary, records: Sequence[QuestionRecord] | None = None) -> dict[str, list[Finding]]:
    """Findings per candidate id (summary order), run-level ones under ``"*"`` first; lists may be empty."""
    candidates = summary.candidates
    by_candidate = _group_records(records or [])
    out: dict[str, list[Finding]] = {RUN: [f for rule in RUN_RULES for f in rule(summary, by_candidate)]}
    for data in candidates:
        cand = _candidate(summary, data, by_candidate.get(data.id, []), _baseline(candidates, data))
        out[data.id] = [f for rule in CANDIDATE_RULES if (f := rule(cand)) is not None]
    return out


def _group_records(records: Sequence[QuestionRecord]) -> dict[str, list[QuestionRecord]]:
    out: dict[str, list[QuestionRecord]] = defaultdict(list)
    for rec in records:
        out[rec.candidate].append(rec)
    return out


def _baseline(candidates: list[CandidateResult], data: CandidateResult) -> CandidateResult | None:
    """Plain BM25 on the same chunker: the only recall a single dense model can be fairly held against. A
    reranked BM25 is not keyword search, and a fused or reranked candidate's recall is not its model's."""
    if not pipeline_gains.is_single(data, "dense"):
        return None
    return next((c for c in candidates if pipeline_gains.is_single(c, "lexical") and c.chunker == data.chunker), None)


def _candidate(
    summary: RunSummary, data: CandidateResult, records: list[QuestionRecord], baseline: CandidateResult | None
) -> CandidateView:
    k = summary.k
    quality = data.quality
    ceiling, units = _ceiling(k, records, quality.of("precision", k), quality.of("recall", k))
    return CandidateView(
        data=data,
        k=k,
        depth=summary.depth,
        unit=summary.unit,
        records=records,
        ceiling=ceiling,
        units=units,
        baseline=baseline,
    )


def _ceiling(
    k: int, records: list[QuestionRecord], precision: float | None, recall: float | None
) -> tuple[float | None, float | None]:
    """Achievable precision@k and mean relevant units per question: exact from records, else estimated."""
    if records:
        sizes = [len(r.expected) for r in records]
        return sum(min(k, n) for n in sizes) / (k * len(sizes)), sum(sizes) / len(sizes)
    if not precision or not recall:
        return None, None
    return min(1.0, precision / recall), k * precision / recall
