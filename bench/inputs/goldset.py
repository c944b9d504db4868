"""The goldset: questions with the evidence that answers them, resolved to character spans."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.errors import BenchError
from bench.files import json_object, numbered_lines, read_text
from bench.inputs.corpus import EMPTY_RECORD, NO_TEXT, Corpus, pages_label
from bench.inputs.page_spans import PAGE_KEYS, page_evidence
from bench.inputs.quote_anchoring import Anchor, anchor_quote
from bench.inputs.quotes import QuoteError, find_quote
from bench.registry import suggest

CHUNK, DOCUMENT = "chunk", "document"
# Far beyond what any embedding model reads; a longer "question" is a document pasted by mistake.
MAX_QUESTION_CHARS = 100_000
_SUGGEST_MAX_DOCS = 20_000  # "did you mean" compares against every id: skip it for huge corpora


@dataclass(frozen=True, slots=True)
class Evidence:
    """A span of one document that answers (grade 2) or supports (grade 1) a question, or that a
    person judged not relevant to it (grade 0: it counts as judged, never as relevant).

    ``start``/``end`` are ``None`` when the whole document is the evidence (document unit).
    """

    doc: str
    grade: int
    start: int | None = None
    end: int | None = None
    pages: str = ""  # the pages the span lies on, "p. 4–5", for documents with pages
    # how a quote was found (bench.inputs.quote_anchoring: "exact", "normalised", "approximate"; "" for
    # pages and offsets) and how alike quote and span are (1.0 unless approximate); the span alone
    # makes the evidence, so these and the quote take no part in comparisons
    matched: str = field(default="", compare=False)
    similarity: float | None = field(default=None, compare=False)
    quote: str = field(default="", compare=False, repr=False)

    @property
    def whole_document(self) -> bool:
        return self.start is None


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    text: str
    evidence: tuple[Evidence, ...]
    tags: tuple[str, ...] = ()
    answer: str = ""  # a reference answer, where the goldset gives one: answers' claim recall is measured on it


@dataclass(frozen=True)
class Goldset:
    path: Path
    questions: tuple[Question, ...]
    unit: str  # CHUNK or DOCUMENT
    fingerprint: str  # sha256 of the file's bytes


def load_goldset(path: str | Path, corpus: Corpus) -> Goldset:
    """Parse and validate a goldset against its corpus; quotes become spans.

    The first problem found is raised as a BenchError naming file:line and the fix.
    """
    goldset, errors = read_goldset(path, corpus)
    if errors:
        raise BenchError(errors[0])
    if goldset is None:  # read_goldset gives a goldset whenever it finds no error
        raise AssertionError(f"{path}: no goldset and no error")
    return goldset


def validate_goldset(path: str | Path, corpus: Corpus) -> list[str]:
    """Every problem of the goldset, one line each (file:line, what, how to fix)."""
    return read_goldset(path, corpus)[1]


def read_goldset(path: str | Path, corpus: Corpus) -> tuple[Goldset | None, list[str]]:
    """The goldset and the list of all its problems; the goldset is None when there are any."""
    path = Path(path)
    if path.is_dir():
        return None, [f"{path}: a folder, not a goldset file; give the JSONL file with one question per line"]
    if not path.is_file():
        return None, [f"{path}: goldset not found; give a JSONL file with one question per line"]
    try:
        text = read_text(path)
    except BenchError as e:
        return None, [str(e)]
    raw = path.read_bytes()
    questions: list[Question] = []
    errors: list[str] = []
    seen: dict[str, int] = {}
    for lineno, line in numbered_lines(text):
        where = f"{path}:{lineno}"
        try:
            q = _parse_question(line, where, corpus)
        except _LineErrors as e:
            errors.extend(e.messages)
            continue
        except BenchError as e:
            errors.append(str(e))
            continue
        if q.id in seen:
            errors.append(f"{where}: duplicate question id {q.id!r} (first on line {seen[q.id]}); ids must be unique")
            continue
        seen[q.id] = lineno
        questions.append(q)
    if not questions and not errors:
        errors.append(f"{path}: the goldset has no questions; add one JSON object per line")
    whole = {e.whole_document for q in questions for e in q.evidence}
    if len(whole) > 1:
        errors.append(
            f"{path}: mixes whole-document evidence with quotes/spans; "
            "use spans everywhere (chunk unit) or whole documents everywhere (document unit)"
        )
    if errors:
        return None, errors
    unit = DOCUMENT if whole == {True} else CHUNK
    return Goldset(path=path, questions=tuple(questions), unit=unit, fingerprint=hashlib.sha256(raw).hexdigest()), []


class _LineErrors(Exception):
    """Several problems on one line (one per bad evidence item)."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__(messages[0])
        self.messages = messages


def _parse_question(line: str, where: str, corpus: Corpus) -> Question:
    row = json_object(line, where, '"id", "question" and "evidence"')
    qid = row.get("id")
    if not isinstance(qid, str) or not qid.strip():
        raise BenchError(f'{where}: missing or empty "id"; give every question a unique string id')
    question = row.get("question")
    if not isinstance(question, str) or not question.strip():
        raise BenchError(f'{where}: question {qid!r} has no "question" text; add the question as a string')
    if len(question) > MAX_QUESTION_CHARS:
        raise BenchError(
            f"{where}: question {qid!r} is {len(question):,} characters long; shorten it to at most "
            f"{MAX_QUESTION_CHARS:,} (no embedding model reads more)"
        )
    evidence = row.get("evidence")
    if not isinstance(evidence, list) or not evidence:
        raise BenchError(
            f'{where}: question {qid!r} needs a non-empty "evidence" list; give items like {{"doc": ..., "quote": ...}}'
        )
    tags = row.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise BenchError(f'{where}: question {qid!r}: "tags" must be a list of strings')
    answer = row.get("answer", "")
    if not isinstance(answer, str):
        raise BenchError(f'{where}: question {qid!r}: "answer" (the reference answer) must be a string')
    items: list[Evidence] = []
    problems = []
    for i, item in enumerate(evidence):
        try:
            items.extend(_parse_evidence(item, f"{where}: question {qid!r} evidence {i + 1}", corpus))
        except BenchError as e:
            problems.append(str(e))
    if problems:
        raise _LineErrors(problems)
    if not any(e.grade > 0 for e in items):
        raise BenchError(
            f"{where}: question {qid!r} has only grade 0 evidence (judged not relevant); give it at least one "
            "item that answers (grade 2) or supports (grade 1) it"
        )
    return Question(id=qid, text=question, evidence=tuple(items), tags=tuple(tags), answer=answer.strip())


def _parse_evidence(item: object, where: str, corpus: Corpus) -> tuple[Evidence, ...]:
    """One evidence item of a goldset line; pages that are not contiguous give one Evidence per run."""
    if not isinstance(item, dict):
        raise BenchError(f'{where}: expected an object like {{"doc": ..., "quote": ...}}')
    doc_id = item.get("doc")
    if not isinstance(doc_id, str) or doc_id not in corpus:
        raise BenchError(f"{where}: {_not_in_corpus(doc_id, corpus)}")
    grade = item.get("grade", 1)
    if isinstance(grade, bool) or not isinstance(grade, int) or grade < 0:
        raise BenchError(f"{where}: grade {grade!r} must be an integer: 2 answers, 1 supports, 0 judged not relevant")
    doc = corpus.get(doc_id)
    text = doc.text
    quote, start, end = item.get("quote"), item.get("start"), item.get("end")
    if any(key in item for key in PAGE_KEYS):
        if quote is not None or start is not None or end is not None:
            given = '"quote"' if quote is not None else '"start"/"end"'
            raise BenchError(f'{where}: give either {given} or "page"/"pages", not both')
        return tuple(
            Evidence(doc_id, grade, s, e, pages_label(doc.page_label, doc.page_range(s, e)))
            for s, e in page_evidence(doc, item, where)
        )
    if quote is not None:
        if start is not None or end is not None:
            raise BenchError(f'{where}: give either "quote" or "start"/"end", not both')
        locate = (lambda at: pages_label(doc.page_label, doc.page_range(at, at + 1))) if doc.pages else None
        found = anchor_evidence(text, quote, where, locate=locate, pages=doc.pages)
        start, end = found.start, found.end
        pages = pages_label(doc.page_label, doc.page_range(start, end))
        return (Evidence(doc_id, grade, start, end, pages, found.matched, found.similarity, str(quote)),)
    if start is None and end is None:
        return (Evidence(doc_id, grade),)
    if not (isinstance(start, int) and isinstance(end, int)) or isinstance(start, bool) or isinstance(end, bool):
        raise BenchError(f'{where}: "start" and "end" must both be integers (character offsets)')
    if not 0 <= start < end <= len(text):
        raise BenchError(
            f"{where}: span {start}..{end} is not inside {doc_id!r} (0..{len(text)}); need 0 <= start < end <= length"
        )
    return (Evidence(doc_id, grade, start, end, pages_label(doc.page_label, doc.page_range(start, end))),)


def _not_in_corpus(doc_id: object, corpus: Corpus) -> str:
    """Why evidence names no document of the corpus, and what to write instead."""
    left_out = corpus.why_left_out(doc_id) if isinstance(doc_id, str) else None
    if left_out is not None and left_out.kind in (NO_TEXT, EMPTY_RECORD) and left_out.reason == "no text in it":
        return f"document {doc_id!r} is empty, so it is not in the corpus; add its text or drop this evidence"
    if left_out is not None:
        return f"document {doc_id!r} was left out of the corpus ({left_out.reason}); fix the file or drop this evidence"
    hint = ""
    if isinstance(doc_id, str) and len(corpus) <= _SUGGEST_MAX_DOCS:
        hint = suggest(doc_id, (d.id for d in corpus.documents))
    return f"unknown document {doc_id!r}; {hint}use a document id of the corpus {corpus.path}"


def resolve_quote(
    text: str, quote: object, where: str, *, locate: Callable[[int], str] | None = None
) -> tuple[int, int]:
    """The span of the one passage of ``text`` that ``quote`` names, verbatim or as a reader sees it
    (bench.inputs.quotes); absent or repeated quotes are errors. ``locate`` describes an offset
    (e.g. "p. 4") in those errors."""
    if not isinstance(quote, str) or not quote.strip():
        raise BenchError(f'{where}: "quote" must be non-empty text copied exactly from the document')
    try:
        return find_quote(text, quote, locate=locate)
    except QuoteError as e:
        raise BenchError(f"{where}: {e}") from None


def anchor_evidence(
    text: str,
    quote: object,
    where: str,
    *,
    locate: Callable[[int], str] | None = None,
    pages: Sequence[int] = (),
) -> Anchor:
    """Like :func:`resolve_quote`, and a quote another tool copied (a table read in another order, a
    cell a line) is anchored by its words and numbers (bench.inputs.quote_anchoring) when it is
    alike enough to one passage; the anchor says how it matched. ``pages``: where the text's pages
    start, so that a quote's page numbers and running lines, which the text leaves out, are no
    figures it lacks."""
    if not isinstance(quote, str) or not quote.strip():
        raise BenchError(f'{where}: "quote" must be non-empty text copied exactly from the document')
    try:
        return anchor_quote(text, quote, locate=locate, pages=pages)
    except QuoteError as e:
        raise BenchError(f"{where}: {e}") from None
