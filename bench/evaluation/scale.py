"""The team's scale: how large their corpus is, how many questions a month it answers, how often it
is indexed again, on how many replicas, and what storage and compute cost. Every monthly figure
of a candidate is projected from the run's measurements with these (``[scale]`` in bench.toml).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from bench.errors import BenchError
from bench.registry import check_keys

PREFERENCES = ("cost", "latency", "quality")


@dataclass(frozen=True)
class Scale:
    """``documents`` None: the corpus as it is. ``storage_usd_per_gb_month`` and ``hourly_usd`` None:
    no price, so storage and local compute are reported as amounts (GB, hours), not money."""

    documents: int | None = None
    queries_per_month: int = 100_000
    reindexes_per_month: float = 1.0
    replicas: int = 1
    storage_usd_per_gb_month: float | None = None
    hourly_usd: float | None = None  # the machine that runs local models: embedding, search, reranking

    def factor(self, corpus_documents: int) -> float:
        """How many times larger the team's corpus is than the one this run indexed."""
        if self.documents is None or not corpus_documents:
            return 1.0
        return self.documents / corpus_documents


_KEYS = (
    "documents",
    "queries_per_month",
    "reindexes_per_month",
    "replicas",
    "storage_usd_per_gb_month",
    "hourly_usd",
)


def scale_from_config(table: object, where: str) -> Scale:
    """A Scale from ``[scale]`` (absent: the defaults), every value checked."""
    if table is None:
        return Scale()
    if not isinstance(table, Mapping):
        raise BenchError(f"{where}: [scale] must be a table, e.g. [scale] queries_per_month = 100000")
    check_keys(table, _KEYS, f"{where}: [scale]")
    values: dict = {}
    for key in ("documents", "queries_per_month", "replicas"):
        if key in table:
            values[key] = _number(table[key], f"{where}: [scale] {key}", whole=True, minimum=1)
    for key in ("reindexes_per_month", "storage_usd_per_gb_month", "hourly_usd"):
        if key in table:
            values[key] = float(_number(table[key], f"{where}: [scale] {key}", whole=False, minimum=0))
    return Scale(**values)


def check_preference(value: object, where: str) -> str:
    if value not in PREFERENCES:
        raise BenchError(
            f"{where}: prefer = {value!r} must be one of {', '.join(map(repr, PREFERENCES))}: what decides "
            f"among the candidates tied with the best"
        )
    return str(value)


def _number(value: object, what: str, whole: bool, minimum: float) -> float | int:
    ok = isinstance(value, int) if whole else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or not math.isfinite(float(value)) or value < minimum:  # type: ignore[arg-type,operator]
        kind = "a whole number" if whole else "a number"
        raise BenchError(f"{what} = {value!r} must be {kind} >= {minimum:g}")
    return value  # type: ignore[return-value]
