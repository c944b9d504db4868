"""Do the pick, the tie group and the monthly cost hold still when the machine is busy?

Runs the default shootout twice in one sitting, its timings taken again each time (--remeasure):
once on an idle machine and once with a CPU hog on every core, then prints each candidate's p50/p95
and monthly cost side by side, and the pick and tie group of both. The embedding cache is shared, so
the second run re-times without re-embedding. Passes when the pick and tie group are the same and
every monthly cost is within 10%; the loaded run must also say it was timed on a busy machine.

    .venv/bin/python benchmarks/latency_stability.py [--config bench.toml] [--only 'minilm*'] [--order idle,loaded]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=REPO / "bench.toml")
    parser.add_argument("--only", action="append", default=[], help="candidate id patterns, as bench run --only")
    parser.add_argument("--order", default="idle,loaded", help="which run goes first")
    parser.add_argument("--keep", type=Path, help="keep both runs and the cache in this folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="latency-stability-") as tmp:
        root = args.keep or Path(tmp)
        cache = root / "cache"
        out = {}
        for which in args.order.split(","):
            runner = _loaded if which == "loaded" else _run
            out[which] = runner(args.config.resolve(), root / which, cache, args.only)
    (idle, idle_manifest, idle_s), (loaded, loaded_manifest, loaded_s) = out["idle"], out["loaded"]
    print(f"idle run {idle_s:.0f} s, loaded run {loaded_s:.0f} s (a CPU hog on each of {os.cpu_count()} cores)")
    shares = idle_manifest["timing"]["contention"], loaded_manifest["timing"]["contention"]
    print(f"timing contention: idle {shares[0]}, loaded {shares[1]}")
    rows = {c["id"]: c["ops"] for c in idle["candidates"]}
    worst = 0.0
    head = ["p50 idle", "loaded", "p95 idle", "loaded", "$/mo idle", "loaded", "diff"]
    print(f"\n{'candidate':48} " + " ".join(f"{h:>9}" for h in head))
    for c in loaded["candidates"]:
        a, b = rows[c["id"]], c["ops"]
        ca, cb = a.get("monthly_cost_usd"), b.get("monthly_cost_usd")
        diff = abs(cb - ca) / ca if isinstance(ca, float) and isinstance(cb, float) and ca > 0 else 0.0
        worst = max(worst, diff)
        cells = [_fmt(a.get("end_to_end_ms_p50")), _fmt(b.get("end_to_end_ms_p50"))]
        cells += [_fmt(a.get("end_to_end_ms_p95")), _fmt(b.get("end_to_end_ms_p95")), _fmt(ca, 3), _fmt(cb, 3)]
        print(f"{c['id']:48} " + " ".join(f"{x:>9}" for x in [*cells, f"{diff:.1%}"]))
    ri, rl = idle["recommendation"], loaded["recommendation"]
    same_pick = ri.get("pick") == rl.get("pick")
    same_ties = sorted(ri.get("tied") or []) == sorted(rl.get("tied") or [])
    said_busy = bool(loaded_manifest["timing"]["busy"])
    print(f"\npick:  idle {ri.get('pick')}  loaded {rl.get('pick')}  {'same' if same_pick else 'DIFFERENT'}")
    print(f"tied:  idle {sorted(ri.get('tied') or [])}")
    print(f"       loaded {sorted(rl.get('tied') or [])}  {'same' if same_ties else 'DIFFERENT'}")
    print(f"largest monthly cost difference {worst:.1%} (limit {COST_TOLERANCE:.0%})")
    print(f"loaded run marked busy: {said_busy}; idle run marked busy: {idle_manifest['timing']['busy']}")
    ok = same_pick and same_ties and worst <= COST_TOLERANCE and said_busy
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
