"""report.pdf's "Answer layer" section, for a run whose answers were scored (`bench answers score`):
retrieval and the answers side by side over the same questions, who labelled the claims and how far to
trust it, which layer failed first, the findings, and the questions that failed a layer.
"""

from __future__ import annotations

from pathlib import Path

from bench.core.measures import metric_key
from bench.evaluation.answers import GROUNDEDNESS, LAYERS, MIN_CALIBRATION_CLAIMS, MIN_CALIBRATION_KAPPA, RELEVANCE
from bench.formatting import plural
from bench.inputs.answers import JUDGE
from bench.report import answers_view as view
from bench.report.pdf_layout import Para, Section, Table, Terms
from bench.report.pdf_sections import MISSING

TITLE = "Answer layer"


def answers_section(layer: view.AnswerLayer) -> Section:
    summary, rows = layer.summary, layer.rows
    blocks: list = [Para(_intro(summary), size=9, space_after=9)]
    header = ["layer", "metric", "mean [95% interval]", "n", "labels"]
    shown = [
        [name, metric, view.figure(entry, MISSING), str((entry or {}).get("n", 0)), labels]
        for name, metric, entry, labels in view.side_by_side(summary)
    ]
    blocks.append(Table(header, shown, size=8.5, row_height=1.9, space_after=8))
    blocks += [Para(line, size=9, space_after=4) for line in view.counts(summary)]
    blocks[-1].space_after = 10
    blocks.append(Para("Which layer failed first", size=11, bold=True, keep_next=True, space_after=3))
    layers = summary.get("layers") or {}
    counts = [[name, str(layers.get(name, 0)), view.LAYER_MEANING[name]] for name in LAYERS]
    blocks.append(Table(["layer", "questions", "meaning"], counts, size=8.5, space_after=10))
    findings = summary.get("findings") or []
    if findings:
        blocks.append(Para("Findings", size=11, bold=True, keep_next=True, space_after=3))
        blocks += [Para(line, size=9, bullet="•", space_after=3) for line in findings]
        blocks[-1].space_after = 10
    failed = view.failed_rows(rows)
    if failed:
        blocks.append(
            Para(f"Questions that failed a layer ({len(failed)} of {len(rows)})", size=11, bold=True, keep_next=True)
        )
        blocks.append(_failures(summary, failed))
    return Section(TITLE, blocks)


def _intro(summary: dict) -> str:
    name = Path(str(summary.get("answers_file", "answers"))).name
    if summary.get("candidate"):
        source = f"from the contexts {summary['candidate']} retrieved (top {summary.get('k')})"
    else:
        source = "scored without a run, so retrieval was not measured"
    return (
        f"The answers of {name} to {plural(summary.get('n_answers') or 0, 'question')}, {source}; claims "
        f"{view.labels_text(summary)}. Retrieval and the answers are read side by side, never as one score: a "
        "grounded answer can dodge the question, and a direct one can invent a detail."
    )


def _failures(summary: dict, failed: list[dict]) -> Table:
    k = summary.get("k")
    recall = metric_key("recall", k) if k else "recall@k"
    header = [
        "question",
        recall,
        "evidence in contexts",
        "groundedness (supported / claims)",
        "addresses the question",
        "failed at",
        "claims the contexts do not support",
    ]
    rows = []
    for row in failed:
        retrieval = row.get("retrieval") or {}
        rows.append(
            [
                row["question_id"],
                view.share(retrieval.get(recall), missing=MISSING),
                view.yes_no(retrieval.get("evidence_in_contexts"), MISSING),
                view.share(row.get(GROUNDEDNESS), row.get("supported"), row.get("claims"), MISSING),
                view.yes_no(row.get(RELEVANCE), MISSING),
                view.failed_at(row),
                "; ".join(row.get("unsupported_claims") or []) or MISSING,
            ]
        )
    return Table(header, rows, size=7.5, clip=frozenset({6}))


def glossary_terms(summary: dict) -> list[tuple[str, str]]:
    """The answer layer's terms, for the glossary of a report that shows them."""
    calibration = summary.get("calibration") or {}
    claims = calibration.get("min_claims") or MIN_CALIBRATION_CLAIMS
    kappa = calibration.get("min_kappa") or MIN_CALIBRATION_KAPPA
    terms = [
        (
            "groundedness",
            "Per answer, the share of its claims that the contexts it was given support (claims nobody decided left "
            "out); the mean is over the answers that make claims. An answer with no factual claim (a refusal, "
            '"I don\'t know") is counted apart, never as grounded.',
        ),
        (
            "answer relevance",
            "1 if the answer addresses the question asked, 0 if it answers something else; the mean is the share of "
            "labelled answers that address their question.",
        ),
        (
            "claim recall",
            "Per answer, the share of the question's reference claims that the answer states; the mean is over the "
            "answers with labelled reference claims.",
        ),
        (
            "evidence in contexts",
            "1 if a relevant unit was among the contexts the generator was given, else 0; for contexts given as "
            "texts, whether one was in the candidate's top k.",
        ),
        (
            "first layer to fail",
            "Checked in the order a question flows: retrieval (the evidence never reached the contexts), generation "
            "(a claim the contexts do not support), question handling (the answer does not address the question); "
            "ok when none failed, unknown when a layer was not measured.",
        ),
    ]
    if summary.get("labels") == JUDGE:
        terms.append(
            (
                "uncalibrated",
                f"Figures from a judge's labels before `bench answers agree` found a person's sample of at least "
                f"{claims} claims agreeing with that judge and rubric at Cohen's κ ≥ {kappa:g}.",
            )
        )
    return terms


def with_answer_terms(glossary: Section, summary: dict) -> Section:
    """The glossary with the answer layer's terms after the others."""
    return Section(glossary.title, [*glossary.blocks, Terms(glossary_terms(summary), size=7.5, space_after=3)])
