"""``bench.evaluate`` on plain dicts against pytrec_eval and ranx, construction included, side by side.

    .venv/bin/python benchmarks/from_dicts_speed.py [--sizes 10000 100000] [--depth 100] [--k 10]

Each size is N synthetic questions with a run of ``depth`` docs each (the data of metrics_speed.py:
1..20 graded relevant docs out of 10,000, each retrieved with probability 0.5, strictly decreasing
scores). Every tool starts from the same ``{qid: {doc: grade}}`` and ``{qid: {doc: score}}`` dicts
and ends with its figures, so what each does to read the dicts is counted:

* bench        ``bench.evaluate(qrels, run, [7 metrics @k])``;
* pytrec_eval  ``RelevanceEvaluator(qrels, {P, recall, ndcg_cut, map_cut @k, recip_rank}).evaluate(run)``;
* ranx         ``evaluate(Qrels(qrels), Run(run), [7 metrics @k])`` (numba compiled beforehand).

Best of 3, by wall clock and by this process's CPU time (steadier on a shared machine), gc collected
before and off during each repeat. bench's per-question values are checked against pytrec_eval's on a
sample first, so a wrong builder cannot look fast.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from metrics_speed import synthesise  # the same synthetic questions as the engine benchmark

import bench

REPEATS = 3
BENCH_METRICS = ("hit_rate", "recall", "precision", "f1", "mrr", "ndcg", "map")
RANX_METRICS = ("hit_rate", "recall", "precision", "f1", "mrr", "ndcg_burges", "map")


def best_of(fn: Callable[[], object]) -> tuple[float, float]:
    """(best wall seconds, best CPU seconds) over the repeats."""
    wall = cpu = float("inf")
    for _ in range(REPEATS):
        gc.collect()
        gc.disable()
        try:
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            wall, cpu = min(wall, time.perf_counter() - w0), min(cpu, time.process_time() - c0)
        finally:
            gc.enable()
    return wall, cpu


def check_against_trec(qrels: dict, run: dict, k: int) -> None:
    import pytrec_eval

    sample = list(qrels)[:: max(1, len(qrels) // 1000)]
    q, r = {s: qrels[s] for s in sample}, {s: run[s] for s in sample}
    ours = bench.evaluate(
        q, r, [f"precision@{k}", f"recall@{k}", f"ndcg@{k}", f"map@{k}"], ndcg_gain="linear", per_question=True
    )
    theirs = pytrec_eval.RelevanceEvaluator(q, {f"P_{k}", f"recall_{k}", f"ndcg_cut_{k}", f"map_cut_{k}"}).evaluate(r)
    for name, trec in (("precision", "P"), ("recall", "recall"), ("ndcg", "ndcg_cut"), ("map", "map_cut")):
        worst = max(abs(ours[f"{name}@{k}"][s] - theirs[s][f"{trec}_{k}"]) for s in sample)
        assert worst <= 1e-9, f"{name}@{k}: bench and pytrec_eval differ by {worst:.3g}"


def measure(qrels: dict, run: dict, k: int) -> dict[str, tuple[float, float]]:
    """Each tool from the dicts to its figures: (wall, CPU) seconds."""
    import pytrec_eval
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    ours = [f"{m}@{k}" for m in BENCH_METRICS]
    trec = {f"P_{k}", f"recall_{k}", f"ndcg_cut_{k}", f"map_cut_{k}", "recip_rank"}
    ranx_names = [f"{m}@{k}" for m in RANX_METRICS]
    return {
        "bench": best_of(lambda: bench.evaluate(qrels, run, ours)),
        "pytrec_eval": best_of(lambda: pytrec_eval.RelevanceEvaluator(qrels, trec).evaluate(run)),
        "ranx": best_of(lambda: ranx_evaluate(Qrels(qrels), Run(run), ranx_names)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    k = args.k

    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    versions = ", ".join(f"{d} {metadata.version(d)}" for d in ("numpy", "pytrec-eval-terrier", "ranx"))
    print(f"python {sys.version.split()[0]}, bench {bench.__version__}, {versions}; best of {REPEATS}, gc off\n")
    ranx_evaluate(Qrels({"q": {"a": 1}}), Run({"q": {"a": 0.5, "b": 0.1}}), [f"{m}@{k}" for m in RANX_METRICS])

    header = f"{'questions':>10} {'tool':<12}{'wall s':>9}{'cpu s':>9}{'× bench (wall)':>16}{'× bench (cpu)':>15}"
    print(header)
    for n in args.sizes:
        qrels, run = synthesise(n, args.depth, args.seed + n)
        gc.collect()
        gc.freeze()  # the input dicts live throughout: keep them out of every gc pass
        check_against_trec(qrels, run, k)
        times = measure(qrels, run, k)
        base_wall, base_cpu = times["bench"]
        for tool, (wall, cpu) in times.items():
            print(f"{n:>10,} {tool:<12}{wall:>9.3f}{cpu:>9.3f}{wall / base_wall:>15.1f}×{cpu / base_cpu:>14.1f}×")
        del qrels, run
        gc.unfreeze()
        gc.collect()
    print(f"\n(depth {args.depth}, k={k}; pytrec_eval and ranx build their own structures from the dicts each time)")


if __name__ == "__main__":
    main()
