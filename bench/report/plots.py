"""The run's plots, built from the stored summary and per-question records alone: every figure by name,
drawn to PNG and written under plots/.

The charts themselves are in ``plot_quality`` (curves, ranks, gaps, chunk sizes, rank matrix, history)
and ``plot_tradeoff`` (quality against cost and latency); ``plot_base`` holds what they share.

A run whose names or questions hold characters DejaVu Sans lacks (Chinese, Thai …) is drawn with the
fallback fonts of ``fonts`` that set them; a character no font has shows as a box, and the PNG says
which in a text chunk (``unset``) so that report.pdf can warn once for the whole report.
"""

from __future__ import annotations

import dataclasses
import io
import struct
import warnings
import zlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import cast

import matplotlib
from matplotlib.figure import Figure
from matplotlib.text import Text

from bench import files
from bench.core.records import QuestionRecord
from bench.core.summary import RunSummary
from bench.evaluation import robustness
from bench.report import fonts
from bench.report.plot_base import DPI
from bench.report.plot_quality import (
    chunk_sizes,
    first_rank_distribution,
    history_trends,
    hit_rate_curves,
    rank_matrix_heatmap,
    robustness_drops,
    score_gaps,
)
from bench.report.plot_tradeoff import quality_vs_cost, quality_vs_latency

FILES = {
    "hit_rate_curves": "hit_rate_curves.png",
    "first_rank": "first_rank.png",
    "score_gaps": "score_gaps.png",
    "quality_vs_cost": "quality_vs_cost.png",
    "quality_vs_latency": "quality_vs_latency.png",
    "chunk_sizes": "chunk_sizes.png",
    "rank_matrix": "rank_matrix.png",
    "robustness": "robustness.png",  # only when the run asked perturbed questions
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
    "robustness": lambda s, r, m: robustness_drops(s),
}


def figures(
    summary: RunSummary, records: Sequence[QuestionRecord], rank_matrix: tuple | None = None
) -> dict[str, Figure]:
    """Every plot of a run by name, as figures to inspect or draw elsewhere."""
    with fonts_for(summary, rank_matrix):
        return {name: _BUILDERS[name](summary, records, rank_matrix) for name in names(rank_matrix, summary)}


def drawn(
    name: str, summary: RunSummary, records: Sequence[QuestionRecord], rank_matrix: tuple | None = None
) -> tuple[str, bytes]:
    """One plot by name, drawn to PNG: (title, bytes)."""
    with fonts_for(summary, rank_matrix):
        fig = _BUILDERS[name](summary, records, rank_matrix)
        return fig.get_suptitle(), png_bytes(fig)


def drawn_history(summary: RunSummary, trends: Sequence, metric: str) -> tuple[str, bytes]:
    with fonts_for(summary, [t.candidate for t in trends]):
        fig = history_trends(summary, trends, metric)
        return fig.get_suptitle(), png_bytes(fig)


def fonts_for(*shown: object) -> AbstractContextManager:
    """The fonts for figures of ``shown`` (a summary, question texts, ids …): DejaVu Sans followed by the
    fallback fonts its characters need; nothing changes where DejaVu Sans sets them all."""
    characters = set()
    for text in _strings(shown):
        if not text.isascii():
            characters |= set(text)
    families = fonts.needed("".join(sorted(characters)), pdf=False)
    return matplotlib.rc_context({"font.family": families}) if families else nullcontext()


def _strings(value: object) -> Iterator[str]:
    """Every string in ``value``: dict keys and values, sequences, a dataclass's fields."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _strings(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _strings(getattr(value, f.name))


def names(rank_matrix: tuple | None, summary: RunSummary | None = None) -> list[str]:
    """The plots of a run, the costliest to draw first (robustness only for a run that measured it)."""
    robust = summary is not None and bool(robustness.shown(summary.candidates))
    return [n for n in _BUILDERS if (n != "rank_matrix" or rank_matrix is not None) and (n != "robustness" or robust)]


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG; without a software/date stamp, so identical figures give identical bytes."""
    buffer = io.BytesIO()
    with warnings.catch_warnings():  # a character no font has: drawn as a box, said once by report.pdf
        warnings.filterwarnings("ignore", message="Glyph .* missing from font", category=UserWarning)
        # zlib level 1: far faster than the default 6; the plots here stay under 200 KB each
        fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None}, pil_kwargs={"compress_level": 1})
    png = buffer.getvalue()
    lost = set().union(*(fonts.missing(t.get_text(), pdf=False) for t in fig.findobj(Text) if t.get_visible()))
    return _with_text(png, UNSET, " ".join(f"U+{ord(ch):04X}" for ch in sorted(lost))) if lost else png


UNSET = b"bench unset characters"  # PNG text chunk: the characters no font had, drawn as boxes


def _with_text(png: bytes, key: bytes, value: str) -> bytes:
    """``png`` with a tEXt chunk ``key``: ``value`` before its IEND chunk (the last 12 bytes)."""
    data = key + b"\0" + value.encode("latin-1")
    chunk = struct.pack(">I", len(data)) + b"tEXt" + data + struct.pack(">I", zlib.crc32(b"tEXt" + data))
    return png[:-12] + chunk + png[-12:]


def unset(png: bytes) -> set[str]:
    """The characters a plot drawn by ``png_bytes`` showed as boxes, no installed font having them."""
    pos = 8  # after the signature
    while pos + 8 <= len(png):
        length, kind = struct.unpack(">I4s", png[pos : pos + 8])
        if kind == b"tEXt":
            key, _, value = png[pos + 8 : pos + 8 + length].partition(b"\0")
            if key == UNSET:
                return {chr(int(code[2:], 16)) for code in value.decode("latin-1").split()}
        pos += 12 + length
    return set()


def save(folder: Path, name: str, png: bytes) -> Path:
    """Write one drawn plot atomically as ``folder/<file name>``."""
    path = folder / FILES[name]
    files.write_atomic(path, png)
    return path


def write_plots(
    folder: Path, summary: RunSummary, records: Sequence[QuestionRecord], rank_matrix: tuple | None = None
) -> dict[str, Path]:
    """Render and save every plot of a run under ``folder`` (created); returns name → path."""
    return {
        name: save(folder, name, drawn(name, summary, records, rank_matrix)[1]) for name in names(rank_matrix, summary)
    }
