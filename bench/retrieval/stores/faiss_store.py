"""FAISS in this process: any index_factory string, or sign bits searched by Hamming distance."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, cast

import numpy as np

from bench.retrieval import compressed
from bench.retrieval.faiss_index import IndexSpec, index_bytes
from bench.retrieval.stores.base import FAISS, Hits, StoreBuild

if TYPE_CHECKING:
    import faiss


class FaissStore:
    name = FAISS
    in_process = True

    def __init__(self, spec: IndexSpec) -> None:
        self.spec = spec

    def build(self, vectors: np.ndarray) -> StoreBuild:
        import faiss

        self.index, factory = self.spec.build_resolved(vectors)
        self.dims = vectors.shape[1]
        return StoreBuild(factory, index_bytes(self.index), version=f"faiss {faiss.__version__}", store=FAISS)

    def configure(self, params: Mapping[str, object]) -> Mapping[str, object]:
        # a binary index takes no FAISS setting (its rescore is the retriever's, checked by the config reader)
        if not self.spec.binary:
            self.spec.configure(cast("faiss.Index", self.index), params)
        return params

    def search(self, queries: np.ndarray, k: int) -> Hits:
        if self.spec.binary:
            codes = compressed.sign_bits(queries)
            hits = compressed.hamming_nearest(cast("faiss.IndexBinary", self.index), codes, k)
            return [(ids, compressed.hamming_similarity(dist, self.dims)) for ids, dist in hits]
        scores, labels = self.index.search(queries, min(k, self.index.ntotal))
        out = []
        for row_scores, row_labels in zip(scores, labels):
            keep = row_labels >= 0
            out.append((row_labels[keep], row_scores[keep]))
        return out

    @contextmanager
    def one_query_at_a_time(self) -> Iterator[None]:
        # FAISS's OpenMP start-up on every single-vector search would otherwise dominate
        # (milliseconds on a tiny index).
        import faiss

        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            yield
        finally:
            faiss.omp_set_num_threads(threads)

    def server_cpu_seconds(self) -> None:
        return None

    def close(self) -> None:
        self.__dict__.pop("index", None)  # the index's memory goes now; a second close does nothing
