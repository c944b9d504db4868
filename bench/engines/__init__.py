"""Where corpus embedding runs: in this process (``local``, the default) or as a Ray Data
pipeline (``ray``, the optional ``retrieval-shootout[ray]`` extra) on a local Ray instance or a cluster.

An engine turns batches of texts into vectors; the embedding cache decides which texts need
embedding and stores each batch as it comes back, so every engine fills the same cache and an
interrupted run resumes from whichever batches finished.
"""

from __future__ import annotations

from pathlib import Path

from bench.embedders.engine import Engine, LocalEngine
from bench.errors import BenchError

__all__ = ["ENGINES", "Engine", "LocalEngine", "make_engine"]

ENGINES = ("local", "ray")


def make_engine(name: str, models_dir: Path, batch_size: int) -> Engine:
    """The engine called ``name``; ``models_dir`` and ``batch_size`` are what remote workers load models with."""
    if name == "local":
        return LocalEngine()
    if name == "ray":
        try:
            from bench.engines.ray import RayEngine
        except ImportError as e:
            if getattr(e, "name", "") and not str(e.name).startswith("ray"):
                raise
            raise BenchError("--engine ray needs Ray: pip install 'retrieval-shootout[ray]'") from None
        return RayEngine(models_dir=models_dir, batch_size=batch_size)
    raise BenchError(f"unknown engine {name!r}; use one of: {', '.join(ENGINES)}")
