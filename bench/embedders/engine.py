"""Where batches of texts are embedded: the engine protocol, and the local engine that runs each batch
in this process. ``bench.engines`` adds engines that embed elsewhere (Ray)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

import numpy as np

from bench.embedders.base import Embedder


class Engine(Protocol):
    name: str

    def embed_batches(
        self, embedder: Embedder, batches: Sequence[list[str]], role: str
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(batch number, vectors)`` for every batch, in any order, as each finishes.

        Each batch is embedded in one call, exactly as given, so vectors do not depend on the engine.
        """


class LocalEngine:
    """Batches one after another through the embedder already loaded in this process."""

    name = "local"

    def embed_batches(
        self, embedder: Embedder, batches: Sequence[list[str]], role: str
    ) -> Iterator[tuple[int, np.ndarray]]:
        for i, texts in enumerate(batches):
            yield i, embedder.embed(texts, role)
