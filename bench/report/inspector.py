"""inspector.html: one self-contained page to read a run question by question.

Every ranking of every candidate is embedded as one JSON blob and drawn in the browser with DOM calls only,
because corpus and question text are untrusted: a chunk may hold ``<script>`` or ``<img onerror>``. The
blob escapes ``< > &`` and the JavaScript line separators so nothing in it can end the script element, and a
Content-Security-Policy (hashes of the page's own script and style) refuses anything else.

DOM contract (tests and other tools rely on it):

- controls: ``select#candidate-a`` and ``select#candidate-b`` (option values are candidate ids; ``""`` is
  "— none —" in B), ``input#misses-only`` and ``input#show-depth`` (checkboxes), ``select#tag-filter``
  (values are tags, ``""`` is all tags), ``input#search``; ``#shown-count`` reads "N of M questions";
  ``#run-id`` and ``#run-meta`` in the header; ``#no-questions`` shows when the filters leave nothing.
- ``main#questions`` holds one ``article.question[data-qid]`` per question (hidden ones carry ``hidden``),
  with ``.question-text``, ``.tag`` items and ``.evidence-item`` items, then ``.columns`` (``.two`` with B).
- each ``section.candidate-column[data-candidate][data-side=A|B]`` has ``.verdict`` (``.hit`` or ``.miss``),
  ``ol.ranking`` of ``li.entry[data-rank][data-span]`` (``.relevant`` or ``.distractor``, ``.first-relevant``,
  ``.beyond-k`` for ranks past k, shown only while ``#questions`` has ``.show-depth``) with ``.rank``,
  ``.score``, ``.label`` ("ground truth (grade N)" / "distractor"), ``.where`` and ``.unit-text``; then
  ``div.missed`` listing ``li.missed-unit[data-span]`` with ``.position`` ("rank N" or "not retrieved").
- ``data-span`` is ``doc_id:start-end``, the same for a unit wherever it appears.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from pathlib import Path

from bench.evaluation.metrics import metric_key
from bench.files import write_atomic
from bench.inputs.goldset import DOCUMENT
from bench.results.schema import Manifest, QuestionRecord, RankedUnit, RunSummary, UnitText

DOCUMENT_PREVIEW = 1500  # characters of a whole document shown; the page notes the full length
QUOTE_LIMIT = 600  # characters of an evidence quote shown under its question

_SCRIPT_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def write_inspector(
    path: Path, summary: RunSummary, records: list[QuestionRecord], texts: list[UnitText], manifest: Manifest
) -> None:
    """Write the inspector page for a finished run; same inputs give the same bytes."""
    write_atomic(path, render_html(inspector_data(summary, records, texts, manifest)))


class _Tables:
    """Interned documents, texts and units, so 9 × 170 × 20 ranking entries cost a few numbers each."""

    def __init__(self, texts: list[UnitText], document_unit: bool):
        self.document_unit = document_unit
        self.source = {(t.doc_id, t.start, t.end): t.text for t in texts}
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
        """``[doc, start, end, text index or None, 1 if the text is only its beginning]``."""
        key = _span(entry)
        if key not in self._unit_index:
            text = self.source.get(key)
            cut = int(self.document_unit and text is not None and len(text) > DOCUMENT_PREVIEW)
            if cut:
                text = text[:DOCUMENT_PREVIEW]
            self._unit_index[key] = len(self.units)
            self.units.append([self.doc(key[0]), key[1], key[2], None if text is None else self.text(text), cut])
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


def _score(value) -> float | None:
    """Four decimals are plenty for a page that shows three, and keep the file small."""
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), 4)


def _span(entry: RankedUnit) -> tuple:
    return entry.doc_id, entry.start, entry.end


def _result(record: QuestionRecord, k: int, tables: _Tables) -> dict:
    ranks: dict[tuple, int] = {}
    for rank, entry in enumerate(record.ranking, start=1):
        ranks.setdefault(_span(entry), rank)
    mrr, recall = metric_key("mrr", k), metric_key("recall", k)
    return {
        "first": record.first_relevant_rank,
        "mrr": _score(record.metrics.get(mrr)),
        "recall": _score(record.metrics.get(recall)),
        "ranking": [[tables.unit(e), _score(e.score), e.grade] for e in record.ranking],
        "expected": [[tables.unit(e), _score(e.score), e.grade, ranks.get(_span(e))] for e in record.expected],
    }


def _question(record: QuestionRecord, tables: _Tables) -> dict:
    evidence = [
        [tables.doc(ev.doc), ev.start, ev.end, ev.grade, tables.quote(ev.doc, ev.start, ev.end)]
        for ev in record.evidence
    ]
    return {"id": record.question_id, "text": record.question, "tags": list(record.tags), "evidence": evidence}


def inspector_data(
    summary: RunSummary, records: list[QuestionRecord], texts: list[UnitText], manifest: Manifest
) -> dict:
    """The blob the page embeds: run facts, candidates in rank order, questions, and per candidate one
    result per question (``None`` where the run stored none) whose units index the interned tables."""
    k, unit = summary.k, summary.unit
    mrr, recall = metric_key("mrr", k), metric_key("recall", k)
    tables = _Tables(texts, unit == DOCUMENT)
    candidates = sorted(summary.candidates, key=lambda c: c.rank)
    candidate_index = {c.id: i for i, c in enumerate(candidates)}
    question_index: dict[str, int] = {}
    questions = []
    for record in records:
        if record.question_id not in question_index:
            question_index[record.question_id] = len(questions)
            questions.append(_question(record, tables))
    results: list[list[dict | None]] = [[None] * len(questions) for _ in candidates]
    for record in records:
        ci = candidate_index.get(record.candidate)
        if ci is not None:
            results[ci][question_index[record.question_id]] = _result(record, k, tables)
    corpus, goldset = manifest.corpus or {}, manifest.goldset or {}
    return {
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
            }
            for c in candidates
        ],
        "questions": questions,
        "docs": tables.docs,
        "texts": tables.texts,
        "units": tables.units,
        "results": results,
    }


def script_json(data: dict) -> str:
    """JSON that is safe inside ``<script>``: the escaped characters occur only within strings, where
    ``\\uXXXX`` means the same, so ``JSON.parse`` gives back exactly the data."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.translate(_SCRIPT_ESCAPES)


def _csp_hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


def render_html(data: dict) -> str:
    csp = (
        f"default-src 'none'; script-src {_csp_hash(_JS)}; style-src {_csp_hash(_CSS)}; "
        "img-src 'none'; base-uri 'none'; form-action 'none'"
    )
    return _PAGE.replace("@CSP@", csp).replace("@CSS@", _CSS).replace("@JS@", _JS).replace("@DATA@", script_json(data))


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="@CSP@">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>bench inspector</title>
<style>@CSS@</style>
</head>
<body>
<header id="top">
<h1>Retrieval inspector <span id="run-id"></span></h1>
<p id="run-meta"></p>
<div id="controls" role="search">
<label>Candidate A <select id="candidate-a"></select></label>
<label>Candidate B <select id="candidate-b"><option value="">— none —</option></select></label>
<label>Tag <select id="tag-filter"><option value="">all tags</option></select></label>
<label>Search <input id="search" type="search" placeholder="question text (press /)" autocomplete="off"></label>
<label title="questions where A (or B, when chosen) has no relevant unit in the top k">
<input id="misses-only" type="checkbox"> misses only</label>
<label><input id="show-depth" type="checkbox"> show to depth <span id="depth-label"></span></label>
<span id="shown-count" role="status" aria-live="polite"></span>
</div>
</header>
<main id="questions"></main>
<p id="no-questions" hidden>No question matches these filters.</p>
<script type="application/json" id="bench-data">@DATA@</script>
<script>@JS@</script>
</body>
</html>
"""

_CSS = """
:root { color-scheme: light; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #f6f8fa;
  --good: #1a7f37; --good-bg: #e9f7ee; --bad: #c0262d; --bad-bg: #fdeced; --grey-bg: #f3f4f6;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  color: var(--fg); background: var(--bg); }
#top { position: sticky; top: 0; z-index: 2; background: #fff; border-bottom: 1px solid var(--line);
  padding: 10px 24px; box-shadow: 0 1px 4px rgba(0, 0, 0, .06); }
h1 { font-size: 18px; margin: 0; }
#run-id { font-family: var(--mono); font-weight: 500; color: var(--muted); }
#run-meta { margin: 2px 0 8px; color: var(--muted); font-size: 13px; }
#controls { display: flex; flex-wrap: wrap; gap: 8px 18px; align-items: center; font-size: 14px; }
#controls label { display: inline-flex; gap: 6px; align-items: center; }
select, input[type=search] { font: inherit; padding: 3px 6px; border: 1px solid var(--line); border-radius: 6px;
  background: #fff; max-width: 340px; }
input[type=search] { width: 260px; }
:focus-visible { outline: 2px solid #0969da; outline-offset: 2px; }
#shown-count { margin-left: auto; font-weight: 600; }
main { max-width: 1480px; margin: 0 auto; padding: 16px 24px 48px; }
#no-questions { text-align: center; color: var(--muted); }
.question { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 14px 18px;
  margin-bottom: 16px; content-visibility: auto; contain-intrinsic-size: auto 900px; }
.question-head { display: flex; flex-wrap: wrap; align-items: baseline; gap: 4px 10px; }
.qid { font-family: var(--mono); color: var(--muted); font-size: 13px; }
.question-text { font-size: 17px; margin: 0; flex: 1 1 400px; overflow-wrap: anywhere; }
.tags { list-style: none; margin: 0; padding: 0; display: flex; gap: 4px; flex-wrap: wrap; }
.tag { background: #ddf4ff; color: #0a3069; border-radius: 999px; padding: 0 8px; font-size: 12px; }
.evidence { font-size: 13px; color: var(--muted); margin: 6px 0 10px; }
.evidence ul { margin: 2px 0 0; padding-left: 18px; }
.evidence .quote { display: block; color: var(--fg); font-style: italic; white-space: pre-wrap;
  overflow-wrap: anywhere; }
.columns { display: grid; grid-template-columns: minmax(0, 1fr); gap: 16px; }
.columns.two { grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); }
.candidate-column { min-width: 0; }
.candidate-name { font-size: 14px; margin: 0 0 4px; font-family: var(--mono); }
.side { display: inline-block; min-width: 1.6em; text-align: center; border-radius: 4px; background: #24292f;
  color: #fff; margin-right: 6px; font-family: system-ui, sans-serif; }
.verdict { margin: 0 0 8px; padding: 4px 10px; border-radius: 6px; font-weight: 600; font-size: 14px; }
.verdict.hit { background: var(--good-bg); color: var(--good); }
.verdict.miss { background: var(--bad-bg); color: var(--bad); border: 1px solid var(--bad); }
.verdict .metrics { font-weight: 400; color: var(--muted); margin-left: 8px; }
.ranking, .missed ul { list-style: none; margin: 0; padding: 0; }
.entry, .missed-unit { border-left: 4px solid #b6bec8; background: var(--grey-bg); border-radius: 4px;
  padding: 6px 10px; margin-bottom: 6px; }
.entry.distractor { color: #424a53; }
.entry.relevant { border-left-color: var(--good); background: var(--good-bg); }
.entry.first-relevant { box-shadow: inset 0 0 0 2px var(--good); }
.entry.beyond-k { display: none; opacity: .85; }
.show-depth .entry.beyond-k { display: block; }
.show-depth .entry.first-beyond { margin-top: 14px; position: relative; }
.show-depth .entry.first-beyond::before { content: "below the top k"; position: absolute; top: -14px; left: 0;
  font-size: 11px; color: var(--muted); }
.entry-head, .missed-head { display: flex; flex-wrap: wrap; gap: 2px 10px; align-items: baseline; font-size: 13px; }
.rank { font-weight: 700; min-width: 2.2em; }
.score { font-family: var(--mono); }
.label { border-radius: 4px; padding: 0 6px; font-size: 12px; }
.label.ground-truth { background: var(--good); color: #fff; }
.label.distractor { background: #d0d7de; color: #24292f; }
.badge { font-size: 12px; font-weight: 700; color: var(--good); }
.where { color: var(--muted); font-family: var(--mono); font-size: 12px;
  overflow-wrap: anywhere; }
.unit-text { margin: 4px 0 0; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 14px; }
.clampable .unit-text { display: -webkit-box; -webkit-box-orient: vertical; -webkit-line-clamp: 6; overflow: hidden; }
.clampable.expanded .unit-text { display: block; }
.unit-text mark { background: #fff3b0; color: inherit; }
.cut, .absent { color: var(--muted); font-style: italic; }
.more { font: inherit; font-size: 12px; border: 0; background: none; color: #0969da; padding: 0; cursor: pointer; }
.more:hover { text-decoration: underline; }
.missed { margin-top: 10px; }
.missed h4 { margin: 0 0 4px; font-size: 13px; color: var(--bad); }
.missed.empty h4 { color: var(--muted); }
.missed .none { margin: 0; font-size: 13px; color: var(--muted); }
.missed-unit { border-left-color: var(--bad); background: var(--bad-bg); }
.position { font-weight: 700; color: var(--bad); }
"""

_JS = """
"use strict";
(() => {
  const data = JSON.parse(document.getElementById("bench-data").textContent);
  const run = data.run, K = run.k, DEPTH = run.depth, DOCUMENT_UNIT = run.unit === "document";
  const CLAMP_CHARS = 420;  // longer texts start clamped to a few lines, with a "more" toggle
  const byId = (id) => document.getElementById(id);
  const controls = {a: byId("candidate-a"), b: byId("candidate-b"), tag: byId("tag-filter"),
                    search: byId("search"), misses: byId("misses-only"), depth: byId("show-depth")};
  const list = byId("questions");
  const candidateIndex = new Map(data.candidates.map((c, i) => [c.id, i]));

  // Untrusted text only ever reaches the page through textContent and attribute values.
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function option(value, label) {
    const node = el("option", null, label);
    node.value = value;
    return node;
  }

  const fmt = (score) => (score === null ? "no score" : score.toFixed(3));
  const spanKey = (u) => { const [d, s, e] = data.units[u]; return `${data.docs[d]}:${s}-${e}`; };
  function where(u) {
    const [d, s, e] = data.units[u];
    return DOCUMENT_UNIT ? data.docs[d] : `${data.docs[d]} · chars ${s}–${e}`;
  }

  // Evidence spans are in characters (code points); JavaScript strings count UTF-16 units.
  function appendMarked(node, text, unitStart, ranges) {
    const chars = /[\\uD800-\\uDFFF]/.test(text) ? Array.from(text) : null;
    const length = chars ? chars.length : text.length;
    const slice = (a, b) => (chars ? chars.slice(a, b).join("") : text.slice(a, b));
    const clipped = ranges.map(([s, e]) => [Math.max(0, s - unitStart), Math.min(length, e - unitStart)])
      .filter(([s, e]) => s < e).sort((x, y) => x[0] - y[0]);
    let pos = 0;
    for (const [s, e] of clipped) {
      if (e <= pos) continue;
      const from = Math.max(s, pos);
      if (from > pos) node.append(slice(pos, from));
      node.append(el("mark", null, slice(from, e)));
      pos = e;
    }
    if (pos < length) node.append(slice(pos, length));
  }

  function evidenceRanges(qi, doc) {
    return data.questions[qi].evidence.filter((ev) => ev[0] === doc && ev[1] !== null && ev[2] !== null)
      .map((ev) => [ev[1], ev[2]]);
  }

  function appendText(item, u, qi, relevant) {
    const [doc, start, end, ti, cut] = data.units[u];
    const p = el("p", "unit-text");
    item.append(p);
    if (ti === null) {
      p.append(el("span", "absent", "(text not stored)"));
      return;
    }
    const text = data.texts[ti];
    appendMarked(p, text, start, relevant ? evidenceRanges(qi, doc) : []);
    if (cut) p.append(el("span", "cut", ` … (the first ${text.length} of ${end - start} characters)`));
    if (text.length > CLAMP_CHARS || (text.match(/\\n/g) || []).length > 6) {
      item.classList.add("clampable");
      const more = el("button", "more", "more");
      more.type = "button";
      more.setAttribute("aria-expanded", "false");
      item.append(more);
    }
  }

  function label(grade) {
    return grade > 0 ? el("span", "label ground-truth", `ground truth (grade ${grade})`)
                     : el("span", "label distractor", "distractor");
  }

  function entry(qi, rank, [u, score, grade], first) {
    const item = el("li", `entry ${grade > 0 ? "relevant" : "distractor"}`);
    if (rank > K) item.classList.add("beyond-k");
    if (rank === K + 1) item.classList.add("first-beyond");
    if (rank === first) item.classList.add("first-relevant");
    item.dataset.rank = String(rank);
    item.dataset.span = spanKey(u);
    const head = el("div", "entry-head");
    head.append(el("span", "rank", `#${rank}`), el("span", "score", fmt(score)), label(grade),
                el("span", "where", where(u)));
    if (rank === first) head.append(el("span", "badge", "★ first relevant"));
    item.append(head);
    appendText(item, u, qi, grade > 0);
    return item;
  }

  function verdict(res) {
    if (!res) return el("p", "verdict miss", "no result stored for this question");
    let node;
    if (res.first === null) node = el("p", "verdict miss", `✗ MISS — no relevant unit in the top ${DEPTH}`);
    else if (res.first > K) {
      node = el("p", "verdict miss", `✗ MISS — none in the top ${K}; first relevant at #${res.first}`);
    }
    else node = el("p", "verdict hit", `✓ first relevant at #${res.first}`);
    node.append(el("span", "metrics", `mrr@${K} ${fmt(res.mrr)} · recall@${K} ${fmt(res.recall)}`));
    return node;
  }

  function missedBox(qi, res) {
    const missed = res.expected.filter((x) => x[3] === null || x[3] > K);
    const box = el("div", missed.length ? "missed" : "missed empty");
    box.append(el("h4", null, `expected but missed (${missed.length})`));
    if (!missed.length) {
      box.append(el("p", "none", res.expected.length ? `none — every expected unit is in the top ${K}`
                                                      : "no expected units for this question"));
      return box;
    }
    const items = el("ul");
    for (const [u, score, grade, rank] of missed) {
      const item = el("li", "missed-unit");
      item.dataset.span = spanKey(u);
      const head = el("div", "missed-head");
      head.append(el("span", "position", rank === null ? "not retrieved" : `rank ${rank}`), label(grade),
                  el("span", "score", `score ${fmt(score)}`), el("span", "where", where(u)));
      item.append(head);
      appendText(item, u, qi, true);
      items.append(item);
    }
    box.append(items);
    return box;
  }

  function column(ci, qi, side) {
    const cand = data.candidates[ci], res = data.results[ci][qi];
    const col = el("section", "candidate-column");
    col.dataset.candidate = cand.id;
    col.dataset.side = side;
    const name = el("h3", "candidate-name");
    name.append(el("span", "side", side), cand.id);
    col.append(name, verdict(res));
    if (!res) return col;
    const ranking = el("ol", "ranking");
    res.ranking.forEach((item, i) => ranking.append(entry(qi, i + 1, item, res.first)));
    col.append(ranking, missedBox(qi, res));
    return col;
  }

  function shell(q) {
    const art = el("article", "question");
    art.dataset.qid = q.id;
    const head = el("header", "question-head");
    head.append(el("span", "qid", q.id), el("h2", "question-text", q.text));
    const tags = el("ul", "tags");
    for (const tag of q.tags) tags.append(el("li", "tag", tag));
    head.append(tags);
    const evidence = el("div", "evidence");
    evidence.append(el("span", null, q.evidence.length === 1 ? "evidence" : `evidence (${q.evidence.length})`));
    const items = el("ul");
    for (const [d, s, e, grade, quote] of q.evidence) {
      const span = s === null || e === null ? "whole document" : `chars ${s}–${e}`;
      const item = el("li", "evidence-item", `${data.docs[d]} · ${span} · grade ${grade}`);
      if (quote !== null) item.append(el("span", "quote", data.texts[quote]));
      items.append(item);
    }
    evidence.append(items);
    art.append(head, evidence, el("div", "columns"));
    return art;
  }

  const shells = data.questions.map(shell);
  const haystacks = data.questions.map((q) => `${q.id} ${q.text}`.toLowerCase());
  const views = shells.map(() => "");  // which A|B pair each question's columns show now
  const cache = new Map();  // built columns by side, candidate and question: switching back is free
  list.append(...shells);

  function cachedColumn(ci, qi, side) {
    const key = `${side}${ci}:${qi}`;
    if (!cache.has(key)) cache.set(key, column(ci, qi, side));
    return cache.get(key);
  }

  // Columns are built the first time a question is shown with a given pair, not for hidden questions.
  function show(qi, a, b) {
    const view = `${a}|${b}`;
    if (views[qi] === view) return;
    const columns = shells[qi].querySelector(".columns");
    const cols = [cachedColumn(a, qi, "A")];
    if (b !== null) cols.push(cachedColumn(b, qi, "B"));
    columns.replaceChildren(...cols);
    columns.classList.toggle("two", b !== null);
    views[qi] = view;
  }

  function isMiss(ci, qi) {
    const res = data.results[ci][qi];
    return !res || res.first === null || res.first > K;
  }

  function update() {
    const a = candidateIndex.get(controls.a.value);
    const b = controls.b.value === "" ? null : candidateIndex.get(controls.b.value);
    const tag = controls.tag.value, needle = controls.search.value.trim().toLowerCase();
    const missesOnly = controls.misses.checked;
    let shown = 0;
    data.questions.forEach((q, qi) => {
      const visible = (!tag || q.tags.includes(tag)) && (!needle || haystacks[qi].includes(needle))
        && (!missesOnly || isMiss(a, qi) || (b !== null && isMiss(b, qi)));
      shells[qi].hidden = !visible;
      if (visible) {
        show(qi, a, b);
        shown += 1;
      }
    });
    list.classList.toggle("show-depth", controls.depth.checked);
    byId("shown-count").textContent = `${shown} of ${data.questions.length} questions`;
    byId("no-questions").hidden = shown > 0;
  }

  function header() {
    document.title = `bench inspector · ${run.id}`;
    byId("run-id").textContent = run.id;
    const parts = [`${data.questions.length} questions`, `${data.candidates.length} candidates`,
                   `k = ${K}`, `depth ${DEPTH}`, `${run.unit} units`];
    const fingerprint = run.corpus_sha256 ? ` (${run.corpus_sha256.slice(0, 12)})` : "";
    if (run.corpus) parts.push(`corpus ${run.corpus}${fingerprint}`);
    if (run.goldset) parts.push(`goldset ${run.goldset}`);
    if (run.started) parts.push(`started ${run.started}`);
    byId("run-meta").textContent = parts.join(" · ");
    byId("depth-label").textContent = String(DEPTH);
  }

  function fillControls() {
    for (const c of data.candidates) {
      const text = `${c.rank}. ${c.id} — mrr@${K} ${fmt(c.mrr)}`;
      controls.a.append(option(c.id, text));
      controls.b.append(option(c.id, text));
    }
    if (data.candidates.length) controls.a.value = data.candidates[0].id;
    const counts = new Map();
    for (const q of data.questions) for (const t of q.tags) counts.set(t, (counts.get(t) || 0) + 1);
    const tags = [...counts].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
    for (const [tag, n] of tags) controls.tag.append(option(tag, `${tag} (${n})`));
  }

  function wire() {
    for (const c of [controls.a, controls.b, controls.tag, controls.misses, controls.depth]) {
      c.addEventListener("change", update);
    }
    controls.search.addEventListener("input", update);
    list.addEventListener("click", (event) => {
      const button = event.target.closest("button.more");
      if (!button) return;
      const expanded = button.parentElement.classList.toggle("expanded");
      button.textContent = expanded ? "less" : "more";
      button.setAttribute("aria-expanded", String(expanded));
    });
    document.addEventListener("keydown", (event) => {
      const typing = event.target.closest && event.target.closest("input, select, textarea");
      if (event.key === "/" && !typing) {
        event.preventDefault();
        controls.search.focus();
      }
    });
  }

  header();
  fillControls();
  wire();
  if (data.candidates.length) update();
  else byId("shown-count").textContent = "no candidates in this run";
})();
"""
