"""The charts of a run's quality: hit rate by cutoff, where the first relevant unit landed, score gaps,
chunk sizes, the rank matrix, one metric over earlier runs of the same corpus and goldset, and what
questions typed as people type them cost."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator

from bench.core.measures import MetricName
from bench.core.records import QuestionRecord
from bench.core.summary import CandidateResult, RunSummary
from bench.evaluation.robustness import ROBUSTNESS, shown
from bench.formatting import percent
from bench.report.plot_base import (
    NOTE_COLOUR,
    candidate_colours,
    candidate_styles,
    grid,
    legend_outside,
    message_figure,
    new_figure,
    panels_width,
    short_label,
    wrap_id,
)
from bench.text.scripts import display_width

MISS_COLOUR = "#8b1a1a"  # dark red: the same "miss" in the first-rank bars and the rank matrix
MISS_HATCH = "////"
PANEL_ID_WIDTH = 26  # characters before a candidate id wraps in the titles of small multiples
MAX_ROW_LABELS = 60  # more question rows than this and per-row labels would be unreadable


# --- hit rate by cutoff ---------------------------------------------------------------------------------------


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
        return message_figure(title, "no candidates in this run")
    k, depth = summary.k, summary.depth
    fig, body = new_figure(title, "share of questions with a relevant unit in the top N results; higher is better")
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
    legend_outside(fig, body, ax)
    return fig


# --- where the first relevant unit landed ---------------------------------------------------------------------


def _rank_shares(candidate: CandidateResult, depth: int) -> tuple[list[float], float]:
    """Share of questions whose first relevant unit was at rank 1…depth, and the share of misses."""
    counts = candidate.diagnostics.first_relevant_rank or {}
    total = sum(counts.values()) or 1
    return [counts.get(str(r), 0) / total for r in range(1, depth + 1)], counts.get("miss", 0) / total


def first_rank_distribution(summary: RunSummary) -> Figure:
    """Small multiples, one per candidate: share of questions by first relevant rank, plus a hatched miss bar."""
    title = "Where the first relevant unit landed"
    candidates = summary.candidates
    if not candidates:
        return message_figure(title, "no candidates in this run")
    k, depth = summary.k, summary.depth
    rows, cols = grid(len(candidates))
    titles = [wrap_id(c.id, PANEL_ID_WIDTH) for c in candidates]
    width = panels_width(titles, cols)
    fig, body = new_figure(
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


# --- score gaps ----------------------------------------------------------------------------------------------


def _gaps(records: Sequence[QuestionRecord]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for rec in records:
        gap = rec.diagnostics.score_gap
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
        return message_figure(title, "no score gaps recorded")
    n_rows = sum(len(cands) for _, cands in groups)
    fig, body = new_figure(
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
            positions,
            [f"{percent(float(np.mean(np.asarray(v) < 0)))} < 0" for v in data],
            fontsize=8,
            color=NOTE_COLOUR,
        )
        right.tick_params(length=0)
        right.set_ylabel("questions with gap < 0", fontsize=8, color=NOTE_COLOUR)
    return fig


# --- chunk sizes ---------------------------------------------------------------------------------------------


def chunk_sizes(summary: RunSummary) -> Figure:
    """Token-size histogram per chunker, with the chunk count and p50/p95 marked."""
    title = "Chunk sizes per chunker"
    chunkers = {
        name: info
        for name, info in (summary.chunkers or {}).items()
        if (info or {}).get("token_histogram", {}).get("counts")
    }
    if not chunkers:
        return message_figure(title, "no chunk sizes recorded")
    rows, cols = grid(len(chunkers))
    fig, body = new_figure(
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


# --- first relevant rank per question and candidate ----------------------------------------------------------


def rank_matrix_heatmap(
    questions: list[str], candidates: list[str], matrix: list[list[int | None]], depth: int, k: int
) -> Figure:
    """Questions × candidates heatmap of the first relevant rank: darker = found higher, hatched red = miss."""
    title = "Rank matrix: first relevant rank per question"
    if not questions or not candidates:
        return message_figure(title, "no questions to show")
    n_rows, labelled = len(questions), len(questions) <= MAX_ROW_LABELS
    width = min(16.0, max(6.0, 2.4 + 0.5 * len(candidates) + (3.4 if labelled else 0)))
    # candidate ids run at 45° below the cells: room for the longest, on top of the cells' own height
    id_height = max(display_width(c) for c in candidates) * 8 * 0.6 / 72 * math.sin(math.radians(45))
    height = (max(4.0, 1.6 + 0.15 * n_rows) if labelled else 8.0) + 1.2 + min(4.0, id_height)
    fig, body = new_figure(
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
        ax.set_yticks(range(n_rows), [short_label(q, 60) for q in questions], fontsize=8)
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
        return message_figure(title, "fewer than two runs of this corpus and goldset: no history yet")
    runs = sorted({p.run_id for t in shown for p in t.points})
    fig, body = new_figure(title, "one point per run (same corpus and goldset fingerprints); higher is better")
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
    legend_outside(fig, body, ax)
    return fig


# --- robustness to real typing --------------------------------------------------------------------------------


def robustness_drops(summary: RunSummary) -> Figure:
    """Per candidate compared, each perturbation's change of the ranking metric: bars left of zero are losses."""
    title = "Robustness to real typing"
    rows = shown(summary.candidates)
    if not rows:
        return message_figure(title, "no perturbed questions in this run")
    kinds = [key for key in rows[0].extra[ROBUSTNESS] if key != "metric"]
    metric = rows[0].extra[ROBUSTNESS]["metric"]
    fig, body = new_figure(
        title,
        f"{metric} as typed minus as written, per perturbation; * = paired Wilcoxon p < 0.05",
        (8.0, max(3.6, 1.4 + 0.32 * len(rows) * len(kinds))),
    )
    ax = body.subplots()
    height = 0.8 / len(kinds)
    colours = ("#c44e52", "#4c72b0", "#55a868", "#8172b2")
    for j, kind in enumerate(kinds):
        changes = [-(c.extra[ROBUSTNESS][kind]["drop"] or 0.0) for c in rows]
        ys = [i + j * height for i in range(len(rows))]
        ax.barh(ys, changes, height=height * 0.9, color=colours[j % len(colours)], label=kind, gid=kind)
        for y, value, c in zip(ys, changes, rows):
            if c.extra[ROBUSTNESS][kind]["wilcoxon_p"] < 0.05:
                ax.text(value, y, " *" if value >= 0 else "* ", va="center", ha="left" if value >= 0 else "right")
    ax.set_yticks([i + height * (len(kinds) - 1) / 2 for i in range(len(rows))])
    ax.set_yticklabels([short_label(c.id, 40) for c in rows], fontsize=8)
    ax.invert_yaxis()
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel(f"change of {metric}")
    ax.grid(axis="x", alpha=0.3)
    legend_outside(fig, body, ax)
    return fig
