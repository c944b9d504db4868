"""Question sets that label evidence by page (FinanceBench's shape and the like) → a chunk-unit goldset.

Each JSONL line is a question with a document name and a page number (or a list), and optionally the
evidence's text: either on the line itself or in an ``evidence`` list of such objects (FinanceBench:
``question``, ``doc_name``, ``evidence: [{evidence_page_num, evidence_text}]``, pages counted from
0). Evidence whose text is found once within its page becomes that quote's span (verbatim, as a
reader sees it, or by its words and numbers where another tool read the page in its own way:
bench.inputs.quote_anchoring); otherwise the whole page is the evidence. The corpus is the folder
of documents, used where it lies.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bench.errors import BenchError
from bench.files import json_object
from bench.inputs.corpus import Corpus, Document, load_corpus
from bench.inputs.importers.base import Destination, ImportResult, read_lines, write_goldset, write_starter_config
from bench.inputs.page_spans import PageError, page_span
from bench.inputs.quote_anchoring import APPROXIMATE, anchor_quote
from bench.inputs.quotes import QuoteError, find_quote

QUESTION_FIELDS = ("question", "query")
ID_FIELDS = ("financebench_id", "id", "qid", "_id")
DOC_FIELDS = ("doc_name", "doc", "document", "file", "filename", "doc_id")
PAGE_FIELDS = ("evidence_page_num", "page", "pages", "page_num", "page_number")
TEXT_FIELDS = ("evidence_text", "quote")
FINANCEBENCH_PAGE = "evidence_page_num"  # FinanceBench counts pages from 0


@dataclass(frozen=True)
class Fields:
    """The field names to read; None: the first of the usual names that a record has."""

    question: str | None = None
    doc: str | None = None
    page: str | None = None
    text: str | None = None
    id: str | None = None


@dataclass
class PagesImport(ImportResult):
    quote_resolved: int = 0  # evidence items whose text was found within their page
    quote_approximate: int = 0  # of those, the ones anchored by their words and numbers
    page_only: int = 0  # evidence items that are their whole page(s)
    zero_based: bool = False


def import_pages(
    source: Path,
    corpus_path: Path,
    dest: Destination,
    zero_based: bool | None = None,
    fields: Fields = Fields(),
    corpus: Corpus | None = None,
) -> PagesImport:
    """Read ``source``, resolve its evidence in the corpus at ``corpus_path`` (``corpus``, when it is
    loaded already), write the goldset and a starter config. ``zero_based`` None: 0-based for
    FinanceBench's ``evidence_page_num``, else 1-based."""
    source, corpus_path = Path(source), Path(corpus_path)
    dest.refuse_overwrite(dest.goldset)
    rows = [
        (f"{source}:{n}", json_object(line, f"{source}:{n}", '"question", a document and a page'))
        for n, line in read_lines(source)
    ]
    if not rows:
        raise BenchError(f"{source}: no questions; give one JSON object a line")
    corpus = corpus if corpus is not None else load_corpus(corpus_path)
    by_name = _names(corpus)
    page_field = fields.page or _first_field([e for _, r in rows for e in _items(r)], PAGE_FIELDS)
    if page_field is None:
        raise BenchError(f"{source}: no page field ({', '.join(PAGE_FIELDS)}); name it with --page-field")
    if zero_based is None:
        zero_based = page_field == FINANCEBENCH_PAGE
    shift = 1 if zero_based else 0
    dropped: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    questions: list[dict] = []
    used_ids: set[str] = set()
    for n, (_, row) in enumerate(rows, start=1):
        text = _field(row, fields.question, QUESTION_FIELDS)
        if not isinstance(text, str) or not text.strip():
            dropped["questions_without_text"] += 1
            continue
        qid = _field(row, fields.id, ID_FIELDS)
        qid = str(qid) if qid is not None and str(qid).strip() and str(qid) not in used_ids else f"q{n:05d}"
        evidence: list[dict] = []
        for item in _items(row):
            try:
                found = _evidence(item, row, corpus, by_name, fields, page_field, shift, counts)
            except _Dropped as e:
                dropped[e.reason] += 1
                continue
            evidence.extend(x for x in found if x not in evidence)
        if not evidence:
            dropped["questions_without_evidence"] += 1
            continue
        used_ids.add(qid)
        question = {"id": qid, "question": text.strip(), "evidence": evidence, "tags": ["pages"]}
        answer = row.get("answer")
        if isinstance(answer, str) and answer.strip():  # the reference answer: answers' claim recall uses it
            question["answer"] = answer.strip()
        questions.append(question)
    if not questions:
        reasons = ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in dropped.items())
        raise BenchError(f"{source}: no question has evidence in {corpus_path} ({reasons}); check the names and pages")
    write_goldset(dest.goldset, questions)
    docs = {e["doc"] for q in questions for e in q["evidence"]}
    config = write_starter_config(dest, corpus_path, "chunk", (corpus.get(d).text for d in sorted(docs)))
    return PagesImport(
        corpus_path, dest.goldset, config, len(corpus), len(questions), dict(dropped),
        quote_resolved=counts["quote"], quote_approximate=counts[APPROXIMATE], page_only=counts["page"],
        zero_based=zero_based,
    )  # fmt: skip


class _Dropped(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _items(row: dict) -> list[dict]:
    """The evidence objects of a record: its ``evidence`` list, else the record itself."""
    evidence = row.get("evidence")
    if isinstance(evidence, list) and evidence and all(isinstance(e, dict) for e in evidence):
        return evidence
    return [row]


def _first_field(records: list[dict], names: tuple[str, ...]) -> str | None:
    for name in names:
        if any(name in r for r in records):
            return name
    return None


def _field(record: dict, name: str | None, names: tuple[str, ...], fallback: dict | None = None) -> object:
    for key in (name,) if name else names:
        for source in (record, fallback or {}):
            if key in source and source[key] is not None:
                return source[key]
    return None


def _names(corpus: Corpus) -> dict[str, str | None]:
    """Document ids by the names a question set may use: the id, its file name, its stem (None when
    two documents share one)."""
    names: dict[str, str | None] = {}
    for doc_id in corpus.ids:
        path = PurePosixPath(doc_id)
        for name in {path.name, path.stem, str(path.with_suffix(""))}:
            names[name] = None if name in names and names[name] != doc_id else doc_id
    names.update({doc_id: doc_id for doc_id in corpus.ids})
    return names


def _evidence(
    item: dict,
    row: dict,
    corpus: Corpus,
    by_name: dict[str, str | None],
    fields: Fields,
    page_field: str,
    shift: int,
    counts: Counter[str],
) -> list[dict]:
    """The goldset evidence of one page-labelled item: its quote's span when found within its pages,
    else one item per page."""
    name = _field(item, fields.doc, DOC_FIELDS, row)
    if not isinstance(name, str) or not name.strip():
        raise _Dropped("evidence_without_document")
    doc_id = by_name.get(name.strip()) or by_name.get(PurePosixPath(name.strip()).stem)
    if doc_id is None:
        raise _Dropped("unknown_documents" if name.strip() not in by_name else "ambiguous_document_names")
    raw = _field(item, page_field, (), row)
    given = raw if isinstance(raw, list) else [raw]
    numbers = [p for p in given if isinstance(p, int) and not isinstance(p, bool)]
    if not numbers or len(numbers) != len(given):
        raise _Dropped("evidence_without_page_number")
    pages = sorted({p + shift for p in numbers})
    doc = corpus.get(doc_id)
    if not doc.pages:
        raise _Dropped("documents_without_pages")
    spans = []
    try:
        for p in pages:
            spans.append(page_span(doc, p))
    except PageError as e:
        raise _Dropped("pages_out_of_range" if "is not in" in str(e) else "pages_without_text") from None
    quote = _field(item, fields.text, TEXT_FIELDS)
    if isinstance(quote, str) and quote.strip():
        span = _quote_within(doc, quote, spans[0][0], spans[-1][1])
        if span is not None:
            counts["quote"] += 1
            counts[span[2]] += 1
            return [_as_quote(doc, span[0], span[1])]
    counts["page"] += 1
    return [
        {"doc": doc_id, "page": pages[0], "grade": 1}
        if len(pages) == 1
        else {"doc": doc_id, "pages": pages, "grade": 1}
    ]


def _quote_within(doc: Document, quote: str, start: int, end: int) -> tuple[int, int, str] | None:
    """The quote's one passage within ``start``..``end`` and how it matched: as bench's quote matcher
    finds it, else by its words and numbers."""
    try:
        found = anchor_quote(doc.text[start:end], quote, pages=(0,))  # the page: its edges are its own
    except QuoteError:
        return None
    return start + found.start, start + found.end, found.matched


def _as_quote(doc: Document, start: int, end: int) -> dict:
    """The span as its quote where that names it in the whole document, else as offsets."""
    quote = doc.text[start:end]
    try:
        if find_quote(doc.text, quote) == (start, end):
            return {"doc": doc.id, "quote": quote, "grade": 1}
    except QuoteError:
        pass
    return {"doc": doc.id, "start": start, "end": end, "grade": 1}
