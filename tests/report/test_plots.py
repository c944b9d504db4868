"""The run's plots (bench.report.plots and the plot_* modules): each figure carries the numbers it claims,
colours agree across figures, and the PNGs are real, non-blank and byte-for-byte reproducible. No model is
loaded."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from matplotlib.colors import to_hex
from matplotlib.image import AxesImage, imread
from matplotlib.text import Text

from bench.core.operating import Operating
from bench.core.records import QuestionRecord
from bench.core.summary import CandidateResult, RunSummary
from bench.report import plot_quality, plot_tradeoff, plots
from bench.report.plot_base import candidate_colours, candidate_styles
from bench.report.plot_tradeoff import pareto_front

K, DEPTH, N_QUESTIONS = 3, 6, 10

# first relevant rank per question (None = miss within depth), cost per 1k queries, (embed, search) p95 ms
CANDIDATES = {
    "dense-a/tok64/flat": ([1, 1, 2, 1, 3, None, 1, 2, 1, 4], 0.0, (10.0, 1.0)),
    "dense-b/tok64/hnsw": ([2, 1, 1, None, 5, None, 3, 1, 6, 1], 0.02, (3.0, 0.5)),
    "api/tok64/flat": ([1, 2, 1, 1, 1, None, 2, 1, 1, 1], None, (50.0, None)),
    "bm25/tok64/inverted": ([None, 4, 1, 2, None, None, 1, 6, 2, 3], 0.0, (None, 0.2)),
}


def _candidate(cid: str, ranks: list[int | None], cost: float | None, latency: tuple, rank: int) -> CandidateResult:
    model, chunker, index = cid.split("/")
    hits = [r for r in ranks if r is not None]
    counts = {str(r): sum(h == r for h in hits) for r in range(1, DEPTH + 1)} | {"miss": ranks.count(None)}
    curve = {f"hit_rate@{n}": sum(h <= n for h in hits) / len(ranks) for n in range(1, DEPTH + 1)}
    mrr = sum(1 / r for r in hits if r <= K) / len(ranks)
    return CandidateResult(
        id=cid,
        model=model,
        chunker=chunker,
        index=index,
        search=None,
        lexical=index == "inverted",
        rank=rank,
        quality={f"mrr@{K}": mrr, f"hit_rate@{K}": curve[f"hit_rate@{K}"]},
        curve=curve,
        diagnostics={"first_relevant_rank": counts},
        ops=Operating.from_dict(
            {"cost_per_1k_queries_usd": cost, "query_embed_ms_p95": latency[0], "search_ms_p95": latency[1]}
        ),
    )


def make_run(candidates: dict = CANDIDATES) -> tuple[RunSummary, list[QuestionRecord]]:
    """A summary in rank order (best mrr first) and its per-question records."""
    built = [_candidate(cid, *spec, rank=0) for cid, spec in candidates.items()]
    built.sort(key=lambda c: -c.quality[f"mrr@{K}"])
    built = [dataclasses.replace(c, rank=rank) for rank, c in enumerate(built, start=1)]
    edges = list(np.linspace(10, 64, 11))
    summary = RunSummary(
        k=K,
        depth=DEPTH,
        unit="chunk",
        ndcg_gain="exponential",
        min_overlap=0.5,
        candidates=built,
        chunkers={
            "tok64": {
                "chunks": 40,
                "tokens": 2300,
                "token_sizes": {"min": 10, "p50": 60, "p95": 64, "max": 64, "mean": 57.5},
                "token_histogram": {"edges": edges, "counts": [1, 0, 2, 1, 0, 1, 2, 3, 5, 25]},
            }
        },
    )
    rng = np.random.default_rng(7)
    records = []
    for cid, (ranks, _, _) in candidates.items():
        for q, first in enumerate(ranks):
            scale = 5.0 if cid.startswith("bm25") else 0.2
            gap = None if cid.startswith("api") else float(rng.normal(0.02, scale))
            records.append(
                QuestionRecord(
                    candidate=cid,
                    question_id=f"q{q:02d}",
                    question=f"question number {q}?",
                    tags=[],
                    ranking=[],
                    expected=[],
                    evidence=[],
                    first_relevant_rank=first,
                    metrics={},
                    diagnostics={"score_gap": gap},
                )
            )
    return summary, records


@pytest.fixture(scope="module")
def run() -> tuple[RunSummary, list[QuestionRecord]]:
    return make_run()


@pytest.fixture(scope="module")
def figs(run) -> dict:
    """Every figure of the small run, built once: building is most of these tests' time."""
    summary, records = run
    return plots.figures(summary, records, rank_matrix(summary, records))


def texts(fig) -> list[str]:
    """Every piece of text the figure draws, with wrapped candidate ids joined back up."""
    fig.draw_without_rendering()
    return [t.get_text().replace("\n", "") for t in fig.findobj(Text) if t.get_text()]


def by_gid(fig, gid: str) -> list:
    return [a for a in fig.findobj(lambda a: a.get_gid() == gid)]


def rank_matrix(
    summary: RunSummary, records: list[QuestionRecord]
) -> tuple[list[str], list[str], list[list[int | None]]]:
    ids = [c.id for c in summary.candidates]
    first = {(r.candidate, r.question_id): r.first_relevant_rank for r in records}
    questions = sorted({r.question_id for r in records})
    return questions, ids, [[first[(c, q)] for c in ids] for q in questions]


# --- the Pareto front ------------------------------------------------------------------------------------------


def test_pareto_front_excludes_dominated_points():
    points = [(1.0, 0.5), (2.0, 0.7), (2.0, 0.6), (3.0, 0.7), (0.5, 0.2), (4.0, 0.9)]
    # (2, .6) loses to (2, .7) on quality alone; (3, .7) costs more than (2, .7) for the same quality
    assert pareto_front(points) == [0, 1, 4, 5]


def test_pareto_front_ties_single_point_and_empty():
    assert pareto_front([(1.0, 0.5), (1.0, 0.5)]) == [0, 1]  # identical: neither is better on any axis
    assert pareto_front([(0.0, 0.3), (0.0, 0.5)]) == [1]  # same cost, lower quality: dominated
    assert pareto_front([(5.0, 0.1)]) == [0]
    assert pareto_front([]) == []


# --- colours -----------------------------------------------------------------------------------------------------


def test_colours_follow_rank_order_and_stay_distinct():
    summary, _ = make_run()
    colours = candidate_colours(summary)
    assert list(colours) == [c.id for c in summary.candidates]
    assert list(colours.values()) == ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]  # tab10 in rank order
    plenty = [dataclasses.replace(summary.candidates[0], id=f"m{i}") for i in range(25)]
    many = dataclasses.replace(summary, candidates=plenty)
    assert len(set(candidate_colours(dataclasses.replace(summary, candidates=plenty[:20])).values())) == 20
    styles = candidate_styles(many)
    assert len({(s.colour, s.linestyle, s.marker) for s in styles.values()}) == 25  # cycles change line and marker


# --- each figure carries its data --------------------------------------------------------------------------------


def test_hit_rate_curves_plot_every_candidates_curve(run, figs):
    summary, _ = run
    fig = figs["hit_rate_curves"]
    colours = candidate_colours(summary)
    ax = fig.axes[0]
    lines = {line.get_gid(): line for line in ax.get_lines() if line.get_gid() in colours}
    assert len(lines) == len(summary.candidates)
    for c in summary.candidates:
        line = lines[c.id]
        assert list(line.get_xdata()) == list(range(1, DEPTH + 1))
        assert np.allclose(line.get_ydata(), [c.curve[f"hit_rate@{n}"] for n in range(1, DEPTH + 1)])
        assert to_hex(line.get_color()) == colours[c.id]
    k_line = by_gid(fig, "k")[0]
    assert list(k_line.get_xdata()) == [K, K] and k_line.get_linestyle() == ":"
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] >= 1


def test_first_rank_bars_are_shares_with_a_distinct_miss_bar(run, figs):
    summary, _ = run
    fig = figs["first_rank"]
    for c in summary.candidates:
        ax = next(a for a in fig.axes if a.get_gid() == c.id)
        counts = c.diagnostics["first_relevant_rank"]
        ranks = [p for p in ax.patches if p.get_gid() == c.id]
        assert [p.get_height() for p in ranks] == pytest.approx(
            [counts[str(r)] / N_QUESTIONS for r in range(1, DEPTH + 1)]
        )
        (miss,) = [p for p in ax.patches if p.get_gid() == "miss"]
        assert miss.get_height() == pytest.approx(counts["miss"] / N_QUESTIONS)
        assert miss.get_hatch() and to_hex(miss.get_facecolor()) != candidate_colours(summary)[c.id]
        assert miss.get_x() > max(p.get_x() for p in ranks)


def test_score_gaps_split_dense_from_lexical_and_skip_candidates_without_gaps(run, figs):
    summary, _ = run
    fig = figs["score_gaps"]
    boxes = {b.get_gid(): b for b in fig.findobj(lambda a: a.get_gid() in candidate_colours(summary))}
    assert set(boxes) == {"dense-a/tok64/flat", "dense-b/tok64/hnsw", "bm25/tok64/inverted"}  # api has no gaps
    dense_ax, lexical_ax = boxes["dense-a/tok64/flat"].axes, boxes["bm25/tok64/inverted"].axes
    assert dense_ax is boxes["dense-b/tok64/hnsw"].axes and dense_ax is not lexical_ax
    assert "BM25" in lexical_ax.get_xlabel() and "cosine" in dense_ax.get_xlabel()
    zero = [line for line in dense_ax.get_lines() if list(line.get_xdata()) == [0, 0]]
    assert zero, "the zero line is drawn"
    assert any("right of zero" in t for t in texts(fig))


def test_score_gaps_without_any_gap_says_so(run):
    summary, records = run
    fig = plot_quality.score_gaps(summary, [dataclasses.replace(r, diagnostics={"score_gap": None}) for r in records])
    assert "no score gaps recorded" in texts(fig)


def test_quality_vs_cost_plots_known_costs_and_counts_the_rest(run, figs):
    summary, _ = run
    fig = figs["quality_vs_cost"]
    known = [c for c in summary.candidates if c.ops["cost_per_1k_queries_usd"] is not None]
    (dots,) = by_gid(fig, "candidates")
    expected = [(c.ops["cost_per_1k_queries_usd"], c.quality[f"mrr@{K}"]) for c in known]
    assert np.allclose(dots.get_offsets(), expected)
    colours = candidate_colours(summary)
    assert [to_hex(f) for f in dots.get_facecolors()] == [colours[c.id] for c in known]
    all_text = texts(fig)
    assert any("1 candidate without a known cost" in t for t in all_text)
    assert {c.id for c in known} <= set(all_text)  # each point labelled
    assert "api/tok64/flat" not in all_text
    (front,) = by_gid(fig, "pareto")
    front_points = [expected[i] for i in pareto_front(expected)]
    assert sorted(map(tuple, front.get_offsets().tolist())) == sorted(front_points)
    assert fig.axes[0].get_xlim()[0] < 0 < fig.axes[0].get_xlim()[1]  # zero costs are on the chart


def test_quality_vs_latency_sums_embed_and_search(run, figs):
    summary, _ = run
    fig = figs["quality_vs_latency"]
    (dots,) = by_gid(fig, "candidates")
    latency = {
        "dense-a/tok64/flat": 11.0,
        "dense-b/tok64/hnsw": 3.5,
        "api/tok64/flat": 50.0,
        "bm25/tok64/inverted": 0.2,
    }
    expected = [(latency[c.id], c.quality[f"mrr@{K}"]) for c in summary.candidates]
    assert np.allclose(dots.get_offsets(), expected)
    assert fig.axes[0].get_xscale() == "log"  # 0.2 to 50 ms spans more than two orders of magnitude
    (line,) = by_gid(fig, "pareto-front")
    assert line.get_drawstyle() == "steps-post"


def test_cost_axis_spanning_orders_of_magnitude_still_plots_zero(run):
    summary, _ = run
    costly = [
        dataclasses.replace(c, ops=c.ops.merged({"cost_per_1k_queries_usd": cost}))
        for c, cost in zip(summary.candidates, [0.0, 0.001, 0.5, 2.0])
    ]
    fig = plot_tradeoff.quality_vs_cost(dataclasses.replace(summary, candidates=costly))
    ax = fig.axes[0]
    assert ax.get_xscale() == "symlog" and ax.get_xlim()[0] <= 0
    assert len(by_gid(fig, "candidates")[0].get_offsets()) == 4


def test_rank_matrix_marks_misses_and_has_one_cell_per_question_and_candidate(run, figs):
    summary, records = run
    _, ids, matrix = rank_matrix(summary, records)
    fig = figs["rank_matrix"]
    (image,) = [a for a in fig.axes[0].get_images() if isinstance(a, AxesImage)]
    array = image.get_array()
    assert array.shape == (N_QUESTIONS, len(ids))
    misses = np.array([[r is None for r in row] for row in matrix])
    assert (np.ma.getmaskarray(array) == misses).all()
    for i, row in enumerate(matrix):
        for j, r in enumerate(row):
            if r is not None:
                assert array[i, j] == r
    norm = image.norm
    assert image.cmap(norm(1)) != image.cmap(norm(DEPTH))
    assert sum(image.cmap(norm(1))[:3]) < sum(image.cmap(norm(DEPTH))[:3])  # rank 1 is the strongest colour
    assert any(t.startswith("miss") for t in texts(fig))
    assert len(fig.axes) == 2  # the heatmap and its colour bar


def test_rank_matrix_with_many_questions_hides_row_labels():
    questions = [f"a long question text number {i} about something" for i in range(175)]
    matrix = [[(i + j) % 8 or None for j in range(3)] for i in range(175)]
    fig = plot_quality.rank_matrix_heatmap(questions, ["a", "b", "c"], matrix, depth=7, k=3)
    ax = fig.axes[0]
    assert ax.get_ylabel() == "questions (most disagreement first)"
    assert not any("long question" in t for t in texts(fig))
    assert ax.get_images()[0].get_array().shape == (175, 3)


def test_chunk_sizes_histogram_and_missing_chunkers(run, figs):
    summary, _ = run
    fig = figs["chunk_sizes"]
    (stairs,) = by_gid(fig, "tok64")
    values, edges, _ = stairs.get_data()
    assert list(values) == [1, 0, 2, 1, 0, 1, 2, 3, 5, 25] and len(edges) == 11
    assert any("40 chunks" in t and "p50 60" in t and "p95 64" in t for t in texts(fig))
    assert "no chunk sizes recorded" in texts(plot_quality.chunk_sizes(dataclasses.replace(summary, chunkers={})))
    assert "no chunk sizes recorded" in texts(plot_quality.chunk_sizes(dataclasses.replace(summary, chunkers=None)))


def test_a_candidate_has_one_colour_in_every_figure(run, figs):
    summary, _ = run
    cid = "bm25/tok64/inverted"
    colour = candidate_colours(summary)[cid]
    curve = next(line for line in figs["hit_rate_curves"].axes[0].get_lines() if line.get_gid() == cid)
    bars = [p for p in figs["first_rank"].findobj(lambda a: a.get_gid() == cid) if hasattr(p, "get_height")]
    box = figs["score_gaps"].findobj(lambda a: a.get_gid() == cid)[0]
    dots = by_gid(figs["quality_vs_latency"], "candidates")[0]
    position = [c.id for c in summary.candidates].index(cid)
    assert to_hex(curve.get_color()) == colour
    assert {to_hex(b.get_facecolor()) for b in bars} == {colour}
    assert to_hex(box.get_facecolor(), keep_alpha=False) == colour
    assert to_hex(dots.get_facecolors()[position]) == colour


# --- writing PNGs ------------------------------------------------------------------------------------------------


def test_write_plots_writes_real_non_blank_reproducible_pngs(run, tmp_path):
    summary, records = run
    matrix = rank_matrix(summary, records)
    first = plots.write_plots(tmp_path / "a", summary, records, matrix)
    names = {
        "hit_rate_curves.png",
        "first_rank.png",
        "score_gaps.png",
        "quality_vs_cost.png",
        "quality_vs_latency.png",
        "chunk_sizes.png",
        "rank_matrix.png",
    }
    assert {p.name for p in first.values()} == names
    assert {p.name for p in (tmp_path / "a").iterdir()} == names  # no temporary files left behind
    for path in first.values():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert imread(path)[..., :3].std() > 0.05, f"{path.name} looks blank"
    second = plots.write_plots(tmp_path / "b", summary, records, matrix)
    for name, path in first.items():
        assert path.read_bytes() == second[name].read_bytes(), f"{path.name} differs between two writes"


def test_write_plots_without_rank_matrix_leaves_it_out(run, tmp_path, monkeypatch):
    summary, records = run
    monkeypatch.setattr(plots, "png_bytes", lambda fig: b"png")  # what is written is checked above
    written = plots.write_plots(tmp_path, summary, records)
    assert set(written) == {
        "hit_rate_curves",
        "first_rank",
        "score_gaps",
        "quality_vs_cost",
        "quality_vs_latency",
        "chunk_sizes",
    }
    assert all(path.parent == tmp_path for path in written.values())


@pytest.mark.parametrize("n", [1, 12])
def test_one_or_twelve_candidates_are_all_labelled(n):
    specs = list(CANDIDATES.values())
    candidates = {
        f"model-{i:02d}/chunker-with-a-rather-long-name/{'inverted' if i % 4 == 3 else 'hnsw'}": (
            specs[i % 4][0],
            None if i == 5 else 0.01 * i,
            (1.0 + i, 0.1),
        )
        for i in range(n)
    }
    summary, records = make_run(candidates)
    ids = [c.id for c in summary.candidates]
    figs = {
        "hit_rate_curves": plot_quality.hit_rate_curves(summary),
        "first_rank": plot_quality.first_rank_distribution(summary),
        "score_gaps": plot_quality.score_gaps(summary, records),
        "quality_vs_latency": plot_tradeoff.quality_vs_latency(summary),
        "rank_matrix": plot_quality.rank_matrix_heatmap(*rank_matrix(summary, records), DEPTH, K),
    }
    for name, fig in figs.items():
        shown = texts(fig)
        unlabelled = [cid for cid in ids if not any(cid in t for t in shown)]
        assert not unlabelled, f"{name} leaves {unlabelled} unlabelled"
    assert len(set(candidate_colours(summary).values())) == n
