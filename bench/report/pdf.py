"""report.pdf: the decision on page 1, the contents on page 2, then the details: every candidate
ranked, latency and cost, the diagnosis, the charts, bootstrap intervals, head-to-head tests, the
rank matrix, tags, history, a glossary and provenance.

Pages are laid out by ``pdf_layout`` (text flowed, tables sized to their cells, "page N of M" on
each) and drawn as matplotlib figures (A4 landscape) gathered with PdfPages; text is embedded as
text so the PDF can be searched and read back: in the PDF core fonts when every string fits their
Latin-1 alphabet (laid out several times faster), else embedded TrueType: DejaVu Sans, and for each
character it lacks the first fallback font of ``fonts`` that has it (Chinese, Japanese, Korean, Thai,
Devanagari …). A character no installed font has is set as U+FFFD, and one warning names them all,
those the plots could not draw included. Chart pages place the
PNGs already rendered for plots/ (drawing every chart a second time as vectors would double the
report's cost), with each chart's title as a hidden text layer so those pages can be searched too.
"""

from __future__ import annotations

import io
import logging
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_pdf import PdfPages

from bench import files
from bench.core.summary import Manifest, RunSummary
from bench.evaluation.findings import Finding
from bench.evaluation.judged import JUDGE_ONLY
from bench.report import fonts
from bench.report import pdf_sections as sections
from bench.report.pdf_answers import answers_section, with_answer_terms
from bench.report.pdf_completeness import completeness_section
from bench.report.pdf_decision import Decision, decide, decision_section
from bench.report.pdf_glossary import glossary_section
from bench.report.pdf_layout import PAGE, Chart, Section, book, draw, texts
from bench.report.plots import unset
from bench.report.robustness_view import robustness_section

log = logging.getLogger(__name__)

NO_GOLDSET_FOOTER = " · no goldset: relevance graded by an uncalibrated LLM judge"
CHARTS = (
    "hit_rate_curves", "first_rank", "score_gaps", "quality_vs_cost", "quality_vs_latency", "chunk_sizes", "robustness",
)  # fmt: skip


def write_pdf(
    path: Path, summary: RunSummary, manifest: Manifest, plots: dict[str, tuple[str, bytes]], stats: dict
) -> int:
    """Write the report atomically; return its page count.

    ``plots``: name → (title, PNG bytes) of the rendered charts; ``stats``: ``cis``, ``pairs``
    (metric → all pairs), ``head_to_head`` and ``per_tag`` from ``bench.evaluation.significance``,
    ``diagnosis`` (plain lines) and ``findings`` (by candidate) from ``bench.evaluation.findings``, and
    ``answers`` (an ``AnswerLayer``) when the run's answers were scored.
    """
    run_id = manifest.run_id or "?"
    day = (manifest.started or "")[:10]
    title = f"bench shootout {run_id}" + (f", {day}" if day else "")
    findings: dict[str, list[Finding]] = stats.get("findings") or {}
    front = [decision_section(summary, manifest, stats, findings, title)]
    body = _details(summary, manifest, plots, stats)
    footer = f"bench shootout {run_id}" + (NO_GOLDSET_FOOTER if (summary.judge or {}).get("mode") == JUDGE_ONLY else "")
    core = all(_latin1(t) for t in texts(front + body)) and _latin1(footer)
    _warn_unset([*texts(front + body), footer], [png for _, png in plots.values()])
    figures = draw(book(front, body, core), footer)
    core = core and all(_latin1(t.get_text()) for fig in figures for t in fig.texts)  # what the core fonts can set
    buffer = io.BytesIO()
    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)  # core fonts have no files to find
    # light compression: the page images are already compressed PNGs, a harder pass buys little
    with (
        matplotlib.rc_context({"pdf.fonttype": 42, "pdf.use14corefonts": core, "pdf.compression": 3}),
        PdfPages(
            buffer,
            metadata={"Title": title, "Creator": "bench", "Producer": "bench", "CreationDate": None},
        ) as pdf,
    ):
        for fig in figures:
            fig.set_size_inches(*PAGE)
            pdf.savefig(fig)
    files.write_atomic(path, buffer.getvalue())
    return len(figures)


def _details(
    summary: RunSummary, manifest: Manifest, plots: dict[str, tuple[str, bytes]], stats: dict
) -> list[Section]:
    cis, pairs = stats["cis"], stats["pairs"]
    decision = decide(summary, manifest, stats)
    out = [sections.ranked_section(summary, cis, _roles(decision)), sections.operations_section(summary, manifest)]
    if stats.get("diagnosis"):
        out.append(sections.diagnosis_section(stats["diagnosis"]))
    out += [s for s in (completeness_section(summary), robustness_section(summary)) if s is not None]
    answers = stats.get("answers")
    if answers is not None:
        out.append(answers_section(answers))
    out += [_chart(*plots[name]) for name in CHARTS if name in plots]
    if summary.candidates:
        out.append(sections.intervals_section(summary, cis))
    metrics = list(pairs)
    h2h = stats.get("head_to_head")
    notes = sections.families(
        len(pairs[metrics[0]]) if metrics else 0,
        metrics[0] if metrics else "",
        len(h2h["metrics"]) if h2h else len(metrics),
        _decision_family(decision, summary),
    )
    if metrics and pairs[metrics[0]]:
        out.append(sections.pairs_section(metrics[0], pairs[metrics[0]], notes["pairs"]))
        other = sections.other_metrics_section(pairs, metrics[1:])
        if other is not None:
            out.append(other)
    if h2h:
        out += sections.head_to_head_sections(h2h, notes["head_to_head"])
    if "rank_matrix" in plots:
        out.append(_chart(*plots["rank_matrix"]))
    tags = sections.tag_section(summary, stats["per_tag"], decision.pick.id if decision else None)
    if tags is not None:
        out.append(tags)
    if "history" in plots:
        out.append(_chart(*plots["history"]))
    glossary = glossary_section(summary)
    if answers is not None:
        glossary = with_answer_terms(glossary, answers.summary)
    out += [glossary, sections.provenance_section(manifest)]
    return out


def _roles(decision: Decision | None) -> dict[str, str]:
    if decision is None:
        return {}
    roles = dict.fromkeys(decision.tied, "tied with the best")
    roles[decision.best.id] = "best"
    roles[decision.pick.id] = "pick, best" if decision.pick.id == decision.best.id else "pick, tied with the best"
    return roles


def _decision_family(decision: Decision | None, summary: RunSummary) -> str:
    """How page 1's test corrects, as a phrase: ``over the 16 comparisons of each candidate with the best``."""
    if decision is None or not decision.tested:
        return ""
    compared = (summary.recommendation or {}).get("comparisons")
    if isinstance(compared, list) and compared:
        return f"over the {len(compared)} comparisons of each candidate with the best"
    return f"({decision.test})"


def _chart(title: str, png: bytes) -> Section:
    return Section(title, [Chart(png)])


def _warn_unset(strings: list[str], pngs: list[bytes]) -> None:
    """One warning for the report: the characters no installed font has, in the PDF and the plots."""
    in_pdf = set().union(*(fonts.missing(s) for s in strings if not _latin1(s)))
    in_plots = set().union(*map(unset, pngs))
    if in_pdf or in_plots:
        where = " and ".join(w for w, lost in (("report.pdf", in_pdf), ("plots/", in_plots)) if lost)
        log.warning(fonts.missing_warning(in_pdf | in_plots, where))


def _latin1(text: str) -> bool:
    try:
        text.encode("cp1252")
        return True
    except UnicodeEncodeError:
        return False
