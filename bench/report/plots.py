"""The run's plots as matplotlib Figures, built from the stored summary and per-question records alone.

Every figure is a plain ``Figure`` with its own Agg canvas, so nothing touches pyplot's global state:
plots can be drawn headless and from threads, and the PDF report can reuse the same objects.
A candidate keeps one colour in every figure (``candidate_colours``), assigned in rank order.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import NamedTuple

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import BoundaryNorm, ListedColormap, to_hex
from matplotlib.figure import Figure, FigureBase
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

from bench import files
from bench.evaluation.costs import end_to_end_p95_ms
from bench.evaluation.metrics import MetricName, metric_key
from bench.formatting import ms_tick, percent, usd_tick
from bench.results.schema import CandidateResult, QuestionRecord, RunSummary

DPI = 150
SIZE = (8.0, 5.0)  # inches: one chart
MISS_COLOUR = "#8b1a1a"  # dark red: the same "miss" in the first-rank bars and the rank matrix
MISS_HATCH = "////"
FRONT_COLOUR = "0.15"
NOTE_COLOUR = "0.3"
ID_WIDTH = 36  # characters before a long candidate id wraps (at a "/")
LABEL_WIDTH = 30  # the same for labels beside scatter points, where width is scarcer
PANEL_ID_WIDTH = 26  # and for the titles of small multiples
MAX_ROW_LABELS = 60  # more question rows than this and per-row labels would be unreadable
LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")

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


# --- colours and shared helpers -------------------------------------------------------------------------------


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
        palette = [to_hex(c) for c in colormaps["tab10"].colors]
    else:
        tab20 = [to_hex(c) for c in colormaps["tab20"].colors]
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
        if line and len(line) + len(part) > width:
            lines.append(line)
            line = ""
        line += part
    return "\n".join([*lines, line])


def _new_figure(title: str, subtitle: str = "", size: tuple[float, float] = SIZE) -> tuple[Figure, FigureBase]:
    """A figure with its own canvas, a bold title and a smaller caption; returns (figure, body to draw in).

    The caption is the title of a subfigure, so constrained layout reserves room for both lines.
    """
    fig = Figure(figsize=size, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    fig.suptitle(title, fontsize=12, fontweight="bold")
    if not subtitle:
        return fig, fig
    body = fig.subfigures(1, 1)
    width = int(size[0] * 14.5)  # characters of 9 pt text that fit across the figure
    body.suptitle("\n".join(textwrap.fill(line, width) for line in subtitle.split("\n")), fontsize=9, color=NOTE_COLOUR)
    return fig, body


def _message_figure(title: str, message: str) -> Figure:
    """A figure that says why there is nothing to plot, rather than an empty or missing file."""
    fig, body = _new_figure(title)
    ax = body.subplots()
    ax.set_axis_off()
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=12, color=NOTE_COLOUR, transform=ax.transAxes)
    return fig


def _legend_outside(fig: Figure, body: FigureBase, ax) -> None:
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


def _panels_width(titles: list[str], cols: int, lo: float = 8.0, hi: float = 14.0) -> float:
    """Figure width (inches) at which each small multiple is wide enough for its title's longest line."""
    longest = max(len(line) for t in titles for line in t.split("\n"))
    return min(hi, max(lo, cols * (longest * 9 * 0.6 / 72 + 0.35) + 0.8))  # ~0.6 em per character at 9 pt


def _grid(n: int) -> tuple[int, int]:
    """Rows and columns of small multiples for ``n`` panels."""
    cols = 1 if n == 1 else 2 if n <= 4 else 3 if n <= 9 else 4
    return math.ceil(n / cols), cols


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# --- 1. hit rate by cutoff ------------------------------------------------------------------------------------


def _curve(candidate: CandidateResult) -> tuple[list[int], list[float]]:
    cutoffs = {key: MetricName.parse(key) for key in candidate.curve}
    points = sorted(
        (cutoffs[key].k, value)
        for key, value in candidate.curve.items()
        if cutoffs[key].name == "hit_rate" and value is not None
    )
    return [n for n, _ in points], [v for _, v in points]


def hit_rate_curves(summary: RunSummary) -> Figure:
    """hit_rate@1…depth of every candidate on one chart, with the run's k marked."""
    title = "Hit rate by cutoff"
    candidates = summary.candidates
    if not candidates:
        return _message_figure(title, "no candidates in this run")
    k, depth = summary.k, summary.depth
    fig, body = _new_figure(title, "share of questions with a relevant unit in the top N results; higher is better")
    ax = body.subplots()
    styles = candidate_styles(summary)
    for c in candidates:
        xs, ys = _curve(c)
        st = styles[c.id]
        ax.plot(
            xs,
            ys,
            color=st.colour,
            linestyle=st.linestyle,
            marker=st.marker,
            markersize=3.5,
            linewidth=1.6,
            label=wrap_id(c.id),
            gid=c.id,
        )
    ax.axvline(k, color=NOTE_COLOUR, linestyle=":", linewidth=1.2, gid="k")
    ax.annotate(f"k = {k}", (k, 0.02), xytext=(4, 0), textcoords="offset points", fontsize=9, color=NOTE_COLOUR)
    ax.set_xlim(0.5, depth + 0.5)
    ax.set_ylim(0, 1.02)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10]))
    ax.set_xlabel("cutoff N (results read per question)")
    ax.set_ylabel("hit rate (share of questions)")
    ax.grid(alpha=0.3)
    _legend_outside(fig, body, ax)
    return fig


# --- 2. where the first relevant unit landed ------------------------------------------------------------------


def _rank_shares(candidate: CandidateResult, depth: int) -> tuple[list[float], float]:
    """Share of questions whose first relevant unit was at rank 1…depth, and the share of misses."""
    counts = candidate.diagnostics.get("first_relevant_rank", {})
    total = sum(counts.values()) or 1
    return [counts.get(str(r), 0) / total for r in range(1, depth + 1)], counts.get("miss", 0) / total


def first_rank_distribution(summary: RunSummary) -> Figure:
    """Small multiples, one per candidate: share of questions by first relevant rank, plus a hatched miss bar."""
    title = "Where the first relevant unit landed"
    candidates = summary.candidates
    if not candidates:
        return _message_figure(title, "no candidates in this run")
    k, depth = summary.k, summary.depth
    rows, cols = _grid(len(candidates))
    titles = [wrap_id(c.id, PANEL_ID_WIDTH) for c in candidates]
    width = _panels_width(titles, cols)
    fig, body = _new_figure(
        title,
        "share of questions by rank of the first relevant unit; "
        f"tall bars on the left are better, miss = none in the top {depth}",
        (width, max(3.6, 1.2 + rows * (1.9 + 0.17 * max(t.count("\n") for t in titles)))),
    )
    axes = body.subplots(rows, cols, sharex=True, sharey=True, squeeze=False).ravel()
    colours = candidate_colours(summary)
    miss_x = depth + max(1.5, 0.12 * depth)  # a gap before the miss bar keeps it apart from the ranks
    top = 0.0
    for ax, c, name in zip(axes, candidates, titles):
        shares, miss = _rank_shares(c, depth)
        top = max(top, miss, *shares)
        ax.bar(range(1, depth + 1), shares, width=0.8, color=colours[c.id], label="ranks", gid=c.id)
        ax.bar(
            [miss_x],
            [miss],
            width=0.8,
            color=MISS_COLOUR,
            hatch=MISS_HATCH,
            edgecolor="white",
            linewidth=0,
            label="miss",
            gid="miss",
        )
        ax.axvline(k + 0.5, color=NOTE_COLOUR, linestyle=":", linewidth=1)
        ax.set_title(f"{name}\nmiss {percent(miss)}", fontsize=9)
        ax.set_gid(c.id)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[len(candidates) :]:
        ax.set_axis_off()
    ticks = sorted({1, k, *range(5, depth + 1, 5)}) if depth > 10 else list(range(1, depth + 1))
    inches_per_rank = (width - 0.8) / cols / (miss_x + 0.4)
    ticks = [t for t in ticks if t == 1 or (miss_x - t) * inches_per_rank >= 0.28]  # room for the "miss" label
    for ax in axes[: len(candidates)]:
        ax.xaxis.set_major_locator(FixedLocator([*ticks, miss_x]))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: "miss" if x == miss_x else f"{x:.0f}"))
        ax.tick_params(labelbottom=True, labelsize=8)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: percent(y)))
    axes[0].set_ylim(0, min(1.0, top * 1.1) or 1.0)
    axes[0].set_xlim(0.3, miss_x + 0.7)
    body.supxlabel(f"rank of the first relevant unit (dotted line: k = {k})", fontsize=10)
    body.supylabel("share of questions", fontsize=10)
    return fig


# --- 3. score gaps -------------------------------------------------------------------------------------------


def _gaps(records: Sequence[QuestionRecord]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for rec in records:
        gap = (rec.diagnostics or {}).get("score_gap")
        if gap is not None and math.isfinite(gap):
            out.setdefault(rec.candidate, []).append(float(gap))
    return out


def score_gaps(summary: RunSummary, records: Sequence[QuestionRecord]) -> Figure:
    """Per-question score gap (best expected unit minus top distractor) per candidate, as horizontal boxes.

    Dense (cosine) and lexical (BM25) candidates get separate axes because their scores are not comparable.
    """
    title = "Score gap: best expected unit vs top distractor"
    gaps = _gaps(records)
    groups = [
        (label, [c for c in summary.candidates if c.lexical == lexical and gaps.get(c.id)])
        for label, lexical in (("cosine similarity", False), ("BM25 score", True))
    ]
    groups = [(label, cands) for label, cands in groups if cands]
    if not groups:
        return _message_figure(title, "no score gaps recorded")
    n_rows = sum(len(cands) for _, cands in groups)
    fig, body = _new_figure(
        title,
        "right of zero = the best expected unit outscored every distractor; "
        "box = middle half of questions, line = median",
        (8.0, max(3.6, 1.6 + 0.42 * n_rows + 0.9 * len(groups))),
    )
    axes = body.subplots(len(groups), 1, squeeze=False, height_ratios=[len(c) + 1.2 for _, c in groups]).ravel()
    colours = candidate_colours(summary)
    rng = np.random.default_rng(0)  # fixed jitter: identical inputs give identical images
    for ax, (label, cands) in zip(axes, groups):
        data = [gaps[c.id] for c in cands]
        positions = list(range(len(cands)))
        boxes = ax.boxplot(
            data,
            positions=positions,
            orientation="horizontal",
            widths=0.6,
            patch_artist=True,
            showfliers=False,
            medianprops={"color": "black", "linewidth": 1.5},
        )
        for box, c in zip(boxes["boxes"], cands):
            box.set_facecolor(colours[c.id])
            box.set_alpha(0.55)
            box.set_gid(c.id)
        for pos, values, c in zip(positions, data, cands):
            jitter = rng.uniform(-0.18, 0.18, len(values))
            ax.scatter(values, pos + jitter, s=5, color=colours[c.id], alpha=0.5, linewidths=0, zorder=3)
        ax.axvline(0, color="black", linestyle="--", linewidth=1, zorder=1)
        ax.set_yticks(positions, [wrap_id(c.id) for c in cands], fontsize=9)
        ax.set_ylim(len(cands) - 0.4, -0.6)  # best-ranked candidate on top
        ax.set_xlabel(f"score gap ({label})")
        ax.grid(axis="x", alpha=0.3)
        right = ax.secondary_yaxis("right")
        right.set_yticks(
            positions, [f"{percent(np.mean(np.asarray(v) < 0))} < 0" for v in data], fontsize=8, color=NOTE_COLOUR
        )
        right.tick_params(length=0)
        right.set_ylabel("questions with gap < 0", fontsize=8, color=NOTE_COLOUR)
    return fig


# --- 4. quality against cost and latency ----------------------------------------------------------------------


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point dominates, for minimising x and maximising y.

    A point is dominated when another is at least as good on both axes and strictly better on one;
    identical points therefore all stay on the front.
    """
    front = []
    for i, (xi, yi) in enumerate(points):
        dominated = any(xj <= xi and yj >= yi and (xj < xi or yj > yi) for j, (xj, yj) in enumerate(points) if j != i)
        if not dominated:
            front.append(i)
    return front


def quality_vs_cost(summary: RunSummary, metric: str | None = None) -> Figure:
    """Headline quality against the cost of 1,000 queries; unknown costs are left out and counted."""
    costs = {c.id: c.ops.get("cost_per_1k_queries_usd") for c in summary.candidates}
    return _tradeoff(summary, metric, costs, "cost per 1,000 queries (USD)", "cost", usd_tick)


def quality_vs_latency(summary: RunSummary, metric: str | None = None) -> Figure:
    """Headline quality against p95 query latency (embedding the question plus searching the index)."""
    latencies = {c.id: end_to_end_p95_ms(c) for c in summary.candidates}
    return _tradeoff(summary, metric, latencies, "p95 query latency (ms): embed + search", "latency", ms_tick)


def _tradeoff(
    summary: RunSummary, metric: str | None, xs: dict[str, float | None], xlabel: str, what: str, formatter
) -> Figure:
    """Scatter of quality against ``xs`` with each point labelled and the Pareto front drawn as a step line."""
    metric = metric or metric_key("mrr", summary.k)
    title = f"Quality vs {what}: {metric}"
    shown = [c for c in summary.candidates if xs.get(c.id) is not None and c.quality.get(metric) is not None]
    left_out = len(summary.candidates) - len(shown)
    if not shown:
        return _message_figure(title, f"no candidate has both a known {what} and {metric}")
    better = "cheaper" if what == "cost" else "faster"
    note = (
        f"higher and further left is better; ringed points joined by the step line = Pareto front "
        f"(no other candidate is {better} and at least as good)"
    )
    if left_out:
        note += f"\n{_plural(left_out, 'candidate')} without a known {what} not shown"
    if len({xs[c.id] for c in shown}) == 1 and len(shown) > 1:
        note += f"\nevery candidate shown has the same {what}"
    fig, body = _new_figure(title, note)
    ax = body.subplots()
    points = [(float(xs[c.id]), float(c.quality[metric])) for c in shown]
    colours = candidate_colours(summary)
    ax.scatter(
        [x for x, _ in points],
        [y for _, y in points],
        s=60,
        c=[colours[c.id] for c in shown],
        edgecolors="white",
        linewidths=0.8,
        zorder=3,
        gid="candidates",
    )
    front = pareto_front(points)
    _draw_front(ax, [points[i] for i in front])
    _x_scale(ax, [x for x, _ in points], formatter)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"{metric} (higher is better)")
    ax.grid(alpha=0.3)
    ax.margins(x=0.15, y=0.12)
    _label_points(fig, ax, points, [c.id for c in shown], [colours[c.id] for c in shown], front)
    return fig


def _draw_front(ax, front: list[tuple[float, float]]) -> None:
    """Ring the front's points and join them with a step line: the best quality reachable at each cost."""
    front = sorted(front, key=lambda p: (p[0], -p[1]))
    ax.plot(
        [x for x, _ in front],
        [y for _, y in front],
        drawstyle="steps-post",
        color=FRONT_COLOUR,
        linewidth=1.2,
        zorder=2,
        gid="pareto-front",
    )
    ax.scatter(
        [x for x, _ in front],
        [y for _, y in front],
        s=170,
        facecolors="none",
        edgecolors=FRONT_COLOUR,
        linewidths=1.4,
        zorder=4,
        gid="pareto",
    )


def _x_scale(ax, xs: list[float], formatter) -> None:
    """Linear unless values span more than two orders of magnitude: log then, or symlog when zeros must plot."""
    positive = [x for x in xs if x > 0]
    if positive and max(positive) / min(positive) > 100:
        low, high = math.floor(math.log10(min(positive))), math.ceil(math.log10(max(positive)))
        subs = (1, 2, 5) if high - low <= 3 else (1,)  # 1-2-5 steps only while they cannot crowd
        ticks = [m * 10.0**e for e in range(low, high + 1) for m in subs]
        if len(positive) == len(xs):
            ax.set_xscale("log")
        else:  # symlog so that zero plots; no negative ticks, the left of zero is only margin
            ax.set_xscale("symlog", linthresh=min(positive), linscale=0.5)
            ticks = [0.0, *ticks]
        ax.xaxis.set_major_locator(FixedLocator(ticks))  # a LogLocator would clip the limits to positive values
        ax.xaxis.set_minor_locator(NullLocator())
    elif max(xs) == min(xs):  # one value (often: every candidate is free): centre it, with a single tick
        pad = abs(xs[0]) * 0.5 or 1.0
        ax.set_xlim(xs[0] - pad, xs[0] + pad)
        ax.set_xticks([xs[0]])
    ax.xaxis.set_major_formatter(FuncFormatter(formatter))


# Offsets (points) tried in turn for a point's label: beside it first, then further out with a leader line.
_NEAR_OFFSETS = [(8, 0), (-8, 0), (7, 6), (7, -6), (-7, 6), (-7, -6), (0, 10), (0, -10)]
_FAR_OFFSETS = [
    (14, 13),
    (14, -13),
    (-14, 13),
    (-14, -13),
    (22, 24),
    (22, -24),
    (-22, 24),
    (-22, -24),
    (0, 26),
    (0, -26),
    (34, 0),
    (-34, 0),
    (34, 36),
    (34, -36),
    (-34, 36),
    (-34, -36),
]

Rect = tuple[float, float, float, float]  # x0, y0, x1, y1 in display pixels


def _label_points(
    fig: Figure, ax, points: list[tuple[float, float]], ids: list[str], colours: list[str], front: list[int]
) -> None:
    """Label each point with its candidate id, greedily choosing a spot that covers no marker, label, leader
    line or the Pareto step line, stays inside the axes and reads as belonging to its own point.

    The layout is fixed first (draw without rendering) so extents are in final display coordinates; the
    labels are kept out of the layout so adding them does not move the axes again.
    """
    labels = [wrap_id(cid, LABEL_WIDTH) for cid in ids]
    fig.draw_without_rendering()
    _room_for_labels(ax, fig.canvas.get_renderer(), labels)
    placer = _LabelPlacer(ax, fig.canvas.get_renderer(), [tuple(p) for p in ax.transData.transform(points)])
    to_px = fig.dpi / 72
    for i, (x, y) in enumerate(placer.pixels):
        radius = (6.5 if i in front else 4.0) * to_px  # the Pareto ring is larger than the dot
        placer.taken.append((x - radius, y - radius, x + radius, y + radius))
    placer.block_polyline(_front_polyline(ax, points, front))
    for i in sorted(range(len(points)), key=lambda i: -points[i][1]):  # best first: it gets the nearest spot
        dx, dy = placer.place(i, points[i], labels[i])
        _annotation(ax, points[i], labels[i], colours[i], dx, dy, leader=(dx, dy) in _FAR_OFFSETS)


def _room_for_labels(ax, renderer, labels: list[str]) -> None:
    """Widen the x limits so the widest label fits beside the outermost points on either side."""
    probes = [ax.annotate(label, (0, 0), xycoords="axes fraction", fontsize=8) for label in labels]
    width = max(p.get_window_extent(renderer).width for p in probes) + 24  # plus the offset and box padding
    for probe in probes:
        probe.remove()
    share = min(0.3, width / ax.get_window_extent(renderer).width)
    scale = ax.xaxis.get_transform()
    lo, hi = (float(v) for v in scale.transform(np.array(ax.dataLim.intervalx)))
    if hi <= lo:  # a single x value: the limits set around it already leave room
        return
    span = (hi - lo) / (1 - 2 * share)
    ax.set_xlim(*scale.inverted().transform(np.array([lo - share * span, hi + share * span])))


def _front_polyline(ax, points: list[tuple[float, float]], front: list[int]) -> list[tuple[float, float]]:
    """The Pareto step line's corners in display pixels."""
    ordered = sorted((points[i] for i in front), key=lambda p: (p[0], -p[1]))
    corners = []
    for (x0, y0), (x1, _) in pairwise(ordered):
        corners += [(x0, y0), (x1, y0)]
    corners += ordered[-1:]
    return [tuple(p) for p in ax.transData.transform(corners)] if corners else []


class _LabelPlacer:
    """Greedy label placement: the first offset that costs nothing, else the cheapest one tried."""

    def __init__(self, ax, renderer, pixels: list[tuple[float, float]]):
        self.ax, self.renderer, self.pixels = ax, renderer, pixels
        box = ax.get_window_extent(renderer)
        self.frame: Rect = (box.x0, box.y0, box.x1, box.y1)
        self.taken: list[Rect] = []  # markers, placed labels, samples of lines
        self.labels: list[Rect] = []
        self.leaders: list[tuple[tuple[float, float], tuple[float, float]]] = []

    def block_polyline(self, corners: list[tuple[float, float]], step: float = 4.0) -> None:
        """Mark a line as occupied by small boxes along it."""
        for (x0, y0), (x1, y1) in pairwise(corners):
            n = max(1, int(math.hypot(x1 - x0, y1 - y0) / step))
            for t in np.linspace(0, 1, n + 1):
                x, y = x0 + t * (x1 - x0), y0 + t * (y1 - y0)
                self.taken.append((x - 1.5, y - 1.5, x + 1.5, y + 1.5))

    def place(self, i: int, xy: tuple[float, float], text: str) -> tuple[float, float]:
        best, best_cost, best_rect = _NEAR_OFFSETS[0], math.inf, None
        for offset in _NEAR_OFFSETS + _FAR_OFFSETS:
            rect = self._extent(xy, text, offset)
            cost = self._cost(i, rect, offset in _FAR_OFFSETS)
            if cost < best_cost:
                best, best_cost, best_rect = offset, cost, rect
            if cost == 0:
                break
        self.taken.append(best_rect)
        self.labels.append(best_rect)
        if best in _FAR_OFFSETS:
            self.leaders.append((self.pixels[i], _nearest_point(best_rect, self.pixels[i])))
        return best

    def _extent(self, xy: tuple[float, float], text: str, offset: tuple[float, float]) -> Rect:
        probe = _annotation(self.ax, xy, text, "black", *offset)
        box = probe.get_window_extent(self.renderer)
        probe.remove()
        return box.x0, box.y0, box.x1, box.y1

    def _cost(self, i: int, rect: Rect, leader: bool) -> float:
        area = (rect[2] - rect[0]) * (rect[3] - rect[1])
        cost = sum(_overlap(rect, t) for t in self.taken) + 4 * (area - _overlap(rect, self.frame))
        own = self.pixels[i]
        if leader:  # a leader line must not run through a label or cross another leader line
            line = (own, _nearest_point(rect, own))
            cost += area * sum(_segment_hits_rect(line, r) for r in self.labels)
            cost += area * sum(_segments_cross(line, other) for other in self.leaders)
            cost += 1.0  # a leader line is a last resort: prefer any clean spot beside the point
        else:  # without a leader line a reader pairs a label's near end with the nearest point
            end = _nearest_point(rect, own)
            near = math.dist(end, own)
            cost += 0.5 * area * sum(math.dist(end, p) < near for j, p in enumerate(self.pixels) if j != i)
        return cost + area * sum(_segment_hits_rect(line, rect) for line in self.leaders)


def _annotation(ax, xy: tuple[float, float], text: str, colour: str, dx: float, dy: float, leader: bool = False):
    ha = "left" if dx > 0 else "right" if dx < 0 else "center"
    va = "bottom" if dy > 0 else "top" if dy < 0 else "center"
    arrow = {"arrowstyle": "-", "color": colour, "linewidth": 0.8, "shrinkA": 0, "shrinkB": 2} if leader else None
    ann = ax.annotate(
        text,
        xy,
        xytext=(dx, dy),
        textcoords="offset points",
        ha=ha,
        va=va,
        fontsize=8,
        color="0.1",
        arrowprops=arrow,
        annotation_clip=False,
        zorder=5,
        bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.7},
    )
    ann.set_in_layout(False)
    return ann


def _nearest_point(rect: Rect, point: tuple[float, float]) -> tuple[float, float]:
    return min(max(point[0], rect[0]), rect[2]), min(max(point[1], rect[1]), rect[3])


def _overlap(a: Rect, b: Rect) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def _segment_hits_rect(segment, rect: Rect, samples: int = 24) -> bool:
    (x0, y0), (x1, y1) = segment
    return any(
        rect[0] < x0 + t * (x1 - x0) < rect[2] and rect[1] < y0 + t * (y1 - y0) < rect[3]
        for t in np.linspace(0.05, 0.95, samples)
    )


def _segments_cross(a, b) -> bool:
    def orient(p, q, r) -> float:
        return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])

    (p1, p2), (q1, q2) = a, b
    return orient(p1, p2, q1) * orient(p1, p2, q2) < 0 and orient(q1, q2, p1) * orient(q1, q2, p2) < 0


# --- 5. chunk sizes ------------------------------------------------------------------------------------------


def chunk_sizes(summary: RunSummary) -> Figure:
    """Token-size histogram per chunker, with the chunk count and p50/p95 marked."""
    title = "Chunk sizes per chunker"
    chunkers = {
        name: info
        for name, info in (summary.chunkers or {}).items()
        if (info or {}).get("token_histogram", {}).get("counts")
    }
    if not chunkers:
        return _message_figure(title, "no chunk sizes recorded")
    rows, cols = _grid(len(chunkers))
    fig, body = _new_figure(
        title,
        "number of chunks by size in tokens; dashed = median (p50), dotted = p95",
        (8.0, max(3.6, 1.2 + 2.0 * rows)),
    )
    axes = body.subplots(rows, cols, sharex=True, squeeze=False).ravel()
    for ax, (name, info) in zip(axes, chunkers.items()):
        hist, sizes = info["token_histogram"], info.get("token_sizes", {})
        ax.stairs(hist["counts"], hist["edges"], fill=True, color="#4c72b0", alpha=0.75, gid=name)
        for key, style in (("p50", "--"), ("p95", ":")):
            if sizes.get(key) is not None:
                ax.axvline(sizes[key], color="black", linestyle=style, linewidth=1)
        stats = [f"{info.get('chunks', sum(hist['counts'])):,} chunks"]
        if info.get("tokens_sampled"):
            stats[0] += f" ({info['tokens_sampled']:,} sampled)"
        stats += [f"{key} {sizes[key]:.0f}" for key in ("p50", "p95") if sizes.get(key) is not None]
        ax.set_title(f"{wrap_id(name)}\n{' · '.join(stats)} tokens", fontsize=9)
        ax.tick_params(labelbottom=True, labelsize=8)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[len(chunkers) :]:
        ax.set_axis_off()
    body.supxlabel("chunk size (tokens)", fontsize=10)
    body.supylabel("chunks", fontsize=10)
    return fig


# --- 6. first relevant rank per question and candidate -------------------------------------------------------


def rank_matrix_heatmap(
    questions: list[str], candidates: list[str], matrix: list[list[int | None]], depth: int, k: int
) -> Figure:
    """Questions × candidates heatmap of the first relevant rank: darker = found higher, hatched red = miss."""
    title = "Rank matrix: first relevant rank per question"
    if not questions or not candidates:
        return _message_figure(title, "no questions to show")
    n_rows, labelled = len(questions), len(questions) <= MAX_ROW_LABELS
    width = min(16.0, max(6.0, 2.4 + 0.5 * len(candidates) + (3.4 if labelled else 0)))
    # candidate ids run at 45° below the cells: room for the longest, on top of the cells' own height
    id_height = max(len(c) for c in candidates) * 8 * 0.6 / 72 * math.sin(math.radians(45))
    height = (max(4.0, 1.6 + 0.15 * n_rows) if labelled else 8.0) + 1.2 + min(4.0, id_height)
    fig, body = _new_figure(
        title,
        f"darker = found higher in the ranking; dotted line on the colour bar = k ({k}); hatched red = miss",
        (width, height),
    )
    ax = body.subplots()
    values = np.ma.masked_invalid(
        np.array([[np.nan if r is None else min(r, depth) for r in row] for row in matrix], dtype=float)
    )
    blues = colormaps["Blues"]
    # rank 1 darkest, depth lightest; log spacing gives the top ranks, which matter most, the widest contrast
    shades = 0.95 - 0.75 * np.log(np.arange(1, depth + 1)) / math.log(max(depth, 2))
    cmap = ListedColormap([blues(v) for v in shades], bad=(0, 0, 0, 0))  # misses show the hatched background
    norm = BoundaryNorm(np.arange(0.5, depth + 1.5), cmap.N)
    ax.patch.set_facecolor(MISS_COLOUR)
    ax.patch.set_hatch(MISS_HATCH)
    ax.patch.set_edgecolor("white")
    image = ax.imshow(values, cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(candidates)), candidates, rotation=45, ha="right", rotation_mode="anchor", fontsize=8)
    if labelled:
        ax.set_yticks(range(n_rows), [textwrap.shorten(q, 60, placeholder="…") for q in questions], fontsize=8)
    else:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{int(y) + 1}"))
    ax.set_ylabel("questions (most disagreement first)")
    ax.set_xlabel("candidates")
    ticks = sorted({1, k, depth, *range(5, depth, 5)})
    bar = body.colorbar(image, ax=ax, ticks=ticks, fraction=0.05 if labelled else 0.08, pad=0.02)
    bar.ax.invert_yaxis()  # rank 1 at the top, like the best row of a ranking
    bar.ax.axhline(k + 0.5, color="black", linestyle=":", linewidth=1.2)
    bar.set_label("rank of the first relevant unit", fontsize=9)
    bar.ax.tick_params(labelsize=8)
    body.legend(
        handles=[
            Patch(facecolor=MISS_COLOUR, hatch=MISS_HATCH, edgecolor="white", label=f"miss (none in top {depth})")
        ],
        loc="outside lower right",
        fontsize=9,
        frameon=False,
    )
    return fig


# --- history: one metric over earlier runs of the same corpus and goldset ------------------------------------


def history_trends(summary: RunSummary, trends: Sequence, metric: str) -> Figure:
    """``metric`` of every candidate over the runs in ``trends`` (``bench.results.history.CandidateTrend``), oldest
    first; x is the run, labelled by its start date."""
    title = f"History: {metric} over earlier runs of this corpus and goldset"
    shown = [t for t in trends if len(t.points) >= 2]
    if not shown:
        return _message_figure(title, "fewer than two runs of this corpus and goldset: no history yet")
    runs = sorted({p.run_id for t in shown for p in t.points})
    fig, body = _new_figure(title, "one point per run (same corpus and goldset fingerprints); higher is better")
    ax = body.subplots()
    styles = candidate_styles(summary)
    for t in shown:
        st = styles.get(t.candidate)
        xs = [runs.index(p.run_id) for p in t.points]
        ax.plot(
            xs,
            [p.value for p in t.points],
            color=st.colour if st else "0.5",
            linestyle=st.linestyle if st else "-",
            marker=st.marker if st else "o",
            markersize=3.5,
            linewidth=1.6,
            label=wrap_id(t.candidate),
            gid=t.candidate,
        )
    ax.set_xticks(range(len(runs)), [r[:8] + "\n" + r[9:15] for r in runs], fontsize=7)
    ax.set_xlabel("run (UTC date and time)")
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3)
    _legend_outside(fig, body, ax)
    return fig


# --- 7. all figures, and writing them ------------------------------------------------------------------------


_BUILDERS = {  # name → figure from (summary, records, rank_matrix); the costliest to draw first
    "first_rank": lambda s, r, m: first_rank_distribution(s),
    "rank_matrix": lambda s, r, m: rank_matrix_heatmap(*m, s.depth, s.k),
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
