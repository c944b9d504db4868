"""Recompute a stored run's metrics from its rankings, and check them against what the run wrote."""

from __future__ import annotations

import copy
from pathlib import Path

from bench.evaluation.scoring import rank_candidates, recommendation, score_candidate
from bench.results import store


def recompute(run_ref: str, results: Path) -> tuple[dict, Path, list[str], list[dict]]:
    """The summary recomputed from per_question.jsonl, the run folder, every figure that differs, and
    the stored records (so callers need not read the file again)."""
    path = store.find_run(run_ref, results)
    stored = store.load_json(path / store.SUMMARY)
    records = store.load_jsonl(path / store.PER_QUESTION)
    by_candidate: dict[str, list[dict]] = {}
    for rec in records:
        by_candidate.setdefault(rec["candidate"], []).append(copy.deepcopy(rec))
    k, depth = stored["k"], stored["depth"]
    fresh = []
    for cand in stored["candidates"]:
        parts = score_candidate(
            by_candidate.get(cand["id"], []),
            k=k,
            depth=depth,
            gain=stored["ndcg_gain"],
            unit=stored["unit"],
            min_overlap=stored["min_overlap"],
        )
        fresh.append({**cand, **parts, "rank": None})
    ranked = rank_candidates(fresh, k)
    summary = {**stored, "candidates": ranked}
    if "recommendation" in stored:
        summary["recommendation"] = recommendation(ranked, k, stored["recommendation"]["margin"])
    differences = _differences(stored, summary) + _record_differences(records, by_candidate)
    return summary, path, differences, records


def _differences(a, b, where: str = "summary") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            out += _differences(a.get(key), b.get(key), f"{where}.{key}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: stored {a!r}, recomputed {b!r}"]


def _record_differences(stored: list[dict], fresh: dict[str, list[dict]]) -> list[str]:
    out = []
    cursor: dict[str, int] = {}
    for rec in stored:
        i = cursor.get(rec["candidate"], 0)
        cursor[rec["candidate"]] = i + 1
        new = fresh[rec["candidate"]][i]
        where = f"{rec['candidate']} {rec['question_id']}"
        out += _differences(rec["metrics"], new["metrics"], f"{where} metrics")
        for key in ("first_relevant_rank", "diagnostics"):
            out += _differences(rec[key], new[key], f"{where} {key}")
    return out
