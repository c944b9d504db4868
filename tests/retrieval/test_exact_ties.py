"""Recall against exact search counts ties at the cut as found: inner products equal in exact
arithmetic (here, ones that cancel to zero) round differently in a batched product, a single one
and FAISS's own loop, so a tied neighbour may fall either side of the exact list's end."""

from __future__ import annotations

import numpy as np
import pytest

from bench.retrieval.compressed import rescore
from bench.retrieval.exact_search import TIE_TOLERANCE, exact_top, recall_against_exact


def test_rescoring_every_row_has_full_recall_even_among_cancelling_scores():
    rng = np.random.default_rng(27)
    dims, n, differ = 384, 6, 0
    for _ in range(60):
        q = rng.standard_normal(dims)
        q /= np.linalg.norm(q)
        orthogonal = rng.standard_normal((30, dims))
        orthogonal -= np.outer(orthogonal @ q, q)  # a score of 0, up to rounding
        orthogonal /= np.linalg.norm(orthogonal, axis=1, keepdims=True)  # unit vectors, as every dense model's
        vectors = np.vstack([orthogonal[:15], [q, (q + orthogonal[0]) / np.sqrt(2)], orthogonal[15:]]).astype(
            np.float32
        )
        queries = np.stack([q, -q]).astype(np.float32)  # a batch, as a run asks
        exact = exact_top(vectors, queries, n)
        everything = np.arange(len(vectors))
        found = [rescore(vectors, query, everything, n, everything)[0] for query in queries]
        differ += any(set(f.tolist()) != set(e.tolist()) for f, e in zip(found, exact))
        assert recall_against_exact(found, exact, vectors, queries) == 1.0
    assert differ  # the two kernels did disagree on which tied rows made the cut


def test_a_neighbour_within_the_tolerance_counts_and_one_below_it_does_not():
    vectors = np.array([[1.0, 0.0], [0.5, 0.0], [0.5 - TIE_TOLERANCE / 2, 0.0], [0.4, 0.0]], dtype=np.float64)
    query = np.array([[1.0, 0.0]])
    assert recall_against_exact([[0, 2]], [[0, 1]], vectors, query) == 1.0  # tied with the last, as rounded
    assert recall_against_exact([[0, 3]], [[0, 1]], vectors, query) == pytest.approx(0.5)
    assert recall_against_exact([[0, 3]], [[0, 1]]) == pytest.approx(0.5)  # without vectors: ids alone
