"""The grade matrix of a run given as plain dicts (``{qid: {doc: grade}}``, ``{qid: {doc: score}}``).

A run is ranked as trec_eval ranks it: score descending, equal scores by doc id descending. Reading
millions of Python floats is the cost that counts, so each run entry is read once, as a float, and
its doc id is never hashed: only the judged docs are looked up in their run, and a relevant doc's
rank is the number of its run's scores above it, found by binary search. Doc ids are compared only
where a relevant doc shares its score with another doc near the top.

The reading is done in C (``_from_dicts.c``, built at install) for str doc ids with numbers whose
type is defined in C (float, int, bool, numpy's scalars); anything else, or an install without a C
compiler, takes the numpy path below, which gives the same matrix.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import chain, repeat
from operator import attrgetter
from types import ModuleType
from typing import cast

import numpy as np

from bench.errors import BenchError
from bench.evaluation.metrics import Grades

_compiled: ModuleType | None
try:
    from bench.evaluation import _from_dicts as _compiled
except ImportError:  # installed without a C compiler: the numpy path reads every run
    _compiled = None

_EMPTY: dict[str, float] = {}
_NAN_SCORE = "evaluate: a run score is NaN; give every retrieved doc a number"
# A ragged run is sorted as a padded matrix unless that would take more than this many cells per entry.
_PAD_FACTOR = 2


def grades_from_dicts(
    qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]], depth: int
) -> Grades:
    """The grade matrix of ``run`` against ``qrels`` to ``depth``, questions in the order of ``qrels``.

    Grades ≤ 0 are not relevant; a question missing from ``run`` ranks nothing; questions only in
    ``run`` are ignored. A NaN score raises ``BenchError``: it has no place in a ranking.
    """
    judged, runs = _dicts(qrels.values()), _dicts(map(run.get, qrels, repeat(_EMPTY)))
    if _compiled is not None:
        n = len(judged)
        ranked, ideal = np.zeros((n, depth), np.int64), np.zeros((n, depth), np.int64)
        n_relevant = np.zeros(n, np.int64)
        try:
            read = _compiled.fill_grades(judged, runs, depth, ranked, ideal, n_relevant)
        except ValueError:  # the one refusal it has: a NaN score
            raise BenchError(_NAN_SCORE) from None
        if read:
            return Grades(ranked, ideal, n_relevant)
    return _grades_in_numpy(judged, runs, depth)


def _grades_in_numpy(judged: list[dict], runs: list[dict], depth: int) -> Grades:
    """``grades_from_dicts`` for any numbers and hashable doc ids, in numpy."""
    n = len(judged)
    q_lens = np.fromiter(map(len, judged), np.int64, n)
    r_lens = np.fromiter(map(len, runs), np.int64, n)
    n_judged, n_run = int(q_lens.sum()), int(r_lens.sum())

    # per question: its run's scores, then its judged docs' scores in that run (NaN: not retrieved)
    looked_up = map(map, map(attrgetter("get"), runs), judged, repeat(repeat(np.nan)))
    flat = _numbers(chain.from_iterable(map(chain, map(dict.values, runs), looked_up)), n_run + n_judged)
    is_judged = np.repeat(np.tile([False, True], n), np.column_stack((r_lens, q_lens)).ravel())
    scores, judged_score = flat[~is_judged], flat[is_judged]
    if np.isnan(scores).any():
        raise BenchError(_NAN_SCORE)
    raw_grade = _numbers(chain.from_iterable(map(dict.values, judged)), n_judged)
    grade = np.maximum(np.trunc(raw_grade), 0).astype(np.int64)  # int(g), as grades are read elsewhere
    relevant = raw_grade > 0
    judged_row = np.repeat(np.arange(n, dtype=np.int64), q_lens)

    hit = np.flatnonzero(relevant & ~np.isnan(judged_score))
    rows, hit_score = judged_row[hit], judged_score[hit]
    top, top_starts, top_lens, strict = _top_scores(scores, r_lens, depth + 1)
    lo, lens = top_starts[rows], top_lens[rows]
    rank = _first_at_most(top, lo, lens, hit_score, strict=False) - lo
    ranked = np.zeros((n, depth), dtype=np.int64)
    keep = rank < depth
    ranked[rows[keep], rank[keep]] = grade[hit[keep]]
    if not strict:  # a relevant doc that shares its score near the top: order those runs by doc id too
        tied = (_first_at_most(top, lo, lens, hit_score, strict=True) - lo - rank > 1) & keep
        if tied.any():
            tie_rows = np.unique(rows[tied])
            last = top_starts[tie_rows] + np.minimum(top_lens[tie_rows], depth) - 1
            ranked[tie_rows] = _rank_in_full(tie_rows, top[last], judged, runs, scores, r_lens, depth)

    rel_rows, rel_grade = judged_row[relevant], grade[relevant]
    n_relevant = np.bincount(rel_rows, minlength=n).astype(np.int64)
    return Grades(ranked, _ideal(rel_rows, rel_grade, n_relevant, depth), n_relevant)


def _numbers(values: Iterable, count: int) -> np.ndarray:
    try:
        return np.fromiter(values, np.float64, count)
    except (TypeError, ValueError) as e:
        raise BenchError(f"evaluate: a score or grade is not a number ({e}); give numbers") from None


def _dicts(maps: Iterable[Mapping]) -> list[dict]:
    out = list(maps)
    if all(map(isinstance, out, repeat(dict))):
        return cast(list[dict], out)
    return [m if isinstance(m, dict) else dict(m) for m in out]


def _top_scores(scores: np.ndarray, lens: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Each run's highest ``width`` scores in descending order, as (flat array, starts, lengths,
    strictly descending). ``scores`` itself when every run already comes strictly descending, as
    retrievers hand them over; otherwise each run sorted, ties possible."""
    n, total = len(lens), len(scores)
    starts = np.cumsum(lens) - lens
    down = scores[1:] < scores[:-1]
    ends = starts[1:] - 1  # the last entry of each run but the final one, not compared with the next
    down[ends[(ends >= 0) & (ends < total - 1)]] = True
    if down.all():
        return scores, starts, np.minimum(lens, width), True
    widest = int(lens.max())
    if n * widest > _PAD_FACTOR * total:
        order = np.lexsort((-scores, np.repeat(np.arange(n), lens)))
        return scores[order], starts, np.minimum(lens, width), False
    negated = np.full((n, widest), np.inf)
    negated[np.repeat(np.arange(n), lens), np.arange(total) - np.repeat(starts, lens)] = -scores
    negated.sort(axis=1)
    cut = min(widest, width)
    return -negated[:, :cut].ravel(), np.arange(n, dtype=np.int64) * cut, np.minimum(lens, cut), False


def _first_at_most(
    flat: np.ndarray, lo: np.ndarray, lens: np.ndarray, values: np.ndarray, *, strict: bool
) -> np.ndarray:
    """For each descending segment ``flat[lo:lo + len]``, the first position whose score is ≤ its
    value (< when ``strict``): a binary search run for every segment at once."""
    lo, hi = lo.copy(), lo + lens
    last = max(len(flat) - 1, 0)
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) >> 1
        probe = flat[np.minimum(mid, last)]
        right = (probe >= values if strict else probe > values) & open_
        lo = np.where(right, mid + 1, lo)
        hi = np.where(right | ~open_, hi, mid)


def _rank_in_full(
    tie_rows: np.ndarray,
    floor: np.ndarray,
    judged: list[dict],
    runs: list[dict],
    scores: np.ndarray,
    r_lens: np.ndarray,
    depth: int,
) -> np.ndarray:
    """The grade rows of ``tie_rows`` by trec_eval's full order, score then doc id descending, over
    the entries of each run that score at least ``floor`` (its ``depth``-th highest score)."""
    picked = tie_rows.tolist()
    lens = r_lens[tie_rows]
    starts = np.cumsum(r_lens) - r_lens
    where = np.repeat(starts[tie_rows] - (np.cumsum(lens) - lens), lens) + np.arange(int(lens.sum()))
    row = np.repeat(np.arange(len(picked)), lens)
    take = scores[where] >= floor[row]
    docs = np.fromiter(chain.from_iterable(map(runs.__getitem__, picked)), object, len(where))[take]
    row, score = row[take], scores[where[take]]
    # a doc's place among these doc ids stands in for comparing the strings themselves
    place = {doc: i for i, doc in enumerate(sorted(set(docs.tolist())))}
    doc_place = np.fromiter(map(place.__getitem__, docs), np.int64, len(docs))
    counts = np.bincount(row, minlength=len(picked))
    in_qrels = chain.from_iterable(map(repeat, map(judged.__getitem__, picked), counts.tolist()))
    raw = np.fromiter(map(dict.get, in_qrels, docs, repeat(0)), np.float64, len(docs))
    order = np.lexsort((-doc_place, -score, row))
    within = np.arange(len(docs)) - np.repeat(np.cumsum(counts) - counts, counts)
    keep = within < depth
    out = np.zeros((len(picked), depth), dtype=np.int64)
    out[row[order][keep], within[keep]] = np.maximum(np.trunc(raw[order][keep]), 0).astype(np.int64)
    return out


def _ideal(rows: np.ndarray, grade: np.ndarray, counts: np.ndarray, depth: int) -> np.ndarray:
    """Each question's relevant grades in descending order, zero-padded to ``depth``."""
    top = int(grade.max()) + 1 if len(grade) else 1
    if len(counts) * top < 2**62:  # one integer sort: question ascending, grade descending
        key = rows * top + (top - 1 - grade)
        key.sort()
        rows, grade = key // top, top - 1 - key % top
    else:
        order = np.lexsort((-grade, rows))
        rows, grade = rows[order], grade[order]
    within = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    keep = within < depth
    ideal = np.zeros((len(counts), depth), dtype=np.int64)
    ideal[rows[keep], within[keep]] = grade[keep]
    return ideal
