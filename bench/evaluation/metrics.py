"""Quality metrics on arrays: one questions × depth matrix of grades in, per-question values out.

Definitions follow docs/design.md ("Quality metrics") and agree with trec_eval (P_k, recall_k, recip_rank cut at k,
ndcg_cut_k with linear gain, map_cut_k) and ranx (ndcg_burges@k for the exponential gain).
Questions with no relevant unit count as zeros; nothing is dropped from a mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from bench.errors import BenchError
from bench.registry import suggest

QUALITY_METRICS = ("hit_rate", "recall", "precision", "f1", "mrr", "ndcg", "map")
GAINS = ("exponential", "linear")


# Span metrics (bench.evaluation.spans) measure characters rather than units; named here so that
# every metric name parses in one place.
SPAN_METRICS = ("span_recall", "span_precision", "span_iou", "evidence_recall")
# The metrics people compare candidates and runs on, in this order, everywhere: tables, pairwise
# tests, history and the regression gate.
HEADLINE = ("mrr", "recall", "ndcg", "hit_rate", "precision")


@dataclass(frozen=True, order=True)
class MetricName:
    """A metric with its cutoff; its printed form (``recall@5``, never ``recall``) is its key in
    every file and table. All quality and span metrics are shares in [0, 1], higher is better."""

    name: str
    k: int

    higher_is_better: ClassVar[bool] = True
    unit: ClassVar[str] = "share"

    def __str__(self) -> str:
        return f"{self.name}@{self.k}"

    @classmethod
    def parse(cls, text: str, k: int | None = None) -> MetricName:
        """``mrr@5`` → MetricName("mrr", 5); a bare ``mrr`` takes ``k`` when given. ValueError
        (with a suggestion) for an unknown name or a missing or bad cutoff."""
        name, at, cutoff = text.strip().partition("@")
        if name not in KNOWN_METRICS:
            raise ValueError(
                f"unknown metric {name!r}; {suggest(name, KNOWN_METRICS)}known: {', '.join(KNOWN_METRICS)}"
            )
        if not at:
            if k is None:
                raise ValueError(f"metric {text!r} needs a cutoff, e.g. {name}@5")
            return cls(name, k)
        if not cutoff.isdigit() or int(cutoff) < 1:
            raise ValueError(f"metric {text!r}: the cutoff after '@' must be a whole number from 1")
        return cls(name, int(cutoff))

    def at(self, k: int) -> MetricName:
        """The same metric at another cutoff."""
        return MetricName(self.name, k)


KNOWN_METRICS = (*QUALITY_METRICS, *SPAN_METRICS)
# The answer layer's means (bench.evaluation.answers): no cutoff, and never folded into retrieval's.
ANSWER_METRICS = ("groundedness", "answer_relevance", "claim_recall")


def metric_key(name: str, k: int) -> str:
    """The key of metric ``name`` at cutoff ``k`` in summary.json, per_question.jsonl and tables."""
    return str(MetricName(name, k))


def parse_metric(
    text: str, k: int | None, option: str = "--metric", available: Sequence[str] | None = None, where: str = ""
) -> str:
    """A metric as a command's ``option`` names it, as its key: ``mrr@5`` as given; a bare ``mrr``
    (or ``mrr@k``) at ``k``, the run's cutoff, or kept bare when ``k`` is None (each run's own k).
    BenchError with "did you mean" for an unknown name, and for a key not in ``available`` (the
    metrics ``where`` holds: "this run", "the baseline")."""
    given = text.strip()
    name, at, cutoff = given.partition("@")
    if name in ANSWER_METRICS and not at:
        if available is not None and name not in available:
            raise BenchError(
                f"{option} {given}: not in {where}, which has no scored answers; score them with "
                "`bench answers score FILE --run RUN`, or choose a retrieval metric"
            )
        return name
    known = (*KNOWN_METRICS, *ANSWER_METRICS)
    if name not in KNOWN_METRICS:
        choices = f"choose one of {', '.join(available)}" if available else f"known: {', '.join(known)}"
        raise BenchError(f"{option} {given}: unknown metric {name!r}; {suggest(name, known)}{choices}")
    bare = not at or cutoff == "k"
    try:
        key = str(MetricName.parse(name if bare else given, 1 if k is None else k))
    except ValueError as e:
        raise BenchError(f"{option} {given}: {e}") from None
    if bare and k is None:
        return name
    if available is not None and key not in available:
        hint = suggest(key, available)
        raise BenchError(f"{option} {given}: not in {where}; {hint}choose one of {', '.join(available)}")
    return key


def headline(k: int) -> list[MetricName]:
    return [MetricName(name, k) for name in HEADLINE]


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


def _safe_div(num, den) -> np.ndarray:
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den != 0)
    return out
