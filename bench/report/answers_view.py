"""The answer layer beside retrieval, as `bench answers score` prints it and the reports reuse it.

The two layers are shown side by side over the same questions, each figure with its interval, and
never folded into one score: a grounded answer can dodge the question, and a direct one can invent
a detail. Figures a judge labelled read "uncalibrated" wherever they appear until a person's sample
has calibrated that judge (`bench answers agree`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console, Group, RenderableType
from rich.constrain import Constrain
from rich.markup import escape
from rich.text import Text

from bench.core.measures import metric_key
from bench.core.sections import JsonObject
from bench.evaluation.answers import (
    CALIBRATED,
    CLAIM_RECALL,
    GENERATION,
    GROUNDEDNESS,
    LAYERS,
    OK,
    PEOPLE,
    QUESTION_HANDLING,
    RELEVANCE,
    RETRIEVAL,
    UNKNOWN,
)
from bench.formatting import MISSING, plural, with_ci
from bench.inputs.answers import JUDGE, UNLABELLED
from bench.report.fitted import FittedTable
from bench.results import schema

__all__ = [
    "AnswerLayer",
    "answers_lines",
    "answers_tables",
    "failed_rows",
    "print_answers",
]

WIDTH = 100  # the terminal view fits this many columns, ids and numbers never cut
FAILED = (RETRIEVAL, GENERATION, QUESTION_HANDLING)  # the layers a question can fail, in flow order
SHOWN_FAILURES = 40  # questions listed in the terminal; every one is in answers_per_question.jsonl
SHOWN_IDS = 12  # ids listed in one line of counts
ANSWER_METRICS = ((GROUNDEDNESS, "groundedness"), (RELEVANCE, "answer relevance"), (CLAIM_RECALL, "claim recall"))
RETRIEVAL_METRICS = ("recall", "hit_rate", "mrr")
CONTEXT_HIT_RATE = "context_hit_rate"
LAYER_MEANING = {
    RETRIEVAL: "the evidence never reached the contexts",
    GENERATION: "a claim the contexts do not support",
    QUESTION_HANDLING: "the answer does not address the question",
    OK: "passed every layer",
    UNKNOWN: "a layer nobody measured (no run, claims or relevance label)",
}


@dataclass(frozen=True)
class AnswerLayer:
    """A run folder's answer figures: ``answers_summary.json`` and its rows, one per answered question."""

    # the files as bench.answers writes them (JSON read as it is; their keys are bench.answers's)
    summary: JsonObject
    rows: list[JsonObject]

    @classmethod
    def load(cls, folder: Path) -> AnswerLayer | None:
        """The figures `bench answers score` wrote into ``folder``; None when its answers were never scored."""
        summary = schema.load_answers_summary(folder)
        return None if summary is None else cls(summary, schema.load_answer_rows(folder))


# --- words shared by every view ----------------------------------------------------------------------------


def uncalibrated(summary: dict) -> bool:
    """Whether the figures are a judge's that no person's sample has calibrated yet."""
    return summary.get("labels") == JUDGE and (summary.get("calibration") or {}).get("status") != CALIBRATED


def labels_short(summary: dict) -> str:
    """Who labelled the claims, in two or three words: ``people``, ``judge, uncalibrated``."""
    labels = summary.get("labels")
    if labels == JUDGE:
        return "judge, uncalibrated" if uncalibrated(summary) else "judge, calibrated"
    return "unlabelled" if labels == UNLABELLED else "people"


def labels_text(summary: dict) -> str:
    """Who labelled the claims and how far to trust it, in a sentence's words."""
    labels = summary.get("labels")
    if labels == UNLABELLED:
        return "unlabelled: no claim has a verdict yet"
    if labels != JUDGE:
        return PEOPLE
    judge = summary.get("judge") or {}
    who = f"labelled by a judge ({judge.get('model') or 'model not recorded'}"
    who += f", rubric {judge['rubric_version']})" if judge.get("rubric_version") else ")"
    calibration = summary.get("calibration") or {}
    if not uncalibrated(summary):
        kappa, claims = calibration.get("kappa"), calibration.get("claims")
        measured = f" (κ {kappa:.2f} on {claims} claims)" if isinstance(kappa, float) else ""
        return f"{who}, calibrated{measured}"
    why = calibration.get("why")
    return f"{who}, uncalibrated" + (f": {why}" if why else "")


def figure(entry: dict | None, missing: str = MISSING) -> str:
    """A mean with its 95% interval, ``0.833 [0.500, 1.000]``; ``missing`` when nothing decided it."""
    if not entry or entry.get("mean") is None:
        return missing
    return with_ci(entry["mean"], entry.get("ci"))


def side_by_side(summary: dict) -> list[tuple[str, str, dict | None, str]]:
    """(layer, metric, its mean entry, who labelled it) for both layers: retrieval first, then the answers."""
    k = summary.get("k")
    retrieval = summary.get("retrieval") or {}
    out: list[tuple[str, str, dict | None, str]] = []
    if retrieval and k:
        for name in RETRIEVAL_METRICS:
            key = metric_key(name, k)
            if key in retrieval:
                out.append((RETRIEVAL, key, retrieval[key], "goldset"))
        out.append((RETRIEVAL, "evidence in contexts", retrieval.get(CONTEXT_HIT_RATE), "goldset"))
    labels = labels_short(summary)
    metrics = summary.get("metrics") or {}
    out += [("answers", title, metrics.get(key), labels) for key, title in ANSWER_METRICS]
    return out


def _ids(ids: list[str]) -> str:
    shown = ", ".join(ids[:SHOWN_IDS])
    return shown + (f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else "")


def headline(summary: dict) -> str:
    """One line for a report's first page: the scored candidate's answer figures and who labelled them."""
    who = summary.get("candidate") or Path(str(summary.get("answers_file", "answers"))).name
    n = summary.get("n_answers") or 0
    short = labels_short(summary)
    label = "labelled by people" if short == "people" else short.replace("judge, ", "judge-labelled, ")
    metrics = summary.get("metrics") or {}
    parts = [f"{title} {figure(metrics.get(key))}" for key, title in ANSWER_METRICS[:2]]
    if (metrics.get(CLAIM_RECALL) or {}).get("n"):
        parts.append(f"claim recall {figure(metrics[CLAIM_RECALL])}")
    return f"Answers ({who}, {plural(n, 'question')}, {label}): {', '.join(parts)}."


def counts(summary: dict) -> list[str]:
    """Claims supported and undecided, answers counted apart, questions nobody answered: a sentence each."""
    supported = f"{summary.get('supported_claims', 0)} of {plural(summary.get('claims', 0), 'claim')} supported"
    if summary.get("undecided_claims"):
        supported += f"; {summary['undecided_claims']} undecided, left out of groundedness"
    out = [supported + "."]
    apart = summary.get("no_claim_answers") or []
    if apart:
        out.append(f'No factual claim (a refusal or "I don\'t know"; counted apart, not as grounded): {_ids(apart)}.')
    unsplit = summary.get("not_split") or []
    if unsplit:
        out.append(f"Never split into claims (no groundedness): {_ids(unsplit)}.")
    missing = summary.get("unanswered") or []
    if missing:
        total = summary.get("n_questions")
        of = f" ({summary.get('n_answers', 0)} of {total} questions answered)" if total else ""
        out.append(f"Unanswered{of}: {_ids(missing)}.")
    return out


def layers_line(summary: dict) -> str:
    layers = summary.get("layers") or {}
    failed = ", ".join(f"{layer} {layers.get(layer, 0)}" for layer in FAILED)
    line = f"First layer to fail: {failed}; passed every layer: {layers.get(OK, 0)}"
    return line + (f"; not known (a layer not measured): {layers[UNKNOWN]}." if layers.get(UNKNOWN) else ".")


def answers_lines(summary: dict) -> list[str]:
    """Short plain lines of the answer layer: the headline, retrieval of the same questions, the counts,
    the layers that failed first and, for a judge not yet calibrated, why."""
    out = [headline(summary)]
    retrieval = [f"{metric} {figure(entry)}" for layer, metric, entry, _ in side_by_side(summary) if layer == RETRIEVAL]
    if retrieval:
        out.append(f"Retrieval of the same questions (top {summary.get('k')}): {', '.join(retrieval)}.")
    out += [" ".join(counts(summary)), layers_line(summary)]
    if uncalibrated(summary):
        why = (summary.get("calibration") or {}).get("why")
        out.append("The answer figures are a judge's, uncalibrated" + (f": {why}" if why else "") + ".")
    return out


def failed_rows(rows: list[dict]) -> list[dict]:
    """The questions that failed a layer, in the answers file's order."""
    return [r for r in rows if r.get("layer") in FAILED]


def yes_no(value: object, missing: str = MISSING) -> str:
    if value is None:
        return missing
    return "yes" if value else "no"


def share(value: object, hits: object = None, total: object = None, missing: str = MISSING) -> str:
    """A question's figure, ``0.500 (1/2)`` with the counts behind it when given."""
    if not isinstance(value, (int, float)):
        return missing
    return f"{value:.3f}" + (f" ({hits}/{total})" if total else "")


def failed_at(row: dict) -> str:
    """The layers that failed, the first first: ``retrieval, generation``."""
    return ", ".join(row.get("failing") or [row.get("layer")])


# --- the terminal -------------------------------------------------------------------------------------------


def _header(summary: dict) -> Text:
    where = [f"answers {Path(str(summary.get('answers_file', '?'))).name}"]
    if summary.get("run_id"):
        where += [f"run {summary['run_id']}", f"candidate {summary.get('candidate')}", f"k = {summary.get('k')}"]
    else:
        where.append("no run: retrieval not measured (score with --run RUN)")
    text = Text(" · ".join(where), style="bold")
    calibration = labels_text(summary)
    text.append("\nclaims ")
    text.append(calibration, style="yellow" if uncalibrated(summary) else "")
    return text


def _layers_table(summary: dict) -> FittedTable:
    table = FittedTable(title="Which layer failed first, question by question")
    table.add_column("layer", key=True)
    table.add_column("questions")
    table.add_column("meaning", justify="left")
    layers = summary.get("layers") or {}
    for layer in LAYERS:
        table.add_row(layer, str(layers.get(layer, 0)), LAYER_MEANING[layer])
    return table


def _both_layers_table(summary: dict) -> FittedTable:
    table = FittedTable(
        title=f"Retrieval beside the answers, same {plural(summary.get('n_answers') or 0, 'question')} "
        "(never one score)"
    )
    table.add_column("layer", key=True)
    table.add_column("metric", key=True)
    table.add_column("mean [95% interval]")
    table.add_column("n")
    table.add_column("labels", justify="left")
    shown = side_by_side(summary)
    for i, (layer, metric, entry, labels) in enumerate(shown):
        first = i == 0 or shown[i - 1][0] != layer
        name = ("retrieval" if layer == RETRIEVAL else "answers") if first else ""
        marked = f"[yellow]{labels}[/]" if labels.endswith("uncalibrated") else labels
        n = str((entry or {}).get("n", 0))
        table.add_row(name, metric, figure(entry), n, marked)
        if i + 1 < len(shown) and shown[i + 1][0] != layer:
            table.add_section()
    if not summary.get("retrieval"):
        table.caption = "retrieval: not measured without a run (bench answers score FILE --run RUN)"
    return table


def _failures_table(summary: dict, rows: list[dict]) -> FittedTable | None:
    failed = failed_rows(rows)
    if not failed:
        return None
    k = summary.get("k")
    recall = metric_key("recall", k) if k else "recall@k"
    table = FittedTable(title=f"Questions that failed a layer ({len(failed)} of {len(rows)})")
    table.add_column("question", key=True)
    for header in (recall, "evidence in contexts", "groundedness", "relevant", "failed at"):
        table.add_column(header, justify="left" if header == "failed at" else "right")
    for row in failed[:SHOWN_FAILURES]:
        retrieval = row.get("retrieval") or {}
        table.add_row(
            escape(row["question_id"]),
            share(retrieval.get(recall)),
            yes_no(retrieval.get("evidence_in_contexts")),
            share(row.get(GROUNDEDNESS), row.get("supported"), row.get("claims")),
            yes_no(row.get(RELEVANCE)),
            failed_at(row),
        )
    if len(failed) > SHOWN_FAILURES:
        table.caption = f"… {len(failed) - SHOWN_FAILURES} more in answers_per_question.jsonl"
    return table


def answers_tables(summary: dict, rows: list[dict], width: int | None = None) -> RenderableType:
    """Everything `bench answers score` prints, laid out for ``width`` columns (at most ``WIDTH``)."""
    parts: list[RenderableType] = [_header(summary), _both_layers_table(summary)]
    parts += [Text(line) for line in counts(summary)]
    parts.append(_layers_table(summary))
    findings = summary.get("findings") or []
    if findings:
        parts.append(Text("Findings", style="bold"))
        parts += [Text(f"• {line}") for line in findings]
    failures = _failures_table(summary, rows)
    if failures is not None:
        parts.append(failures)
    return Constrain(Group(*parts), min(width or WIDTH, WIDTH))


def print_answers(console: Console, summary: dict, rows: list[dict]) -> None:
    console.print(answers_tables(summary, rows, console.width))
