"""bench from Python: run a config, read a stored run, and evaluate plain dicts (docs/python.md).

Everything here is also reachable as ``bench.<name>``::

    import bench

    run = bench.load_run("latest")
    bench.candidates_frame(run)[["id", "mrr@5", "recall@5"]]
    bench.evaluate({"q1": {"d1": 2}}, {"q1": {"d1": 0.9, "d2": 0.4}}, ["mrr@10", "ndcg@10"])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.errors import BenchError
from bench.evaluation import metrics as quality_metrics
from bench.evaluation.from_dicts import grades_from_dicts
from bench.evaluation.metrics import QUALITY_METRICS, MetricName
from bench.results import schema, store
from bench.results.schema import StoredRun
from bench.run.options import RunOptions

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console

    from bench.config import Config

__all__ = ["RunOptions", "candidates_frame", "evaluate", "load_run", "questions_frame", "run_shootout"]


def run_shootout(
    config: str | Path | Config | RunOptions = "bench.toml", *, console: Console | None = None, **options: Any
) -> StoredRun:
    """``bench run CONFIG``: the shootout, written to the results folder, returned as typed values.

    ``config`` is a bench.toml, a loaded Config or a whole ``RunOptions``; the keyword arguments are
    the command's options, by ``RunOptions``' field names (``k``, ``only``, ``skip``, ``results``,
    ``cache_dir``, ``use_cache``, ``reports``, ``remeasure``, ``allow_unlocked``, ``strict``,
    ``engine``). Progress goes to ``console`` (standard error by default; pass
    ``rich.console.Console(quiet=True)`` for none). Bad input raises ``BenchError``.
    """
    from bench.run import shootout

    return shootout.run_shootout(RunOptions.of(config, **options), console)


def load_run(ref: str | Path = "latest", results: str | Path = "results") -> StoredRun:
    """A stored run by folder, run id or ``latest`` (the newest under ``results``)."""
    return schema.load_run(store.find_run(ref, Path(results)))


def candidates_frame(stored: StoredRun) -> pd.DataFrame:
    """One row per candidate in rank order: what it is, every mean metric, every operating figure."""
    import pandas as pd

    rows = []
    for c in sorted(stored.summary.candidates, key=lambda c: (c.rank is None, c.rank, c.id)):
        rows.append(
            {
                "id": c.id,
                "rank": c.rank,
                "model": c.model,
                "chunker": c.chunker,
                "index": c.index,
                "search": c.search,
                "lexical": c.lexical,
                "kind": c.pipeline.get("kind", "lexical" if c.lexical else "dense"),
                "reranker": c.pipeline.get("reranker", {}).get("name"),
                **c.quality,
                **c.ops,
            }
        )
    return pd.DataFrame(rows)


def questions_frame(stored: StoredRun) -> pd.DataFrame:
    """One row per (candidate, question): ids, tags, first relevant rank and every metric — the
    table `bench export --format csv` writes."""
    import pandas as pd

    from bench.results.export import per_question_table

    candidates = sorted(stored.summary.candidates, key=lambda c: (c.rank is None, c.rank, c.id))
    by_candidate = {c.id: stored.records_of(c.id) for c in candidates}
    header, rows = per_question_table(candidates, by_candidate)
    frame = pd.DataFrame(rows, columns=header)
    frame["first_relevant_rank"] = frame["first_relevant_rank"].astype("Int64")
    return frame


def evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    metrics: str | Iterable[str],
    *,
    ndcg_gain: str = "exponential",
    per_question: bool = False,
) -> dict[str, float] | dict[str, dict[str, float]]:
    """Quality metrics of a run against relevance judgments, as ranx's ``evaluate`` takes them.

    ``qrels`` maps question → {doc: grade} (grade ≤ 0 is not relevant, as in trec_eval); ``run``
    maps question → {doc: score}, ranked by score descending, ties by doc id descending (as
    trec_eval). Every question of ``qrels`` counts, as zeros when the run has none for it or it
    has no relevant doc; questions only in ``run`` are ignored. ``metrics`` are names with
    cutoffs: ``hit_rate``, ``recall``, ``precision``, ``f1``, ``mrr``, ``ndcg`` and ``map``
    (``ndcg_gain="linear"`` is trec_eval's ``ndcg_cut``, ``"exponential"`` ranx's ``ndcg_burges``).
    Returns {metric: mean}, or with ``per_question`` {metric: {question: value}}.
    """
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    if not names:
        raise BenchError("evaluate: name at least one metric, e.g. 'mrr@10'")
    parsed = []
    for name in names:
        try:
            metric = MetricName.parse(name)
        except ValueError as e:
            raise BenchError(f"evaluate: {e}") from None
        if metric.name not in QUALITY_METRICS:
            raise BenchError(f"evaluate: {metric} needs character spans; from dicts: {', '.join(QUALITY_METRICS)}")
        parsed.append(metric)
    qids = list(qrels)
    grades = grades_from_dicts(qrels, run, max(m.k for m in parsed))
    by_k = {k: quality_metrics.quality(grades, k, ndcg_gain) for k in sorted({m.k for m in parsed})}
    values = {str(m): by_k[m.k][str(m)] for m in parsed}
    if per_question:
        return {name: dict(zip(qids, v.tolist())) for name, v in values.items()}
    return {name: float(v.mean()) if len(v) else 0.0 for name, v in values.items()}
