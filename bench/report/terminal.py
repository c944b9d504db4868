"""Terminal tables: the ranked shootout, diagnostics, the dry-run plan, chunk sizes, the model list, goldset
statistics and pairwise comparisons. The caller passes each table to its own console (``console()`` makes one)."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from bench.core.measures import SPAN_METRICS, metric_key
from bench.core.summary import RunSummary
from bench.embedders import MODELS
from bench.evaluation.costs import latency_ms
from bench.evaluation.prices import resolve_price
from bench.formatting import (
    MISSING,
    TEST_COLUMNS,
    duration,
    ms,
    number,
    p_value,
    percent,
    rank,
    size,
    test_cells,
    usd,
    with_ci,
)
from bench.inputs.goldset import CHUNK
from bench.report import ops_view
from bench.report.fitted import FittedTable


def console(stderr: bool = False) -> Console:
    """A console for stdout or stderr; when it is a file or a pipe, wide enough that lines do not wrap."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr) if stream.isatty() else Console(stderr=stderr, width=180)


WIDTH = 100  # the shootout tables are split to fit a terminal this wide, ids never cut

# The shootout's columns in the order they are placed: what decides first (mrr, recall, monthly cost,
# end-to-end latency), then the rest of the quality, then what a candidate takes to run at scale.
# Columns that do not fit beside the ids go on to a further table, the ids repeated.
QUALITY_FIRST = ("mrr", "recall")
QUALITY_MORE = ("ndcg", "precision", "map")


@dataclass(frozen=True)
class _Column:
    header: str
    cells: list[str]  # rich markup allowed; each one word, never wrapped
    width: int  # of the widest plain cell or header word


def shootout_table(summary: RunSummary, title: str = "") -> Group:
    """The ranked candidates: quality, end-to-end latency p50/p95 and monthly cost first, then their
    operating figures at the team's scale, in as many tables as fit ``WIDTH`` columns."""
    k = summary.k
    cands = summary.candidates
    money = [
        _column("$ / month", [usd(c.ops.cost.monthly_cost_usd, "?") for c in cands]),
        # end to end: embed + search + rerank
        _column("p50/p95 ms", [f"{ms(latency_ms(c, 'p50'))}/{ms(latency_ms(c, 'p95'))}" for c in cands]),
    ]
    ops = [
        _column("chunks", [number(c.ops.indexing.n_chunks, "{:,}") for c in cands]),
        _column("q/s", [_qps(c.ops.latency.qps_single_thread) for c in cands]),
        _column("storage", [size(_times(c.ops.storage.storage_gb_at_scale, 1e9)) for c in cands]),
        _column("indexing", [duration(_times(c.ops.indexing.index_hours_at_scale, 3600)) for c in cands]),
        _column("$/M q", [usd(_times(c.ops.cost.cost_per_1k_queries_usd, 1000), "?") for c in cands]),
    ]
    columns = [*_quality(summary, QUALITY_FIRST), *money, *_quality(summary, QUALITY_MORE), *ops]
    first = (
        title or f"Candidates ranked by {metric_key('mrr', k)}, then {metric_key('recall', k)} ({summary.unit} unit)"
    )
    tables = _tables(
        [c.id for c in cands],
        columns,
        [first, f"Candidates, continued: figures at {_scale_text(summary)}"],
        ranks=[str(c.rank) for c in cands],
    )
    notes = _latency_notes(summary) + _money_notes(summary)
    if notes:
        tables[0].caption = escape("; ".join(notes))
    last = tables[-1].caption
    tables[-1].caption = "; ".join(([last] if isinstance(last, str) else []) + [OPS_NOTE])
    for table in tables:
        table.caption_justify = "left"
    return Group(*tables)


OPS_NOTE = (
    "storage: vectors and index on every replica; indexing: embedding and building the index on one machine; "
    "q/s: queries a second one after another on one thread; "
    "$/M q: API, reranker and chat-model bills per million queries"
)


def _column(header: str, cells: list[str], wrap: bool = False) -> _Column:
    """A column as wide as its widest cell or its header (its widest header word with ``wrap``: a
    header of several words then takes several lines)."""
    words = [cell_len(w) for w in header.split()] if wrap else [cell_len(header)]
    return _Column(header, cells, max([*words, *(cell_len(Text.from_markup(c).plain) for c in cells)]))


def _quality(summary: RunSummary, names: tuple[str, ...]) -> list[_Column]:
    """One column per metric, the best value of each in bold green."""
    out = []
    for name in names:
        key = metric_key(name, summary.k)
        values = [c.quality[key] for c in summary.candidates]
        best = max(values, default=0.0)
        cells = [f"[bold green]{v:.3f}[/]" if v == best and v > 0 else f"{v:.3f}" for v in values]
        out.append(_column(key.replace("precision", "prec"), cells))
    return out


def _tables(ids: list[str], columns: list[_Column], titles: list[str], ranks: list[str] | None = None) -> list[Table]:
    """``columns`` beside the ids in as many tables as fit ``WIDTH`` (``_fit``); the first table is
    titled ``titles[0]`` and has the ranks, when given; the others ``titles[1]``."""
    longest = max([len("candidate"), *map(cell_len, ids)])  # a Chinese character takes two columns
    groups = _fit(columns, longest, max(map(len, ranks), default=1) if ranks else None)
    tables = []
    for n, group in enumerate(groups):
        table = Table(title=titles[min(n, len(titles) - 1)], title_justify="left")
        lead = bool(ranks) and n == 0
        if lead:
            table.add_column("#", justify="right", width=max(map(len, ranks or []), default=1))
        # ids are what people copy into --only and exclude: never cut. Every width is set, so the
        # table is as wide as _fit planned whatever the console's width.
        table.add_column("candidate", no_wrap=True, width=longest)
        for col in group:
            table.add_column(col.header, justify="right", width=col.width)
        for row, cid in enumerate(ids):
            table.add_row(*([ranks[row]] if lead and ranks else []), cid, *(col.cells[row] for col in group))
        tables.append(table)
    return tables


def _fit(columns: list[_Column], longest: int, ranks: int | None) -> list[list[_Column]]:
    """Columns in order, as many to a table as fit ``WIDTH`` beside the ids (each column takes its
    width, two of padding and one rule; the first table also has the rank, ``ranks`` digits)."""
    groups: list[list[_Column]] = [[]]
    used = 1 + (longest + 3) + (ranks + 3 if ranks else 0)  # the outer rule, the ids, the rank
    for col in columns:
        if groups[-1] and used + col.width + 3 > WIDTH:
            groups.append([])
            used = 1 + (longest + 3)
        groups[-1].append(col)
        used += col.width + 3
    return groups


def _times(value: float | None, by: float) -> float | None:
    return None if value is None else value * by


def _qps(value: float | None) -> str:
    if value is None:
        return MISSING
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}" if value >= 1 else f"{value:.2f}"


def _latency_notes(summary: RunSummary) -> list[str]:
    sampled = {(c.ops.latency.latency_samples, c.diagnostics.n_questions) for c in summary.candidates}
    notes = [
        f"latency timed on single queries: the first {n} of {total} questions (latency_samples)"
        for n, total in sorted(sampled, key=str)
        if n and total and n < total
    ]
    return notes + ops_view.timing_notes(summary)


def _money_notes(summary: RunSummary) -> list[str]:
    """What the monthly cost adds up, and what it leaves out for want of a price."""
    includes = next(
        (c.ops.cost.monthly_cost_includes for c in summary.candidates if c.ops.cost.monthly_cost_includes), None
    )
    if not includes:
        return []
    note = f"$ / month: {', '.join(includes)}"
    missing = [p for p in ("storage", "compute") if p not in includes]
    if missing:
        keys = {"storage": "storage_usd_per_gb_month", "compute": "hourly_usd"}
        note += f" (no {' or '.join(missing)} price: set {' and '.join(keys[m] for m in missing)} in [scale])"
    if any(c.ops.cost.monthly_cost_usd is None for c in summary.candidates):
        note += "; ?: not known (a price is missing, or the corpus embedding was never timed)"
    return [note]


def _scale_text(summary: RunSummary) -> str:
    """The scale the figures are projected to, as the recommendation recorded it."""
    at = (summary.recommendation or {}).get("scale")
    if not isinstance(at, dict):
        return "this corpus's size"
    docs = at.get("documents")
    corpus = f"{docs:,} documents" if docs else "this corpus"
    replicas = at.get("replicas", 1)
    return (
        f"{corpus}, {at.get('queries_per_month', 0):,} queries a month, {at.get('reindexes_per_month', 0):g} "
        f"re-indexes a month, {replicas} replica{'s' if replicas != 1 else ''}"
    )


def diagnostics_table(summary: RunSummary) -> FittedTable:
    """Why candidates score as they do: hit-rate curve points, misses, score gap, span metrics."""
    k, depth = summary.k, summary.depth
    table = FittedTable(
        title="Diagnostics (score gap = best expected unit − top distractor; span metrics on characters)"
    )
    table.add_column("candidate", key=True)
    cutoffs = sorted({1, k, depth})
    for cut in cutoffs:
        table.add_column(f"hit@{cut}")
    table.add_column(f"miss@{depth}")
    table.add_column("gap mean")
    table.add_column("gap median")
    spans = [metric_key(name, k) for name in SPAN_METRICS]
    has_spans = summary.unit == CHUNK
    if has_spans:
        for key in spans:
            table.add_column(key.replace("_", " ", 1))
    for c in summary.candidates:
        d = c.diagnostics
        row = [
            c.id,
            *(f"{c.curve[metric_key('hit_rate', cut)]:.3f}" for cut in cutoffs),
            str(d.first_relevant_rank["miss"]),
            number(d.score_gap_mean, "{:+.3f}"),
            number(d.score_gap_median, "{:+.3f}"),
        ]
        if has_spans:
            row += [f"{c.quality[key]:.3f}" for key in spans]
        table.add_row(*row)
    return table


def plan_table(planned: list) -> Group:
    """``bench run --dry-run``: what would run, what a cold run would cost, and the embedding bills a
    month at ``[scale]`` (re-indexing and queries), in as many tables as fit ``WIDTH`` columns."""
    columns = [
        _column("chunks", [number(p.chunks, "{:,}") for p in planned], wrap=True),
        _column("corpus tokens", [number(p.corpus_tokens, "{:,}") for p in planned], wrap=True),
        _column("question tokens", [f"{p.question_tokens:,}" for p in planned], wrap=True),
        _column("$/Mtok", [number(p.price_per_mtok, "{:g}") for p in planned], wrap=True),
        _column("index cost", [usd(p.index_cost_usd, MISSING) for p in planned], wrap=True),
        _column("cold run", [usd(p.run_cost_usd, MISSING) for p in planned], wrap=True),
        _column("$ / month", [usd(getattr(p, "monthly_embedding_usd", None), MISSING) for p in planned], wrap=True),
    ]
    title = "Dry run: the grid (tokens are cl100k; nothing was embedded)"
    tables = _tables([p.candidate.id for p in planned], columns, [title, "Dry run, continued"])
    tables[-1].caption = escape(
        "$ / month: embedding at [scale] (re-indexing and queries, a reranker priced per search included); "
        "storage and compute are measured by the run"
    )
    tables[-1].caption_justify = "left"
    return Group(*tables)


def chunk_table(stats: list, skipped: list[str]) -> Table:
    """``bench chunk``: chunk counts and size distributions per chunker."""
    title = "Chunks per chunker (sizes in cl100k tokens; chars in parentheses)"
    if skipped:
        title += f"; not shown, they split with a model: {', '.join(skipped)}"
    table = Table(title=title, title_justify="left")
    for col in ("chunker", "kind", "chunks", "tokens", "min", "p50", "p95", "max", "mean"):
        table.add_column(col, justify="left" if col in ("chunker", "kind") else "right")
    for s in stats:
        t, c = s.token_sizes, s.char_sizes
        table.add_row(
            s.chunker,
            s.kind,
            f"{s.chunks:,}",
            f"{s.tokens:,}",
            *(f"{t[q]:.0f} ({c[q]:.0f})" for q in ("min", "p50", "p95", "max", "mean")),
        )
    return table


def models_table() -> Table:
    table = Table(title="Models (listed without loading weights)", title_justify="left")
    for col in ("name", "kind", "dims", "max tokens", "$/Mtok", "description"):
        table.add_column(col)
    for name in MODELS:
        spec = MODELS.get(name)
        kind = "lexical" if spec.lexical else spec.loader
        price = resolve_price(spec, configured=False)
        table.add_row(
            name,
            kind,
            number(spec.dims),
            number(spec.max_tokens),
            number(price.price_per_mtok, "{:g}"),
            # the languages it reads: a run warns about a model that does not read its corpus
            f"{spec.description} (reads: {', '.join(spec.languages)})" if spec.languages else spec.description,
        )
    return table


def stats_tables(stats: dict, title: str) -> list[Table]:
    """``bench goldset stats``: the headline figures, then grades and tags."""
    head = Table(title=title, title_justify="left", show_header=False)
    head.add_column("what")
    head.add_column("value", justify="right")
    epq = stats["evidence_per_question"]
    rows = [
        ("questions", str(stats["questions"])),
        ("unit", stats["unit"]),
        ("evidence items", str(stats["evidence_items"])),
        ("evidence per question (mean / max)", f"{epq['mean']:.2f} / {epq['max']}"),
        ("questions with 2+ evidence items", percent(stats["multi_evidence_share"])),
        ("questions spanning 2+ documents", str(stats["multi_document_questions"])),
        ("documents referenced", f"{stats['documents_referenced']} of {stats['documents_in_corpus']}"),
        ("corpus covered by evidence", percent(stats["corpus_coverage"], 1)),
    ]
    if "evidence_chars_per_item" in stats:
        e = stats["evidence_chars_per_item"]
        rows.append(("evidence length, chars (mean / min / max)", f"{e['mean']:.0f} / {e['min']} / {e['max']}"))
    for row in rows:
        head.add_row(*row)
    counts = Table(title="evidence per question, grades and tags", title_justify="left")
    counts.add_column("kind")
    counts.add_column("value")
    counts.add_column("questions / items", justify="right")
    for n, c in epq["histogram"].items():
        counts.add_row("evidence items", n, str(c))
    for g, c in stats["grades"].items():
        counts.add_row("grade", g, str(c))
    for t, c in stats["tags"].items():
        counts.add_row("tag", t, str(c))
    return [head, counts]


def _p(value: float) -> str:
    return f"[bold]{p_value(value)}[/]" if value < 0.05 else p_value(value)


def pairs_table(pairs: list[dict], metric: str) -> FittedTable:
    """``bench compare RUN``: every pair on one metric, Holm-corrected across pairs."""
    n = pairs[0]["n"] if pairs else 0
    table = FittedTable(
        title=f"Every pair on {metric}, paired over {n} questions "
        f"(p-values Holm-corrected across {len(pairs)} pairs; bold: p < 0.05)"
    )
    # A above B in one cell: two long pipeline ids side by side leave no room for the figures
    table.add_column("A / B", key=True)
    for col in (
        "first rank W/T/L",
        "A wins/ties/losses",
        "mean A−B",
        *TEST_COLUMNS,
    ):
        table.add_column(col)
    for p in pairs:
        fr = p["first_relevant_rank"]
        table.add_row(
            f"{p['a']}\n{p['b']}",
            f"{fr['wins']}/{fr['ties']}/{fr['losses']}",
            f"{p['wins']}/{p['ties']}/{p['losses']}",
            f"{p['mean_diff']:+.3f}",
            *test_cells(p, _p),
        )
    if n and n < 30:
        table.caption = f"only {n} questions: trust the Wilcoxon signed-rank test"
    return table


def head_to_head_table(h2h: dict) -> Group:
    """``bench compare RUN --a ID --b ID``: every headline metric, wins, tests, intervals."""
    fr = h2h["first_relevant_rank"]
    table = FittedTable(
        title=f"{escape(h2h['a'])} (A) vs {escape(h2h['b'])} (B), {h2h['n_questions']} questions; first relevant rank: "
        f"A better on {fr['wins']}, equal on {fr['ties']}, worse on {fr['losses']}"
    )
    metrics = h2h["metrics"]
    for col in (
        "metric",
        "A wins/ties/losses",
        "mean A [95% CI]",
        "mean B [95% CI]",
        *TEST_COLUMNS,
    ):
        table.add_column(col, key=col == "metric")
    for metric, m in metrics.items():
        table.add_row(
            metric,
            f"{m['wins']}/{m['ties']}/{m['losses']}",
            with_ci(m["mean_a"], m["ci_a"]),
            with_ci(m["mean_b"], m["ci_b"]),
            *test_cells(m, _p),
        )
    table.caption = "p-values Holm-corrected across these metrics; bold: p < 0.05. " + escape(h2h["advice"])
    parts: list = [table]
    if h2h.get("disagreements"):
        worst = Table(
            title="Where they disagree most (first relevant rank; miss = none within depth)", title_justify="left"
        )
        for col in ("question", "A", "B", "text"):  # a question in Chinese has no space to wrap at: folded
            worst.add_column(col, justify="right" if col in ("A", "B") else "left", overflow="fold")
        for d in h2h["disagreements"]:
            worst.add_row(escape(d["question_id"]), rank(d["rank_a"]), rank(d["rank_b"]), escape(d["question"]))
        parts.append(worst)
    return Group(*parts)
