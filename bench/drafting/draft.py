"""A draft goldset: questions waiting for review, each with the passages that might answer it.

The draft is a JSONL file (``goldsets/<name>.draft.jsonl``), one question a line::

    {"id": "q001", "question": "…", "tags": [], "origin": "questions" | "llm",
     "status": "pending" | "accepted" | "rejected",
     "evidence": [{"doc", "start", "end", "grade"}],          chosen spans (the LLM's verified quotes,
                                                               or what the reviewer selected)
     "passages": [{"doc", "start", "end", "found_by": [{"retriever", "rank", "score"}]}],
     "note": ""}

Beside it, ``<draft>.meta.json`` says how it was made (the corpus and its fingerprint, the pool's
retrievers and depth, or the chat model and prompt). Accepted questions become a goldset that
``bench goldset validate`` passes: each evidence span is written as its quote where that quote
occurs once in the document, else as ``start``/``end``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from bench.errors import BenchError
from bench.files import json_object, numbered_lines, read_text, write_json, write_jsonl
from bench.inputs.answers import JsonObject
from bench.inputs.corpus import Corpus
from bench.inputs.quotes import QuoteError, find_quote

PENDING, ACCEPTED, REJECTED = "pending", "accepted", "rejected"
STATUSES = (PENDING, ACCEPTED, REJECTED)
META_SUFFIX = ".meta.json"


class FoundRow(TypedDict):
    retriever: str
    rank: int
    score: float | None


class SpanRow(TypedDict):
    doc: str
    start: int
    end: int
    grade: int


class PassageRow(TypedDict):
    doc: str
    start: int
    end: int
    found_by: list[FoundRow]


class DraftRow(TypedDict):
    """A draft file's line (and a journal line: the question as it became)."""

    id: str
    question: str
    tags: list[str]
    origin: str
    status: str
    evidence: list[SpanRow]
    passages: list[PassageRow]
    note: str


class GoldEvidenceRow(TypedDict, total=False):
    """A goldset line's evidence item: its quote where that is unique, else its span."""

    doc: str
    quote: str
    start: int
    end: int
    grade: int


class GoldRow(TypedDict, total=False):
    id: str
    question: str
    evidence: list[GoldEvidenceRow]
    tags: list[str]


@dataclass(frozen=True, slots=True)
class Found:
    """One retriever's view of a pooled passage."""

    retriever: str
    rank: int  # 1-based
    score: float | None


@dataclass(frozen=True, slots=True)
class Passage:
    """A span of a document put before the reviewer, with who found it."""

    doc: str
    start: int
    end: int
    found_by: tuple[Found, ...] = ()


@dataclass(frozen=True, slots=True)
class Span:
    """Evidence chosen for a question: a character span of a document and its grade."""

    doc: str
    start: int
    end: int
    grade: int = 1


@dataclass(frozen=True)
class DraftQuestion:
    id: str
    question: str
    tags: tuple[str, ...] = ()
    origin: str = "questions"
    status: str = PENDING
    evidence: tuple[Span, ...] = ()
    passages: tuple[Passage, ...] = ()
    note: str = ""

    def to_dict(self) -> DraftRow:
        return DraftRow(
            id=self.id,
            question=self.question,
            tags=list(self.tags),
            origin=self.origin,
            status=self.status,
            evidence=[SpanRow(doc=e.doc, start=e.start, end=e.end, grade=e.grade) for e in self.evidence],
            passages=[
                PassageRow(
                    doc=p.doc,
                    start=p.start,
                    end=p.end,
                    found_by=[FoundRow(retriever=f.retriever, rank=f.rank, score=f.score) for f in p.found_by],
                )
                for p in self.passages
            ],
            note=self.note,
        )

    @classmethod
    def from_dict(cls, row: JsonObject, where: str) -> DraftQuestion:
        try:
            status = row.get("status", PENDING)
            if not isinstance(status, str) or status not in STATUSES:
                raise ValueError(f"status {status!r} is not one of {', '.join(STATUSES)}")
            return cls(
                id=str(row["id"]),
                question=str(row["question"]),
                tags=tuple(str(t) for t in _items(row.get("tags", ()))),
                origin=str(row.get("origin", "questions")),
                status=status,
                evidence=tuple(
                    Span(str(e["doc"]), _int(e["start"]), _int(e["end"]), _int(e.get("grade", 1)))
                    for e in map(_object, _items(row.get("evidence", ())))
                ),
                passages=tuple(
                    Passage(
                        str(p["doc"]),
                        _int(p["start"]),
                        _int(p["end"]),
                        tuple(
                            Found(str(f["retriever"]), _int(f["rank"]), _score(f.get("score")))
                            for f in map(_object, _items(p.get("found_by", ())))
                        ),
                    )
                    for p in map(_object, _items(row.get("passages", ())))
                ),
                note=str(row.get("note", "")),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise BenchError(f"{where}: not a draft question ({e}); write drafts with `bench goldset draft`") from None


def _items(value: object) -> list[object] | tuple[object, ...]:
    if not isinstance(value, list | tuple):
        raise TypeError(f"expected a list, not {value!r}")
    return value


def _object(value: object) -> JsonObject:
    if not isinstance(value, dict):
        raise TypeError(f"expected an object, not {value!r}")
    return value


def _int(value: object) -> int:
    if not isinstance(value, int | float | str):
        raise TypeError(f"expected a number, not {value!r}")
    return int(value)


def _score(value: object) -> float | None:
    if value is not None and not isinstance(value, int | float):
        raise TypeError(f"expected a score, not {value!r}")
    return value


@dataclass
class Draft:
    path: Path
    questions: list[DraftQuestion]
    meta: JsonObject = field(default_factory=dict)  # how the draft was made: its writer's settings, kept as read

    @property
    def meta_path(self) -> Path:
        return meta_path(self.path)

    def question(self, qid: str) -> DraftQuestion:
        for q in self.questions:
            if q.id == qid:
                return q
        raise KeyError(qid)


def meta_path(draft: Path) -> Path:
    return draft.with_name(draft.name.removesuffix(".jsonl") + META_SUFFIX)


def load_draft(path: Path) -> Draft:
    """The draft at ``path`` and its meta file (empty when absent)."""
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"{path}: draft not found; make one with `bench goldset draft`")
    questions, seen = [], set()
    for lineno, line in numbered_lines(read_text(path)):
        q = DraftQuestion.from_dict(json_object(line, f"{path}:{lineno}", '"id" and "question"'), f"{path}:{lineno}")
        if q.id in seen:
            raise BenchError(f"{path}:{lineno}: duplicate question id {q.id!r}; ids must be unique")
        seen.add(q.id)
        questions.append(q)
    meta: JsonObject = {}
    if meta_path(path).is_file():
        meta = json.loads(read_text(meta_path(path)))
    return Draft(path, questions, meta)


def save_draft(draft: Draft) -> None:
    """Write the draft and its meta file, each atomically."""
    write_jsonl(draft.path, (q.to_dict() for q in draft.questions))
    write_json(draft.meta_path, draft.meta)


def goldset_rows(draft: Draft, corpus: Corpus) -> list[GoldRow]:
    """The accepted questions with evidence, as goldset lines (quote where it is unique, else start/end).

    A pooled passage the reviewer was shown and did not select (it overlaps none of the chosen
    evidence) is written as grade 0: judged not relevant, so metrics never count it relevant and a
    relevance judge can be calibrated against it."""
    rows = []
    for q in draft.questions:
        if q.status != ACCEPTED or not q.evidence:
            continue
        passed_over = [
            Span(p.doc, p.start, p.end, 0)
            for p in q.passages
            if not any(e.doc == p.doc and e.start < p.end and p.start < e.end for e in q.evidence)
        ]
        evidence = [_gold_evidence(e, corpus) for e in [*q.evidence, *passed_over]]
        row = GoldRow(id=q.id, question=q.question, evidence=evidence)
        if q.tags:
            row["tags"] = list(q.tags)
        rows.append(row)
    return rows


def _gold_evidence(span: Span, corpus: Corpus) -> GoldEvidenceRow:
    text = corpus.get(span.doc).text
    quote = text[span.start : span.end]
    item = (
        GoldEvidenceRow(doc=span.doc, quote=quote)
        if _resolves_to(text, quote, span.start, span.end)
        else GoldEvidenceRow(doc=span.doc, start=span.start, end=span.end)
    )
    item["grade"] = span.grade
    return item


def _resolves_to(text: str, quote: str, start: int, end: int) -> bool:
    """Whether the goldset's reader resolves ``quote`` to exactly this span (it forgives line breaks
    and the like, so a quote unique byte for byte may still be ambiguous to it)."""
    try:
        return find_quote(text, quote) == (start, end)
    except QuoteError:
        return False


def write_goldset(draft: Draft, corpus: Corpus, out: Path) -> int:
    """Write the accepted questions to ``out`` atomically; the number written."""
    rows = goldset_rows(draft, corpus)
    write_jsonl(out, rows)
    return len(rows)


def goldset_path(draft: Path) -> Path:
    """Where a draft's goldset goes by default: ``<name>.draft.jsonl`` → ``<name>.jsonl``."""
    name = draft.name.removesuffix(".jsonl").removesuffix(".draft")
    return draft.with_name(f"{name}.jsonl")
