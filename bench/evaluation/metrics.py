"""Quality metrics on arrays: one questions × depth matrix of grades in, per-question values out.

Definitions follow docs/design.md ("Quality metrics") and agree with trec_eval (P_k, recall_k, recip_rank cut at k,
ndcg_cut_k with linear gain, map_cut_k) and ranx (ndcg_burges@k for the exponential gain).
Questions with no relevant unit count as zeros; nothing is dropped from a mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

# The measures' names and values live in bench.core; the ones the command line, the Python API and
# the recommendation read with the computation are named here too.
from bench.core.measures import ANSWER_METRICS as ANSWER_METRICS
from bench.core.measures import QUALITY_METRICS, metric_key
from bench.core.measures import MetricName as MetricName
from bench.core.measures import parse_metric as parse_metric

GAINS = ("exponential", "linear")


@dataclass(frozen=True)
class Grades:
    """What the metrics need of a set of rankings.

    ``ranked[q, r]`` is the grade of the unit at rank ``r + 1`` for question ``q`` (0 when not
    relevant or when fewer than ``depth`` units came back); ``ideal[q]`` holds the grades of all of
    E(q) in descending order, zero-padded to ``depth``; ``n_relevant[q] = |E(q)|``.
    """

    ranked: np.ndarray  # (n_questions, depth) int64
    ideal: np.ndarray  # (n_questions, depth) int64
    n_relevant: np.ndarray  # (n_questions,) int64

    @property
    def depth(self) -> int:
        return self.ranked.shape[1]


def quality(grades: Grades, k: int, gain: str = "exponential") -> dict[str, np.ndarray]:
    """Every quality metric at cutoff ``k``, per question (arrays of length n_questions)."""
    if not 1 <= k <= grades.depth:
        raise ValueError(f"k={k} must be between 1 and the retrieval depth {grades.depth}")
    if gain not in GAINS:
        raise ValueError(f"gain {gain!r} must be one of {GAINS}")
    top = grades.ranked[:, :k]
    rel = top > 0
    n_hit = rel.sum(axis=1)
    n_rel = grades.n_relevant
    recall = _safe_div(n_hit, n_rel)
    precision = n_hit / k
    f1 = _safe_div(2 * precision * recall, precision + recall)
    ranks = np.arange(1, k + 1)
    first = np.where(rel.any(axis=1), rel.argmax(axis=1) + 1, 0)
    mrr = _safe_div(np.ones(len(first)), first)
    discount = 1.0 / np.log2(ranks + 1)
    to_gain = (lambda g: np.exp2(g) - 1.0) if gain == "exponential" else (lambda g: g.astype(float))
    dcg = (to_gain(top) * discount).sum(axis=1)
    idcg = (to_gain(grades.ideal[:, :k]) * discount).sum(axis=1)
    ndcg = _safe_div(dcg, idcg)
    precision_at_rank = np.cumsum(rel, axis=1) / ranks
    average_precision = _safe_div((precision_at_rank * rel).sum(axis=1), n_rel)
    values = {
        "hit_rate": (n_hit > 0).astype(float),
        "recall": recall,
        "precision": precision,
        "f1": f1,
        "mrr": mrr,
        "ndcg": ndcg,
        "map": average_precision,
    }
    return {metric_key(name, k): values[name] for name in QUALITY_METRICS}


def first_relevant_rank(grades: Grades) -> np.ndarray:
    """Rank (1-based) of the first relevant unit within the depth, 0 for a miss."""
    rel = grades.ranked > 0
    return np.where(rel.any(axis=1), rel.argmax(axis=1) + 1, 0)


def hit_curve(grades: Grades) -> dict[str, float]:
    """``hit_rate@1 … hit_rate@depth``, averaged over all questions."""
    hits = np.logical_or.accumulate(grades.ranked > 0, axis=1).mean(axis=0)
    return {metric_key("hit_rate", c + 1): float(v) for c, v in enumerate(hits)}


def means(per_question: dict[str, np.ndarray]) -> dict[str, float]:
    """Mean over all questions of each metric."""
    return {key: float(np.mean(v)) if len(v) else 0.0 for key, v in per_question.items()}


def _safe_div(num: npt.ArrayLike, den: npt.ArrayLike) -> np.ndarray:
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den != 0)
    return out
