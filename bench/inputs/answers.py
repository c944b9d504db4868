"""The answers file: what a generator answered to each question, from which contexts, and the labels
that say which of its claims the contexts support (docs/answers.md).

One JSON object a line::

    {"question_id": "q001", "answer": "…",
     "contexts": ["text given to the generator", …]        or
     "context_units": ["hr/leave-policy.md#0001", …]      unit ids of the run's candidate,
     "claims": [{"text": "…", "supported": true | false | null}],   optional: null = not judged
     "addresses_question": true | false | null,                     optional
     "reference_claims": [{"text": "…", "covered": true | false | null}],  optional
     …any other keys (the generator's reply, the judge's verdicts) are kept as they are}

Beside it, ``<file>.meta.json`` (optional) says how the file was made: the run and candidate whose
top k were the contexts, the generator, and, when a judge labelled it, the judge and rubric. A file
without one holds people's labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypedDict

from bench import files
from bench.errors import BenchError

META_SUFFIX = ".meta.json"
HUMAN, JUDGE, UNLABELLED = "human", "judge", "unlabelled"  # who labelled a file's claims
_FIELDS = '"question_id" and "answer"'
# A JSON object as read: its values are checked where they are used.
JsonObject = dict[str, object]
_KNOWN = {"question_id", "answer", "contexts", "context_units", "claims", "addresses_question", "reference_claims"}


class AnswerRow(TypedDict, total=False):
    """An answers file's line as written (its extra keys follow, as they were read)."""

    question_id: str
    answer: str
    contexts: list[str]
    context_units: list[str]
    claims: list[JsonObject]
    addresses_question: bool
    reference_claims: list[JsonObject]


@dataclass(frozen=True, slots=True)
class Claim:
    """One factual claim of an answer; ``supported`` None while nobody has decided."""

    text: str
    supported: bool | None = None
    extra: JsonObject = field(default_factory=dict)

    def to_dict(self, label: str = "supported") -> JsonObject:
        return {"text": self.text, label: self.supported, **self.extra}


@dataclass(frozen=True, slots=True)
class Answer:
    """One line of an answers file. ``claims`` None: the answer was never split into claims (an empty
    tuple: it was, and makes none). ``reference_claims`` use ``supported`` for "the answer states it"."""

    question_id: str
    answer: str
    contexts: tuple[str, ...] | None = None
    context_units: tuple[str, ...] | None = None
    claims: tuple[Claim, ...] | None = None
    addresses_question: bool | None = None
    reference_claims: tuple[Claim, ...] | None = None
    extra: JsonObject = field(default_factory=dict)

    def to_dict(self) -> JsonObject:
        out = AnswerRow(question_id=self.question_id, answer=self.answer)
        if self.contexts is not None:
            out["contexts"] = list(self.contexts)
        if self.context_units is not None:
            out["context_units"] = list(self.context_units)
        if self.claims is not None:
            out["claims"] = [c.to_dict() for c in self.claims]
        if self.addresses_question is not None:
            out["addresses_question"] = self.addresses_question
        if self.reference_claims is not None:
            out["reference_claims"] = [c.to_dict("covered") for c in self.reference_claims]
        return {**out, **self.extra}

    def with_contexts(self, contexts: tuple[str, ...]) -> Answer:
        return replace(self, contexts=contexts)


@dataclass(frozen=True)
class AnswersFile:
    path: Path
    answers: tuple[Answer, ...]
    meta: JsonObject = field(default_factory=dict)
    lines: tuple[int, ...] = ()  # each answer's line in the file, for messages

    def where(self, i: int) -> str:
        """``file:line`` of the ``i``-th answer."""
        return f"{self.path}:{self.lines[i] if i < len(self.lines) else i + 1}"

    @property
    def labelled_by(self) -> str:
        """HUMAN for a file without a meta (labelled by hand), else what its meta says."""
        if "labels" not in self.meta:
            return HUMAN
        return str(self.meta["labels"] or UNLABELLED)

    def meta_text(self, key: str) -> str | None:
        """A string the meta records (``run_id``, ``run_path``, ``candidate``); None when absent or not one."""
        value = self.meta.get(key)
        return value if isinstance(value, str) else None

    def meta_section(self, key: str) -> JsonObject:
        """An object the meta records (``judge``, ``generator``); empty when absent or not one."""
        value = self.meta.get(key)
        return value if isinstance(value, dict) else {}

    def by_question(self) -> dict[str, Answer]:
        return {a.question_id: a for a in self.answers}


def meta_path(path: Path) -> Path:
    return path.with_name(path.name + META_SUFFIX)


def load_answers(path: str | Path) -> AnswersFile:
    """Parse an answers file and its meta; the first problem is a BenchError naming file:line and the fix."""
    path = Path(path)
    if not path.is_file():
        raise BenchError(
            f"{path}: answers file not found; give a JSONL file with one answer a line "
            "(write one by hand, or with `bench answers generate`)"
        )
    answers: list[Answer] = []
    lines: list[int] = []
    seen: dict[str, int] = {}
    for lineno, line in files.numbered_lines(files.read_text(path)):
        where = f"{path}:{lineno}"
        answer = parse_answer(files.json_object(line, where, _FIELDS), where)
        if answer.question_id in seen:
            raise BenchError(
                f"{where}: a second answer to question {answer.question_id!r} (first on line "
                f"{seen[answer.question_id]}); keep one answer per question"
            )
        seen[answer.question_id] = lineno
        answers.append(answer)
        lines.append(lineno)
    if not answers:
        raise BenchError(f"{path}: no answers in it; write one JSON object a line with {_FIELDS}")
    meta: JsonObject = {}
    if meta_path(path).is_file():
        text = files.read_text(meta_path(path))
        try:
            read = files.loads_strict(text)
        except ValueError as e:
            fix = "delete it if the answers are labelled by hand"
            raise BenchError(f"{meta_path(path)}: not valid JSON ({e}); {fix}") from None
        if not isinstance(read, dict):
            raise BenchError(f"{meta_path(path)}: not a JSON object; delete it if the answers are labelled by hand")
        meta = read
    return AnswersFile(path, tuple(answers), meta, tuple(lines))


def parse_answer(row: JsonObject, where: str) -> Answer:
    qid = row.get("question_id")
    if not isinstance(qid, str) or not qid.strip():
        raise BenchError(f'{where}: missing or empty "question_id"; give the goldset id of the question answered')
    text = row.get("answer")
    if not isinstance(text, str):
        raise BenchError(f'{where}: answer to {qid!r}: "answer" must be the answer\'s text (a string; "" for none)')
    contexts = _strings(row, "contexts", where, qid)
    units = _strings(row, "context_units", where, qid)
    if contexts is not None and units is not None:
        raise BenchError(f'{where}: answer to {qid!r} gives both "contexts" and "context_units"; keep one')
    return Answer(
        question_id=qid,
        answer=text,
        contexts=contexts,
        context_units=units,
        claims=_claims(row, "claims", "supported", where, qid),
        addresses_question=_flag(row.get("addresses_question"), f'{where}: answer to {qid!r}: "addresses_question"'),
        reference_claims=_claims(row, "reference_claims", "covered", where, qid),
        extra={k: v for k, v in row.items() if k not in _KNOWN},
    )


def _strings(row: JsonObject, key: str, where: str, qid: str) -> tuple[str, ...] | None:
    value = row.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BenchError(f'{where}: answer to {qid!r}: "{key}" must be a list of strings')
    return tuple(value)


def _claims(row: JsonObject, key: str, label: str, where: str, qid: str) -> tuple[Claim, ...] | None:
    value = row.get(key)
    if value is None:
        return None
    if not isinstance(value, list):
        raise BenchError(f'{where}: answer to {qid!r}: "{key}" must be a list like [{{"text": ..., "{label}": true}}]')
    out = []
    for i, item in enumerate(value, 1):
        at = f"{where}: answer to {qid!r}: {key} {i}"
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
            raise BenchError(f'{at}: expected an object like {{"text": "the claim", "{label}": true}}')
        extra = {k: v for k, v in item.items() if k not in ("text", label)}
        out.append(Claim(" ".join(item["text"].split()), _flag(item.get(label), f'{at}: "{label}"'), extra))
    return tuple(out)


def _flag(value: object, what: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise BenchError(f"{what} must be true, false or null (not decided), not {value!r}")


def save_answers(path: Path, answers: list[Answer] | tuple[Answer, ...], meta: JsonObject | None = None) -> None:
    """Write an answers file (and its meta) atomically; the meta first, so a reader never pairs new
    answers with an old meta."""
    try:
        if meta is not None:
            files.write_json(meta_path(path), meta)
        files.write_jsonl(path, (a.to_dict() for a in answers))
    except OSError as e:
        raise BenchError(f"{path}: cannot write the answers ({e.strerror}); give a writable path with --out") from None
