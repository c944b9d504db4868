"""Where corpus embedding runs: in this process (``local``, the default) or as a Ray Data
pipeline (``ray``, the optional ``retrieval-shootout[ray]`` extra) on a local Ray instance or a cluster.

An engine turns batches of texts into vectors; the embedding cache decides which texts need
embedding and stores each batch as it comes back, so every engine fills the same cache and an
interrupted run resumes from whichever batches finished.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bench.embedders.engine import Engine, LocalEngine
from bench.errors import BenchError
from bench.registry import Registry

__all__ = ["ENGINES", "Engine", "LocalEngine", "make_engine"]

# Each engine is a factory of (models_dir, batch_size), so Ray is imported only when it is chosen.
ENGINES: Registry[Callable[[Path, int], Engine]] = Registry("engine")


def _ray(models_dir: Path, batch_size: int) -> Engine:
    try:
        from bench.engines.ray import RayEngine
    except ImportError as e:
        if getattr(e, "name", "") and not str(e.name).startswith("ray"):
            raise
        raise BenchError("--engine ray needs Ray: pip install 'retrieval-shootout[ray]'") from None
    return RayEngine(models_dir=models_dir, batch_size=batch_size)


ENGINES.register("local", lambda models_dir, batch_size: LocalEngine())
ENGINES.register("ray", _ray)


def make_engine(name: str, models_dir: Path, batch_size: int) -> Engine:
    """The engine called ``name``; ``models_dir`` and ``batch_size`` are what remote workers load models with."""
    return ENGINES.get(name)(models_dir, batch_size)
