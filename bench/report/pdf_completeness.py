"""report.pdf's page on the goldset's completeness: how much of each candidate's top k a person (or a
relevance judge) judged, the biggest holes, and how far the judge agrees with people."""

from __future__ import annotations

from bench.core.summary import RunSummary
from bench.evaluation.judged import JUDGE_ONLY
from bench.report.judge_text import judge_lines
from bench.report.pdf_layout import Para, Section, Table

MISSING = "–"
HOLES_SHOWN = 10
GRADE_WORDS = {0: "0 unrelated", 1: "1 relates", 2: "2 in part", 3: "3 answers"}


def completeness_section(summary: RunSummary) -> Section | None:
    """None for a run that did not count judged units."""
    if all(c.diagnostics.judged_at_k is None for c in summary.candidates):
        return None
    section = summary.judge or {}
    judge_only = section.get("mode") == JUDGE_ONLY
    k = summary.k
    by_judge = section.get("candidates") or {}
    blocks: list = [
        Para(
            f"judged@{k} is the share of a candidate's top {k} that someone judged: "
            + (
                "here the relevance judge, as the run has no goldset."
                if judge_only
                else "a person's evidence (or a passage a person marked not relevant) covers it. "
                "The rest counts as not relevant, though some of it may answer: the holes below are where to look."
            ),
            size=9,
            space_after=8,
        )
    ]
    blocks += [Para(line, size=9, space_after=6) for line in judge_lines(summary)]
    header = ["candidate", f"judged@{k}"]
    if by_judge:
        header += [f"judged@{k} with the judge", f"{section['headline'][0]} with the judge", "rank with the judge"]
    rows = []
    for c in summary.candidates:
        row = [c.id, _pct(c.diagnostics.judged_at_k)]
        if by_judge:
            mine = by_judge.get(c.id) or {}
            row += [
                _pct(mine.get("judged_at_k")),
                _f((mine.get("quality") or {}).get(section["headline"][0])),
                str(mine.get("rank") or MISSING),
            ]
        rows.append(row)
    blocks.append(Table(header, rows, size=7, clip=frozenset({0})))
    holes = section.get("holes") or summary.holes or []
    if holes and not judge_only:
        blocks.append(Para(f"The {min(HOLES_SHOWN, len(holes))} biggest holes", size=10, bold=True, keep_next=True))
        blocks.append(
            Table(
                ["question", "unit", "candidates", "best rank", "judge's grade", "question text"],
                [
                    [
                        str(h["question_id"]),
                        str(h["unit"]),
                        str(h["candidates"]),
                        str(h["best_rank"]),
                        _grade(h.get("judge_grade")),
                        str(h.get("question", "")),  # cut to the page by whole characters as read
                    ]
                    for h in holes[:HOLES_SHOWN]
                ],
                size=7,
                clip=frozenset({1, 5}),
            )
        )
    agreement = _agreement(section)
    if agreement is not None:
        blocks.append(agreement)
    return Section("Goldset completeness: judged and unjudged units", blocks)


def _agreement(section: dict) -> Table | None:
    """The judge against people on the units both judged (bench.evaluation.judged.calibration)."""
    confusion = (section.get("calibration") or {}).get("confusion")
    if not confusion:
        return None
    rows = [
        ["person: relevant", confusion["person_relevant_judge_relevant"], confusion["person_relevant_judge_not"]],
        ["person: not relevant", confusion["person_not_judge_relevant"], confusion["person_not_judge_not"]],
    ]
    return Table(["", "judge: relevant", "judge: not relevant"], [[str(x) for x in row] for row in rows], size=7.5)


def _grade(value: object) -> str:
    return GRADE_WORDS[value] if isinstance(value, int) and value in GRADE_WORDS else MISSING


def _pct(value: object) -> str:
    return f"{value:.0%}" if isinstance(value, int | float) else MISSING


def _f(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) else MISSING
