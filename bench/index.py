"""FAISS index specs: a name, the factory string it builds, and its serialized size.

Vectors are L2-normalised, so the inner-product metric ranks by cosine similarity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bench.registry import Registry

LEXICAL_INDEX = "inverted"  # what lexical retrievers use instead of a FAISS index


@dataclass(frozen=True)
class IndexSpec:
    name: str
    factory: str
    exact: bool
    description: str = ""

    def build(self, vectors: np.ndarray):
        import faiss

        index = faiss.index_factory(vectors.shape[1], self.factory, faiss.METRIC_INNER_PRODUCT)
        if not index.is_trained:
            index.train(vectors)
        index.add(vectors)
        return index


INDEXES: Registry[IndexSpec] = Registry("index")
INDEXES.register("flat", IndexSpec("flat", "Flat", exact=True, description="exact inner-product search"))


def index_bytes(index) -> int:
    """Size of the index as FAISS serializes it."""
    import faiss

    return int(faiss.serialize_index(index).nbytes)
