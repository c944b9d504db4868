"""Measures as values: a metric's name, its cutoff and which way is better, parsed from and printed
as ``name@k``, the key of its figure in every file and table. The computation lives in
bench.evaluation; the names and the headline list live here, so every stage reads them alike."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from bench.errors import BenchError
from bench.registry import suggest

QUALITY_METRICS = ("hit_rate", "recall", "precision", "f1", "mrr", "ndcg", "map")
# Span metrics (bench.evaluation.spans) measure characters rather than units; named here so that
# every metric name parses in one place.
SPAN_METRICS = ("span_recall", "span_precision", "span_iou", "evidence_recall")
# The metrics people compare candidates and runs on, in this order, everywhere: tables, pairwise
# tests, history and the regression gate.
HEADLINE = ("mrr", "recall", "ndcg", "hit_rate", "precision")
KNOWN_METRICS = (*QUALITY_METRICS, *SPAN_METRICS)
# The answer layer's means (bench.evaluation.answers): no cutoff, and never folded into retrieval's.
ANSWER_METRICS = ("groundedness", "answer_relevance", "claim_recall")

Direction = Literal["higher", "lower"]


@dataclass(frozen=True, order=True)
class MetricName:
    """A metric with its cutoff; its printed form (``recall@5``, never ``recall``) is its key in
    every file and table. All quality and span metrics are shares in [0, 1], higher is better."""

    name: str
    k: int

    higher_is_better: ClassVar[bool] = True
    direction: ClassVar[Direction] = "higher"
    unit: ClassVar[str] = "share"

    def __str__(self) -> str:
        return f"{self.name}@{self.k}"

    @property
    def key(self) -> str:
        """Its key in summary.json, per_question.jsonl and tables (its printed form)."""
        return str(self)

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


def metric_key(name: str, k: int) -> str:
    """The key of metric ``name`` at cutoff ``k`` in summary.json, per_question.jsonl and tables."""
    return str(MetricName(name, k))


def headline(k: int) -> list[MetricName]:
    return [MetricName(name, k) for name in HEADLINE]


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
