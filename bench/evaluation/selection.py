"""What picking the best of many candidates is worth on questions it was not picked on.

The pick's mean over the questions it was picked on is biased upward (the winner's curse): among
candidates of close quality, the one that looks best is partly the one the noise of these questions
favoured, and the more candidates, the more it is. Cross-validated selection estimates what the
*procedure* yields: the questions are split into folds (seeded); for each fold the best candidate on
the other folds (mrr@k, then recall@k, then id, as the run ranks) is scored on the held-out fold;
the held-out scores of all folds, averaged, estimate the quality of picking this way, and the split
is repeated with other seeds and averaged. How often each candidate won a fold says how stable
the pick is. The estimate is slightly pessimistic (each pick sees (folds − 1)/folds of the
questions); the naive figure is optimistic by the winner's curse.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bench.core.sections import JsonObject

FOLDS = 5
REPEATS = 20  # seeded splits averaged: the estimate moves less than a thousandth between seeds
SEED = 0
LARGE_GAP = 0.05  # a gap at least this share of the pick's figure is said on page 1 and in the terminal


@dataclass(frozen=True)
class Selection:
    """The pick's figure on every question (``naive``), what picking this way scores on held-out
    questions (``adjusted``), their gap, and each candidate's share of the folds it won."""

    metric: str
    naive: float
    adjusted: float
    folds: int
    repeats: int
    seed: int
    candidates: int
    questions: int
    picked: dict[str, float] = field(default_factory=dict)

    @property
    def gap(self) -> float:
        return self.naive - self.adjusted

    @property
    def large(self) -> bool:
        return self.gap >= LARGE_GAP * abs(self.naive) and self.gap > 0

    def to_dict(self) -> JsonObject:
        return {
            "metric": self.metric,
            "naive": self.naive,
            "adjusted": self.adjusted,
            "gap": self.gap,
            "large": self.large,
            "method": f"cross-validated selection: {self.folds} folds of the questions, {self.repeats} seeded splits",
            "folds": self.folds,
            "repeats": self.repeats,
            "seed": self.seed,
            "candidates": self.candidates,
            "questions": self.questions,
            "picked": self.picked,
        }

    @classmethod
    def from_dict(cls, d: JsonObject) -> Selection:
        picked = d.get("picked")
        return cls(
            metric=str(d["metric"]),
            naive=float(d["naive"]),
            adjusted=float(d["adjusted"]),
            folds=int(d["folds"]),
            repeats=int(d["repeats"]),
            seed=int(d["seed"]),
            candidates=int(d["candidates"]),
            questions=int(d["questions"]),
            picked={str(k): float(v) for k, v in picked.items()} if isinstance(picked, dict) else {},
        )


def cross_validated_pick(
    primary: np.ndarray, secondary: np.ndarray, folds: int = FOLDS, repeats: int = REPEATS, seed: int = SEED
) -> tuple[float, np.ndarray]:
    """``(adjusted, wins)`` for a questions × candidates matrix of the ranking metric (``primary``)
    and its tie-break (``secondary``), candidates in id order (the last tie-break), NaN where a
    candidate has no value. ``adjusted`` is the mean held-out ``primary`` of the fold picks; ``wins``
    each candidate's number of folds won, over every split."""
    n, c = primary.shape
    folds = max(2, min(folds, n))
    rng = np.random.default_rng(seed)
    present = ~np.isnan(primary)
    values, ties = np.nan_to_num(primary), np.nan_to_num(secondary)
    total, total_ties, count = values.sum(axis=0), ties.sum(axis=0), present.sum(axis=0)
    held, wins = [], np.zeros(c, dtype=np.int64)
    for _ in range(repeats):
        fold_of = rng.permutation(n) % folds
        for f in range(folds):
            out = fold_of == f
            seen = count - present[out].sum(axis=0)
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = np.where(seen > 0, (total - values[out].sum(axis=0)) / seen, -np.inf)
                tie = np.where(seen > 0, (total_ties - ties[out].sum(axis=0)) / seen, -np.inf)
            best = int(np.lexsort((np.arange(c), -tie, -mean))[0])
            wins[best] += 1
            scored = primary[out, best]
            held.extend(scored[~np.isnan(scored)].tolist())
    return (float(np.mean(held)) if held else float("nan")), wins


def selection(
    metric: str, ids: list[str], primary: np.ndarray, secondary: np.ndarray, naive: float, seed: int = SEED
) -> Selection:
    """The selection-adjusted estimate of a run's pick (``naive`` its figure on every question)."""
    adjusted, wins = cross_validated_pick(primary, secondary, seed=seed)
    total = max(int(wins.sum()), 1)
    picked = {ids[i]: round(int(wins[i]) / total, 3) for i in np.argsort(-wins, kind="stable") if wins[i]}
    return Selection(
        metric=metric,
        naive=naive,
        adjusted=adjusted,
        folds=max(2, min(FOLDS, primary.shape[0])),
        repeats=REPEATS,
        seed=seed,
        candidates=primary.shape[1],
        questions=primary.shape[0],
        picked=picked,
    )
