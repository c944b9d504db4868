"""Recompute a stored run's metrics from its rankings, its figures at the team's scale from its stored
operating figures, and the recommendation; and check them against what the run wrote."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from bench.core.records import QuestionRecord
from bench.core.sections import JsonObject
from bench.evaluation import scale
from bench.evaluation.decision import SENTENCES, recommend
from bench.evaluation.judged import JUDGE_ONLY, JUDGE_ONLY_ORDER, by_key, judged_at_k
from bench.evaluation.scoring import rank_candidates, score_candidate
from bench.results import schema, store
from bench.results.schema import StoredRun


def recompute(run_ref: str, results: Path) -> tuple[StoredRun, StoredRun, list[str]]:
    """The stored run, the same run with every metric recomputed from per_question.jsonl, and every
    figure that differs between them. A figure the run predates (a key it did not store) is filled
    in, not counted as a difference."""
    stored = schema.load_run(store.find_run(run_ref, results))
    summary = stored.summary
    config = stored.manifest.config or {}
    at = scale.Scale.from_manifest(config.get("scale"))
    documents = int((stored.manifest.corpus or {}).get("documents") or 0)
    by_candidate: dict[str, list[QuestionRecord]] = {}
    for rec in stored.records:
        by_candidate.setdefault(rec.candidate, []).append(rec)
    judge_only = (summary.judge or {}).get("mode") == JUDGE_ONLY
    labels = by_key(stored.judgments, summary.unit)
    fresh, fresh_records = [], {}
    for cand in summary.candidates:
        records, scores = score_candidate(
            by_candidate.get(cand.id, []),
            k=summary.k,
            depth=summary.depth,
            gain=summary.ndcg_gain,
            unit=summary.unit,
            min_overlap=summary.min_overlap,
        )
        fresh_records[cand.id] = records
        diagnostics = scores.diagnostics
        if judge_only:  # judged by the relevance judge, not by a person's evidence
            diagnostics = dataclasses.replace(
                diagnostics, judged_at_k=judged_at_k(records, labels, summary.k, summary.unit)
            )
        fresh.append(
            dataclasses.replace(
                cand,
                quality=scores.quality,
                curve=scores.curve,
                diagnostics=diagnostics,
                ops=cand.ops.merged(scale.at_scale(cand.ops, cand.search or "", documents, at)),
                rank=None,
            )
        )
    # a run with questions only ranks by the judge's graded relevance (bench.evaluation.judged)
    ranked = rank_candidates(fresh, summary.k, JUDGE_ONLY_ORDER) if judge_only else rank_candidates(fresh, summary.k)
    cursor: dict[str, int] = {}
    records = []
    for rec in stored.records:  # the stored order, each record recomputed
        i = cursor.get(rec.candidate, 0)
        cursor[rec.candidate] = i + 1
        records.append(fresh_records[rec.candidate][i] if rec.candidate in fresh_records else rec)
    written: JsonObject = summary.recommendation or {}
    margin = written["margin"] if "margin" in written else config.get("recommend_margin", 0.02)
    prefer = config.get("prefer", "cost")
    # the rule the run was written with: equivalence tested (its margin), or ties as not significantly worse
    equivalence = written.get("equivalence")
    first = JUDGE_ONLY_ORDER[0] if judge_only else "mrr"
    figures = recommend(ranked, records, summary.k, margin, prefer, at, equivalence, first).to_dict()
    # the sentences are rendered from these figures where they are shown (bench.report.decision_text)
    figures |= {key: written[key] for key in SENTENCES if key in written}
    again = dataclasses.replace(summary, candidates=ranked, recommendation=figures)
    recomputed = dataclasses.replace(stored, summary=again, records=records)
    differences = _differences(summary.to_dict(), again.to_dict()) + _record_differences(stored.records, records)
    return stored, recomputed, differences


def _differences(a: object, b: object, where: str = "summary") -> list[str]:
    if where == "summary.recommendation" and not (isinstance(a, dict) and "test" in a):
        return []  # a run recommended by the older margin rule, before a paired test decided ties
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            if key in b and key not in a:
                continue  # a figure added since the run was written
            out += _differences(a.get(key), b.get(key), f"{where}.{key}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: stored {a!r}, recomputed {b!r}"]


def _record_differences(stored: list[QuestionRecord], fresh: list[QuestionRecord]) -> list[str]:
    out = []
    for old, new in zip(stored, fresh):
        where = f"{old.candidate} {old.question_id}"
        out += _differences(old.metrics, new.metrics, f"{where} metrics")
        out += _differences(old.first_relevant_rank, new.first_relevant_rank, f"{where} first_relevant_rank")
        out += _differences(old.diagnostics.to_dict(), new.diagnostics.to_dict(), f"{where} diagnostics")
    return out
