"""A warm rerun of a shootout against a cold one, side by side on this machine.

    .venv/bin/python benchmarks/cache_speed.py [CONFIG] [--repeats 2]

Cold: an empty cache folder (embeddings and prepared models, so the static model is distilled
again). Warm: the same command again on that cache, then once more with only k changed. Each is a
fresh `bench run` process, as a user would type it, so interpreter start-up and library imports
count. Prints wall times, their ratio, and what the warm runs still embedded (nothing is expected:
vectors, token counts and this machine's query timings all come from the cache), then one more warm
run with --remeasure, which loads the models again to time their queries, and one with --no-report
(every run otherwise ends by drawing its plots, report.pdf and inspector.html, a few seconds).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.results import schema
from bench.results.schema import RunSummary

REPO = Path(__file__).resolve().parent.parent


def bench_run(config: Path, cache: Path, results: Path, *extra: str) -> tuple[float, dict]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("BENCH_CACHE_DIR", None)
    t0 = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "run",
            str(config),
            "--cache-dir",
            str(cache),
            "--results",
            str(results),
            *extra,
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"bench run failed:\n{done.stderr}")
    newest = max(
        (p for p in results.iterdir() if p.is_dir() and not p.name.startswith(".")), key=lambda p: p.stat().st_mtime
    )
    return seconds, schema.load_summary(newest)


def embedded(summary: RunSummary) -> tuple[int, int]:
    chunks = sum(c.ops.get("chunks_embedded") or 0 for c in summary.candidates)
    questions = sum(c.ops.get("questions_embedded") or 0 for c in summary.candidates)
    return chunks, questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", nargs="?", default=str(REPO / "bench.toml"))
    parser.add_argument("--repeats", type=int, default=2, help="warm reruns to time (best is reported)")
    args = parser.parse_args()
    config = Path(args.config).resolve()
    with tempfile.TemporaryDirectory(prefix="bench-cache-speed-") as tmp:
        cache, results = Path(tmp) / "cache", Path(tmp) / "results"
        results.mkdir()
        cold_s, cold = bench_run(config, cache, results)
        warm = [bench_run(config, cache, results) for _ in range(args.repeats)]
        warm_s, warm_summary = min(warm, key=lambda w: w[0])
        k_s, k_summary = bench_run(config, cache, results, "--k", "3")
        remeasure_s, remeasure = bench_run(config, cache, results, "--remeasure")
        bare_s, bare = bench_run(config, cache, results, "--no-report")
    print(f"config: {config}  ({len(cold.candidates)} candidates; {os.cpu_count()} CPUs)")
    print(f"{'run':<28}{'seconds':>9}{'chunks embedded':>17}{'questions embedded':>20}")
    for name, seconds, summary in (
        ("cold (empty cache)", cold_s, cold),
        ("warm (same config)", warm_s, warm_summary),
        ("warm, only k changed", k_s, k_summary),
        ("warm, --remeasure", remeasure_s, remeasure),
        ("warm, --no-report", bare_s, bare),
    ):
        chunks, questions = embedded(summary)
        print(f"{name:<28}{seconds:>9.1f}{chunks:>17,}{questions:>20,}")
    print(
        f"cold / warm: {cold_s / warm_s:.1f}x   cold / warm with k changed: {cold_s / k_s:.1f}x   "
        f"cold / warm --remeasure: {cold_s / remeasure_s:.1f}x   (target >= 10x)"
    )
    print(
        "--remeasure imports the model libraries and encodes each question live once per model "
        "to time it; plain warm runs reuse this machine's timings and never load a model."
    )


if __name__ == "__main__":
    main()
