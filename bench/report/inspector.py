"""inspector.html: one self-contained page to read a run question by question.

The page's markup, style and script are package files (bench/report/static/); this module fills in the run.

Every ranking of every candidate is embedded as one JSON blob and drawn in the browser with DOM calls only,
because corpus and question text are untrusted: a chunk may hold ``<script>`` or ``<img onerror>``. The
blob escapes ``< > &`` and the JavaScript line separators so nothing in it can end the script element, and a
Content-Security-Policy (hashes of the page's own script and style) refuses anything else.

DOM contract (tests and other tools rely on it):

- controls: ``select#candidate-a`` and ``select#candidate-b`` (option values are candidate ids; ``""`` is
  "— none —" in B), ``input#misses-only`` and ``input#show-depth`` (checkboxes), ``select#tag-filter``
  (values are tags, ``""`` is all tags), ``input#search``, ``select#outcome-filter`` (``""`` every question,
  ``a-not-b`` A finds and B misses, ``b-not-a``, ``missed-by-all``; each option names its count);
  ``#shown-count`` reads "N of M questions"; ``#run-id`` and ``#run-meta`` in the header; ``#no-questions``
  shows when the filters leave nothing.
- ``table#leaderboard``: one ``tr[data-candidate]`` per candidate in rank order with ``td.rank``,
  ``button.pick-a`` (the id; selects it as A), ``td.mrr``, ``td.recall``, ``td.hit-rate``, ``td.p95``
  (milliseconds, "–" where not timed) and ``button.pick-b``; the rows of A and B carry ``.is-a``/``.is-b``.
- ``main#questions`` holds one ``article.question[data-qid]`` per question (hidden ones carry ``hidden``),
  with ``a.permalink`` (``href`` is :func:`permalink`'s fragment), ``.question-text``, ``.tag`` items and
  ``.evidence-item`` items, then ``.columns`` (``.two`` with B). Opening the page at that fragment (or
  changing to it) shows the question, clearing filters that hide it, marks it ``.linked`` and scrolls to it.
- each ``section.candidate-column[data-candidate][data-side=A|B]`` has ``.verdict`` (``.hit`` or ``.miss``),
  ``ol.ranking`` of ``li.entry[data-rank][data-span]`` (``.relevant`` or ``.distractor``, ``.first-relevant``,
  ``.beyond-k`` for ranks past k, shown only while ``#questions`` has ``.show-depth``) with ``.rank``,
  ``.score``, ``.label`` ("ground truth (grade N)" / "distractor"), ``.judged`` (``.person``: a person's
  evidence covers it; ``.judge``: a relevance judge graded it, "judge: grade N"; ``.unjudged``), ``.where``
  (the document, its pages such as "p. 4–5" where it has pages, and the characters) and ``.unit-text``; then
  ``div.missed`` listing ``li.missed-unit[data-span]`` with ``.position`` ("rank N" or "not retrieved"),
  ``.score`` ("score 0.412") and ``.kth`` ("k-th 0.520": the score of rank k, what it needed; "–" unscored).
- a candidate whose questions a chat model rewrites has, under its verdict, ``div.searched`` with one
  ``.searched-text`` per text searched for the question (HyDE's question and passage, each multi-query
  rewrite, the rewrite).
- a long text shows ``.unit-preview`` (the window around its highlighted evidence, ``…`` where cut) in place
  of ``.unit-text`` until ``button.more`` expands the entry; a long text without evidence is clamped.
- ``data-span`` is ``doc_id:start-end``, the same for a unit wherever it appears.
- only when the run's answers were scored (`bench answers score`): ``select#answer-filter`` among the controls
  (``""`` every question, ``any`` a layer failed, else the first layer that failed: ``retrieval``,
  ``generation``, ``question handling``; each option names its count), and in each answered question's
  article a ``section.answer-layer[data-candidate][data-layer]`` with ``.answer-labels`` (``.uncalibrated``
  for a judge's labels not yet calibrated), ``.answer-verdict`` (``.failed``, ``.passed`` or ``.unknown``),
  ``.groundedness``, ``.relevance``, ``.claim-recall`` and ``li.unsupported-claim`` items.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
from importlib import resources
from pathlib import Path
from urllib.parse import quote

from bench.core.measures import metric_key
from bench.core.records import QuestionRecord, RankedUnit, UnitLabel
from bench.core.summary import CandidateResult, Manifest, RunSummary
from bench.evaluation.answers import CLAIM_RECALL, GROUNDEDNESS, RELEVANCE
from bench.evaluation.costs import latency_ms
from bench.evaluation.holes import covered
from bench.evaluation.judged import JUDGE, Key, by_key, unit_key
from bench.files import write_atomic
from bench.inputs.goldset import DOCUMENT
from bench.report.answers_view import AnswerLayer, labels_short, uncalibrated
from bench.results.schema import UnitText, unit_pages

DOCUMENT_PREVIEW = 1500  # characters of a whole document shown; the page notes the full length
QUOTE_LIMIT = 600  # characters of an evidence quote shown under its question

_SCRIPT_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def permalink(question_id: str, page: str = "inspector.html") -> str:
    """The link that opens ``page`` at one question: ``inspector.html#`` and the id percent-encoded as UTF-8
    with nothing left safe but letters, digits and ``_.-~`` (the page writes its own links the same way)."""
    return f"{page}#{quote(question_id, safe='')}"


def write_inspector(
    path: Path,
    summary: RunSummary,
    records: list[QuestionRecord],
    texts: list[UnitText],
    manifest: Manifest,
    answers: AnswerLayer | None = None,
    judgments: list[UnitLabel] | None = None,
) -> None:
    """Write the inspector page for a finished run; same inputs give the same bytes."""
    write_atomic(path, render_html(inspector_data(summary, records, texts, manifest, answers, judgments)))


class _Tables:
    """Interned documents, texts and units, so 9 × 170 × 20 ranking entries cost a few numbers each."""

    def __init__(self, texts: list[UnitText], document_unit: bool):
        self.document_unit = document_unit
        self.source = {(t.doc_id, t.start, t.end): t.text for t in texts}
        self.pages = unit_pages(texts)
        self.by_doc: dict[str, list[tuple[int, int, str]]] = {}
        for (doc_id, start, end), text in sorted(self.source.items()):
            self.by_doc.setdefault(doc_id, []).append((start, end, text))
        self.docs: list[str] = []
        self.texts: list[str] = []
        self.units: list[list] = []
        self._doc_index: dict[str, int] = {}
        self._text_index: dict[str, int] = {}
        self._unit_index: dict[tuple, int] = {}

    def doc(self, doc_id: str) -> int:
        if doc_id not in self._doc_index:
            self._doc_index[doc_id] = len(self.docs)
            self.docs.append(doc_id)
        return self._doc_index[doc_id]

    def text(self, text: str) -> int:
        if text not in self._text_index:
            self._text_index[text] = len(self.texts)
            self.texts.append(text)
        return self._text_index[text]

    def unit(self, entry: RankedUnit) -> int:
        """``[doc, start, end, text index or None, 1 if the text is only its beginning, pages or None]``;
        pages read like "p. 4–5" for units of paged documents (PDFs, slides)."""
        key = _span(entry)
        if key not in self._unit_index:
            text = self.source.get(key)
            cut = int(self.document_unit and text is not None and len(text) > DOCUMENT_PREVIEW)
            if cut and text is not None:
                text = text[:DOCUMENT_PREVIEW]
            self._unit_index[key] = len(self.units)
            text_index = None if text is None else self.text(text)
            self.units.append([self.doc(key[0]), key[1], key[2], text_index, cut, self.pages.get(key)])
        return self._unit_index[key]

    def quote(self, doc_id: str, start: int | None, end: int | None) -> int | None:
        """The evidence text, cut from any stored unit that contains the span (offsets are characters)."""
        if start is None or end is None:
            return None
        for unit_start, unit_end, text in self.by_doc.get(doc_id, ()):
            if unit_start <= start and end <= unit_end:
                quote = text[start - unit_start : end - unit_start]
                return self.text(quote if len(quote) <= QUOTE_LIMIT else quote[:QUOTE_LIMIT] + "…")
        return None


def _score(value: float | None) -> float | None:
    """Four decimals are plenty for a page that shows three, and keep the file small."""
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), 4)


def _p95_ms(candidate: CandidateResult) -> float | None:
    """End-to-end p95 latency: the run's own figure where it stores one, else the steps' p95s added up."""
    return _score(latency_ms(candidate))


def _span(entry: RankedUnit) -> tuple:
    return entry.doc_id, entry.start, entry.end


def _judged(record: QuestionRecord, unit: RankedUnit, labels: dict[Key, UnitLabel], unit_kind: str) -> str:
    """Who judged a ranked unit: "person", "judge N" (the judge's grade 0–3; "judge ?" for a reply with
    none) or "" (unjudged)."""
    if covered(unit, [e for e in record.evidence if e.extra.get("by") != JUDGE]):
        return "person"
    label = labels.get(unit_key(record.question_id, unit, unit_kind))
    if label is None:
        return ""
    return f"judge {'?' if label.grade is None else label.grade}"


def _result(record: QuestionRecord, k: int, tables: _Tables, labels: dict[Key, UnitLabel], unit_kind: str) -> dict:
    ranks: dict[tuple, int] = {}
    for rank, entry in enumerate(record.ranking, start=1):
        ranks.setdefault(_span(entry), rank)
    mrr, recall = metric_key("mrr", k), metric_key("recall", k)
    return {
        "first": record.first_relevant_rank,
        "mrr": _score(record.metrics.get(mrr)),
        "recall": _score(record.metrics.get(recall)),
        "ranking": [
            [tables.unit(e), _score(e.score), e.grade, _judged(record, e, labels, unit_kind)] for e in record.ranking
        ],
        "expected": [[tables.unit(e), _score(e.score), e.grade, ranks.get(_span(e))] for e in record.expected],
        **({"searched": list(searched)} if isinstance(searched := record.extra.get("searched"), list) else {}),
    }


def _question(record: QuestionRecord, tables: _Tables) -> dict:
    evidence = [
        [tables.doc(ev.doc), ev.start, ev.end, ev.grade, tables.quote(ev.doc, ev.start, ev.end), ev.extra.get("pages")]
        for ev in record.evidence
    ]
    return {"id": record.question_id, "text": record.question, "tags": list(record.tags), "evidence": evidence}


def _answers(layer: AnswerLayer, question_index: dict[str, int]) -> dict:
    """The answer layer of the scored candidate: one entry per question (``None`` where none was answered)."""
    rows: list[dict | None] = [None] * len(question_index)
    for row in layer.rows:
        qi = question_index.get(row.get("question_id", ""))
        if qi is None:
            continue
        rows[qi] = {
            "groundedness": _score(row.get(GROUNDEDNESS)),
            "relevance": _score(row.get(RELEVANCE)),
            "claim_recall": _score(row.get(CLAIM_RECALL)),
            "claims": row.get("claims", 0),
            "supported": row.get("supported", 0),
            "undecided": row.get("undecided", 0),
            "no_claims": bool(row.get("no_claims")),
            "layer": row.get("layer"),
            "failing": list(row.get("failing") or []),
            "unsupported": list(row.get("unsupported_claims") or []),
        }
    summary = layer.summary
    return {
        "candidate": summary.get("candidate") or "",
        "file": Path(str(summary.get("answers_file") or "")).name,
        "labels": labels_short(summary),
        "uncalibrated": uncalibrated(summary),
        "rows": rows,
    }


def inspector_data(
    summary: RunSummary,
    records: list[QuestionRecord],
    texts: list[UnitText],
    manifest: Manifest,
    answers: AnswerLayer | None = None,
    judgments: list[UnitLabel] | None = None,
) -> dict:
    """The blob the page embeds: run facts, candidates in rank order, questions, and per candidate one
    result per question (``None`` where the run stored none) whose units index the interned tables; with
    ``answers``, the scored candidate's answer layer per question too."""
    k, unit = summary.k, summary.unit
    mrr, recall, hit_rate = metric_key("mrr", k), metric_key("recall", k), metric_key("hit_rate", k)
    tables = _Tables(texts, unit == DOCUMENT)
    labels = by_key(judgments or [], unit)
    candidates = sorted(summary.candidates, key=lambda c: math.inf if c.rank is None else c.rank)
    candidate_index = {c.id: i for i, c in enumerate(candidates)}
    question_index: dict[str, int] = {}
    questions: list[dict] = []
    for record in records:
        if record.question_id not in question_index:
            question_index[record.question_id] = len(questions)
            questions.append(_question(record, tables))
    results: list[list[dict | None]] = [[None] * len(questions) for _ in candidates]
    for record in records:
        ci = candidate_index.get(record.candidate)
        if ci is not None:
            results[ci][question_index[record.question_id]] = _result(record, k, tables, labels, unit)
    corpus, goldset = manifest.corpus or {}, manifest.goldset or {}
    data = {
        "run": {
            "id": manifest.run_id or "",
            "started": manifest.started or "",
            "corpus": corpus.get("path", ""),
            "corpus_sha256": corpus.get("sha256", ""),
            "goldset": goldset.get("path", ""),
            "k": k,
            "depth": summary.depth,
            "unit": unit,
        },
        "candidates": [
            {
                "id": c.id,
                "rank": c.rank,
                "mrr": _score(c.quality.get(mrr)),
                "recall": _score(c.quality.get(recall)),
                "hit_rate": _score(c.quality.get(hit_rate)),
                "p95_ms": _p95_ms(c),
            }
            for c in candidates
        ],
        "questions": questions,
        "docs": tables.docs,
        "texts": tables.texts,
        "units": tables.units,
        "results": results,
    }
    if answers is not None:  # left out otherwise, so a run without answers gets the page it always had
        data["answers"] = _answers(answers, question_index)
    return data


def script_json(data: dict) -> str:
    """JSON that is safe inside ``<script>``: the escaped characters occur only within strings, where
    ``\\uXXXX`` means the same, so ``JSON.parse`` gives back exactly the data."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.translate(_SCRIPT_ESCAPES)


def _csp_hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


def render_html(data: dict) -> str:
    """The page: static/inspector.html with its style, script and Content-Security-Policy filled in and
    ``data`` embedded as JSON."""
    css, js = _static("inspector.css"), _static("inspector.js")
    csp = (
        f"default-src 'none'; script-src {_csp_hash(js)}; style-src {_csp_hash(css)}; "
        "img-src 'none'; base-uri 'none'; form-action 'none'"
    )
    page = _static("inspector.html")
    return page.replace("@CSP@", csp).replace("@CSS@", css).replace("@JS@", js).replace("@DATA@", script_json(data))


@functools.cache
def _static(name: str) -> str:
    """A file of bench/report/static/. The style and script are embedded exactly as the files hold them
    (their first and last newlines included): the policy allows them by the hash of that text."""
    return resources.files("bench.report").joinpath("static", name).read_text(encoding="utf-8")
