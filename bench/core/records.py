"""A question as a candidate answered it: the lines of per_question.jsonl as typed values, and the
one reading and writing of a record that every file of a run shares.

``from_dict`` keeps keys it does not know in ``extra`` and ``to_dict`` writes them back, so a run
written by a newer bench loses nothing when an older one rewrites it. Keys are never renamed or
dropped here; a figure that does not apply is ``None`` (``null``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, cast

from bench.core.scores import QuestionDiagnostics
from bench.core.sections import JsonObject


class Record:
    """``from_dict``/``to_dict`` for a dataclass whose JSON keys are its field names, plus ``extra``."""

    _nested: ClassVar[dict[str, type]] = {}  # field → the record type of each element of its list
    _typed: ClassVar[dict[str, type]] = {}  # field → its typed section, read and written by its own to/from_dict

    def __post_init__(self) -> None:
        # a typed field given as the JSON it is read from (a test, a caller that built the dict) is read into its type
        for name, typed in self._typed.items():
            value = getattr(self, name)
            if value is not None and not isinstance(value, typed):
                object.__setattr__(self, name, typed.from_dict(value))  # type: ignore[attr-defined]

    @classmethod
    def from_dict(cls, d: JsonObject) -> Self:
        names = [f.name for f in dataclasses.fields(cls) if f.name != "extra"]  # type: ignore[arg-type]
        values = {}
        for name in names:
            if name not in d:
                continue
            value = d[name]
            if name in cls._nested and value is not None:
                value = [cls._nested[name].from_dict(v) for v in value]  # type: ignore[attr-defined]
            elif name in cls._typed and value is not None:
                value = cls._typed[name].from_dict(value)  # type: ignore[attr-defined]
            values[name] = value
        extra = {key: value for key, value in d.items() if key not in names}
        return cast(Any, cls)(**values, extra=extra)  # cls is one of the dataclasses below

    def to_dict(self) -> JsonObject:
        out: JsonObject = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if f.name in self._nested and value is not None:
                value = [v.to_dict() for v in value]
            elif f.name in self._typed and value is not None:
                value = value.to_dict()
            out[f.name] = value
        out.update(self.extra)  # type: ignore[attr-defined]
        return out


@dataclass(frozen=True, kw_only=True)
class RankedUnit(Record):
    """A unit in a ranking or an expected list: a chunk (``id`` = chunk id) or, in document-unit
    goldsets, a document (``id == doc_id``, ``start``/``end`` the extent of its chunks)."""

    id: str
    doc_id: str
    start: int
    end: int
    score: float | None  # None: the retriever could not score it (BM25 shares no term)
    grade: int
    extra: JsonObject = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class EvidenceSpan(Record):
    doc: str
    start: int | None  # None with ``end``: the whole document is the evidence (document unit)
    end: int | None
    grade: int
    extra: JsonObject = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Retrieved(Record):
    """One question as one candidate answered it: the stored raw result, before any metric."""

    _nested: ClassVar[dict[str, type]] = {"ranking": RankedUnit, "expected": RankedUnit, "evidence": EvidenceSpan}

    candidate: str
    question_id: str
    question: str
    tags: list[str]
    ranking: list[RankedUnit]
    expected: list[RankedUnit]  # every relevant unit, scored even when not retrieved
    evidence: list[EvidenceSpan]
    extra: JsonObject = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class QuestionRecord(Retrieved):
    """A line of per_question.jsonl: the retrieved result with its metrics and diagnostics."""

    _typed: ClassVar[dict[str, type]] = {"diagnostics": QuestionDiagnostics}

    first_relevant_rank: int | None = None  # 1-based; None: no relevant unit within depth
    metrics: dict[str, float] = field(default_factory=dict)
    diagnostics: QuestionDiagnostics = field(default_factory=lambda: QuestionDiagnostics.read({}))


@dataclass(frozen=True, kw_only=True)
class UnitLabel(Record):
    """A line of judgments.jsonl: one unit's relevance to one question as a relevance judge graded it
    (0 does not relate, 1 relates without answering, 2 answers in part, 3 answers), with the judge's
    model, rubric and raw reply; ``grade`` is None when the reply gave no grade (``problem`` says why)."""

    question_id: str
    unit: str
    doc_id: str
    start: int
    end: int
    grade: int | None
    by: str  # "judge"
    model: str
    rubric: str  # the rubric's version
    rubric_sha256: str
    reply: str
    problem: str | None = None
    extra: JsonObject = field(default_factory=dict)
