
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
    const [d, s, e, , , pages] = data.units[u];
    const doc = pages ? `${data.docs[d]} ${pages}` : data.docs[d];
    return DOCUMENT_UNIT ? doc : `${doc} · chars ${s}–${e}`;
  }

  // Evidence spans are in characters (code points); JavaScript strings count UTF-16 units.
  function appendMarked(node, text, unitStart, ranges) {
    const chars = /[\uD800-\uDFFF]/.test(text) ? Array.from(text) : null;
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
    if (text.length > CLAMP_CHARS || (text.match(/\n/g) || []).length > 6) {
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
    for (const [d, s, e, grade, quote, pages] of q.evidence) {
      const span = s === null || e === null ? "whole document" : `chars ${s}–${e}`;
      const doc = pages ? `${data.docs[d]} ${pages}` : data.docs[d];
      const item = el("li", "evidence-item", `${doc} · ${span} · grade ${grade}`);
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
