"""A chat model grading passages' relevance to questions, by a versioned rubric (UMBRELA's 0–3 scale).

Each request sends one question and one passage's text; the reply is JSON ``{"grade": N}``. A
reply without a grade 0–3, or a refusal, leaves the passage unjudged (its label says why): a grade
is never guessed. Replies are kept in a log under the cache folder, by a hash of what was sent and
to which model, so that any later run asking the same sends nothing; the budget stops before a call
that would take the cost past it.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from bench.core.records import RankedUnit, Retrieved, UnitLabel
from bench.evaluation.holes import covered
from bench.evaluation.judged import JUDGE, JUDGE_GRADES, Key, person_grade, unit_key
from bench.llm.asking import Request
from bench.llm.client import json_in_reply
from bench.llm.prompts import Template, load_template
from bench.llm.replies import Row, Tally, reply_text
from bench.llm.settings import ChatSettings

RUBRIC = Path(__file__).parent / "rubric" / "relevance_v1.md"
RUBRIC_NEEDS = {"system": (), "grade": ("question", "passage")}
MAX_TOKENS = 50  # a grade in JSON, and room for a model that adds a word
MAX_PASSAGE_CHARS = 8_000  # a longer unit (a whole document) is judged on its beginning
HOLE, CALIBRATION = "hole", "calibration"
CALIBRATION_UNITS = 60  # units a person judged, graded too so the judge's agreement can be measured


@dataclass(frozen=True)
class Ask:
    """One passage to grade for one question: a hole, or a unit a person judged (for calibration)."""

    question_id: str
    question: str
    unit: RankedUnit
    text: str
    purpose: str  # HOLE or CALIBRATION


@dataclass(frozen=True)
class Judged:
    """What one judging pass gave: the labels (new and from the log), and what it cost."""

    labels: list[UnitLabel]
    tally: Tally
    asked: int
    not_asked: int  # left out by the budget
    problems: int  # replies with no grade, refusals included


def replies_path(folder: Path) -> Path:
    """The reply log every relevance judging with this cache folder (``paths.judge_dir``) shares."""
    return folder / "replies.jsonl"


def load_rubric(path: Path | None = None) -> Template:
    return load_template(path or RUBRIC, RUBRIC_NEEDS)


def pooled(
    records: Sequence[Retrieved],
    texts: Mapping[tuple[str, int, int], str],
    k: int,
    unit_kind: str,
    known: Mapping[Key, UnitLabel],
    calibration_units: int = CALIBRATION_UNITS,
    seed: int = 0,
) -> list[Ask]:
    """Every candidate's unjudged top-k units, once each (the holes), then a seeded sample of the units
    a person judged in some top k — half of them judged not relevant where the goldset has that many —
    for calibration; units ``known`` already has a label for are left out."""
    holes: dict[Key, Ask] = {}
    judged: dict[Key, tuple[bool, Ask]] = {}
    for rec in records:
        for unit in rec.ranking[:k]:
            key = unit_key(rec.question_id, unit, unit_kind)
            if key in known or key in holes or key in judged:
                continue
            text = texts.get((unit.doc_id, unit.start, unit.end))
            if text is None:
                continue
            if covered(unit, rec.evidence):
                ask = Ask(rec.question_id, rec.question, unit, text, CALIBRATION)
                judged[key] = (bool(person_grade(unit, rec.evidence)), ask)
            else:
                holes[key] = Ask(rec.question_id, rec.question, unit, text, HOLE)
    already = sum(1 for label in known.values() if label.extra.get("purpose") == CALIBRATION)
    return [*holes.values(), *_sample(list(judged.values()), max(0, calibration_units - already), seed)]


def _sample(judged: list[tuple[bool, Ask]], n: int, seed: int) -> list[Ask]:
    """``n`` units, as many judged not relevant as relevant where there are enough of each."""
    rng = random.Random(seed)
    negative = [a for relevant, a in judged if not relevant]
    positive = [a for relevant, a in judged if relevant]
    rng.shuffle(negative)
    rng.shuffle(positive)
    take_negative = min(len(negative), max(n // 2, n - len(positive)))
    return negative[:take_negative] + positive[: n - take_negative]


def grade_in(row: Row) -> tuple[int | None, str | None]:
    """The grade a reply gives, or why it gives none."""
    if row.get("refusal"):
        return None, f"refused: {str(row['refusal'])[:200]}"
    found = json_in_reply(reply_text(row))
    grade = found.get("grade") if isinstance(found, dict) else None
    if isinstance(grade, str) and grade.strip().isdigit():
        grade = int(grade.strip())
    if isinstance(grade, bool) or not isinstance(grade, int) or grade not in JUDGE_GRADES:
        return None, "no grade 0–3 in the reply"
    return grade, None


def judge_units(asks: Sequence[Ask], chat: ChatSettings, folder: Path, rubric: Template, console: Console) -> Judged:
    """Each ask graded by ``chat``'s model, within its budget; replies from the log are not sent again."""
    client = chat.client(MAX_TOKENS)
    asker = chat.asker(client, replies_path(folder))
    requests = []
    for ask in asks:
        passage = ask.text[:MAX_PASSAGE_CHARS]
        messages = rubric.messages("grade", question=ask.question, passage=passage)
        about = {"question_id": ask.question_id, "unit": ask.unit.id, "rubric": rubric.version}
        requests.append(Request(client.request_key(messages), messages, about))
    with console.status(f"judging {len(asks)} passages with {chat.model}") as status:
        asker.status = status
        rows = asker.ask(requests, "relevance")
    labels, problems = [], 0
    for ask, request in zip(asks, requests):
        row = rows.get(request.key)
        if row is None:
            continue
        grade, problem = grade_in(row)
        problems += problem is not None
        extra: dict[str, object] = {"purpose": ask.purpose}
        if len(ask.text) > MAX_PASSAGE_CHARS:
            extra["passage_chars"] = MAX_PASSAGE_CHARS
        label = UnitLabel(
            question_id=ask.question_id, unit=ask.unit.id, doc_id=ask.unit.doc_id, start=ask.unit.start,
            end=ask.unit.end, grade=grade, by=JUDGE, model=chat.model, rubric=rubric.version,
            rubric_sha256=rubric.sha256, reply=reply_text(row), problem=problem, extra=extra,
        )  # fmt: skip
        labels.append(label)
    return Judged(labels, asker.tally, len(labels), len(asks) - len(labels), problems)
