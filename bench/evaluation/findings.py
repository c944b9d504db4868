"""Diagnosis: the rules (``finding_rules``) run over a finished run, each finding a pattern in its figures that
``bench.report.findings_text`` puts in words with what to try.

``diagnose(summary, records)`` maps every candidate id, in summary order, to its findings, and ``"*"`` (listed
first) to run-level findings that compare candidates. ``records`` (the run's per_question.jsonl) is optional: with
it the precision ceiling is exact and the per-question rules (near_duplicates, missed_by_all) can run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from bench.core.findings import Finding
from bench.core.records import QuestionRecord
from bench.core.summary import RunSummary
from bench.evaluation.finding_rules import CANDIDATE_RULES, RUN_RULES, CandidateView

RUN = "*"

__all__ = ["RUN", "Finding", "diagnose"]


def diagnose(summary: RunSummary, records: Sequence[QuestionRecord] | None = None) -> dict[str, list[Finding]]:
    """Findings per candidate id (summary order), run-level ones under ``"*"`` first; lists may be empty."""
    by_candidate: dict[str, list[QuestionRecord]] = defaultdict(list)
    for rec in records or []:
        by_candidate[rec.candidate].append(rec)
    out: dict[str, list[Finding]] = {RUN: [f for rule in RUN_RULES for f in rule(summary, by_candidate)]}
    for data in summary.candidates:
        view = CandidateView.of(summary, data, by_candidate.get(data.id, []))
        out[data.id] = [f for rule in CANDIDATE_RULES if (f := rule(view)) is not None]
    return out
