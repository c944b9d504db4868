"""No cache at all (``--no-cache``): every text is embedded again and nothing is kept."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from bench.embedders import PASSAGE, Embedder
from bench.embedders.cache import COUNT_WINDOW, EmbeddingCache, EmbedStats, new_vectors
from bench.embedders.engine import Engine, LocalEngine
from bench.inputs.lazy import Lazy


class NoCache(EmbeddingCache):
    """Embeds everything every time (``--no-cache``)."""

    def __init__(self) -> None:
        super().__init__(Path())

    def embed(
        self,
        embedder: Embedder,
        texts: Sequence[str],
        role: str,
        batch_size: int = 64,
        progress: Callable[[int], None] | None = None,
        engine: Engine | None = None,
    ) -> tuple[np.ndarray, EmbedStats]:
        out = new_vectors(len(texts), embedder.dims)
        batches = Lazy(-(-len(texts) // batch_size), lambda i: list(texts[i * batch_size : (i + 1) * batch_size]))
        for i, vectors in (engine or LocalEngine()).embed_batches(embedder, batches, role):
            out[i * batch_size : i * batch_size + len(vectors)] = vectors
            if progress:
                progress(len(vectors))
        return out, EmbedStats(embedded=len(texts))

    def count_tokens(self, embedder: Embedder, texts: Sequence[str], role: str = PASSAGE) -> np.ndarray:
        out = np.zeros(len(texts), dtype=np.int64)
        prefix = embedder.spec.prefix(role)
        for lo in range(0, len(texts), COUNT_WINDOW):
            window = [prefix + t for t in texts[lo : lo + COUNT_WINDOW]]
            out[lo : lo + len(window)] = embedder.count_tokens(window)
        return out

    def latency(self, model_key: str, key: bytes) -> tuple[list[float], str] | None:
        return None

    def store_latency(self, model_key: str, key: bytes, seconds: list[float], measured: str) -> None:
        """Nothing is kept."""
