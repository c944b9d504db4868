"""Terminal tables: the ranked shootout, diagnostics, the dry-run plan, chunk sizes, the model list, goldset
statistics and pairwise comparisons. The caller passes each table to its own console (``console()`` makes one)."""

from __future__ import annotations

import sys

from rich.console import Console, Group
from rich.table import Table

from bench.embedders import MODELS
from bench.evaluation.costs import end_to_end_ms, resolve_price
from bench.evaluation.metrics import SPAN_METRICS, metric_key
from bench.formatting import MISSING, ms, number, p_value, percent, rank, seconds, size, usd, with_ci
from bench.inputs.goldset import CHUNK
from bench.results.schema import RunSummary


def console(stderr: bool = False) -> Console:
    """A console for stdout or stderr; when it is a file or a pipe, wide enough that lines do not wrap."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr) if stream.isatty() else Console(stderr=stderr, width=180)


# The shootout table's quality columns: the headline metrics (metrics.HEADLINE) with hit rate beside
# recall, then map; the order people read the table in, kept as it is.
COLUMNS = ("mrr", "recall", "hit_rate", "ndcg", "precision", "map")


def shootout_table(summary: RunSummary, title: str = "") -> Table:
    k = summary.k
    table = Table(
        title=title
        or f"Candidates ranked by {metric_key('mrr', k)}, then {metric_key('recall', k)} ({summary.unit} unit)",
        title_justify="left",
    )
    table.add_column("#", justify="right")
    # ids are what people copy into --only and exclude: never cut; the other columns' headers wrap instead
    longest = max((len(c.id) for c in summary.candidates), default=0)
    table.add_column("candidate", no_wrap=True, min_width=min(longest, 60))
    for name in COLUMNS:
        table.add_column(metric_key(name, k), justify="right")
    table.add_column("chunks", justify="right")
    table.add_column("embed s", justify="right")
    table.add_column("query p50/p95 ms", justify="right", no_wrap=True)  # end to end: embed, search, rerank
    table.add_column("index", justify="right")
    table.add_column("$ index", justify="right", no_wrap=True)
    table.add_column("$ / 1k q", justify="right", no_wrap=True)
    best = {name: max(c.quality[metric_key(name, k)] for c in summary.candidates) for name in COLUMNS}
    for c in summary.candidates:
        cells = []
        for name in COLUMNS:
            value = c.quality[metric_key(name, k)]
            text = f"{value:.3f}"
            cells.append(f"[bold green]{text}[/]" if value == best[name] and value > 0 else text)
        opsf = c.ops
        embed = "cached" if opsf.get("dims") and not opsf.get("chunks_embedded") else seconds(opsf.get("embed_seconds"))
        latency = f"{ms(end_to_end_ms(c, 'p50'))}/{ms(end_to_end_ms(c, 'p95'))}"
        table.add_row(
            str(c.rank),
            c.id,
            *cells,
            str(opsf.get("n_chunks", "")),
            embed,
            latency,
            size(opsf.get("index_bytes")),
            usd(opsf.get("index_cost_usd"), "?"),
            usd(opsf.get("cost_per_1k_queries_usd"), "?"),
        )
    notes = []
    sampled = {(c.ops.get("latency_samples"), c.diagnostics.get("n_questions")) for c in summary.candidates}
    notes += [
        f"latency timed on single queries: the first {n} of {total} questions (latency_samples)"
        for n, total in sorted(sampled, key=str)
        if n and total and n < total
    ]
    kept = {
        c.model: c.ops.get("query_embed_measured") for c in summary.candidates if c.ops.get("query_embed_from_cache")
    }
    if kept:
        when = ", ".join(f"{model} at {measured}" for model, measured in sorted(kept.items()))
        notes.append(f"query latency timed earlier on this machine ({when}); --remeasure times it again")
    if notes:
        table.caption = "; ".join(notes)
        table.caption_justify = "left"
    return table


def diagnostics_table(summary: RunSummary) -> Table:
    """Why candidates score as they do: hit-rate curve points, misses, score gap, span metrics."""
    k, depth = summary.k, summary.depth
    table = Table(
        title="Diagnostics (score gap = best expected unit − top distractor; span metrics on characters)",
        title_justify="left",
    )
    table.add_column("candidate")
    cutoffs = sorted({1, k, depth})
    for cut in cutoffs:
        table.add_column(f"hit@{cut}", justify="right")
    table.add_column(f"miss@{depth}", justify="right")
    table.add_column("gap mean", justify="right")
    table.add_column("gap median", justify="right")
    spans = [metric_key(name, k) for name in SPAN_METRICS]
    has_spans = summary.unit == CHUNK
    if has_spans:
        for key in spans:
            table.add_column(key.replace("_", " ", 1), justify="right")
    for c in summary.candidates:
        d = c.diagnostics
        row = [
            c.id,
            *(f"{c.curve[metric_key('hit_rate', cut)]:.3f}" for cut in cutoffs),
            str(d["first_relevant_rank"]["miss"]),
            number(d["score_gap_mean"], "{:+.3f}"),
            number(d["score_gap_median"], "{:+.3f}"),
        ]
        if has_spans:
            row += [f"{c.quality[key]:.3f}" for key in spans]
        table.add_row(*row)
    return table


def plan_table(planned: list) -> Table:
    """``bench run --dry-run``: what would run, and what a cold run would cost."""
    table = Table(title="Dry run: the grid (tokens are cl100k; nothing was embedded)", title_justify="left")
    for col in ("candidate", "chunks", "corpus tokens", "question tokens", "$/Mtok", "index cost $", "cold run $"):
        table.add_column(col, justify="left" if col == "candidate" else "right")
    for p in planned:
        table.add_row(
            p.candidate.id,
            number(p.chunks, "{:,}"),
            number(p.corpus_tokens, "{:,}"),
            f"{p.question_tokens:,}",
            number(p.price_per_mtok, "{:g}"),
            usd(p.index_cost_usd, MISSING, symbol="", keep_small=False),  # the column header says $
            usd(p.run_cost_usd, MISSING, symbol="", keep_small=False),
        )
    return table


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
            spec.description,
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


def pairs_table(pairs: list[dict], metric: str) -> Table:
    """``bench compare RUN``: every pair on one metric, Holm-corrected across pairs."""
    n = pairs[0]["n"] if pairs else 0
    table = Table(
        title=f"Every pair on {metric}, paired over {n} questions "
        f"(p-values Holm-corrected across {len(pairs)} pairs; bold: p < 0.05)",
        title_justify="left",
    )
    for col in (
        "A",
        "B",
        "first rank W/T/L",
        "A wins/ties/losses",
        "mean A−B",
        "Wilcoxon p",
        "t-test p",
        "randomisation p",
        "rank-biserial",
        "Cohen's dz",
    ):
        table.add_column(col, justify="left" if col in ("A", "B") else "right")
    for p in pairs:
        fr = p["first_relevant_rank"]
        table.add_row(
            p["a"],
            p["b"],
            f"{fr['wins']}/{fr['ties']}/{fr['losses']}",
            f"{p['wins']}/{p['ties']}/{p['losses']}",
            f"{p['mean_diff']:+.3f}",
            _p(p["wilcoxon_p_holm"]),
            _p(p["t_p_holm"]),
            _p(p["randomisation_p_holm"]),
            f"{p['rank_biserial']:+.2f}",
            f"{p['cohens_dz']:+.2f}",
        )
    if n and n < 30:
        table.caption = f"only {n} questions: trust the Wilcoxon signed-rank test"
        table.caption_justify = "left"
    return table


def head_to_head_table(h2h: dict) -> Group:
    """``bench compare RUN --a ID --b ID``: every headline metric, wins, tests, intervals."""
    fr = h2h["first_relevant_rank"]
    table = Table(
        title=f"{h2h['a']} (A) vs {h2h['b']} (B), {h2h['n_questions']} questions; first relevant rank: "
        f"A better on {fr['wins']}, equal on {fr['ties']}, worse on {fr['losses']}",
        title_justify="left",
    )
    for col in (
        "metric",
        "A wins/ties/losses",
        "mean A [95% CI]",
        "mean B [95% CI]",
        "Wilcoxon p",
        "t-test p",
        "randomisation p",
        "rank-biserial",
        "Cohen's dz",
    ):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for metric, m in h2h["metrics"].items():
        table.add_row(
            metric,
            f"{m['wins']}/{m['ties']}/{m['losses']}",
            with_ci(m["mean_a"], m["ci_a"]),
            with_ci(m["mean_b"], m["ci_b"]),
            _p(m["wilcoxon_p_holm"]),
            _p(m["t_p_holm"]),
            _p(m["randomisation_p_holm"]),
            f"{m['rank_biserial']:+.2f}",
            f"{m['cohens_dz']:+.2f}",
        )
    table.caption = "p-values Holm-corrected across these metrics; bold: p < 0.05. " + h2h["advice"]
    table.caption_justify = "left"
    parts: list = [table]
    if h2h.get("disagreements"):
        worst = Table(
            title="Where they disagree most (first relevant rank; miss = none within depth)", title_justify="left"
        )
        for col in ("question", "A", "B", "text"):
            worst.add_column(col, justify="right" if col in ("A", "B") else "left")
        for d in h2h["disagreements"]:
            worst.add_row(d["question_id"], rank(d["rank_a"]), rank(d["rank_b"]), d["question"])
        parts.append(worst)
    return Group(*parts)
