"""Where corpus embedding runs: in this process (``local``, the default) or as a Ray Data
pipeline (``ray``, the optional ``bench[ray]`` extra) on a local Ray instance or a cluster.

An engine turns batches of texts into vectors; the embedding cache decides which texts need
embedding and stores each batch as it comes back, so every engine fills the same cache and an
interrupted run resumes from whichever batches finished.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from bench.embedders import Embedder
from bench.errors import BenchError

ENGINES = ("local", "ray")


class Engine(Protocol):
    name: str

    def embed_batches(self, embedder: Embedder, batches: Sequence[list[str]], role: str
                      ) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(batch number, vectors)`` for every batch, in any order, as each finishes.

        Each batch is embedded in one call, exactly as given, so vectors do not depend on the engine.
        """


class LocalEngine:
    """Batches one after another through the embedder already loaded in this process."""

    name = "local"

    def embed_batches(self, embedder: Embedder, batches: Sequence[list[str]], role: str
                      ) -> Iterator[tuple[int, np.ndarray]]:
        for i, texts in enumerate(batches):
            yield i, embedder.embed(texts, role)


def make_engine(name: str, models_dir: Path, batch_size: int) -> Engine:
    """The engine called ``name``; ``models_dir`` and ``batch_size`` are what remote workers load models with."""
    if name == "local":
        return LocalEngine()
    if name == "ray":
        try:
            from bench.ray_engine import RayEngine
        except ImportError as e:
            if getattr(e, "name", "") and not str(e.name).startswith("ray"):
                raise
            raise BenchError("--engine ray needs Ray: pip install 'bench[ray]'") from None
        return RayEngine(models_dir=models_dir, batch_size=batch_size)
    raise BenchError(f"unknown engine {name!r}; use one of: {', '.join(ENGINES)}")
