"""What every model is: a declarative spec (readable without loading weights) and an embedder."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from bench.errors import BenchError

QUERY, PASSAGE = "query", "passage"
REMOTE_LOADERS = frozenset({"openai"})  # loaders that call a service rather than run weights here


@dataclass(frozen=True)
class ModelSpec:
    """Everything known about a model before it is loaded.

    ``loader`` names how to load it (see ``LOADERS``); ``source`` is a local path or
    ``package:<module>`` for weights shipped inside a Python package. ``lexical`` models rank
    with their own inverted index instead of a FAISS index.
    """

    name: str
    loader: str
    source: str = ""
    dims: int | None = None
    max_tokens: int | None = None
    similarity: str = "cosine"
    price_per_mtok: float | None = None  # set by [model.NAME]; else bench.evaluation.costs resolves the price
    revision: str = ""
    query_prompt: str = ""
    passage_prompt: str = ""
    lexical: bool = False
    description: str = ""
    params: tuple[tuple[str, object], ...] = ()  # loader-specific settings, e.g. (("base_url_env", "..."),)

    def option(self, name: str, default=None):
        return dict(self.params).get(name, default)

    @property
    def remote(self) -> bool:
        """Served by an API: its latency is the service's of the day, so it is never reused."""
        return self.loader in REMOTE_LOADERS

    @property
    def cache_key(self) -> str:
        """Identifies the vectors this model produces: name, loader, source and revision."""
        return f"{self.name}|{self.loader}|{self.source}|{self.revision}"


class Embedder(Protocol):
    spec: ModelSpec

    @property
    def dims(self) -> int: ...

    def embed(self, texts: list[str], role: str) -> np.ndarray:
        """float32 rows, one per text, L2-normalised (so inner product is cosine)."""

    def count_tokens(self, texts: list[str]) -> np.ndarray:
        """Tokens each text is, for this model, before any truncation (special tokens included)."""


def check_dims(spec: ModelSpec, actual: int) -> None:
    """A declared width must be the model's: cached vectors are looked up by it before loading."""
    if spec.dims and spec.dims != actual:
        raise BenchError(
            f"model {spec.name!r}: dims = {spec.dims} is configured but the model makes "
            f"{actual}-dimensional vectors; set dims = {actual} in [model.{spec.name}]"
        )


def normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)
