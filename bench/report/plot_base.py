"""What every chart of a run shares: a figure with its own canvas, title and caption, one colour, line
style and marker per candidate (the same in every figure, assigned in rank order), wrapped candidate ids,
legends beside or below the chart, and grids of small multiples.

Every figure is a plain ``Figure`` with its own Agg canvas, so nothing touches pyplot's global state:
plots can be drawn headless and from threads, and the PDF report can reuse the same objects.
"""

from __future__ import annotations

import math
import textwrap
from typing import NamedTuple, cast

from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure, FigureBase, SubFigure

from bench.core.summary import RunSummary
from bench.text.scripts import UNSPACED, display_width, shorten

DPI = 150
SIZE = (8.0, 5.0)  # inches: one chart
NOTE_COLOUR = "0.3"
ID_WIDTH = 36  # characters before a long candidate id wraps (at a "/")
LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")


class Style(NamedTuple):
    colour: str
    linestyle: str
    marker: str


def candidate_styles(summary: RunSummary) -> dict[str, Style]:
    """Colour, line style and marker per candidate id, in rank order.

    tab10 for up to 10 candidates, tab20 for up to 20 (its dark shades first, so neighbours in rank differ
    in hue), then tab20 again with a new line style and marker per round so every candidate stays distinct.
    """
    ids = [c.id for c in summary.candidates]
    if len(ids) <= 10:
        palette = [to_hex(c) for c in colormaps["tab10"].colors]  # type: ignore[attr-defined]
    else:
        tab20 = [to_hex(c) for c in colormaps["tab20"].colors]  # type: ignore[attr-defined]
        palette = tab20[0::2] + tab20[1::2]
    styles = {}
    for i, cid in enumerate(ids):
        cycle = i // len(palette)
        styles[cid] = Style(
            palette[i % len(palette)], LINESTYLES[cycle % len(LINESTYLES)], MARKERS[cycle % len(MARKERS)]
        )
    return styles


def candidate_colours(summary: RunSummary) -> dict[str, str]:
    """One hex colour per candidate id, the same in every figure of the run."""
    return {cid: style.colour for cid, style in candidate_styles(summary).items()}


def wrap_id(cid: str, width: int = ID_WIDTH) -> str:
    """Break a long candidate id after its "/" separators (never inside a part, which would misread as two
    names) so titles, legends and labels are never clipped."""
    parts = cid.split("/")
    lines, line = [], ""
    for part in [p + "/" for p in parts[:-1]] + [parts[-1]]:
        if line and display_width(line) + display_width(part) > width:  # a Chinese character takes two
            lines.append(line)
            line = ""
        line += part
    return "\n".join([*lines, line])


def short_label(text: str, width: int) -> str:
    """``text`` on one line of at most ``width`` columns (a Chinese character takes two), cut with "…":
    after the last word that fits, where the cut would fall inside a word of a spaced script and a
    space lies in the second half, else between two characters (never inside one with its marks)."""
    text = " ".join(text.split())
    if display_width(text) <= width:
        return text
    head = shorten(text, width)[:-1]
    inside = head and text[len(head)] != " " and not UNSPACED.match(text[len(head)]) and not UNSPACED.match(head[-1])
    space = head.rfind(" ")
    if inside and space >= len(head) / 2:
        head = head[:space]
    return head.rstrip() + "…"


def new_figure(title: str, subtitle: str = "", size: tuple[float, float] = SIZE) -> tuple[Figure, FigureBase]:
    """A figure with its own canvas, a bold title and a smaller caption; returns (figure, body to draw in).

    The caption is the title of a subfigure, so constrained layout reserves room for both lines.
    """
    fig = Figure(figsize=size, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    fig.suptitle(title, fontsize=12, fontweight="bold")
    if not subtitle:
        return fig, fig
    body = cast(SubFigure, fig.subfigures(1, 1))  # one row, one column: a single subfigure, not an array
    width = int(size[0] * 14.5)  # characters of 9 pt text that fit across the figure
    body.suptitle("\n".join(textwrap.fill(line, width) for line in subtitle.split("\n")), fontsize=9, color=NOTE_COLOUR)
    return fig, body


def message_figure(title: str, message: str) -> Figure:
    """A figure that says why there is nothing to plot, rather than an empty or missing file."""
    fig, body = new_figure(title)
    ax = body.subplots()
    ax.set_axis_off()
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=12, color=NOTE_COLOUR, transform=ax.transAxes)
    return fig


def legend_outside(fig: Figure, body: FigureBase, ax: Axes) -> None:
    """Legend beside the chart so it never covers data; below it, in columns, when it would not fit beside,
    with the figure made taller to keep the chart's height."""
    handles, labels = ax.get_legend_handles_labels()
    lines = sum(label.count("\n") + 1 for label in labels) + 0.4 * len(labels)  # entries are spaced apart
    width, height = fig.get_size_inches()
    if lines * 9 * 1.25 / 72 <= height - 1.0:  # 9 pt text, 1.25 line spacing
        # anchored to the axes (not the figure) so its top lines up with the chart, below the caption
        ax.legend(
            handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, fontsize=9, frameon=False
        )
        return
    ncols = max(1, min(len(labels), int((width - 0.3) // 3.0)))  # an entry: ~2.5 in of wrapped id plus its line
    fig.set_size_inches(width, height + math.ceil(lines / ncols) * 8 * 1.25 / 72 + 0.3)
    body.legend(handles, labels, loc="outside lower center", fontsize=8, frameon=False, ncols=ncols)


def panels_width(titles: list[str], cols: int, lo: float = 8.0, hi: float = 14.0) -> float:
    """Figure width (inches) at which each small multiple is wide enough for its title's longest line."""
    longest = max(display_width(line) for t in titles for line in t.split("\n"))
    return min(hi, max(lo, cols * (longest * 9 * 0.6 / 72 + 0.35) + 0.8))  # ~0.6 em per character at 9 pt


def grid(n: int) -> tuple[int, int]:
    """Rows and columns of small multiples for ``n`` panels."""
    cols = 1 if n == 1 else 2 if n <= 4 else 3 if n <= 9 else 4
    return math.ceil(n / cols), cols


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
