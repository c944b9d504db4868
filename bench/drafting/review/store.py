"""The draft under review: every change is kept the moment it is acknowledged.

A change is applied in memory, appended to ``<draft>.journal`` (fsynced), then the draft is rewritten
atomically and the goldset after it; once both are written the journal is emptied. A crash between
the journal and the rewrite leaves the change in the journal, which the next start replays on top of
the draft. Journal lines hold the question as it became, so replaying one twice changes nothing.

Each question carries a version; a change names the version it was made on, and a change made on an
older one is refused (``Stale``), so two tabs never overwrite each other in silence.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NotRequired, TypedDict

from bench.drafting.draft import (
    ACCEPTED,
    STATUSES,
    Draft,
    DraftQuestion,
    Found,
    FoundRow,
    Passage,
    Span,
    SpanRow,
    goldset_rows,
    load_draft,
    save_draft,
    write_goldset,
)
from bench.errors import BenchError
from bench.inputs.answers import JsonObject
from bench.inputs.corpus import Corpus, pages_label
from bench.inputs.goldset import MAX_QUESTION_CHARS

GRADES = (1, 2)  # 1 supports the answer, 2 answers the question
MAX_TAG_CHARS = 100


@dataclass(frozen=True, slots=True)
class Distractor:
    """A passage a finished run ranked high for a question without judging it relevant."""

    doc: str
    start: int
    end: int
    label: str  # "distractor in <run>"
    found_by: tuple[Found, ...]


# The JSON replies of the review app, as the page reads them.


class QuestionSummary(TypedDict):
    id: str
    question: str
    status: str
    evidence: int
    version: str


class WindowView(TypedDict):
    start: int
    end: int
    length: int
    text: str


class EvidenceView(SpanRow):
    text: str
    page: str


class PassageView(TypedDict):
    doc: str
    start: int
    end: int
    found_by: list[FoundRow]
    distractor: str | None
    page: str
    window: WindowView
    missing: NotRequired[bool]  # its document is not in the corpus


class QuestionView(TypedDict):
    id: str
    question: str
    status: str
    evidence: list[EvidenceView]
    version: str
    tags: list[str]
    origin: str
    note: str
    passages: list[PassageView]


class Stale(Exception):
    """The change was made on an older version of the question than the one stored."""


class BadChange(ValueError):
    """A change that names no question, document or span of the corpus, or an unknown operation."""


def journal_path(draft: Path) -> Path:
    return draft.with_name(draft.name + ".journal")


class ReviewStore:
    """The draft, its corpus and the goldset it writes; safe to call from many request threads."""

    def __init__(self, draft_path: Path, corpus: Corpus, goldset: Path) -> None:
        self.corpus = corpus
        self.goldset = Path(goldset)
        self.draft: Draft = load_draft(Path(draft_path))
        self.journal = journal_path(self.draft.path)
        self.lock = threading.RLock()  # one writer at a time; corpus reads share it (its cache is a plain dict)
        # versions are opaque to the page; the boot prefix keeps a tab opened before a restart from
        # matching a count that started again
        self._boot = secrets.token_hex(3)
        self._counts: dict[str, int] = {q.id: 0 for q in self.draft.questions}
        self.replayed = self._replay()
        self.extra_passages: dict[str, list[Distractor]] = {}  # question id → distractors of a run

    # --- reading ---------------------------------------------------------------------------------

    def version(self, qid: str) -> str:
        return f"{self._boot}-{self._counts[qid]}"

    def summaries(self) -> list[QuestionSummary]:
        with self.lock:
            return [self._summary(q) for q in self.draft.questions]

    def _summary(self, q: DraftQuestion) -> QuestionSummary:
        return QuestionSummary(
            id=q.id, question=q.question, status=q.status, evidence=len(q.evidence), version=self.version(q.id)
        )

    def question(self, qid: str, context: int) -> QuestionView:
        """A question with its evidence and passages, each passage in a window of ``context``
        characters either side of it."""
        with self.lock:
            q = self._get(qid)
            passages = [self._passage(p, context) for p in q.passages]
            seen = {(p.doc, p.start, p.end) for p in q.passages}
            for extra in self.extra_passages.get(qid, ()):
                key = (extra.doc, extra.start, extra.end)
                if key in seen:
                    shown = next(p for p in passages if (p["doc"], p["start"], p["end"]) == key)
                    shown["distractor"] = extra.label
                    shown["found_by"] += [_found(f) for f in extra.found_by]
                elif extra.doc in self.corpus:
                    view = self._passage(Passage(extra.doc, extra.start, extra.end, extra.found_by), context)
                    view["distractor"] = extra.label
                    passages.append(view)
            return QuestionView(
                id=q.id,
                question=q.question,
                status=q.status,
                evidence=[self._evidence(e) for e in q.evidence],
                version=self.version(q.id),
                tags=list(q.tags),
                origin=q.origin,
                note=q.note,
                passages=passages,
            )

    def _get(self, qid: str) -> DraftQuestion:
        try:
            return self.draft.question(qid)
        except KeyError:
            raise BadChange(f"no question {qid!r} in the draft") from None

    def page(self, doc_id: str, start: int, end: int) -> str:
        doc = self.corpus.get(doc_id)
        return pages_label(doc.page_label, doc.page_range(start, end))

    def _evidence(self, e: Span) -> EvidenceView:
        text = self.corpus.get(e.doc).text if e.doc in self.corpus else ""
        return EvidenceView(
            doc=e.doc,
            start=e.start,
            end=e.end,
            grade=e.grade,
            text=text[e.start : e.end],
            page=self.page(e.doc, e.start, e.end),
        )

    def _passage(self, p: Passage, context: int) -> PassageView:
        missing = p.doc not in self.corpus
        view = PassageView(
            doc=p.doc,
            start=p.start,
            end=p.end,
            found_by=[_found(f) for f in p.found_by],
            distractor=None,
            page="" if missing else self.page(p.doc, p.start, p.end),
            window=WindowView(start=0, end=0, length=0, text="")
            if missing
            else self.window(p.doc, p.start, p.end, context),
        )
        if missing:
            view["missing"] = True
        return view

    def window(self, doc_id: str, start: int, end: int, context: int) -> WindowView:
        """The document's text from ``context`` characters before ``start`` to as many after ``end``."""
        with self.lock:
            if doc_id not in self.corpus:
                raise KeyError(doc_id)
            text = self.corpus.get(doc_id).text
        lo, hi = max(0, start - context), min(len(text), max(end, start) + context)
        return WindowView(start=lo, end=hi, length=len(text), text=text[lo:hi])

    # --- changing --------------------------------------------------------------------------------

    def change(self, qid: str, version: str, op: str, args: JsonObject) -> DraftQuestion:
        """Apply one change made on ``version`` of the question, and keep it (journal, draft, goldset)."""
        with self.lock:
            q = self._get(qid)
            if version != self.version(qid):
                raise Stale(qid)
            new = self._applied(q, op, args)
            self._keep(new)
            return new

    def _applied(self, q: DraftQuestion, op: str, args: JsonObject) -> DraftQuestion:
        if op == "text":
            text = _string(args, "question").strip()
            if not text or len(text) > MAX_QUESTION_CHARS:
                raise BadChange(f"a question needs 1 to {MAX_QUESTION_CHARS:,} characters")
            return replace(q, question=text)
        if op == "status":
            status = _string(args, "status")
            if status not in STATUSES:
                raise BadChange(f"status {status!r} is not one of {', '.join(STATUSES)}")
            return replace(q, status=status)
        if op == "note":
            return replace(q, note=_string(args, "note"))
        if op in ("tag_add", "tag_remove"):
            tag = _string(args, "tag").strip()
            if not tag or len(tag) > MAX_TAG_CHARS:
                raise BadChange(f"a tag needs 1 to {MAX_TAG_CHARS} characters")
            tags = tuple(t for t in q.tags if t != tag)
            return replace(q, tags=(*tags, tag) if op == "tag_add" else tags)
        if op == "evidence_add":
            span = self._span(args)
            kept = tuple(e for e in q.evidence if (e.doc, e.start, e.end) != (span.doc, span.start, span.end))
            return replace(q, evidence=(*kept, span))
        if op in ("evidence_grade", "evidence_remove"):
            i = _integer(args, "index")
            if not 0 <= i < len(q.evidence):
                raise BadChange(f"question {q.id!r} has no evidence item {i}")
            evidence = list(q.evidence)
            if op == "evidence_remove":
                del evidence[i]
            else:
                evidence[i] = replace(evidence[i], grade=_grade(args))
            return replace(q, evidence=tuple(evidence))
        raise BadChange(f"unknown change {op!r}")

    def _span(self, args: JsonObject) -> Span:
        """A span of a corpus document, without the white space a selection often takes along."""
        doc_id = _string(args, "doc")
        start, end = _integer(args, "start"), _integer(args, "end")
        if doc_id not in self.corpus:
            raise BadChange(f"no document {doc_id!r} in the corpus")
        text = self.corpus.get(doc_id).text
        if not 0 <= start < end <= len(text):
            raise BadChange(f"span {start}..{end} is not inside {doc_id!r} (0..{len(text)})")
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start == end:
            raise BadChange("the selection holds only white space")
        return Span(doc_id, start, end, _grade(args))

    def _keep(self, new: DraftQuestion) -> None:
        line = json.dumps(new.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n"
        with open(self.journal, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        self._put(new)
        self._write()

    def _put(self, new: DraftQuestion) -> None:
        self.draft.questions = [new if q.id == new.id else q for q in self.draft.questions]
        self._counts[new.id] += 1

    def _write(self) -> None:
        """The draft, then the goldset; the journal emptied once both are on disk."""
        save_draft(self.draft)
        self.write_goldset()
        with open(self.journal, "r+b") as f:
            f.truncate(0)
            os.fsync(f.fileno())

    def write_goldset(self) -> int:
        """Write the accepted questions with evidence; with none, a goldset of this draft is removed
        (an empty goldset fails validation) and any other file there is left alone."""
        with self.lock:
            if goldset_rows_count(self.draft):
                return write_goldset(self.draft, self.corpus, self.goldset)
            if self.goldset.is_file() and self._ours(self.goldset):
                self.goldset.unlink()
            return 0

    def _ours(self, path: Path) -> bool:
        ids = {q.id for q in self.draft.questions}
        try:
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            return all(isinstance(r, dict) and r.get("id") in ids for r in rows)
        except (OSError, ValueError):
            return False

    def written(self) -> int:
        """How many questions the goldset holds now."""
        with self.lock:
            return len(goldset_rows(self.draft, self.corpus))

    def _replay(self) -> int:
        """Apply what a crash left in the journal; the number of changes replayed. A last line cut off
        mid-write was never acknowledged, so it is dropped."""
        if not self.journal.is_file():
            return 0
        ids = {q.id for q in self.draft.questions}
        n = 0
        for lineno, line in enumerate(self.journal.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                new = DraftQuestion.from_dict(json.loads(line), f"{self.journal}:{lineno}")
            except (ValueError, BenchError):
                continue
            if new.id in ids:
                self._put(new)
                n += 1
        if n:
            self._write()
        else:
            self.journal.write_bytes(b"")
        return n


def goldset_rows_count(draft: Draft) -> int:
    return sum(1 for q in draft.questions if q.status == ACCEPTED and q.evidence)


def _found(f: Found) -> FoundRow:
    return FoundRow(retriever=f.retriever, rank=f.rank, score=f.score)


# A change's arguments are the request's JSON object as sent: each is checked as it is read.


def _string(args: JsonObject, key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str):
        raise BadChange(f'"{key}" must be a string')
    return value


def _integer(args: JsonObject, key: str) -> int:
    value = args.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadChange(f'"{key}" must be an integer')
    return value


def _grade(args: JsonObject) -> int:
    grade = args.get("grade", 1)
    if isinstance(grade, bool) or not isinstance(grade, int | float) or grade not in GRADES:
        raise BadChange("grade must be 1 (supports) or 2 (answers)")
    return int(grade)
