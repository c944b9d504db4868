"""Diagnostics: why a candidate scores as it does (docs/design.md, "Diagnostics").

Per question: the score gap (best expected unit, scored exactly even when not retrieved, minus
the best-scoring non-relevant unit retrieved), the mean score of the expected units, and the
expected units missing from the top k. Per candidate: the first-relevant-rank distribution,
score-gap mean and median, and mean relevant and top-distractor scores.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import numpy as np

from bench.core.records import Retrieved
from bench.core.scores import Diagnostics, QuestionDiagnostics


def question_diagnostics(record: Retrieved, k: int) -> QuestionDiagnostics:
    expected = [e.score for e in record.expected if e.score is not None]
    distractor = next((e.score for e in record.ranking if e.grade == 0), None)
    best = max(expected) if expected else None
    top_k = {e.id for e in record.ranking[:k]}
    return QuestionDiagnostics(
        best_relevant_score=best,
        mean_relevant_score=float(np.mean(expected)) if expected else None,
        top_distractor_score=distractor,
        score_gap=best - distractor if best is not None and distractor is not None else None,
        missed=[e.id for e in record.expected if e.id not in top_k],
    )


def rank_distribution(first_ranks: np.ndarray, depth: int) -> dict[str, int]:
    """Questions whose first relevant unit sits at rank 1..depth, and ``miss`` (0 in ``first_ranks``)."""
    counts = Counter(int(r) for r in first_ranks)
    out = {str(r): counts.get(r, 0) for r in range(1, depth + 1)}
    out["miss"] = counts.get(0, 0)
    return out


def summarise(
    per_question: list[QuestionDiagnostics], first_ranks: np.ndarray, depth: int, n_relevant: np.ndarray
) -> Diagnostics:
    gaps = _present(d.score_gap for d in per_question)
    relevant = _present(d.mean_relevant_score for d in per_question)
    distractors = _present(d.top_distractor_score for d in per_question)
    return Diagnostics(
        n_questions=len(per_question),
        first_relevant_rank=rank_distribution(first_ranks, depth),
        score_gap_mean=float(gaps.mean()) if len(gaps) else None,
        score_gap_median=float(np.median(gaps)) if len(gaps) else None,
        score_gap_questions=len(gaps),
        negative_gap_share=float((gaps < 0).mean()) if len(gaps) else None,
        mean_relevant_score=float(relevant.mean()) if len(relevant) else None,
        mean_top_distractor_score=float(distractors.mean()) if len(distractors) else None,
        questions_without_relevant_unit=int((n_relevant == 0).sum()),
        questions_missing_expected_units=sum(bool(d.missed) for d in per_question),
    )


def _present(values: Iterable[float | None]) -> np.ndarray:
    return np.array([v for v in values if v is not None], dtype=float)
