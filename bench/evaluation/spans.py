"""Span metrics: how much of the evidence text the top-k chunks hold, fair across chunk sizes.

On characters, after Chroma's chunking study. For one question, ``R`` is its top-k chunks,
``H`` the union of its evidence spans, and ``I = |union(R) ∩ H|`` (only chunks of an evidence
document can intersect; every chunk of R is text handed on, so all of them count in ``Σ|c ∈ R|``):

- ``span_recall@k = I / |H|``
- ``span_precision@k = I / Σ|c ∈ R|`` (overlapping chunks counted with multiplicity)
- ``span_iou@k = I / (Σ|c ∈ R| + |H| − I)``
- ``evidence_recall@k``: the share of evidence items at least ``min_overlap`` covered by union(R)

Each is 0 when its denominator is 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bench.core.measures import SPAN_METRICS, metric_key
from bench.evaluation.relevance import reaches

Interval = tuple[int, int]


def span_keys(k: int) -> list[str]:
    return [metric_key(name, k) for name in SPAN_METRICS]


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, disjoint intervals covering the same characters (touching intervals join)."""
    merged: list[list[int]] = []
    for start, end in sorted(intervals):
        if start >= end:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def covered(merged_a: Sequence[Interval], merged_b: Sequence[Interval]) -> int:
    """Characters in both of two merged interval lists (a linear sweep)."""
    i = j = total = 0
    while i < len(merged_a) and j < len(merged_b):
        lo = max(merged_a[i][0], merged_b[j][0])
        hi = min(merged_a[i][1], merged_b[j][1])
        total += max(0, hi - lo)
        if merged_a[i][1] < merged_b[j][1]:
            i += 1
        else:
            j += 1
    return total


def span_metrics(
    retrieved: Sequence[tuple[str, int, int]], evidence: Sequence[tuple[str, int, int]], k: int, min_overlap: float
) -> dict[str, float]:
    """Span metrics of one question from its ranked chunks and evidence spans, as (doc, start, end)."""
    docs = {doc for doc, _, _ in evidence}
    top = retrieved[:k]
    chunk_chars = sum(e - s for _, s, e in top)
    evidence_by_doc = {d: merge((s, e) for doc, s, e in evidence if doc == d) for d in docs}
    chunks_by_doc = {d: merge((s, e) for doc, s, e in top if doc == d) for d in docs}
    evidence_chars = sum(e - s for spans in evidence_by_doc.values() for s, e in spans)
    intersection = sum(covered(chunks_by_doc[d], evidence_by_doc[d]) for d in docs)
    items_found = sum(
        bool(reaches(covered(chunks_by_doc[doc], [(s, e)]), e - s, min_overlap)) for doc, s, e in evidence
    )
    union = chunk_chars + evidence_chars - intersection
    values = {
        "span_recall": intersection / evidence_chars if evidence_chars else 0.0,
        "span_precision": intersection / chunk_chars if chunk_chars else 0.0,
        "span_iou": intersection / union if union else 0.0,
        "evidence_recall": items_found / len(evidence) if evidence else 0.0,
    }
    return {metric_key(name, k): values[name] for name in SPAN_METRICS}
