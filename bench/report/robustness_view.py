"""Robustness to real typing as the reports state it: per candidate compared, each perturbation's
mrr@k as written → as typed, the drop and the paired test, in the terminal and in report.pdf."""

from __future__ import annotations

from bench.core.summary import CandidateResult, RunSummary
from bench.evaluation.robustness import ROBUSTNESS, shown
from bench.formatting import p_value
from bench.report.fitted import FittedTable
from bench.report.pdf_layout import Para, Section, Table

TITLE = "Robustness to real typing"


def kinds(summary: RunSummary) -> list[str]:
    """The perturbations the run asked, in the order asked."""
    for c in summary.candidates:
        found = c.extra.get(ROBUSTNESS)
        if found:
            return [key for key in found if key != "metric"]
    return []


def cell(c: CandidateResult, kind: str) -> str:
    """``0.711 → 0.650 (−0.061, p 0.002)``; "–" where the kind was not asked of it."""
    figures = (c.extra.get(ROBUSTNESS) or {}).get(kind)
    if not figures or figures.get("perturbed") is None:
        return "–"
    drop = figures["drop"]
    sign = "−" if drop > 0 else "+"
    return (
        f"{figures['original']:.3f} → {figures['perturbed']:.3f} "
        f"({sign}{abs(drop):.3f}, p {p_value(figures['wilcoxon_p'])})"
    )


def explained(summary: RunSummary) -> str:
    metric = next((c.extra[ROBUSTNESS]["metric"] for c in summary.candidates if c.extra.get(ROBUSTNESS)), "")
    return (
        f"every question asked again as people type it ({', '.join(kinds(summary))}); {metric} as written → as "
        "typed, the change and the Wilcoxon signed-rank p over the same questions; the best candidate of each "
        "chunker and model; perturbed_questions.jsonl lists every form asked"
    )


def robustness_table(summary: RunSummary) -> FittedTable | None:
    """The terminal's table; None for a run that asked no perturbed questions."""
    rows = shown(summary.candidates)
    if not rows:
        return None
    table = FittedTable(title=f"{TITLE}: {explained(summary)}")
    table.add_column("candidate", key=True)
    for kind in kinds(summary):
        table.add_column(kind)
    for c in rows:
        table.add_row(c.id, *(cell(c, kind) for kind in kinds(summary)))
    return table


def robustness_section(summary: RunSummary) -> Section | None:
    """report.pdf's page; None for a run that asked no perturbed questions."""
    rows = shown(summary.candidates)
    if not rows:
        return None
    header = ["candidate", *kinds(summary)]
    body = [[c.id, *(cell(c, kind) for kind in kinds(summary))] for c in rows]
    lead = Para(explained(summary)[0].upper() + explained(summary)[1:] + ".", size=9, space_after=8)
    return Section(TITLE, [lead, Table(header, body, size=7.5, clip=frozenset({0}))])
