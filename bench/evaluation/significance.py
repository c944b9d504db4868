"""Head-to-head statistics between candidates of one finished run, and the question × candidate rank matrix.

Every comparison is paired: both candidates answered the same questions, so the tests work on the
per-question differences ``d = a - b``. Three tests are reported side by side because they fail in
different ways on retrieval metrics, which are bounded, discrete and full of ties:

* Wilcoxon signed-rank: ranks of ``|d|``, drops zero differences; the safest choice on few questions.
* Paired t-test: assumes roughly normal differences; fine on many questions.
* Sign-flip randomisation: tests the mean difference itself with no distributional assumption,
  but a p-value below ``1 / 2**n`` cannot exist, so it has little resolution on few questions.

Differences are rounded to 12 decimals before testing, so that floating-point noise neither turns
equal scores into a "difference" nor breaks ties between equal magnitudes.
"""

from __future__ import annotations

import csv
import io
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy import stats

from bench.core.measures import headline, metric_key
from bench.core.records import QuestionRecord
from bench.core.summary import RunSummary
from bench.errors import BenchError
from bench.evaluation.question_matrix import QuestionMatrix, question_matrix
from bench.files import write_atomic

SMALL_SAMPLE = 30  # below this many questions only the Wilcoxon test is trustworthy
ALPHA = 0.05
PERMUTATIONS = 10_000  # sign flips of the randomisation test
RESAMPLES = 2000  # bootstrap resamples of the questions
MAX_DISAGREEMENTS = 10
_DECIMALS = 12
_BLOCK_CELLS = 1_000_000  # random draws per block: bounds memory whatever the number of questions


# ---------------------------------------------------------------------------------------------------
# Paired tests on two vectors


def paired_tests(a: np.ndarray, b: np.ndarray, seed: int = 0, permutations: int = PERMUTATIONS) -> dict:
    """Wilcoxon, paired t and sign-flip randomisation tests of ``a`` against ``b``, with effect sizes.

    Keys: ``n, mean_a, mean_b, mean_diff, wilcoxon_p, wilcoxon_statistic, rank_biserial, t_p, t_statistic,
    cohens_dz, randomisation_p``. Positive ``mean_diff``, ``rank_biserial`` and ``cohens_dz`` favour A.

    Degenerate inputs never raise and never give NaN p-values or effect sizes:

    * fewer than 2 questions: every p-value is 1.0 (nothing to test); ``cohens_dz`` is 0.0;
    * every difference zero: p-values 1.0, statistics and effect sizes 0.0;
    * all differences equal and non-zero (n > 1): the t statistic is ±inf and ``t_p`` 0.0, which is
      what the t-test gives in the limit of zero spread (scipy agrees); ``cohens_dz`` is undefined and
      reported as 0.0, so read ``rank_biserial`` (±1) for the direction and the other two p-values,
      which stay honest, for the evidence.
    * no questions at all: the means are NaN (there is nothing to average), everything else as above.
    """
    a, b, d = _paired_arrays(a, b)
    rand_p = float(_randomisation_p(d[:, None], seed, permutations)[0])
    return _paired_stats(a, b, d, rand_p)


def _paired_arrays(a: npt.ArrayLike, b: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"paired vectors differ in length: {len(a)} and {len(b)}")
    return a, b, np.round(a - b, _DECIMALS)


def _paired_stats(a: np.ndarray, b: np.ndarray, d: np.ndarray, randomisation_p: float) -> dict:
    n = len(d)
    w_stat, w_p = _wilcoxon(d)
    t_stat, t_p = _ttest(d)
    return {
        "n": n,
        "mean_a": float(a.mean()) if n else math.nan,
        "mean_b": float(b.mean()) if n else math.nan,
        "mean_diff": float(d.mean()) if n else 0.0,
        "wilcoxon_p": w_p,
        "wilcoxon_statistic": w_stat,
        "rank_biserial": _rank_biserial(d),
        "t_p": t_p,
        "t_statistic": t_stat,
        "cohens_dz": _cohens_dz(d),
        "randomisation_p": randomisation_p,
    }


def _wilcoxon(d: np.ndarray) -> tuple[float, float]:
    """scipy's two-sided test, zero differences dropped; (0, 1) when nothing is left to rank."""
    if len(d) < 2 or not np.any(d):
        return 0.0, 1.0
    nonzero = np.abs(d[d != 0])
    if len(d) <= _FLIPS_UP_TO and (len(nonzero) < len(d) or len(np.unique(nonzero)) < len(nonzero)):
        return _wilcoxon_by_every_flip(d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns when it switches method because of ties or zeros
        res = stats.wilcoxon(d, zero_method="wilcox", alternative="two-sided")
    return _finite(res.statistic, 0.0), _finite(res.pvalue, 1.0)


# With zeros or ties among at most this many differences scipy enumerates every sign flip, one Python
# call per flip (seconds a pair); the same enumeration is done here at once, to the same p-value.
_FLIPS_UP_TO = 13


def _wilcoxon_by_every_flip(d: np.ndarray) -> tuple[float, float]:
    """The exact two-sided signed-rank test over all ``2**len(d)`` sign flips, as
    ``scipy.stats.wilcoxon(d)`` computes it when zeros or ties rule out its exact distribution: the
    statistic R+ (ranks of the non-zero |d|, ties averaged) of each flip, and
    ``p = 2 · min(P(R+ ≤ observed), P(R+ ≥ observed))`` within scipy's relative tolerance, clipped to 1."""
    nonzero = d[d != 0]
    ranks = stats.rankdata(np.abs(nonzero))
    plus, minus = float(ranks[nonzero > 0].sum()), float(ranks[nonzero < 0].sum())
    flips = (np.arange(2 ** len(nonzero))[:, None] >> np.arange(len(nonzero))) & 1  # every sign pattern
    null = flips.astype(np.float64) @ ranks  # sums of half-integers: exact in any order
    gamma = abs(np.finfo(np.float64).eps * 100 * plus)
    less = np.count_nonzero(null <= plus + gamma) / len(null)
    greater = np.count_nonzero(null >= plus - gamma) / len(null)
    return min(plus, minus), float(np.clip(min(less, greater) * 2, 0.0, 1.0))


def _ttest(d: np.ndarray) -> tuple[float, float]:
    """Same as ``scipy.stats.ttest_rel(a, b)`` (which is a one-sample test on ``a - b``)."""
    if len(d) < 2 or not np.any(d):
        return 0.0, 1.0
    if np.all(d == d[0]):  # zero spread, non-zero mean: infinite t, p = 0 (see paired_tests)
        return math.copysign(math.inf, d[0]), 0.0
    res = stats.ttest_1samp(d, 0.0)
    return float(res.statistic), _finite(res.pvalue, 1.0)


def _rank_biserial(d: np.ndarray) -> float:
    """Matched-pairs rank-biserial correlation (R+ − R−) / (R+ + R−) over non-zero differences."""
    nonzero = d[d != 0]
    if not len(nonzero):
        return 0.0
    ranks = stats.rankdata(np.abs(nonzero))
    plus, minus = ranks[nonzero > 0].sum(), ranks[nonzero < 0].sum()
    return float((plus - minus) / (plus + minus))


def _cohens_dz(d: np.ndarray) -> float:
    """Mean difference over its standard deviation; 0.0 when the spread is zero or undefined."""
    if len(d) < 2:
        return 0.0
    sd = d.std(ddof=1)
    return float(d.mean() / sd) if sd > 0 else 0.0


def _finite(value: float, default: float) -> float:
    value = float(value)
    return value if math.isfinite(value) else default


def _sign_blocks(n: int, permutations: int, seed: int) -> Iterator[np.ndarray]:
    """Random ±1 matrices, ``permutations`` rows in all, drawn block by block from one seeded stream."""
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_CELLS // max(n, 1))
    for start in range(0, permutations, block):
        rows = min(block, permutations - start)
        yield rng.integers(0, 2, size=(rows, n)).astype(float) * 2.0 - 1.0


def _randomisation_p(diffs: np.ndarray, seed: int, permutations: int) -> np.ndarray:
    """Two-sided sign-flip p-value of the mean of each column of ``diffs`` (questions × comparisons).

    All columns share the same sign vectors, so a column's p-value equals what it would get alone.
    """
    n, m = diffs.shape
    if n < 2 or permutations < 1:
        return np.ones(m)
    observed = np.abs(diffs.mean(axis=0)) - 1e-12
    extreme = np.zeros(m, dtype=np.int64)
    for signs in _sign_blocks(n, permutations, seed):
        extreme += (np.abs(signs @ diffs) / n >= observed).sum(axis=0)
    return (1.0 + extreme) / (1.0 + permutations)


# ---------------------------------------------------------------------------------------------------
# Multiple comparisons, intervals, counts


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values, in the input's order.

    The i-th smallest p (0-based) is multiplied by ``m - i``; a running maximum keeps the adjusted
    values in the same order as the raw ones, and they are capped at 1.
    """
    p = np.asarray(pvalues, dtype=float)
    m = len(p)
    if not m:
        return p.copy()
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(p[order] * np.arange(m, 0, -1))
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted


def bootstrap_ci(
    values: np.ndarray, seed: int = 0, resamples: int = RESAMPLES, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean, resampling questions with replacement."""
    values = np.asarray(values, dtype=float).ravel()
    if not len(values):
        return math.nan, math.nan
    lo, hi = _bootstrap_cis(values[:, None], seed, resamples, level)[0]
    return lo, hi


def _bootstrap_cis(matrix: np.ndarray, seed: int, resamples: int, level: float) -> list[tuple[float, float]]:
    """One interval per column of ``matrix`` (questions × series), every column resampled with the
    same question indices, so intervals of different candidates are paired and comparable.

    Each resample is held as per-question counts, so its means for all columns are one matrix product.
    """
    n, m = matrix.shape
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_CELLS // n)
    means = []
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        picks = rng.integers(0, n, size=(rows, n)) + (np.arange(rows) * n)[:, None]
        counts = np.bincount(picks.ravel(), minlength=rows * n).reshape(rows, n)
        means.append(counts @ matrix / n)
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(np.vstack(means), [tail, 1.0 - tail], axis=0)
    out = []
    for j in range(m):
        column = matrix[:, j]
        if np.all(column == column[0]):  # exact (c, c), free of rounding in the products above
            out.append((float(column[0]), float(column[0])))
        else:
            out.append((float(lo[j]), float(hi[j])))
    return out


def wins_ties_losses(
    a: npt.ArrayLike, b: npt.ArrayLike, higher_is_better: bool = True, tol: float = 1e-12
) -> tuple[int, int, int]:
    """Questions where A beats B, matches it within ``tol``, and loses to it."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if not higher_is_better:
        d = -d
    return int((d > tol).sum()), int((np.abs(d) <= tol).sum()), int((d < -tol).sum())


def rank_outcomes(first_a: list[int | None], first_b: list[int | None]) -> tuple[int, int, int]:
    """Wins/ties/losses of A on first-relevant rank: lower wins, a miss (None) loses to any rank."""
    a = np.array([math.inf if r is None else r for r in first_a], dtype=float)
    b = np.array([math.inf if r is None else r for r in first_b], dtype=float)
    return int((a < b).sum()), int((a == b).sum()), int((a > b).sum())


def _both_present(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop questions where either candidate lacks a value, so the pairs stay pairs."""
    keep = np.isfinite(a) & np.isfinite(b)
    return a[keep], b[keep]


def _with_holm(rows: list[dict]) -> None:
    """Add ``<test>_p_holm`` to each row: one Holm family per test type across ``rows``."""
    for test in ("wilcoxon_p", "t_p", "randomisation_p"):
        for row, adjusted in zip(rows, holm([row[test] for row in rows])):
            row[f"{test}_holm"] = float(adjusted)


def _batch_tests(pairs: list[tuple[np.ndarray, np.ndarray]], seed: int, permutations: int) -> list[dict]:
    """``paired_tests`` on many pairs of equal length, with one shared set of sign vectors."""
    arrays = [_paired_arrays(a, b) for a, b in pairs]
    if not arrays:
        return []
    rand: np.ndarray | list[float]
    if len({len(d) for _, _, d in arrays}) == 1:
        rand = _randomisation_p(np.column_stack([d for _, _, d in arrays]), seed, permutations)
    else:  # missing values left pairs of different lengths
        rand = [_randomisation_p(d[:, None], seed, permutations)[0] for _, _, d in arrays]
    return [_paired_stats(a, b, d, float(p)) for (a, b, d), p in zip(arrays, rand)]


# ---------------------------------------------------------------------------------------------------
# Comparisons


def head_to_head(
    summary: RunSummary,
    records: Sequence[QuestionRecord],
    a: str,
    b: str,
    metrics: Sequence[str] | None = None,
    seed: int = 0,
    permutations: int = PERMUTATIONS,
) -> dict:
    """Candidate ``a`` against ``b`` on each metric, with Holm correction across those metrics.

    ``metrics`` defaults to the headline metrics at k that both candidates report.
    """
    run = question_matrix(summary, records)
    ja, jb = run.column(a), run.column(b)
    if ja == jb:
        raise BenchError(f"cannot compare candidate {a!r} with itself; name two different candidates")
    if metrics is None:
        metrics = [name for name in map(str, headline(run.k)) if name in run.quality[a] and name in run.quality[b]]
    metrics = list(dict.fromkeys(metrics))  # a metric named twice is one comparison, not two in the Holm family
    pairs = [_both_present(run.metric(m)[:, ja], run.metric(m)[:, jb]) for m in metrics]
    per_metric = {}
    for m, (va, vb), tests in zip(metrics, pairs, _batch_tests(pairs, seed, permutations)):
        wins, ties, losses = wins_ties_losses(va, vb)
        per_metric[m] = {"wins": wins, "ties": ties, "losses": losses, **tests}
    _with_holm(list(per_metric.values()))
    for row, (va, vb) in zip(per_metric.values(), pairs):
        ci_a, ci_b = (
            _bootstrap_cis(np.column_stack([va, vb]), seed, RESAMPLES, 0.95) if len(va) else [(math.nan,) * 2] * 2
        )
        row["ci_a"], row["ci_b"] = list(ci_a), list(ci_b)
    n = len(run.questions)
    first_a = [row[ja] for row in run.first]
    first_b = [row[jb] for row in run.first]
    return {
        "a": a,
        "b": b,
        "n_questions": n,
        "first_relevant_rank": dict(zip(("wins", "ties", "losses"), rank_outcomes(first_a, first_b))),
        "metrics": per_metric,
        "small_sample": n < SMALL_SAMPLE,
        "advice": _advice(n, per_metric),
        "disagreements": _disagreements(run, ja, jb),
    }


def _advice(n: int, per_metric: dict[str, dict]) -> str:
    """One sentence on which test to read, judged on the Holm-adjusted p-values at α = 0.05."""
    if n < SMALL_SAMPLE:
        return (
            f"With only {n} questions, trust the Wilcoxon signed-rank test: the t-test assumes roughly "
            "normal differences and the randomisation test has little resolution on so few questions."
        )
    split = [
        m
        for m, r in per_metric.items()
        if len({r[f"{t}_p_holm"] < ALPHA for t in ("wilcoxon", "t", "randomisation")}) > 1
    ]
    if not split:
        return f"The Wilcoxon, t and randomisation tests agree on every metric at alpha = {ALPHA} (Holm-adjusted)."
    return (
        f"The tests disagree at alpha = {ALPHA} on {', '.join(split)}: prefer the randomisation test, which tests "
        "the same mean difference as the summary table without assuming normal differences (as the t-test "
        "does) or dropping tied questions (as the Wilcoxon test does)."
    )


def _disagreements(run: QuestionMatrix, ja: int, jb: int) -> list[dict]:
    """Questions whose first-relevant ranks differ most (miss = depth + 1), largest gap first."""
    ranks = run.depth_ranks()
    gap = np.abs(ranks[:, ja] - ranks[:, jb])
    order = sorted((i for i in range(len(gap)) if gap[i] > 0), key=lambda i: (-gap[i], run.questions[i]))
    return [
        {
            "question_id": run.questions[i],
            "question": run.texts[i],
            "rank_a": run.first[i][ja],
            "rank_b": run.first[i][jb],
        }
        for i in order[:MAX_DISAGREEMENTS]
    ]


def all_pairs(
    summary: RunSummary,
    records: Sequence[QuestionRecord],
    metric: str | None = None,
    seed: int = 0,
    permutations: int = PERMUTATIONS,
) -> list[dict]:
    """Every unordered pair of candidates on one metric (default ``mrr@k``), better-ranked one as A,
    with Holm correction across all pairs (one family per test type)."""
    run = question_matrix(summary, records)
    values = run.metric(metric or metric_key("mrr", run.k))
    index = [(i, j) for i in range(len(run.candidates)) for j in range(i + 1, len(run.candidates))]
    pairs = [_both_present(values[:, i], values[:, j]) for i, j in index]
    rows = []
    for (i, j), (va, vb), tests in zip(index, pairs, _batch_tests(pairs, seed, permutations)):
        wins, ties, losses = wins_ties_losses(va, vb)
        first = rank_outcomes([row[i] for row in run.first], [row[j] for row in run.first])
        rows.append(
            {
                "a": run.candidates[i],
                "b": run.candidates[j],
                "wins": wins,
                "ties": ties,
                "losses": losses,
                "first_relevant_rank": dict(zip(("wins", "ties", "losses"), first)),
                **tests,
            }
        )
    _with_holm(rows)
    return rows


def confidence_intervals(
    summary: RunSummary,
    records: Sequence[QuestionRecord],
    metrics: Sequence[str] | None = None,
    seed: int = 0,
    resamples: int = RESAMPLES,
) -> dict[str, dict[str, list[float]]]:
    """Candidate id → metric → [lo, hi], the 95% bootstrap interval of the mean per-question value.

    Every candidate and metric is resampled with the same question indices (a paired bootstrap).
    ``metrics`` defaults to each candidate's ``quality`` metrics that have per-question values.
    """
    run = question_matrix(summary, records)
    series = [
        (cid, m)
        for cid in run.candidates
        for m in (metrics if metrics is not None else [q for q in run.quality[cid] if q in run.metrics])
    ]
    out: dict[str, dict[str, list[float]]] = {cid: {} for cid in run.candidates}
    if not series or not run.questions:
        for cid, m in series:
            out[cid][m] = [math.nan, math.nan]
        return out
    matrix = np.column_stack([run.metric(m)[:, run.candidates.index(cid)] for cid, m in series])
    complete = np.all(np.isfinite(matrix), axis=0)
    paired = _bootstrap_cis(np.where(complete, matrix, 0.0), seed, resamples, 0.95)
    for j, ((cid, m), ok) in enumerate(zip(series, complete)):
        # a series with missing values cannot share the paired indices; it is resampled on what it has
        out[cid][m] = list(paired[j] if ok else bootstrap_ci(_present(matrix[:, j]), seed, resamples))
    return out


def _present(values: np.ndarray) -> np.ndarray:
    return values[np.isfinite(values)]


# ---------------------------------------------------------------------------------------------------
# Rank matrix and tags


def rank_matrix(
    summary: RunSummary, records: Sequence[QuestionRecord]
) -> tuple[list[str], list[str], list[list[int | None]]]:
    """(question ids, candidate ids in rank order, per question the first-relevant rank of each candidate,
    None for a miss).

    Questions come in order of how much the candidates disagree: by the standard deviation across
    candidates of 1/rank (a miss counting 0) descending, then by the number of candidates that missed
    descending (so questions everyone misses come before ones everyone answers at rank 1), then by
    question id.
    """
    run = question_matrix(summary, records)
    reciprocal = np.array([[0.0 if r is None else 1.0 / r for r in row] for row in run.first]).reshape(
        len(run.questions), len(run.candidates)
    )
    spread = np.round(reciprocal.std(axis=1), _DECIMALS) if run.candidates else np.zeros(len(run.questions))
    misses = [sum(r is None for r in row) for row in run.first]
    order = sorted(range(len(run.questions)), key=lambda i: (-spread[i], -misses[i], run.questions[i]))
    return [run.questions[i] for i in order], list(run.candidates), [list(run.first[i]) for i in order]


def write_rank_matrix_csv(
    path: Path, questions: list[str], candidates: list[str], matrix: Iterable[Iterable[int | None]]
) -> None:
    """``question_id,<candidate ids…>``, one row per question, a blank cell for a miss."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["question_id", *candidates])
    for qid, row in zip(questions, matrix):
        writer.writerow([qid, *("" if r is None else int(r) for r in row)])
    write_atomic(Path(path), buffer.getvalue())


def per_tag(summary: RunSummary, records: Sequence[QuestionRecord], metric: str | None = None) -> dict[str, dict]:
    """``{"tags": {tag: n_questions}, "means": {tag: {candidate: mean}}}``, tags sorted by name.

    The mean is over the questions carrying the tag (default metric ``mrr@k``); a question's missing
    values are left out of its candidate's mean.
    """
    run = question_matrix(summary, records)
    values = run.metric(metric or metric_key("mrr", run.k))
    counts: dict[str, int] = {}
    means: dict[str, dict[str, float]] = {}
    for tag in sorted({t for tags in run.tags for t in tags}):
        rows = [i for i, tags in enumerate(run.tags) if tag in tags]
        counts[tag] = len(rows)
        means[tag] = {cid: _mean(values[rows, j]) for j, cid in enumerate(run.candidates)}
    return {"tags": counts, "means": means}


def _mean(values: np.ndarray) -> float:
    present = _present(values)
    return float(present.mean()) if len(present) else math.nan
