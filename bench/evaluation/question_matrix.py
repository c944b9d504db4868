"""A run's per-question figures as question × candidate arrays: what paired comparisons, the
rank matrix and per-tag means read."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bench.core.records import QuestionRecord
from bench.core.scores import Quality
from bench.core.summary import RunSummary
from bench.errors import BenchError
from bench.registry import suggest


@dataclass
class QuestionMatrix:
    """One run's per-question records as arrays (questions × candidates), read once."""

    k: int
    depth: int
    questions: list[str]  # in order of first appearance
    texts: list[str]
    tags: list[list[str]]
    candidates: list[str]  # in rank order, best first
    quality: dict[str, Quality]
    first: list[list[int | None]]  # first-relevant rank per question, per candidate
    metrics: dict[str, np.ndarray]  # NaN where a record has no value

    def column(self, candidate: str) -> int:
        if candidate in self.candidates:
            return self.candidates.index(candidate)
        hint = suggest(candidate, self.candidates, n=3).rstrip() or f"candidates: {', '.join(self.candidates)}"
        raise BenchError(f"unknown candidate {candidate!r}; {hint}")

    def metric(self, name: str) -> np.ndarray:
        if name not in self.metrics:
            raise BenchError(f"unknown metric {name!r}; per-question metrics: {', '.join(sorted(self.metrics))}")
        return self.metrics[name]

    def depth_ranks(self) -> np.ndarray:
        """First-relevant ranks with a miss counted as ``depth + 1``."""
        return np.array([[self.depth + 1 if r is None else r for r in row] for row in self.first], dtype=float)


def question_matrix(summary: RunSummary, records: Sequence[QuestionRecord]) -> QuestionMatrix:
    # stable: keeps listed order
    ranked = sorted(summary.candidates, key=lambda c: math.inf if c.rank is None else c.rank)
    candidates = [c.id for c in ranked]
    col = {cid: j for j, cid in enumerate(candidates)}
    rows: dict[str, int] = {}
    texts, tags, cells = [], [], {}
    for rec in records:
        qid = rec.question_id
        if qid not in rows:
            rows[qid] = len(rows)
            texts.append(rec.question)
            tags.append(list(rec.tags))
        if rec.candidate in col:
            cells[rows[qid], col[rec.candidate]] = rec
    n, c = len(rows), len(candidates)
    for i, qid in enumerate(rows):
        for j, cid in enumerate(candidates):
            if (i, j) not in cells:
                raise BenchError(f"candidate {cid!r} has no record for question {qid!r}; the run folder is incomplete")
    names = sorted({name for rec in cells.values() for name in rec.metrics})
    metrics = {name: np.full((n, c), math.nan) for name in names}
    first: list[list[int | None]] = [[None] * c for _ in range(n)]
    for (i, j), rec in cells.items():
        first[i][j] = rec.first_relevant_rank
        for name, value in rec.metrics.items():
            if value is not None:
                metrics[name][i, j] = value
    return QuestionMatrix(
        k=int(summary.k),
        depth=int(summary.depth),
        questions=list(rows),
        texts=texts,
        tags=tags,
        candidates=candidates,
        quality={c.id: c.quality for c in ranked},
        first=first,
        metrics=metrics,
    )
