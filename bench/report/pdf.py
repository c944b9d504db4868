"""report.pdf: the summary, the plots, head-to-head statistics, the rank matrix, tags and provenance.

Pages are matplotlib figures (A4 landscape) gathered with PdfPages; text is embedded as
text so the PDF can be searched and read back: in the PDF core fonts when every string fits their
Latin-1 alphabet (laid out several times faster), else embedded TrueType. Plot pages place the PNGs already rendered
for plots/ (drawing every chart a second time as vectors would double the report's cost),
with each chart's title as a hidden text layer so those pages can be searched too.
"""

from __future__ import annotations

import io
import logging
import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib
import matplotlib.image
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from bench import files
from bench.evaluation.costs import end_to_end_p95_ms
from bench.evaluation.metrics import metric_key
from bench.formatting import ms, p_value, rank, usd, with_ci
from bench.results.schema import Manifest, RunSummary

PAGE = (11.69, 8.27)  # A4 landscape, inches
ROWS_PER_PAGE = 36  # smaller type past 26 rows, so an all-pairs table of 9 candidates fits a page


def write_pdf(
    path: Path, summary: RunSummary, manifest: Manifest, plots: dict[str, tuple[str, bytes]], stats: dict
) -> int:
    """Write the report atomically; return its page count.

    ``plots``: name → (title, PNG bytes) of the rendered charts; ``stats``: ``cis``, ``pairs``
    (metric → all pairs), ``head_to_head`` and ``per_tag`` from ``bench.evaluation.significance``, and
    ``diagnosis``, plain lines from ``bench.evaluation.findings``.
    """
    pages = [*_summary_pages(summary, manifest, stats["cis"])]
    if stats.get("diagnosis"):
        pages += _text_pages("Diagnosis: what the numbers suggest", stats["diagnosis"])
    for name in ("hit_rate_curves", "first_rank", "score_gaps", "quality_vs_cost", "quality_vs_latency", "chunk_sizes"):
        if name in plots:
            pages.append(_image_page(*plots[name]))
    pages += _interval_pages(summary, stats["cis"])
    metrics = list(stats["pairs"])
    if metrics:
        pages += _pair_pages(summary, metrics[0], stats["pairs"][metrics[0]])
        pages += _other_metric_pages(stats["pairs"], metrics[1:])
    if stats.get("head_to_head"):
        pages += _head_to_head_pages(stats["head_to_head"])
    if "rank_matrix" in plots:
        pages.append(_image_page(*plots["rank_matrix"]))
    pages += _tag_pages(summary, stats["per_tag"])
    if "history" in plots:
        pages.append(_image_page(*plots["history"]))
    pages += _provenance_pages(manifest)
    buffer = io.BytesIO()
    core = all(_latin1(t.get_text()) for fig in pages for t in fig.texts)
    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)  # core fonts have no files to find
    # light compression: the page images are already compressed PNGs, a harder pass buys little
    with (
        matplotlib.rc_context({"pdf.fonttype": 42, "pdf.use14corefonts": core, "pdf.compression": 3}),
        PdfPages(
            buffer,
            metadata={
                "Title": f"bench shootout {_text(manifest.run_id)}",
                "Creator": "bench",
                "Producer": "bench",
                "CreationDate": None,
            },
        ) as pdf,
    ):
        for fig in pages:
            fig.set_size_inches(*PAGE)
            pdf.savefig(fig)
    files.write_atomic(path, buffer.getvalue())
    return len(pages)


def _summary_pages(summary: RunSummary, manifest: Manifest, cis: dict) -> list[Figure]:
    k = summary.k
    mrr, recall = metric_key("mrr", k), metric_key("recall", k)
    # the other headline metrics, shown without an interval, in the summary page's own column order
    plain = [metric_key(name, k) for name in ("hit_rate", "ndcg", "precision")]
    header = ["#", "candidate", f"{mrr} [95% CI]", f"{recall} [95% CI]", *plain, "p95 ms", "$ / 1k q"]
    rows = []
    for c in summary.candidates:
        q, o = c.quality, c.ops
        rows.append(
            [
                str(c.rank),
                c.id,
                with_ci(q[mrr], cis.get(c.id, {}).get(mrr)),
                with_ci(q[recall], cis.get(c.id, {}).get(recall)),
                *(f"{q[m]:.3f}" for m in plain),
                ms(end_to_end_p95_ms(c), "–"),
                usd(o.get("cost_per_1k_queries_usd"), keep_small=False),
            ]
        )
    corpus, goldset = manifest.corpus or {}, manifest.goldset or {}
    lead = (
        f"Run {_text(manifest.run_id, '?')}: {corpus.get('documents', '?')} documents, "
        f"{goldset.get('questions', '?')} questions ({summary.unit} unit), "
        f"{len(summary.candidates)} candidates, k = {k}, retrieval depth {summary.depth}.\n"
        f"Ranked by {mrr}, then {recall}. Intervals: bootstrap 95% over questions."
    )
    timed = max((c.ops.get("latency_samples") or 0 for c in summary.candidates), default=0)
    if timed and isinstance(goldset.get("questions"), int) and timed < goldset["questions"]:
        lead += (
            f"\nLatency is sampled: p95 ms is timed on single queries, the first {timed} of "
            f"{goldset['questions']} questions (latency_samples)."
        )
    rec = (summary.recommendation or {}).get("line")
    if rec:
        lead += f"\nRecommendation: {rec}"
    return _table_pages(
        "bench shootout: summary", lead, header, rows, widths=[0.03, 0.25, 0.12, 0.12, 0.08, 0.07, 0.08, 0.07, 0.07]
    )


def _pair_pages(summary: RunSummary, metric: str, pairs: list[dict]) -> list[Figure]:
    if not pairs:
        return []
    header = [
        "A",
        "B",
        "rank W/T/L",
        "W/T/L",
        "mean A - B",
        "Wilcoxon p",
        "t-test p",
        "randomisation p",
        "rank-biserial",
        "Cohen's dz",
    ]
    rows = [
        [
            p["a"],
            p["b"],
            _wtl(p["first_relevant_rank"]),
            _wtl(p),
            f"{p['mean_diff']:+.3f}",
            _p(p["wilcoxon_p_holm"]),
            _p(p["t_p_holm"]),
            _p(p["randomisation_p_holm"]),
            f"{p['rank_biserial']:+.2f}",
            f"{p['cohens_dz']:+.2f}",
        ]
        for p in pairs
    ]
    n = pairs[0]["n"]
    lead = (
        f"Every pair of candidates, per question (paired); A is the better-ranked candidate. W/T/L: questions "
        f"where A beats, ties or loses to B on {metric}; rank W/T/L: the same on the first relevant rank (lower "
        f"wins, a miss loses).\nTests on {metric}; p-values Holm-corrected across the {len(pairs)} pairs; "
        f"* marks p < 0.05."
    )
    if n < 30:
        lead += f" Only {n} questions: trust the Wilcoxon signed-rank test (no normality assumed)."
    return _table_pages(
        f"Head to head: all pairs on {metric}",
        lead,
        header,
        rows,
        widths=[0.17, 0.17, 0.08, 0.08, 0.07, 0.08, 0.08, 0.1, 0.09, 0.08],
    )


def _other_metric_pages(pairs: dict[str, list[dict]], metrics: list[str]) -> list[Figure]:
    """Every pair on the other headline metrics, compactly: wins/ties/losses and the Holm-corrected
    Wilcoxon p per metric (all tests of every metric are in statistics.json and `bench compare`)."""
    if not metrics:
        return []
    rows = [
        [a["a"], a["b"], *(f"{_wtl(by[m])}   {_p(by[m]['wilcoxon_p_holm'])}" for m in metrics)]
        for a, *rest in zip(*(pairs[m] for m in metrics))
        for by in [dict(zip(metrics, (a, *rest)))]
    ]
    lead = (
        "Every pair on the other headline metrics: A's wins / ties / losses against B, then the Wilcoxon "
        "signed-rank p-value, Holm-corrected across the pairs of that metric; * marks p < 0.05."
    )
    width = 0.66 / len(metrics)
    return _table_pages(
        "Head to head: all pairs on the other metrics",
        lead,
        ["A", "B", *(f"{m}  W/T/L   p" for m in metrics)],
        rows,
        widths=[0.17, 0.17, *([width] * len(metrics))],
    )


def _interval_pages(summary: RunSummary, cis: dict) -> list[Figure]:
    """Bootstrap 95% intervals of every mean metric, four metrics a page."""
    if not summary.candidates:
        return []
    metrics = list(summary.candidates[0].quality)
    pages = []
    for lo in range(0, len(metrics), 4):
        group = metrics[lo : lo + 4]
        rows = [[c.id, *(with_ci(c.quality[m], cis.get(c.id, {}).get(m)) for m in group)] for c in summary.candidates]
        pages += _table_pages(
            "Bootstrap 95% intervals of the means",
            "2,000 resamples of the questions (percentile method), the same resamples for every "
            "candidate; overlapping intervals do not settle a difference: the paired tests do.",
            ["candidate", *group],
            rows,
            widths=[0.28, *([0.18] * len(group))],
        )
    return pages


def _head_to_head_pages(h2h: dict) -> list[Figure]:
    header = [
        "metric",
        "W / T / L",
        "mean A [95% CI]",
        "mean B [95% CI]",
        "Wilcoxon p",
        "t-test p",
        "randomisation p",
        "rank-biserial",
        "Cohen's dz",
    ]
    rows = []
    for metric, m in h2h["metrics"].items():
        rows.append(
            [
                metric,
                f"{m['wins']} / {m['ties']} / {m['losses']}",
                with_ci(m["mean_a"], m["ci_a"]),
                with_ci(m["mean_b"], m["ci_b"]),
                _p(m["wilcoxon_p_holm"]),
                _p(m["t_p_holm"]),
                _p(m["randomisation_p_holm"]),
                f"{m['rank_biserial']:+.2f}",
                f"{m['cohens_dz']:+.2f}",
            ]
        )
    fr = h2h["first_relevant_rank"]
    lead = (
        f"A = {h2h['a']}  vs  B = {h2h['b']}, {h2h['n_questions']} questions. First relevant rank: A better on "
        f"{fr['wins']}, equal on {fr['ties']}, worse on {fr['losses']}. p-values Holm-corrected across "
        f"metrics.\n{h2h['advice']}"
    )
    pages = _table_pages(
        "Head to head: the two best candidates",
        lead,
        header,
        rows,
        widths=[0.1, 0.12, 0.15, 0.15, 0.08, 0.08, 0.1, 0.08, 0.08],
    )
    if h2h.get("disagreements"):
        paged = any("evidence_pages" in d for d in h2h["disagreements"])
        rows = [
            [d["question_id"], rank(d["rank_a"]), rank(d["rank_b"]), _clip(d["question"], 60 if paged else 90)]
            + ([_clip(d.get("evidence_pages", ""), 40)] if paged else [])
            for d in h2h["disagreements"]
        ]
        pages += _table_pages(
            "Head to head: where they disagree most",
            f"First relevant rank of A = {h2h['a']} and B = {h2h['b']} (miss = none in depth).",
            ["question", "rank A", "rank B", "text"] + (["evidence in"] if paged else []),
            rows,
            widths=[0.08, 0.07, 0.07, 0.5, 0.28] if paged else [0.08, 0.07, 0.07, 0.78],
        )
    return pages


def _tag_pages(summary: RunSummary, per_tag: dict) -> list[Figure]:
    tags = per_tag.get("tags", {})
    if not tags:
        return []
    ids = [c.id for c in summary.candidates]
    header = ["tag", "questions", *(i.replace("/", "/\n") for i in ids)]  # ids stack: model / chunker / index
    rows = [[tag, str(tags[tag]), *(f"{per_tag['means'][tag].get(i, float('nan')):.3f}" for i in ids)] for tag in tags]
    width = 0.8 / max(len(ids), 1)
    return _table_pages(
        f"Per tag: mean {metric_key('mrr', summary.k)}",
        "Each row averages only the questions carrying that tag (a question may carry several).",
        header,
        rows,
        widths=[0.12, 0.08, *([width] * len(ids))],
        header_lines=3,
    )


def _provenance_pages(manifest: Manifest) -> list[Figure]:
    corpus, goldset, lock = manifest.corpus or {}, manifest.goldset or {}, manifest.lock or {}
    rows = [
        ["run id", _text(manifest.run_id)],
        ["started / finished (UTC)", f"{_text(manifest.started)} / {_text(manifest.finished)}"],
        ["config", f"{_text(manifest.config_path)} (hash {_text(manifest.config_hash)})"],
        ["corpus", f"{corpus.get('path', '')}: {corpus.get('documents', '?')} documents"],
        *_corpus_rows(corpus),
        ["corpus sha256", str(corpus.get("sha256", ""))],
        ["goldset", f"{goldset.get('path', '')}: {goldset.get('questions', '?')} questions, {goldset.get('unit', '')}"],
        ["goldset sha256", str(goldset.get("sha256", ""))],
        ["locked", "yes" if manifest.locked else "no"],
        *[[f"lock {key}", str(value)] for key, value in sorted(lock.items())],
        *[[f"version {name}", str(v)] for name, v in sorted((manifest.versions or {}).items())],
        *[[f"machine {name}", str(v)] for name, v in sorted((manifest.machine or {}).items())],
        ["peak memory", f"{_text(manifest.peak_rss_mb, '?')} MB"],
        ["latency percentiles", _text(manifest.percentile_method)],
    ]
    return _table_pages(
        "Provenance",
        "Where these numbers came from; a rerun with the same fingerprints, "
        "config and versions gives the same quality figures.",
        ["what", "value"],
        [[k, _clip(v, 110)] for k, v in rows],
        widths=[0.22, 0.78],
    )


def _corpus_rows(corpus: dict) -> list[list[str]]:
    """The formats read and the files left out, for runs whose manifest records them."""
    rows = []
    if corpus.get("formats"):
        rows.append(["corpus formats", ", ".join(f"{n} {name}" for name, n in sorted(corpus["formats"].items()))])
    left_out = [x for x in corpus.get("left_out") or [] if x.get("kind") != "empty record"]
    if left_out:
        named = "; ".join(f"{x['path']} ({x['reason']})" for x in left_out[:3])
        more = f"; and {len(left_out) - 3} more" if len(left_out) > 3 else ""
        rows.append([f"files left out ({len(left_out)})", named + more])
    return rows


def _text_pages(title: str, lines: list[str], per_page: int = 30) -> list[Figure]:
    """Plain paragraphs, wrapped to the page, as many pages as they need."""
    wrapped = []
    for line in lines:
        wrapped += textwrap.wrap(line, 150, subsequent_indent="    ") + [""]
    pages = []
    for n in range(0, max(len(wrapped), 1), per_page):
        fig = Figure(figsize=PAGE)
        fig.text(0.04, 0.95, title, fontsize=16, weight="bold", va="top")
        fig.text(0.04, 0.88, "\n".join(wrapped[n : n + per_page]), fontsize=9, va="top", linespacing=1.5)
        pages.append(fig)
    return pages


def _image_page(title: str, png: bytes) -> Figure:
    """One chart on a page, unresampled, under an invisible copy of its title for search."""
    fig = Figure(figsize=PAGE)
    fig.text(0.5, 0.98, title, ha="center", va="top", fontsize=12, alpha=0.0)
    ax = fig.add_axes((0.03, 0.03, 0.94, 0.94))
    ax.imshow(matplotlib.image.imread(io.BytesIO(png), format="png")[..., :3], interpolation="none")
    ax.axis("off")
    return fig


def _table_pages(
    title: str, lead: str, header: list[str], rows: list[list[str]], widths: Sequence[float], header_lines: int = 1
) -> list[Figure]:
    """A table over as many pages as it needs, drawn as plain text on stripes (matplotlib's own table
    lays every cell out several times and is several times slower)."""
    pages = []
    chunks = [rows[i : i + ROWS_PER_PAGE] for i in range(0, len(rows), ROWS_PER_PAGE)] or [[]]
    crowded = max(len(part) for part in chunks) > 26
    size = 6.5 if crowded else 7.5 if len(header) > 6 else 8.5
    line = size * (1.75 if crowded else 1.9) / 72 / PAGE[1]  # one row's height, as a fraction of the page
    for n, part in enumerate(chunks, start=1):
        fig = Figure(figsize=PAGE)
        page_title = title if len(chunks) == 1 else f"{title} ({n} of {len(chunks)})"
        fig.text(0.04, 0.95, page_title, fontsize=16, weight="bold", va="top")
        fig.text(0.04, 0.905, lead, fontsize=9, va="top", wrap=True)
        top = 0.80
        head_height = line * header_lines
        fig.add_artist(
            Rectangle(
                (0.04, top - head_height),
                0.92,
                head_height,
                transform=fig.transFigure,
                facecolor="#eef2f7",
                edgecolor="none",
            )
        )
        for i in range(1, len(part), 2):  # zebra stripes guide the eye along wide rows
            fig.add_artist(
                Rectangle(
                    (0.04, top - head_height - (i + 1) * line),
                    0.92,
                    line,
                    transform=fig.transFigure,
                    facecolor="#f6f6f6",
                    edgecolor="none",
                )
            )
        x = 0.045
        for col, (name, width) in enumerate(zip(header, widths)):
            fig.text(x, top - head_height / 2, name, fontsize=size, weight="bold", va="center")
            for i, row in enumerate(part):
                fig.text(x, top - head_height - (i + 0.5) * line, row[col], fontsize=size, va="center")
            x += width * 0.92
        pages.append(fig)
    return pages


def _text(value, missing: str = "") -> str:
    """A manifest field as text; ``missing`` for one that older runs did not record."""
    return missing if value is None else str(value)


def _latin1(text: str) -> bool:
    try:
        text.encode("cp1252")
        return True
    except UnicodeEncodeError:
        return False


def _wtl(counts: dict) -> str:
    return f"{counts['wins']} / {counts['ties']} / {counts['losses']}"


def _p(value: float) -> str:
    return p_value(value) + (" *" if value < 0.05 else "")


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
