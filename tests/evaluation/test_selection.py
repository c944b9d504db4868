"""The selection-adjusted estimate (bench.evaluation.selection): by construction on small matrices,
and by simulation against candidates whose true quality is known."""

from __future__ import annotations

import numpy as np

from bench.evaluation.selection import LARGE_GAP, Selection, cross_validated_pick, selection


def test_a_candidate_best_on_every_question_wins_every_fold_and_keeps_its_mean() -> None:
    primary = np.array([[0.9, 0.1, 0.5], [1.0, 0.2, 0.3], [0.8, 0.0, 0.7], [0.7, 0.5, 0.6], [1.0, 0.9, 0.2]])
    adjusted, wins = cross_validated_pick(primary, np.zeros_like(primary), folds=5, repeats=3)
    assert list(wins) == [15, 0, 0]
    assert adjusted == primary[:, 0].mean()


def test_ties_go_to_the_tie_break_then_to_the_first_id() -> None:
    same = np.ones((6, 3))
    recall = np.tile([0.2, 0.5, 0.5], (6, 1))
    _, wins = cross_validated_pick(same, recall, folds=3, repeats=2)
    assert list(wins) == [0, 6, 0]  # the better recall, then the first of the two ids
    _, wins = cross_validated_pick(same, np.zeros((6, 3)), folds=3, repeats=2)
    assert list(wins) == [6, 0, 0]


def test_a_question_without_a_value_is_left_out_not_counted_as_zero() -> None:
    primary = np.array([[1.0, 0.0], [np.nan, 0.0], [1.0, 0.0], [1.0, 0.0]])
    adjusted, wins = cross_validated_pick(primary, np.zeros_like(primary), folds=2, repeats=4)
    assert adjusted == 1.0 and wins[0] == 8


def test_the_stored_figures_read_back() -> None:
    primary = np.random.default_rng(1).random((30, 4))
    chosen = selection("mrr@5", ["a", "b", "c", "d"], primary, primary, naive=float(primary.mean(axis=0).max()))
    again = Selection.from_dict(chosen.to_dict())
    assert again == chosen and abs(sum(chosen.picked.values()) - 1) < 0.01
    assert chosen.to_dict()["large"] == (chosen.gap >= LARGE_GAP * chosen.naive and chosen.gap > 0)


def _simulate(candidates: int, questions: int, spread: float, seeds: int) -> tuple[float, float]:
    """Mean bias of the naive pick's figure and of the adjusted estimate, against the true quality of
    the candidate picked on all questions (hit-or-miss questions, true hit rates around 0.6)."""
    naive_bias, adjusted_bias = [], []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        truth = 0.6 + rng.uniform(-spread, spread, candidates)
        hits = (rng.random((questions, candidates)) < truth).astype(float)
        means = hits.mean(axis=0)
        pick = int(np.argmax(means))
        adjusted, _ = cross_validated_pick(hits, np.zeros_like(hits), repeats=4, seed=seed)
        naive_bias.append(means[pick] - truth[pick])
        adjusted_bias.append(adjusted - truth[pick])
    return float(np.mean(naive_bias)), float(np.mean(adjusted_bias))


def test_the_adjusted_estimate_is_closer_to_the_truth_than_the_naive_pick() -> None:
    # 20 candidates of close quality on 100 questions: the winner's curse at its plainest
    naive, adjusted = _simulate(candidates=20, questions=100, spread=0.03, seeds=300)
    assert naive > 0.04  # the best-looking of 20 looks about 0.07 better than it is
    assert abs(adjusted) < naive / 3
    # one clearly better candidate: little curse, and the estimate does not invent one
    naive, adjusted = _simulate(candidates=5, questions=200, spread=0.2, seeds=200)
    assert abs(naive) < 0.02 and abs(adjusted) < 0.02
