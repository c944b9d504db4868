"""From stored per-question records to metrics, diagnostics and the ranked candidate summary.

``bench run`` and ``bench report`` both call this on the same records, so a report recomputed
from disk equals what the run wrote.
"""

from __future__ import annotations

import numpy as np

from bench.evaluation import diagnostics, metrics
from bench.evaluation.metrics import Grades
from bench.evaluation.spans import span_keys, span_metrics
from bench.inputs.goldset import CHUNK


def grades_from_records(records: list[dict], depth: int) -> Grades:
    """Grades of the stored rankings and expected units of one candidate's questions."""
    n = len(records)
    ranked = np.zeros((n, depth), dtype=np.int64)
    ideal = np.zeros((n, depth), dtype=np.int64)
    n_relevant = np.zeros(n, dtype=np.int64)
    for q, rec in enumerate(records):
        ids = [r["id"] for r in rec["ranking"]]
        if len(set(ids)) != len(ids):
            raise ValueError(f"question {rec['question_id']!r}: ranking repeats a unit")
        got = [r["grade"] for r in rec["ranking"][:depth]]
        ranked[q, : len(got)] = got
        top = sorted((e["grade"] for e in rec["expected"]), reverse=True)[:depth]
        ideal[q, : len(top)] = top
        n_relevant[q] = len(rec["expected"])
    return Grades(ranked, ideal, n_relevant)


def score_candidate(records: list[dict], *, k: int, depth: int, gain: str, unit: str, min_overlap: float) -> dict:
    """Fill each record's ``metrics``, ``first_relevant_rank`` and ``diagnostics``; return the summary parts."""
    grades = grades_from_records(records, depth)
    per_question = metrics.quality(grades, k, gain)
    if unit == CHUNK:
        spans = [
            span_metrics(
                [(e["doc_id"], e["start"], e["end"]) for e in rec["ranking"]],
                [(e["doc"], e["start"], e["end"]) for e in rec["evidence"]],
                k,
                min_overlap,
            )
            for rec in records
        ]
        per_question.update({key: np.array([s[key] for s in spans], dtype=float) for key in span_keys(k)})
    first = metrics.first_relevant_rank(grades)
    for q, rec in enumerate(records):
        rec["first_relevant_rank"] = int(first[q]) or None
        rec["metrics"] = {key: float(values[q]) for key, values in per_question.items()}
        rec["diagnostics"] = diagnostics.question_diagnostics(rec, k)
    return {
        "quality": metrics.means(per_question),
        "curve": metrics.hit_curve(grades),
        "diagnostics": diagnostics.summarise([r["diagnostics"] for r in records], first, depth, grades.n_relevant),
    }


def rank_candidates(candidates: list[dict], k: int) -> list[dict]:
    """Order by mrr@k, then recall@k (both descending), then id; set each ``rank`` (1-based)."""
    mrr, recall = metrics.metric_key("mrr", k), metrics.metric_key("recall", k)
    ordered = sorted(candidates, key=lambda c: (-c["quality"][mrr], -c["quality"][recall], c["id"]))
    for rank, c in enumerate(ordered, start=1):
        c["rank"] = rank
    return ordered


COST_KEY = "cost_per_1k_queries_usd"


def recommendation(candidates: list[dict], k: int, margin: float) -> dict:
    """The cheapest candidate per 1k queries whose mrr@k is within ``margin`` of the best."""
    from bench.evaluation import costs

    metric = metrics.metric_key("mrr", k)
    pick = costs.cheapest_within(candidates, metric, margin, COST_KEY)
    return {
        "metric": metric,
        "margin": margin,
        "cost_key": COST_KEY,
        "pick": pick["id"] if pick else None,
        "line": costs.recommendation_line(candidates, metric, margin, COST_KEY),
    }
