"""The run's plots, built from the stored summary and per-question records alone: every figure by name,
drawn to PNG and written under plots/.

The charts themselves are in ``plot_quality`` (curves, ranks, gaps, chunk sizes, rank matrix, history)
and ``plot_tradeoff`` (quality against cost and latency); ``plot_base`` holds what they share.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from matplotlib.figure import Figure

from bench import files
from bench.report.plot_base import DPI
from bench.report.plot_quality import (
    chunk_sizes,
    first_rank_distribution,
    history_trends,
    hit_rate_curves,
    rank_matrix_heatmap,
    score_gaps,
)
from bench.report.plot_tradeoff import quality_vs_cost, quality_vs_latency
from bench.results.schema import QuestionRecord, RunSummary

FILES = {
    "hit_rate_curves": "hit_rate_curves.png",
    "first_rank": "first_rank.png",
    "score_gaps": "score_gaps.png",
    "quality_vs_cost": "quality_vs_cost.png",
    "quality_vs_latency": "quality_vs_latency.png",
    "chunk_sizes": "chunk_sizes.png",
    "rank_matrix": "rank_matrix.png",
    "history": "history.png",  # only when earlier runs of the same corpus and goldset exist
}

# (question ids, candidate ids, first relevant rank per question and candidate): significance.rank_matrix
RankMatrix = tuple[list[str], list[str], list[list[int | None]]]

_BUILDERS = {  # name → figure from (summary, records, rank_matrix); the costliest to draw first
    "first_rank": lambda s, r, m: first_rank_distribution(s),
    "rank_matrix": lambda s, r, m: rank_matrix_heatmap(*cast(RankMatrix, m), s.depth, s.k),
    "score_gaps": lambda s, r, m: score_gaps(s, r),
    "hit_rate_curves": lambda s, r, m: hit_rate_curves(s),
    "chunk_sizes": lambda s, r, m: chunk_sizes(s),
    "quality_vs_cost": lambda s, r, m: quality_vs_cost(s),
    "quality_vs_latency": lambda s, r, m: quality_vs_latency(s),
}


def figures(
    summary: RunSummary, records: Sequence[QuestionRecord], rank_matrix: tuple | None = None
) -> dict[str, Figure]:
    """Every plot of a run by name, as figures to inspect or draw elsewhere."""
    return {name: _BUILDERS[name](summary, records, rank_matrix) for name in names(rank_matrix)}


def drawn(
    name: str, summary: RunSummary, records: Sequence[QuestionRecord], rank_matrix: tuple | None = None
) -> tuple[str, bytes]:
    """One plot by name, drawn to PNG: (title, bytes)."""
    fig = _BUILDERS[name](summary, records, rank_matrix)
    return fig.get_suptitle(), png_bytes(fig)


def drawn_history(summary: RunSummary, trends: Sequence, metric: str) -> tuple[str, bytes]:
    fig = history_trends(summary, trends, metric)
    return fig.get_suptitle(), png_bytes(fig)


def names(rank_matrix: tuple | None) -> list[str]:
    """The plots of a run, the costliest to draw first."""
    return [n for n in _BUILDERS if n != "rank_matrix" or rank_matrix is not None]


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG; without a software/date stamp, so identical figures give identical bytes."""
    buffer = io.BytesIO()
    # zlib level 1: far faster than the default 6; the plots here stay under 200 KB each
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None}, pil_kwargs={"compress_level": 1})
    return buffer.getvalue()


def save(folder: Path, name: str, png: bytes) -> Path:
    """Write one drawn plot atomically as ``folder/<file name>``."""
    path = folder / FILES[name]
    files.write_atomic(path, png)
    return path


def write_plots(
    folder: Path, summary: RunSummary, records: Sequence[QuestionRecord], rank_matrix: tuple | None = None
) -> dict[str, Path]:
    """Render and save every plot of a run under ``folder`` (created); returns name → path."""
    return {name: save(folder, name, drawn(name, summary, records, rank_matrix)[1]) for name in names(rank_matrix)}
