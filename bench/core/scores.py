"""What a candidate's questions add up to, as typed values: its mean quality and hit-rate curve
(figures by metric key), and its diagnostics, per question (per_question.jsonl) and over all of them
(summary.json), read and written key for key (bench.core.sections)."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.core.measures import metric_key
from bench.core.sections import Figures, Section


@dataclass(frozen=True, eq=False)
class Quality(Figures):
    """The mean of every metric over the questions, by its key (``mrr@5``)."""

    def of(self, name: str, k: int) -> float | None:
        return self.by_key.get(metric_key(name, k))


@dataclass(frozen=True, eq=False)
class Curve(Figures):
    """Hit rate at every cutoff 1..depth, by its key (``hit_rate@3``)."""

    def hit_rate(self, cutoff: int) -> float | None:
        return self.by_key.get(metric_key("hit_rate", cutoff))


@dataclass(frozen=True, kw_only=True, eq=False)
class QuestionDiagnostics(Section):
    """Why one question scores as it does: its expected units' scores against the best distractor's."""

    best_relevant_score: float | None = None
    mean_relevant_score: float | None = None
    top_distractor_score: float | None = None
    score_gap: float | None = None  # best expected unit minus the best-scoring non-relevant unit retrieved
    missed: list[str] = field(default_factory=list)  # expected units not in the top k


@dataclass(frozen=True, kw_only=True, eq=False)
class Diagnostics(Section):
    """Why a candidate scores as it does, over all its questions (docs/design.md, "Diagnostics")."""

    n_questions: int | None = None
    # questions whose first relevant unit sits at rank "1".."depth", and "miss"
    first_relevant_rank: dict[str, int] = field(default_factory=dict)
    score_gap_mean: float | None = None
    score_gap_median: float | None = None
    score_gap_questions: int | None = None
    negative_gap_share: float | None = None
    mean_relevant_score: float | None = None
    mean_top_distractor_score: float | None = None
    questions_without_relevant_unit: int | None = None
    questions_missing_expected_units: int | None = None
    # the mean share of each question's top k that a person's judgment (an evidence span) covers
    judged_at_k: float | None = None

    @property
    def missed(self) -> int | None:
        """Questions with no relevant unit within depth (None where the run did not count them)."""
        return (self.first_relevant_rank or {}).get("miss")
