"""Compressed vectors: Matryoshka truncation and binary codes.

Truncation keeps a vector's first ``dims`` components and renormalises them, so the inner
product is a cosine again. Binary quantisation keeps one sign bit per component; codes are
compared by Hamming distance (FAISS ``IndexBinaryFlat``), and the nearest few may be rescored
with the float vectors ("binary + rescore"). Rankings stay deterministic: ties by unit id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import faiss

BLOCK = 262_144  # rows handled at a time: bounds the copy of a memory-mapped table
BINARY_FACTORY = "BFlat"  # faiss.index_binary_factory's name for IndexBinaryFlat


def truncate(vectors: np.ndarray, dims: int) -> np.ndarray:
    """The first ``dims`` components of each row, L2-normalised (an all-zero row stays zero), float32."""
    out = np.empty((len(vectors), dims), dtype=np.float32)
    for lo in range(0, len(vectors), BLOCK):
        part = np.asarray(vectors[lo : lo + BLOCK, :dims], dtype=np.float32)
        norms = np.linalg.norm(part, axis=1, keepdims=True)
        out[lo : lo + BLOCK] = part / np.where(norms > 0, norms, 1)
    return out


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """One bit per component (1 where it is positive), packed 8 to a byte, the last byte zero-padded."""
    rows = [np.packbits(np.asarray(vectors[lo : lo + BLOCK]) > 0, axis=1) for lo in range(0, len(vectors), BLOCK)]
    return np.concatenate(rows) if rows else np.zeros((0, (vectors.shape[1] + 7) // 8), dtype=np.uint8)


def binary_index(vectors: np.ndarray) -> faiss.IndexBinaryFlat:
    """A FAISS ``IndexBinaryFlat`` holding the sign bits of ``vectors`` (padding bits are zero in every
    code, so they never add to a distance)."""
    import faiss

    index = faiss.IndexBinaryFlat(8 * ((vectors.shape[1] + 7) // 8))
    for lo in range(0, len(vectors), BLOCK):
        index.add(sign_bits(vectors[lo : lo + BLOCK]))
    return index


def hamming_distances(codes: np.ndarray, query_code: np.ndarray) -> np.ndarray:
    """Bits that differ between each packed code and one query's code (popcount of the XOR)."""
    return np.unpackbits(np.bitwise_xor(codes, query_code), axis=1).sum(axis=1, dtype=np.int64)


def hamming_similarity(distances: np.ndarray, dims: int) -> np.ndarray:
    """``1 − 2·distance/dims``: the inner product of the ±1 vectors over ``dims``, in [−1, 1], higher is nearer."""
    return 1.0 - 2.0 * np.asarray(distances, dtype=np.float64) / dims


def hamming_top(
    index: faiss.IndexBinary, codes: np.ndarray, n: int, tie_order: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per query code, the ``n`` nearest codes and their Hamming distances, nearest first, ties by ``tie_order``."""
    out = []
    for ids, dist in hamming_nearest(index, codes, n):
        order = np.lexsort((tie_order[ids], dist))[:n]
        out.append((ids[order], dist[order]))
    return out


def hamming_nearest(index: faiss.IndexBinary, codes: np.ndarray, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per query code, its ``n`` nearest codes and every code tied with the n-th, with their Hamming
    distances, nearest first (in any order among equal distances).

    Distances are small integers, so ties are common; FAISS returns any of the codes tied at
    the cut-off, so a query is searched deeper until every code tied with its n-th is in hand.
    """
    total = index.ntotal
    n = min(n, total)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return [(empty, empty.copy()) for _ in range(len(codes))]
    fetch = min(2 * n, total)
    distances, labels = index.search(np.ascontiguousarray(codes), fetch)
    out = []
    for row in range(len(codes)):
        dist, ids, k = distances[row], labels[row], fetch
        while k < total and dist[-1] <= dist[n - 1]:  # codes at the cut-off's distance may lie beyond
            k = min(2 * k, total)
            more_dist, more_ids = index.search(np.ascontiguousarray(codes[row : row + 1]), k)
            dist, ids = more_dist[0], more_ids[0]
        keep = dist <= dist[n - 1]
        out.append((ids[keep].astype(np.int64), dist[keep].astype(np.int64)))
    return out


def rescore(
    vectors: np.ndarray, query: np.ndarray, shortlist: np.ndarray, n: int, tie_order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The ``n`` best of ``shortlist`` by inner product with the float ``query``, ties by ``tie_order``."""
    rows = np.sort(np.asarray(shortlist, dtype=np.int64))  # in file order: a memory-mapped table reads forward
    scores = (np.asarray(vectors[rows], dtype=np.float32) @ query).astype(np.float64)
    order = np.lexsort((tie_order[rows], -scores))[:n]
    return rows[order], scores[order]
