"""Questions asked again as people type them (``perturb = [...]``, ``--perturb``): the perturbed forms,
made once per run, and what each candidate loses on them."""

from __future__ import annotations

from bench.core.records import QuestionRecord, Retrieved
from bench.core.sections import JsonObject
from bench.evaluation.robustness import robustness, with_perturbed
from bench.evaluation.scoring import score_candidate
from bench.inputs.goldset import Goldset
from bench.text.perturb import perturbed


def as_typed(goldset: Goldset, kinds: tuple[str, ...], seed: int) -> dict[str, list[str]]:
    """Kind → every question in that perturbed form, in goldset order."""
    return {kind: [perturbed(q.text, kind, q.id, seed) for q in goldset.questions] for kind in kinds}


def listed(goldset: Goldset, asked: dict[str, list[str]]) -> list[JsonObject]:
    """The lines of perturbed_questions.jsonl: each question's perturbed forms, as asked."""
    return [
        {"question_id": q.id, "kind": kind, "question": texts[i], "changed": texts[i] != q.text}
        for kind, texts in asked.items()
        for i, q in enumerate(goldset.questions)
    ]


def scored(
    records: list[QuestionRecord],
    retrieved: dict[str, list[Retrieved]],
    *,
    k: int,
    depth: int,
    gain: str,
    unit: str,
    min_overlap: float,
) -> tuple[list[QuestionRecord], JsonObject]:
    """``records`` with their perturbed forms' figures (``retrieved``: kind → the rankings of
    ``retrieve.run_perturbed``), and the candidate's robustness for summary.json."""
    typed = {
        kind: score_candidate(rows, k=k, depth=depth, gain=gain, unit=unit, min_overlap=min_overlap)[0]
        for kind, rows in retrieved.items()
    }
    return with_perturbed(records, typed, k), robustness(records, typed, k)
