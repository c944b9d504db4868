"""Do two runs hold the same results? For checking that a change to the code changed no figure.

    .venv/bin/python benchmarks/same_results.py OLD_RUN NEW_RUN

Compares summary.json and per_question.jsonl value by value and rank_matrix.csv byte for byte,
leaving out what is measured rather than computed (durations, latencies, memory, cache state of
the latency timings) and what differs by nature (run id, timestamps). Keys only the new run has
are listed apart: adding keys is allowed, renaming or dropping one is a difference. Candidates are
matched by id and records by candidate and question: candidates only the new run has (a grid that
grew) are listed apart, and then ranks, the recommendation's comparisons, the holes and the rank
matrix, which they change by nature, are not compared (the best and the pick are shown). Exit 0 when the
results are the same, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

MEASURED = {
    "embed_seconds",
    "chunks_per_second",
    "index_build_seconds",
    "index_build_cpu_seconds",
    "corpus_speed_measured",
    "corpus_speed_from_cache",
    "index_memory_mb",
    "peak_rss_mb",
    "tokens_per_second",
    "query_embed_measured",
    "query_embed_from_cache",
    # what follows from measured seconds: the corpus's embedding time, queries a second, compute money
    "corpus_embed_seconds",
    "qps_single_thread",
    "cpu_seconds_per_1k_queries",
    "index_hours_at_scale",
    "monthly_compute_usd",
    "monthly_cost_usd",
}
MEASURED_PREFIXES = ("query_embed_ms_", "search_ms_", "rerank_ms_", "end_to_end_ms_", "timing_")
MEASURED_SUFFIXES = ("_cpu_ms_mean",)
# The recommendation's figures and sentences that quote a measured cost or latency.
MEASURED_RECOMMENDATION = {"line", "reason", "monthly_cost_usd"}


def _without_measurements(summary: dict) -> dict:
    for candidate in summary["candidates"]:
        for key in candidate["ops"]:
            if key in MEASURED or key.startswith(MEASURED_PREFIXES) or key.endswith(MEASURED_SUFFIXES):
                candidate["ops"][key] = "<measured>"
    recommendation = summary.get("recommendation") or {}
    for key in MEASURED_RECOMMENDATION & set(recommendation):
        recommendation[key] = "<measured>"
    return summary


def differences(old, new, where: str, out: list[str], added: set[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            if key not in old:
                added.add(key)
            elif key not in new:
                out.append(f"{where}.{key}: dropped")
            else:
                differences(old[key], new[key], f"{where}.{key}", out, added)
    elif isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            out.append(f"{where}: {len(old)} items, now {len(new)}")
        for i, (a, b) in enumerate(zip(old, new)):
            differences(a, b, f"{where}[{i}]", out, added)
    elif old != new:
        out.append(f"{where}: {old!r} -> {new!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    args = parser.parse_args()
    out: list[str] = []
    added: set[str] = set()
    old, new = (_without_measurements(json.loads((run / "summary.json").read_text())) for run in (args.old, args.new))
    by_id = {c["id"]: c for c in new["candidates"]}
    grown = sorted(set(by_id) - {c["id"] for c in old["candidates"]})
    for candidate in old["candidates"]:
        if candidate["id"] not in by_id:
            out.append(f"summary.candidates: {candidate['id']} dropped")
            continue
        mine = by_id[candidate["id"]]
        if grown:  # a rank moves when candidates are added
            candidate, mine = {**candidate, "rank": None}, {**mine, "rank": None}
        differences(candidate, mine, f"summary.candidates[{candidate['id']}]", out, added)
    by_grid = {"recommendation", "holes"}  # run-level figures over all candidates: more candidates, other figures
    rest = [key for key in sorted(set(old) | set(new)) if key != "candidates" and (key not in by_grid or not grown)]
    differences(
        {k: old.get(k) for k in rest if k in old}, {k: new.get(k) for k in rest if k in new}, "summary", out, added
    )
    records = [
        {
            (r["candidate"], r["question_id"]): r
            for r in map(json.loads, (run / "per_question.jsonl").read_text().splitlines())
        }
        for run in (args.old, args.new)
    ]
    for key, record in records[0].items():
        if key not in records[1]:
            out.append(f"per_question {key}: dropped")
        else:
            differences(record, records[1][key], f"per_question[{key[0]} {key[1]}]", out, added)
    matrices = [run / "rank_matrix.csv" for run in (args.old, args.new)]
    same_matrix = all(m.is_file() for m in matrices) and matrices[0].read_bytes() == matrices[1].read_bytes()
    print(f"summary.json and per_question.jsonl ({len(records[0])} records of the old run): {len(out)} differences")
    for line in out[:20]:
        print(f"  {line}")
    print(f"keys only the new run has: {', '.join(sorted(added)) or 'none'}")
    if grown:
        pick = [(run.get("recommendation") or {}).get(key) for run in (old, new) for key in ("best", "pick")]
        print(f"candidates only the new run has ({len(grown)}): {', '.join(grown)}")
        print(f"best and pick: {pick[0]}, {pick[1]} -> {pick[2]}, {pick[3]} (ranks and comparisons not compared)")
    else:
        print(f"rank_matrix.csv byte for byte the same: {same_matrix}")
    sys.exit(1 if out or not (same_matrix or grown) else 0)


if __name__ == "__main__":
    main()
