"""The relevance judge's sentences, rendered from summary.json's ``judge``: who graded, whether it can
be trusted, and whether its grades change the pick. The terminal, page 1 and the completeness page
say the same."""

from __future__ import annotations

from bench.core.sections import JsonObject
from bench.core.summary import RunSummary
from bench.evaluation.judged import CALIBRATED, JUDGE_ONLY
from bench.formatting import usd


def trust(section: JsonObject) -> str:
    """Whether the judge may be trusted, in words: calibrated with its κ, or uncalibrated and why."""
    cal = section.get("calibration") or {}
    if cal.get("status") == CALIBRATED:
        return f"calibrated (κ {cal['kappa']:.2f} on {cal['pairs']} units a person judged)"
    return f"uncalibrated: {cal.get('why', 'not compared with people')}"


def judge_lines(summary: RunSummary) -> list[str]:
    """What the judge did and what it changes, one sentence a line; none for a run it never graded."""
    section = summary.judge
    if not section:
        return []
    about = section.get("judge") or {}
    rubric = (about.get("rubric") or {}).get("version", "?")
    cost = about.get("cost_usd")
    spent = f", {usd(float(cost))}" if isinstance(cost, int | float) else ""
    lines = [
        f"Relevance judge {about.get('model')} (rubric {rubric}): {section.get('graded', 0)} units graded, "
        f"{section.get('relevant', 0)} relevant{spent}; {trust(section)}."
    ]
    if about.get("not_asked"):
        lines.append(f"{about['not_asked']} units were not asked: the budget (--max-cost) would not allow them.")
    if section.get("mode") == JUDGE_ONLY:
        order = " then ".join(section.get("rank_by") or [])
        lines.append(
            f"No goldset: candidates are ranked by the judge's grades ({order}), not by people's judgments; "
            "draft and review a goldset (bench goldset draft) before deciding on these figures."
        )
        return lines
    lines.append(two_ways(summary, section))
    return lines


def two_ways(summary: RunSummary, section: JsonObject) -> str:
    """The best on the goldset alone and with the judge's grades of the holes: the same, or not."""
    mrr = (section.get("headline") or [f"mrr@{summary.k}"])[0]
    best, gold = section.get("best"), section.get("best_goldset")
    figures = (section.get("candidates") or {}).get(best) or {}
    with_judge = (figures.get("quality") or {}).get(mrr)
    alone = summary.candidate(gold).quality.get(mrr) if gold else None
    if best == gold:
        return (
            f"With the judge's grades of the holes the best is the same, {best} ({mrr} {_f(alone)} on the goldset, "
            f"{_f(with_judge)} with the judge)."
        )
    return (
        f"With the judge's grades of the holes, {best} ranks first ({mrr} {_f(with_judge)}) instead of {gold} "
        f"({_f(alone)} on the goldset alone): the goldset may lack answers these candidates find; review the holes."
    )


def _f(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) else "–"
