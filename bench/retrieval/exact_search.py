"""Exact nearest neighbours by brute force, in blocks: the reference an approximate index's recall
is measured against (``recall_vs_exact@depth``)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from bench.embedders.cache import drop_pages


def exact_top(vectors: np.ndarray, queries: np.ndarray, n: int, batch: int = 256, block: int = 65_536) -> np.ndarray:
    """Brute-force inner-product top-``n`` ids per query (descending score, ties by lower id), int64
    of shape (queries, min(n, len(vectors))). Vectors are scanned ``block`` rows at a time, so a
    memory-mapped table of millions of rows needs no more memory than one block of scores and of rows."""
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    total = len(vectors)
    n = min(n, total)
    out = np.empty((len(queries), n), dtype=np.int64)
    if n == 0:
        return out
    for start in range(0, len(queries), batch):
        q = queries[start : start + batch]
        kept_ids: list[list[np.ndarray]] = [[] for _ in range(len(q))]
        kept_scores: list[list[np.ndarray]] = [[] for _ in range(len(q))]
        for lo in range(0, total, block):
            part = np.ascontiguousarray(vectors[lo : lo + block], dtype=np.float32)
            scores = q @ part.T
            for row, (ids, row_scores) in enumerate(zip(_top_with_ties(scores, n), scores)):
                kept_ids[row].append(ids + lo)
                kept_scores[row].append(row_scores[ids])
            drop_pages(vectors)  # a mapped table's pages given back block by block, not after the scan
        for row in range(len(q)):
            ids, scores = np.concatenate(kept_ids[row]), np.concatenate(kept_scores[row])
            out[start + row] = ids[np.lexsort((ids, -scores))[:n]]
    return out


def _top_with_ties(scores: np.ndarray, n: int) -> list[np.ndarray]:
    """Per row, the columns scoring at least its n-th best (everything tied with it kept)."""
    width = scores.shape[1]
    if n >= width:
        return [np.arange(width)] * len(scores)
    cut = np.partition(scores, width - n, axis=1)[:, width - n]
    return [np.flatnonzero(row >= c) for row, c in zip(scores, cut)]


# How far below the exact n-th best score a found neighbour may score and still count: float32
# kernels round one inner product differently (a batched product, a single one, FAISS's own loop),
# so neighbours tied with the n-th best in exact arithmetic may fall either side of the cut.
TIE_TOLERANCE = 1e-6


def recall_against_exact(
    approx_ids: Iterable[npt.ArrayLike],
    exact_ids: Iterable[npt.ArrayLike],
    vectors: np.ndarray | None = None,
    queries: np.ndarray | None = None,
) -> float:
    """Mean over queries of |approx ∩ exact| / |exact|; ids of -1 (no result) are ignored.

    Given the ``vectors`` and ``queries``, a found id that is not in the exact list still counts
    when it scores as well as the exact list's last, within ``TIE_TOLERANCE`` of the scores' scale
    (scores taken in float64, the same for both): the usual definition of k-NN recall, in which ties at the cut are
    no miss. Rows may be ragged (e.g. rankings from ``DenseRetriever.search``). A query whose exact
    row is empty counts as 1.0; no queries at all gives NaN.
    """
    approx_rows, exact_rows = list(approx_ids), list(exact_ids)
    if len(approx_rows) != len(exact_rows):
        raise ValueError(f"{len(approx_rows)} approximate rows but {len(exact_rows)} exact rows")
    if not exact_rows:
        return float("nan")
    total = 0.0
    for i, (approx, exact) in enumerate(zip(approx_rows, exact_rows)):
        want = set(np.asarray(exact, dtype=np.int64).ravel().tolist()) - {-1}
        got = set(np.asarray(approx, dtype=np.int64).ravel().tolist()) - {-1}
        found = len(want & got)
        if vectors is not None and queries is not None and want and got - want:
            query = np.asarray(queries[i], dtype=np.float64)
            rows = {r: np.asarray(vectors[r], dtype=np.float64) for r in want | got}
            # relative to the scores' scale: unit vectors (cosine) are compared to within TIE_TOLERANCE
            slack = TIE_TOLERANCE * float(np.linalg.norm(query)) * max(float(np.linalg.norm(v)) for v in rows.values())
            cut = min(float(rows[w] @ query) for w in want) - slack
            found = min(len(want), found + sum(float(rows[g] @ query) >= cut for g in got - want))
        total += found / len(want) if want else 1.0
    return total / len(exact_rows)
