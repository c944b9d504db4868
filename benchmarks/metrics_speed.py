"""Speed of bench's array metric engine against ranx and pytrec_eval (pytrec-eval-terrier).

Synthesises N questions (qrels: 1..20 graded relevant docs out of a 10,000-doc universe; run:
exactly ``depth`` distinct docs with strictly decreasing scores, each relevant doc present with
probability 0.5 at a random rank), then times, side by side in one process, best of 3 repeats:

* bench engine only   ``metrics.quality(grades, k)``: all 7 metrics from a prebuilt ``Grades``;
* bench from dicts    the qrels/run dicts -> ``Grades`` builder below, plus the engine;
* ranx                ``Qrels(...)`` + ``Run(...)`` construction, and ``evaluate(...)`` separately;
* pytrec_eval         ``RelevanceEvaluator(...)`` construction + ``evaluate(run)``.

Before any verdict, bench's per-question values are checked against ranx (every question) and
pytrec_eval (a sample), so a broken engine cannot look fast.

    .venv/bin/python benchmarks/metrics_speed.py [--questions 100000] [--depth 100] [--k 10]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import sys
import time
from importlib import metadata
from itertools import chain, count, repeat
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench
from bench.evaluation.metrics import Grades, first_relevant_rank, quality

UNIVERSE = 10_000
MAX_RELEVANT = 20
MAX_GRADE = 3
P_RETRIEVED = 0.5
REPEATS = 3
CHUNK_ROWS = 10_000


# --------------------------------------------------------------------------- synthetic data
def _distinct_rows(rng: np.random.Generator, n: int, width: int, universe: int) -> np.ndarray:
    """(n, width) int64 ids, distinct within each row, uniform over ``range(universe)``."""
    out = np.empty((n, width), dtype=np.int64)
    todo = np.arange(n)
    draws_per_row = width + max(16, width // 2)
    while len(todo):
        draws = rng.integers(0, universe, (len(todo), draws_per_row))
        order = np.argsort(draws, axis=1, kind="stable")
        ordered = np.take_along_axis(draws, order, axis=1)
        dup_sorted = np.zeros_like(ordered, dtype=bool)
        dup_sorted[:, 1:] = ordered[:, 1:] == ordered[:, :-1]
        dup = np.empty_like(dup_sorted)
        np.put_along_axis(dup, order, dup_sorted, axis=1)  # later repeats of a value are dups
        ok = (~dup).sum(axis=1) >= width
        first_unique = np.argsort(dup, axis=1, kind="stable")[:, :width]  # keeps draw order
        out[todo[ok]] = np.take_along_axis(draws, first_unique, axis=1)[ok]
        todo = todo[~ok]
    return out


def synthesise(n: int, depth: int, seed: int):
    """The qrels and run dicts ({qid: {doc_id: grade}}, {qid: {doc_id: score}})."""
    rng = np.random.default_rng(seed)
    n_rel = rng.integers(1, MAX_RELEVANT + 1, n)
    ids = _distinct_rows(rng, n, MAX_RELEVANT + depth, UNIVERSE)
    rel_ids, run_ids = ids[:, :MAX_RELEVANT], ids[:, MAX_RELEVANT:]  # disjoint within a row
    rel_grades = rng.integers(1, MAX_GRADE + 1, (n, MAX_RELEVANT))
    # each relevant doc is retrieved with probability P_RETRIEVED, at a random (distinct) rank
    n_slots = min(MAX_RELEVANT, depth)
    slots = np.argsort(rng.random((n, depth)), axis=1)[:, :n_slots]
    place = (np.arange(n_slots) < n_rel[:, None]) & (rng.random((n, n_slots)) < P_RETRIEVED)
    rows, cols = np.nonzero(place)
    run_ids[rows, slots[rows, cols]] = rel_ids[rows, cols]
    # strictly decreasing scores: 100 minus a cumulative sum of positive steps
    scores = 100.0 - np.cumsum(rng.uniform(1e-3, 1.0, (n, depth)), axis=1)

    names = np.array([f"d{i:05d}" for i in range(UNIVERSE)], dtype=object)  # shared str objects
    qids = [f"q{i:07d}" for i in range(n)]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for lo in range(0, n, CHUNK_ROWS):
        hi = min(n, lo + CHUNK_ROWS)
        rel_names = names[rel_ids[lo:hi]].tolist()
        grades = rel_grades[lo:hi].tolist()
        counts = n_rel[lo:hi].tolist()
        run_names = names[run_ids[lo:hi]].tolist()
        run_scores = scores[lo:hi].tolist()
        for i in range(hi - lo):
            m = counts[i]
            qrels[qids[lo + i]] = dict(zip(rel_names[i][:m], grades[i][:m]))
            run[qids[lo + i]] = dict(zip(run_names[i], run_scores[i]))
    return qrels, run


# --------------------------------------------------------------------------- dicts -> Grades
def grades_from_dicts(qrels: dict, run: dict, depth: int) -> tuple[list[str], Grades]:
    """``Grades`` for the questions of ``qrels`` (in its order) from the two nested dicts.

    Only the judged docs are looked up: each (question, judged doc) pair gets its score in that
    question's run (NaN when not retrieved), and its rank is the number of the run's scores above
    it, found in numpy on the run's score matrix.  So each run entry is read once, as a float, and
    never hashed.  When a retrieved judged doc ties with another doc of its run, the order between
    them is the run's insertion order, which the general builder below handles.  A score of NaN
    is not supported.
    Grades <= 0 are not relevant, as in trec_eval.
    """
    qids = list(qrels)
    n = len(qids)
    empty: dict = {}
    runs = [run.get(q, empty) for q in qids]
    judged = list(qrels.values())
    q_lens = np.fromiter(map(len, judged), np.int64, n)
    r_lens = np.fromiter(map(len, runs), np.int64, n)
    n_judged, n_run = int(q_lens.sum()), int(r_lens.sum())

    judged_grade = np.fromiter(chain.from_iterable(map(dict.values, judged)), np.int64, n_judged)
    np.maximum(judged_grade, 0, out=judged_grade)
    judged_score = np.fromiter(
        map(
            dict.get,
            chain.from_iterable(map(repeat, runs, q_lens.tolist())),
            chain.from_iterable(judged),
            repeat(np.nan),
        ),
        np.float64,
        n_judged,
    )
    judged_row = np.repeat(np.arange(n, dtype=np.int64), q_lens)
    score_m = _row_matrix(np.fromiter(chain.from_iterable(map(dict.values, runs)), np.float64, n_run), r_lens, -np.inf)

    hit = ~np.isnan(judged_score) & (judged_grade > 0)
    rows, hit_grades = judged_row[hit], judged_grade[hit]
    rank = _ranks(score_m, rows, judged_score[hit])
    if rank is None:  # a tie: fall back to a full (stable) sort of every run
        return _grades_from_dicts_general(qids, qrels, runs, depth)
    ranked = np.zeros((n, depth), dtype=np.int64)
    keep = rank < depth
    ranked[rows[keep], rank[keep]] = hit_grades[keep]
    return qids, Grades(ranked, *_ideal(judged_grade, q_lens, depth))


def _ranks(score_m: np.ndarray, rows: np.ndarray, scores: np.ndarray) -> np.ndarray | None:
    """0-based rank of each (row, score): how many scores of that row are higher.

    None when a score ties with another of its row.  Runs whose scores are strictly descending
    in insertion order (checked) take a batched binary search; any other order is counted.
    """
    width = score_m.shape[1]
    if width and (score_m[:, 1:] < score_m[:, :-1]).all():
        flat, base = score_m.ravel(), rows * width
        lo, hi = np.zeros(len(rows), dtype=np.int64), np.full(len(rows), width, dtype=np.int64)
        while (lo < hi).any():  # about log2(width) rounds, each one gather
            mid = (lo + hi) >> 1
            above = flat[base + np.minimum(mid, width - 1)] > scores
            lo, hi = np.where(above, np.minimum(mid + 1, hi), lo), np.where(above, hi, mid)
        return lo
    rank = np.empty(len(rows), dtype=np.int64)
    step = max(1, 2**22 // max(width, 1))
    for lo in range(0, len(rows), step):
        block, s = score_m[rows[lo : lo + step]], scores[lo : lo + step, None]
        if ((block == s).sum(axis=1) > 1).any():
            return None
        rank[lo : lo + step] = (block > s).sum(axis=1)
    return rank


def _row_matrix(flat: np.ndarray, lens: np.ndarray, fill) -> np.ndarray:
    """Rows of ragged lengths ``lens``, concatenated in ``flat``, as a matrix padded with ``fill``."""
    n = len(lens)
    width = int(lens.max()) if n else 0
    if len(flat) == n * width:
        return flat.reshape(n, width)
    out = np.full((n, width), fill, dtype=flat.dtype)
    out[np.repeat(np.arange(n), lens), np.arange(len(flat)) - np.repeat(np.cumsum(lens) - lens, lens)] = flat
    return out


def _ideal(judged_grade: np.ndarray, q_lens: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """``ideal`` (each question's grades, descending, zero-padded to ``depth``) and ``n_relevant``."""
    judged_m = -np.sort(-_row_matrix(judged_grade, q_lens, 0), axis=1)
    ideal = np.zeros((len(q_lens), depth), dtype=np.int64)
    ideal[:, : min(depth, judged_m.shape[1])] = judged_m[:, :depth]
    return ideal, (judged_m > 0).sum(axis=1).astype(np.int64)


def _grades_from_dicts_general(qids: list[str], qrels: dict, runs: list[dict], depth: int):
    """Any input, ties included: judged doc ids mapped to ints once, every run entry looked up in
    the sorted (question, doc) keys of the qrels, each run sorted by descending score (stable, so
    tied docs keep the run's insertion order)."""
    n = len(qids)
    q_lens = np.fromiter(map(len, qrels.values()), np.int64, n)
    n_judged = int(q_lens.sum())
    vocab: dict[str, int] = {}
    judged_doc = np.fromiter(
        map(vocab.setdefault, chain.from_iterable(qrels.values()), count()), np.int64, n_judged
    )  # unique per doc, not dense: fine
    judged_grade = np.fromiter(chain.from_iterable(map(dict.values, qrels.values())), np.int64, n_judged)
    np.maximum(judged_grade, 0, out=judged_grade)
    span = max(n_judged, 1)
    judged_key = np.repeat(np.arange(n, dtype=np.int64), q_lens) * span + judged_doc
    key_order = np.argsort(judged_key)
    sorted_key, sorted_grade = judged_key[key_order], judged_grade[key_order]

    r_lens = np.fromiter(map(len, runs), np.int64, n)
    n_run = int(r_lens.sum())
    run_doc = np.fromiter(map(vocab.get, chain.from_iterable(runs), repeat(-1)), np.int64, n_run)
    run_score = np.fromiter(chain.from_iterable(map(dict.values, runs)), np.float64, n_run)
    run_grade = np.zeros(n_run, dtype=np.int64)
    known = run_doc >= 0
    if known.any():
        key = np.repeat(np.arange(n, dtype=np.int64), r_lens)[known] * span + run_doc[known]
        pos = np.minimum(np.searchsorted(sorted_key, key), n_judged - 1)
        run_grade[known] = np.where(sorted_key[pos] == key, sorted_grade[pos], 0)
    score_m, grade_m = _row_matrix(run_score, r_lens, -np.inf), _row_matrix(run_grade, r_lens, 0)
    order = np.argsort(-score_m, axis=1, kind="stable")
    grade_m = np.take_along_axis(grade_m, order, axis=1)
    ranked = np.zeros((n, depth), dtype=np.int64)
    ranked[:, : min(depth, grade_m.shape[1])] = grade_m[:, :depth]
    return qids, Grades(ranked, *_ideal(judged_grade, q_lens, depth))


# --------------------------------------------------------------------------- timing helpers
def best_of(fn, repeats: int = REPEATS):
    """(best seconds, result of the last call); gc collected before and disabled during each call."""
    best, result = float("inf"), None
    for _ in range(repeats):
        result = None
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            result = fn()
            best = min(best, time.perf_counter() - t0)
        finally:
            gc.enable()
    return best, result


def ranx_metrics(k: int) -> dict[str, str]:
    """bench name -> ranx name, same definitions (ndcg with exponential gain = ndcg_burges)."""
    return {
        "hit_rate": f"hit_rate@{k}",
        "recall": f"recall@{k}",
        "precision": f"precision@{k}",
        "f1": f"f1@{k}",
        "mrr": f"mrr@{k}",
        "ndcg": f"ndcg_burges@{k}",
        "map": f"map@{k}",
    }


def check_close(name: str, ours: np.ndarray, theirs: np.ndarray, tol: float = 1e-9) -> float:
    diff = float(np.max(np.abs(ours - theirs))) if len(ours) else 0.0
    assert diff <= tol, f"{name}: bench and reference disagree by {diff:.3g} (> {tol})"
    return diff


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "?"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


# --------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-pytrec", action="store_true", help="do not time pytrec_eval")
    args = ap.parse_args()
    n, depth, k = args.questions, args.depth, args.k
    if not 1 <= k <= depth:
        ap.error("need 1 <= k <= depth")

    import numba
    from ranx import Qrels, Run, evaluate

    print(
        f"machine: {os.cpu_count()} CPUs ({len(os.sched_getaffinity(0))} usable), {cpu_model()}; "
        f"{platform.system()} {platform.release()}"
    )
    print(
        f"versions: python {platform.python_version()}, bench {bench.__version__}, numpy {np.__version__}, "
        f"ranx {version('ranx')}, numba {numba.__version__} ({numba.get_num_threads()} threads), "
        f"pytrec-eval-terrier {version('pytrec-eval-terrier')}"
    )
    print(
        f"data: {n:,} questions, run depth {depth}, k={k}, seed {args.seed}, universe {UNIVERSE:,} docs, "
        f"1..{MAX_RELEVANT} relevant docs per question (grades 1..{MAX_GRADE}), "
        f"each retrieved with p={P_RETRIEVED}"
    )
    print(
        f"timing: time.perf_counter, best of {REPEATS} repeats each, gc collected before and disabled "
        f"during each repeat; ranx numba JIT compiled by a warm-up call on a tiny input first (excluded)"
    )

    t0 = time.perf_counter()
    qrels, run = synthesise(n, depth, args.seed)
    print(
        f"synthesised in {time.perf_counter() - t0:.1f} s "
        f"({sum(map(len, qrels.values())):,} qrels entries, {sum(map(len, run.values())):,} run entries)"
    )
    gc.collect()
    gc.freeze()  # the big dicts live for the whole script: keep them out of every gc pass

    times: dict[str, float] = {}

    # bench ------------------------------------------------------------------------------
    times["bench builder (dicts -> Grades)"], (qids, grades) = best_of(lambda: grades_from_dicts(qrels, run, depth))
    times["bench engine only"], ours = best_of(lambda: quality(grades, k))
    times["bench from dicts"], ours_fd = best_of(lambda: quality(grades_from_dicts(qrels, run, depth)[1], k))
    for key in ours:
        assert np.array_equal(ours[key], ours_fd[key])
    del ours_fd

    # ranx -------------------------------------------------------------------------------
    names = ranx_metrics(k)
    warm_q, warm_r = {"q1": {"a": 1, "b": 2}, "q2": {"c": 3}}, {"q1": {"a": 0.9, "x": 0.5}, "q2": {"y": 0.7, "c": 0.1}}
    evaluate(Qrels(warm_q), Run(warm_r), list(names.values()), return_mean=False)  # JIT compile, excluded

    def ranx_build():
        return Qrels(qrels), Run(run)

    ranx_q = ranx_r = None
    best = float("inf")
    for _ in range(REPEATS):  # build afresh each repeat, dropping the previous objects first
        ranx_q = ranx_r = None
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            ranx_q, ranx_r = ranx_build()
            best = min(best, time.perf_counter() - t0)
        finally:
            gc.enable()
    times["ranx construction (Qrels+Run)"] = best
    times["ranx evaluate"], theirs = best_of(
        lambda: evaluate(ranx_q, ranx_r, list(names.values()), return_mean=False, save_results_in_run=False)  # noqa: F821 (assigned in the loop above)
    )
    ranx_qids = ranx_r.get_query_ids()
    del ranx_q, ranx_r
    gc.collect()

    # agreement with ranx on every question (ranx orders queries by id)
    row_of = {q: i for i, q in enumerate(qids)}
    idx = np.fromiter(map(row_of.__getitem__, ranx_qids), np.int64, len(ranx_qids))
    assert len(idx) == n
    worst = {
        m: check_close(f"{m}@{k} vs ranx {names[m]}", ours[f"{m}@{k}"][idx], np.asarray(theirs[r]))
        for m, r in names.items()
    }
    print(
        f"agreement with ranx, all {n:,} questions, all 7 metrics: max |diff| = {max(worst.values()):.2g} "
        f"(<= 1e-9 asserted)"
    )
    del theirs

    # pytrec_eval -------------------------------------------------------------------------
    import pytrec_eval

    trec_measures = {f"P_{k}", f"recall_{k}", f"ndcg_cut_{k}", f"map_cut_{k}", "recip_rank"}
    rng = np.random.default_rng(args.seed + 1)
    sample = np.sort(rng.choice(n, size=min(1000, n), replace=False))
    sq = [qids[i] for i in sample]
    res = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in sq}, trec_measures).evaluate({q: run[q] for q in sq})
    linear = quality(Grades(grades.ranked[sample], grades.ideal[sample], grades.n_relevant[sample]), k, "linear")
    first = first_relevant_rank(grades)[sample]
    uncut_rr = np.divide(1.0, first, out=np.zeros(len(first)), where=first > 0)
    pairs = {
        f"P_{k}": ours[f"precision@{k}"][sample],
        f"recall_{k}": ours[f"recall@{k}"][sample],
        f"ndcg_cut_{k}": linear[f"ndcg@{k}"],
        f"map_cut_{k}": ours[f"map@{k}"][sample],
        "recip_rank": uncut_rr,
    }
    trec_worst = max(check_close(f"{m} vs pytrec_eval", v, np.array([res[q][m] for q in sq])) for m, v in pairs.items())
    print(
        f"agreement with pytrec_eval, sample of {len(sq):,} questions (P, recall, ndcg_cut [linear gain], "
        f"map_cut, uncut recip_rank): max |diff| = {trec_worst:.2g} (<= 1e-9 asserted)"
    )
    del res

    if not args.skip_pytrec:
        best, parts = float("inf"), (0.0, 0.0)
        for _ in range(REPEATS):
            gc.collect()
            gc.disable()
            try:
                t0 = time.perf_counter()
                evaluator = pytrec_eval.RelevanceEvaluator(qrels, trec_measures)
                t1 = time.perf_counter()
                out = evaluator.evaluate(run)
                t2 = time.perf_counter()
            finally:
                gc.enable()
            assert len(out) == n
            del evaluator, out
            if t2 - t0 < best:
                best, parts = t2 - t0, (t1 - t0, t2 - t1)
        times["pytrec_eval construction"], times["pytrec_eval evaluate"] = parts
        times["pytrec_eval total"] = best

    # report -----------------------------------------------------------------------------
    times["ranx total"] = times["ranx construction (Qrels+Run)"] + times["ranx evaluate"]
    print()
    print(f"{'measurement (best of 3)':<38}{'seconds':>10}")
    order = [
        "bench engine only",
        "bench builder (dicts -> Grades)",
        "bench from dicts",
        "ranx construction (Qrels+Run)",
        "ranx evaluate",
        "ranx total",
        "pytrec_eval construction",
        "pytrec_eval evaluate",
        "pytrec_eval total",
    ]
    for key in order:
        if key in times:
            note = "  (sum of the two bests)" if key == "ranx total" else ""
            note = "  (the two parts are from the best total)" if key == "pytrec_eval total" else note
            print(f"  {key:<36}{times[key]:>10.4f}{note}")
    if args.skip_pytrec:
        print("  pytrec_eval                          skipped (--skip-pytrec)")
    print(
        "  metrics: bench hit_rate/recall/precision/f1/mrr/ndcg(exp)/map @k; ranx hit_rate, recall, "
        "precision, f1, mrr, ndcg_burges, map @k;"
    )
    print(
        f"           pytrec_eval P_{k}, recall_{k}, ndcg_cut_{k}, map_cut_{k}, recip_rank "
        "(recip_rank is not cut at k in trec_eval)"
    )

    eng, fd = times["bench engine only"], times["bench from dicts"]
    print()
    print("ratios (how many times slower than bench):")
    print(f"  ranx evaluate / bench engine only        {times['ranx evaluate'] / eng:10.1f}x")
    print(f"  ranx total    / bench from dicts         {times['ranx total'] / fd:10.1f}x")
    if not args.skip_pytrec:
        print(f"  pytrec total  / bench from dicts         {times['pytrec_eval total'] / fd:10.1f}x")
        print(f"  pytrec total  / bench engine only        {times['pytrec_eval total'] / eng:10.1f}x")

    print()
    print("targets:")
    verdict = "PASS" if eng <= times["ranx evaluate"] else "FAIL"
    print(
        f"  bench <= ranx: bench engine only {eng:.4f} s vs ranx evaluate only "
        f"{times['ranx evaluate']:.4f} s -> {verdict}"
    )
    print(
        f"    (also: bench from dicts {fd:.4f} s vs ranx construction+evaluate {times['ranx total']:.4f} s -> "
        f"{'PASS' if fd <= times['ranx total'] else 'FAIL'})"
    )
    if args.skip_pytrec:
        print("  >= 10x faster than pytrec-eval-terrier: SKIPPED (--skip-pytrec)")
    else:
        ratio = times["pytrec_eval total"] / fd
        print(
            f"  >= 10x faster than pytrec-eval-terrier: bench from dicts {fd:.4f} s vs pytrec_eval "
            f"construction+evaluate {times['pytrec_eval total']:.4f} s = {ratio:.1f}x -> "
            f"{'PASS' if ratio >= 10 else 'FAIL'}"
        )
        eng_ratio = times["pytrec_eval total"] / eng
        print(
            f"    (also: bench engine only {eng:.4f} s vs pytrec_eval total = "
            f"{eng_ratio:.1f}x -> {'PASS' if eng_ratio >= 10 else 'FAIL'})"
        )
    print(f"\npeak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")


if __name__ == "__main__":
    main()
