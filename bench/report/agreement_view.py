"""What `bench answers agree` prints: how far a judge's claim labels agree with a person's."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from bench.formatting import plural
from bench.report.fitted import FittedTable

_SHOWN = 20  # disagreements listed in the terminal; all of them are in the agreement file


def _figure(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "undefined"


def confusion_table(result: dict) -> FittedTable:
    """The 2 × 2 confusion matrix: the person's label down, the judge's across."""
    c = result["confusion"]
    table = FittedTable(title="claims: person (rows) × judge (columns)")
    table.add_column("person", key=True)
    table.add_column("judge: supported")
    table.add_column("judge: unsupported")
    table.add_row("supported", str(c["human_supported_judge_supported"]), str(c["human_supported_judge_unsupported"]))
    table.add_row(
        "unsupported", str(c["human_unsupported_judge_supported"]), str(c["human_unsupported_judge_unsupported"])
    )
    return table


def print_agreement(console: Console, result: dict) -> None:
    n, kappa = result["claims"], result["kappa"]
    console.print(
        f"judge {escape(str(result.get('judge_model')))} (rubric {escape(str(result.get('rubric_version')))}) "
        f"against a person on {plural(n, 'claim')}: agreement {_figure(result['agreement'])}, "
        f"Cohen's κ {_figure(kappa)}"
    )
    console.print(confusion_table(result))
    if result.get("unmatched_claims"):
        console.print(
            f"{plural(result['unmatched_claims'], 'claim')} of the person's file had no verdict of the judge to "
            "compare with (an answer or claim text it lacks, or a claim left undecided)"
        )
    relevance = result.get("relevance")
    if relevance:
        console.print(
            f"answer relevance on {plural(relevance['claims'], 'answer')}: agreement "
            f"{_figure(relevance['agreement'])}, κ {_figure(relevance['kappa'])}"
        )
    if result["calibrates"]:
        console.print("[green]calibrated[/]: the judge's scores are no longer marked uncalibrated")
    else:
        console.print(
            f"[yellow]uncalibrated[/]: calibration needs at least {result['min_claims']} claims at "
            f"κ ≥ {result['min_kappa']:g}; the judge's scores stay marked uncalibrated"
        )
    shown = result["disagreements"][:_SHOWN]
    if shown:
        table = FittedTable(title=f"disagreements ({len(result['disagreements'])})")
        table.add_column("question", key=True)
        table.add_column("person", justify="left")
        table.add_column("judge", justify="left")
        table.add_column("claim", justify="left")
        for d in shown:
            table.add_row(
                d["question_id"],
                "supported" if d["human"] else "unsupported",
                "supported" if d["judge"] else "unsupported",
                escape(d["claim"]),
            )
        console.print(table)
        if len(result["disagreements"]) > _SHOWN:
            console.print(
                f"… {len(result['disagreements']) - _SHOWN} more in {escape(result['judge_file'])}.agreement.json"
            )
