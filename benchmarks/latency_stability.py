"""Do the pick, the tie group and the monthly cost hold still when the machine is busy?

Runs the default shootout three times in one sitting, its timings taken again each time (--remeasure):
on an idle machine, with a CPU hog on every core, and idle again; then prints each candidate's p50/p95
and monthly cost side by side, and the pick and tie group of each. The embedding cache is shared, so
later runs re-time without re-embedding.

A shared virtual machine's speed drifts by itself over minutes (its neighbours on the host come and
go): the two idle runs show by how much (the `drift` column), and the loaded run is compared with the
band the idle runs span. Passes when the pick and tie group are the same in all three runs, every
monthly cost of the loaded run lies within 10% of that band, the loaded run says it was timed on a
busy machine and the idle runs do not.

    .venv/bin/python benchmarks/latency_stability.py [--config bench.toml] [--only 'minilm*'] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HOG = "while True: pass"
COST_TOLERANCE = 0.10


def _run(config: Path, results: Path, cache: Path, only: list[str]) -> tuple[dict, dict, float]:
    args = [sys.executable, "-m", "bench", "run", str(config), "--results", str(results), "--cache-dir", str(cache)]
    args += ["--remeasure", "--no-report", *(x for pattern in only for x in ("--only", pattern))]
    env = {k: v for k, v in os.environ.items() if k not in ("BENCH_BUSY_SHARE", "BENCH_CACHE_DIR")}
    t0 = time.perf_counter()
    done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"bench run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    run = max(p for p in results.iterdir() if (p / "summary.json").is_file())
    summary = json.loads((run / "summary.json").read_text())
    manifest = json.loads((run / "manifest.json").read_text())
    return summary, manifest, seconds


def _loaded(config: Path, results: Path, cache: Path, only: list[str]) -> tuple[dict, dict, float]:
    cores = len(os.sched_getaffinity(0))
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(cores)]
    try:
        return _run(config, results, cache, only)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def _fmt(x: object, digits: int = 1) -> str:
    return "-" if not isinstance(x, int | float) else f"{x:.{digits}f}"


def _from_band(cost: object, idle: list[object]) -> float:
    """How far ``cost`` lies outside the band the idle runs' costs span, relative to the nearer end."""
    band = [c for c in idle if isinstance(c, float) and c > 0]
    if not isinstance(cost, float) or not band:
        return 0.0
    low, high = min(band), max(band)
    return (low - cost) / low if cost < low else (cost - high) / high if cost > high else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=REPO / "bench.toml")
    parser.add_argument("--only", action="append", default=[], help="candidate id patterns, as bench run --only")
    parser.add_argument("--keep", type=Path, help="keep the runs and the cache in this folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="latency-stability-") as tmp:
        root = args.keep or Path(tmp)
        cache = root / "cache"
        runs = [
            _run(args.config.resolve(), root / "idle", cache, args.only),
            _loaded(args.config.resolve(), root / "loaded", cache, args.only),
            _run(args.config.resolve(), root / "idle-again", cache, args.only),
        ]
    (idle, idle_manifest, idle_s), (loaded, loaded_manifest, loaded_s), (again, again_manifest, again_s) = runs
    print(
        f"idle run {idle_s:.0f} s, loaded run {loaded_s:.0f} s (a CPU hog on each of {os.cpu_count()} cores), "
        f"idle again {again_s:.0f} s"
    )
    shares = [m["timing"]["contention"] for m in (idle_manifest, loaded_manifest, again_manifest)]
    print(f"timing contention: idle {shares[0]}, loaded {shares[1]}, idle again {shares[2]}")
    first = {c["id"]: c["ops"] for c in idle["candidates"]}
    second = {c["id"]: c["ops"] for c in again["candidates"]}
    worst = worst_drift = 0.0
    head = ["p50 idle", "loaded", "p95 idle", "loaded", "$/mo idle", "loaded", "again", "drift", "off band"]
    print(f"\n{'candidate':48} " + " ".join(f"{h:>9}" for h in head))
    for c in loaded["candidates"]:
        a, b, a2 = first[c["id"]], c["ops"], second[c["id"]]
        ca, cb, ca2 = a.get("monthly_cost_usd"), b.get("monthly_cost_usd"), a2.get("monthly_cost_usd")
        off = _from_band(cb, [ca, ca2])
        drift = abs(ca2 - ca) / ca if isinstance(ca, float) and isinstance(ca2, float) and ca > 0 else 0.0
        worst, worst_drift = max(worst, off), max(worst_drift, drift)
        cells = [_fmt(a.get("end_to_end_ms_p50")), _fmt(b.get("end_to_end_ms_p50"))]
        cells += [_fmt(a.get("end_to_end_ms_p95")), _fmt(b.get("end_to_end_ms_p95"))]
        cells += [_fmt(ca, 3), _fmt(cb, 3), _fmt(ca2, 3), f"{drift:.1%}", f"{off:.1%}"]
        print(f"{c['id']:48} " + " ".join(f"{x:>9}" for x in cells))
    picks = [r["recommendation"].get("pick") for r in (idle, loaded, again)]
    ties = [sorted(r["recommendation"].get("tied") or []) for r in (idle, loaded, again)]
    same_pick, same_ties = len(set(picks)) == 1, all(t == ties[0] for t in ties)
    said_busy = bool(loaded_manifest["timing"]["busy"])
    calm = not idle_manifest["timing"]["busy"] and not again_manifest["timing"]["busy"]
    print(f"\npick:  idle {picks[0]}  loaded {picks[1]}  idle again {picks[2]}  {'same' if same_pick else 'DIFFERENT'}")
    print(f"tied:  idle {ties[0]}")
    print(f"       loaded {ties[1]}")
    print(f"       idle again {ties[2]}  {'same' if same_ties else 'DIFFERENT'}")
    print(f"largest drift between the idle runs {worst_drift:.1%}")
    print(f"largest monthly cost of the loaded run outside the idle band {worst:.1%} (limit {COST_TOLERANCE:.0%})")
    print(f"loaded run marked busy: {said_busy}; idle runs marked busy: {not calm}")
    ok = same_pick and same_ties and worst <= COST_TOLERANCE and said_busy and calm
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
