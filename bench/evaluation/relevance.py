"""Ground truth that survives re-chunking: which units are relevant to each question, and how much.

A chunk is relevant to an evidence span of the same document when they overlap by at least
``min_overlap * min(len(chunk), len(evidence))`` characters (and by at least one). Its grade is
the highest grade among the evidence it is relevant to. In the document unit, a document's grade
is the highest grade of the evidence naming it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bench.chunking.table import ChunkTable
from bench.inputs.goldset import CHUNK, Evidence, Goldset


@dataclass(frozen=True, slots=True)
class Judgment:
    """The expected units E(q) of one question: unit indices (ascending) and their grades (> 0)."""

    units: np.ndarray  # int64
    grades: np.ndarray  # int64

    def grade_of(self, units: np.ndarray) -> np.ndarray:
        """Grades of arbitrary unit indices (0 for units not in E(q))."""
        units = np.asarray(units, dtype=np.int64)
        if not len(self.units):
            return np.zeros(len(units), dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.units, units), len(self.units) - 1)
        return np.where(self.units[pos] == units, self.grades[pos], 0)


# Overlaps and lengths are integers, but ``min_overlap * shorter`` is a float product that can land
# just above an exact integer threshold (0.07 * 100 == 7.000000000000001), which would wrongly reject
# an overlap of exactly 7. A relative slack far below any meaningful difference absorbs that rounding.
_THRESHOLD_SLACK = 1e-12


def reaches(overlap: np.ndarray | int, length: np.ndarray | int, min_overlap: float) -> np.ndarray | bool:
    """``overlap >= min_overlap * length`` and ``overlap > 0``, exact for integer arguments."""
    return (overlap > 0) & (overlap >= min_overlap * length * (1 - _THRESHOLD_SLACK))


def overlap_relevant(
    c_start: npt.ArrayLike, c_end: npt.ArrayLike, e_start: int, e_end: int, min_overlap: float
) -> np.ndarray:
    """The overlap rule, vectorised over chunks: True where the chunk is relevant to the span."""
    c_start, c_end = np.asarray(c_start), np.asarray(c_end)
    overlap = np.minimum(c_end, e_end) - np.maximum(c_start, e_start)
    shorter = np.minimum(c_end - c_start, e_end - e_start)
    return np.asarray(reaches(overlap, shorter, min_overlap))


def grade_units(goldset: Goldset, table: ChunkTable, min_overlap: float) -> list[Judgment]:
    """The relevance rule applied: E(q) for every question, over the whole chunked corpus (chunks or
    documents, by goldset unit), each unit graded by the evidence it overlaps."""
    ordinal = {d: i for i, d in enumerate(table.doc_ids)}
    grade = _grade_chunks if goldset.unit == CHUNK else _grade_documents
    return [grade(q.evidence, table, ordinal, min_overlap) for q in goldset.questions]


def _grade_chunks(
    evidence: tuple[Evidence, ...], table: ChunkTable, ordinal: dict[str, int], min_overlap: float
) -> Judgment:
    best: dict[int, int] = {}
    for e in _relevant(evidence):
        assert e.start is not None and e.end is not None  # chunk evidence is a span; whole documents are graded apart
        span = table.chunks_of(ordinal[e.doc])
        relevant = overlap_relevant(
            table.start[span.start : span.stop], table.end[span.start : span.stop], e.start, e.end, min_overlap
        )
        for i in np.flatnonzero(relevant) + span.start:
            best[int(i)] = max(best.get(int(i), 0), e.grade)
    return _as_judgment(best)


def _grade_documents(
    evidence: tuple[Evidence, ...], table: ChunkTable, ordinal: dict[str, int], min_overlap: float
) -> Judgment:
    best: dict[int, int] = {}
    for e in _relevant(evidence):
        d = ordinal[e.doc]
        best[d] = max(best.get(d, 0), e.grade)
    return _as_judgment(best)


def _relevant(evidence: tuple[Evidence, ...]) -> list[Evidence]:
    """The evidence that makes a unit relevant: grade 0 marks a passage judged not relevant."""
    return [e for e in evidence if e.grade > 0]


def _as_judgment(best: dict[int, int]) -> Judgment:
    units = np.array(sorted(best), dtype=np.int64)
    return Judgment(units, np.array([best[u] for u in units.tolist()], dtype=np.int64))
