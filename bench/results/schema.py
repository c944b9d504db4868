"""A run folder read and written: ``summary.json``, ``per_question.jsonl``, ``texts.jsonl`` and
``manifest.json`` (docs/design.md, "Results on disk") as the typed values of bench.core.

Every reader of a run — reports, recompute, history, compare, the gate, exports, the Python API —
goes through :func:`load_run`; the run writes through :func:`save_run`. Keys are never renamed or
dropped (bench.core.records); a figure that does not apply to a candidate is ``None`` (``null``),
so every candidate carries the same keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from bench import files
from bench.core.records import QuestionRecord, Record, UnitLabel
from bench.core.sections import JsonObject
from bench.core.summary import Manifest, RunSummary
from bench.errors import BenchError
from bench.inputs.corpus import pages_label
from bench.results.store import (
    ANSWERS_PER_QUESTION,
    ANSWERS_SUMMARY,
    JUDGMENTS,
    MANIFEST,
    PER_QUESTION,
    SUMMARY,
    TEXTS,
    load_json,
    load_jsonl,
)

R = TypeVar("R", bound=Record)


@dataclass(frozen=True, kw_only=True)
class UnitText(Record):
    """A line of texts.jsonl: the text of one unit, so reports need no corpus. Units of documents with
    pages (PDFs, slides) also carry ``pages`` ([first, last], 1-based) and ``page_label`` in ``extra``."""

    doc_id: str
    start: int
    end: int
    text: str
    extra: JsonObject = field(default_factory=dict)

    @property
    def pages_label(self) -> str:
        """The pages a unit lies on ("p. 4–5", "slide 2"); empty for documents without pages."""
        pages, label = self.extra.get("pages"), self.extra.get("page_label")
        if not (isinstance(pages, list) and len(pages) == 2 and isinstance(label, str)):
            return ""
        return pages_label(label, (int(pages[0]), int(pages[1])))


def unit_pages(texts: list[UnitText]) -> dict[tuple[str, int, int], str]:
    """(doc_id, start, end) → the pages of each unit that has them ("p. 4–5")."""
    return {(t.doc_id, t.start, t.end): t.pages_label for t in texts if t.pages_label}


@dataclass(frozen=True)
class StoredRun:
    """A finished run read back from its folder."""

    path: Path
    summary: RunSummary
    manifest: Manifest
    records: list[QuestionRecord]
    texts: list[UnitText]
    judgments: list[UnitLabel] = field(default_factory=list)  # a relevance judge's grades, where one was asked

    @property
    def run_id(self) -> str:
        return self.manifest.run_id or self.path.name

    def records_of(self, cid: str) -> list[QuestionRecord]:
        return [r for r in self.records if r.candidate == cid]


def load_summary(folder: Path) -> RunSummary:
    return _parsed(folder / SUMMARY, RunSummary, load_json(folder / SUMMARY))


def load_manifest(folder: Path) -> Manifest:
    path = folder / MANIFEST
    return _parsed(path, Manifest, load_json(path)) if path.is_file() else Manifest()


def load_records(folder: Path) -> list[QuestionRecord]:
    path = folder / PER_QUESTION
    return [_parsed(f"{path}:{n}", QuestionRecord, row) for n, row in enumerate(load_jsonl(path), start=1)]


def load_texts(folder: Path) -> list[UnitText]:
    path = folder / TEXTS
    if not path.is_file():  # runs before texts.jsonl existed
        return []
    return [_parsed(f"{path}:{n}", UnitText, row) for n, row in enumerate(load_jsonl(path), start=1)]


def load_judgments(folder: Path) -> list[UnitLabel]:
    """The relevance judge's grades of the run's units; empty when no judge was asked."""
    path = folder / JUDGMENTS
    if not path.is_file():
        return []
    return [_parsed(f"{path}:{n}", UnitLabel, row) for n, row in enumerate(load_jsonl(path), start=1)]


def save_judgments(folder: Path, labels: list[UnitLabel]) -> None:
    files.write_jsonl(folder / JUDGMENTS, (label.to_dict() for label in labels))


def load_answers_summary(folder: Path) -> JsonObject | None:
    """The answer layer's summary (`bench answers score`), None when the run's answers were never scored.
    Read as the JSON it is: bench.answers writes it and bench.report.answers_view reads it by key."""
    path = folder / ANSWERS_SUMMARY
    return load_json(path) if path.is_file() else None


def load_answer_rows(folder: Path) -> list[JsonObject]:
    """The answer layer's figures per question; empty when the run's answers were never scored."""
    path = folder / ANSWERS_PER_QUESTION
    return load_jsonl(path) if path.is_file() else []


def load_run(folder: Path) -> StoredRun:
    """Every file of a finished run folder (see ``store.find_run`` for turning a reference into one)."""
    return StoredRun(
        folder, load_summary(folder), load_manifest(folder), load_records(folder), load_texts(folder),
        load_judgments(folder),
    )  # fmt: skip


def save_run(folder: Path, run: StoredRun) -> None:
    """Write the run's result files atomically, each on its own (reports come later, from these)."""
    files.write_jsonl(folder / PER_QUESTION, (r.to_dict() for r in run.records))
    files.write_jsonl(folder / TEXTS, (t.to_dict() for t in run.texts))
    if run.judgments:
        save_judgments(folder, run.judgments)
    files.write_json(folder / SUMMARY, run.summary.to_dict())
    save_manifest(folder, run.manifest)


def save_manifest(folder: Path, manifest: Manifest) -> None:
    files.write_json(folder / MANIFEST, manifest.to_dict())


def _parsed(where: str | Path, cls: type[R], row: object) -> R:
    if not isinstance(row, dict):
        raise BenchError(f"{where}: not a JSON object; the run folder is damaged")
    try:
        return cls.from_dict(row)
    except TypeError as e:  # a required key is missing
        raise BenchError(f"{where}: {e}; the run folder is damaged") from None
