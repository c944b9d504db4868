"""bench: which embedding model, chunker and vector index suit *your* documents, and at what cost.

From Python (docs/python.md): ``bench.run_shootout``, ``bench.load_run``, ``bench.evaluate``,
``bench.candidates_frame`` and ``bench.questions_frame``, and the run's types (``bench.StoredRun``
and the rest of the run's types, ``bench.core``). They load on first use, so ``import bench`` stays light.
"""

from bench.version import __version__

_API = {"run_shootout", "load_run", "evaluate", "candidates_frame", "questions_frame"}
_TYPES = {"StoredRun", "RunSummary", "CandidateResult", "QuestionRecord", "Manifest", "RankedUnit"}

__all__ = ["__version__", *sorted(_API), *sorted(_TYPES), "BenchError"]


def __getattr__(name: str) -> object:
    if name in _API:
        from bench import api

        return getattr(api, name)
    if name in _TYPES:
        from bench.core import records, summary
        from bench.results import schema

        return next(getattr(m, name) for m in (summary, records, schema) if hasattr(m, name))
    if name == "BenchError":
        from bench.errors import BenchError

        return BenchError
    raise AttributeError(f"module 'bench' has no attribute {name!r}")
