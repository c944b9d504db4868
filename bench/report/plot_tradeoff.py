"""Quality against cost and against latency: one point per candidate, the Pareto front as a step line,
and each point labelled with its candidate id where the label covers nothing else."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import cast

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Annotation
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from bench.core.measures import metric_key
from bench.core.summary import RunSummary
from bench.formatting import ms_tick, usd_tick
from bench.report import ops_view
from bench.report.plot_base import candidate_colours, message_figure, new_figure, plural, wrap_id

TickFormat = Callable[[float, int | None], str]  # a tick label from its value and position, as FuncFormatter calls it

FRONT_COLOUR = "0.15"
LABEL_WIDTH = 30  # characters before a long candidate id wraps beside a point, where width is scarce


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
    costs = {c.id: c.ops.cost.cost_per_1k_queries_usd for c in summary.candidates}
    return _tradeoff(summary, metric, costs, "cost per 1,000 queries (USD)", "cost", usd_tick)


def quality_vs_latency(summary: RunSummary, metric: str | None = None) -> Figure:
    """Headline quality against p95 end-to-end latency: embedding the question, searching the index, and
    reranking when the pipeline reranks."""
    latencies = {c.id: ops_view.latency(c, "p95") for c in summary.candidates}
    label = "p95 end-to-end latency (ms): query embedding + search (+ rerank)"
    return _tradeoff(summary, metric, latencies, label, "latency", ms_tick)


def _tradeoff(
    summary: RunSummary, metric: str | None, xs: dict[str, float | None], xlabel: str, what: str, formatter: TickFormat
) -> Figure:
    """Scatter of quality against ``xs`` with each point labelled and the Pareto front drawn as a step line."""
    metric = metric or metric_key("mrr", summary.k)
    title = f"Quality vs {what}: {metric}"
    shown = [c for c in summary.candidates if xs.get(c.id) is not None and c.quality.get(metric) is not None]
    left_out = len(summary.candidates) - len(shown)
    if not shown:
        return message_figure(title, f"no candidate has both a known {what} and {metric}")
    better = "cheaper" if what == "cost" else "faster"
    note = (
        f"higher and further left is better; ringed points joined by the step line = Pareto front "
        f"(no other candidate is {better} and at least as good)"
    )
    if left_out:
        note += f"\n{plural(left_out, 'candidate')} without a known {what} not shown"
    if len({xs[c.id] for c in shown}) == 1 and len(shown) > 1:
        note += f"\nevery candidate shown has the same {what}"
    fig, body = new_figure(title, note)
    ax = body.subplots()
    points = [(float(cast(float, xs[c.id])), float(c.quality[metric])) for c in shown]  # shown: x is known
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


def _draw_front(ax: Axes, front: list[tuple[float, float]]) -> None:
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


def _x_scale(ax: Axes, xs: list[float], formatter: TickFormat) -> None:
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
Point = tuple[float, float]
Segment = tuple[Point, Point]


def _label_points(
    fig: Figure, ax: Axes, points: list[tuple[float, float]], ids: list[str], colours: list[str], front: list[int]
) -> None:
    """Label each point with its candidate id, greedily choosing a spot that covers no marker, label, leader
    line or the Pareto step line, stays inside the axes and reads as belonging to its own point.

    The layout is fixed first (draw without rendering) so extents are in final display coordinates; the
    labels are kept out of the layout so adding them does not move the axes again.
    """
    labels = [wrap_id(cid, LABEL_WIDTH) for cid in ids]
    fig.draw_without_rendering()
    canvas = cast(FigureCanvasAgg, fig.canvas)  # every figure has its own Agg canvas
    _room_for_labels(ax, canvas.get_renderer(), labels)
    placer = _LabelPlacer(ax, canvas.get_renderer(), [tuple(p) for p in ax.transData.transform(points)])
    to_px = fig.dpi / 72
    for i, (x, y) in enumerate(placer.pixels):
        radius = (6.5 if i in front else 4.0) * to_px  # the Pareto ring is larger than the dot
        placer.taken.append((x - radius, y - radius, x + radius, y + radius))
    placer.block_polyline(_front_polyline(ax, points, front))
    for i in sorted(range(len(points)), key=lambda i: -points[i][1]):  # best first: it gets the nearest spot
        dx, dy = placer.place(i, points[i], labels[i])
        _annotation(ax, points[i], labels[i], colours[i], dx, dy, leader=(dx, dy) in _FAR_OFFSETS)


def _room_for_labels(ax: Axes, renderer: RendererBase, labels: list[str]) -> None:
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


def _front_polyline(ax: Axes, points: list[tuple[float, float]], front: list[int]) -> list[tuple[float, float]]:
    """The Pareto step line's corners in display pixels."""
    ordered = sorted((points[i] for i in front), key=lambda p: (p[0], -p[1]))
    corners = []
    for (x0, y0), (x1, _) in pairwise(ordered):
        corners += [(x0, y0), (x1, y0)]
    corners += ordered[-1:]
    return [tuple(p) for p in ax.transData.transform(corners)] if corners else []


class _LabelPlacer:
    """Greedy label placement: the first offset that costs nothing, else the cheapest one tried."""

    def __init__(self, ax: Axes, renderer: RendererBase, pixels: list[tuple[float, float]]) -> None:
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
        if best_rect is None:  # the first offset tried always costs less than infinity
            raise AssertionError(f"no place found for the label of point {i}")
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


def _annotation(
    ax: Axes, xy: tuple[float, float], text: str, colour: str, dx: float, dy: float, leader: bool = False
) -> Annotation:
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


def _segment_hits_rect(segment: Segment, rect: Rect, samples: int = 24) -> bool:
    (x0, y0), (x1, y1) = segment
    return any(
        rect[0] < x0 + t * (x1 - x0) < rect[2] and rect[1] < y0 + t * (y1 - y0) < rect[3]
        for t in np.linspace(0.05, 0.95, samples)
    )


def _segments_cross(a: Segment, b: Segment) -> bool:
    def orient(p: Point, q: Point, r: Point) -> float:
        return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])

    (p1, p2), (q1, q2) = a, b
    return orient(p1, p2, q1) * orient(p1, p2, q2) < 0 and orient(q1, q2, p1) * orient(q1, q2, p2) < 0
