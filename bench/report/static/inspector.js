
"use strict";
(() => {
  const data = JSON.parse(document.getElementById("bench-data").textContent);
  const run = data.run, K = run.k, DEPTH = run.depth, DOCUMENT_UNIT = run.unit === "document";
  const CLAMP_CHARS = 420;  // longer texts start as a preview (or clamped to a few lines), with a "more" toggle
  const SNAP_CHARS = 40;  // a preview window may shrink this much to start and end between words
  const byId = (id) => document.getElementById(id);
  const controls = {a: byId("candidate-a"), b: byId("candidate-b"), tag: byId("tag-filter"),
                    search: byId("search"), misses: byId("misses-only"), depth: byId("show-depth"),
                    outcome: byId("outcome-filter")};
  const list = byId("questions");
  const candidateIndex = new Map(data.candidates.map((c, i) => [c.id, i]));
  const ANSWERS = data.answers || null;  // the answer layer of one candidate, once its answers were scored
  const FAILED_LAYERS = ["retrieval", "generation", "question handling"];

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

  const fmt = (score) => (score === null || score === undefined ? "–" : score.toFixed(3));
  const spanKey = (u) => { const [d, s, e] = data.units[u]; return `${data.docs[d]}:${s}-${e}`; };
  function where(u) {
    const [d, s, e, , , pages] = data.units[u];
    const doc = pages ? `${data.docs[d]} ${pages}` : data.docs[d];
    return DOCUMENT_UNIT ? doc : `${doc} · chars ${s}–${e}`;
  }

  // Evidence spans are in characters (code points); JavaScript strings count UTF-16 units.
  function characters(text) {
    const chars = /[\uD800-\uDFFF]/.test(text) ? Array.from(text) : null;
    return {length: chars ? chars.length : text.length,
            slice: (a, b) => (chars ? chars.slice(a, b).join("") : text.slice(a, b))};
  }

  // The evidence ranges that overlap a text starting at unitStart, relative to it, in order.
  function overlaps(chars, unitStart, ranges) {
    return ranges.map(([s, e]) => [Math.max(0, s - unitStart), Math.min(chars.length, e - unitStart)])
      .filter(([s, e]) => s < e).sort((x, y) => x[0] - y[0]);
  }

  function appendMarked(node, chars, marks, from = 0, to = chars.length) {
    let pos = from;
    for (const [s, e] of marks) {
      const a = Math.max(s, pos), b = Math.min(e, to);
      if (a >= b) continue;
      if (a > pos) node.append(chars.slice(pos, a));
      node.append(el("mark", null, chars.slice(a, b)));
      pos = b;
    }
    if (pos < to) node.append(chars.slice(pos, to));
  }

  // About CLAMP_CHARS characters centred on the first evidence overlap, cut between words where one is near.
  function previewWindow(chars, [s, e]) {
    let from, to;
    if (e - s >= CLAMP_CHARS) [from, to] = [s, s + CLAMP_CHARS];
    else {
      from = Math.max(0, s - Math.floor((CLAMP_CHARS - (e - s)) / 2));
      to = Math.min(chars.length, from + CLAMP_CHARS);
      from = Math.max(0, to - CLAMP_CHARS);
    }
    if (from > 0) {
      const head = chars.slice(from, Math.min(s, from + SNAP_CHARS)).search(/\s/);
      if (head >= 0) from += head + 1;
    }
    if (to < chars.length) {
      const lo = Math.max(e, to - SNAP_CHARS), tail = chars.slice(lo, to);
      const space = Math.max(tail.lastIndexOf(" "), tail.lastIndexOf("\n"));
      if (space >= 0) to = lo + space;
    }
    return [from, to];
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
    const text = data.texts[ti], chars = characters(text);
    const marks = relevant ? overlaps(chars, start, evidenceRanges(qi, doc)) : [];
    appendMarked(p, chars, marks);
    if (cut) p.append(el("span", "cut", ` … (the first ${text.length} of ${end - start} characters)`));
    if (text.length > CLAMP_CHARS || (text.match(/\n/g) || []).length > 6) {
      if (marks.length) {  // the preview is the evidence in its context, not the text's beginning
        const [from, to] = previewWindow(chars, marks[0]);
        if (from === 0 && to === chars.length) return;
        const preview = el("p", "unit-preview");
        if (from > 0) preview.append(el("span", "ellipsis", "… "));
        appendMarked(preview, chars, marks, from, to);
        if (to < chars.length) preview.append(el("span", "ellipsis", " …"));
        p.before(preview);
        item.classList.add("windowed");
      }
      else item.classList.add("clampable");
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

  function judgedMark(judged) {
    if (judged === "person") return el("span", "judged person", "person-judged");
    if (judged && judged.startsWith("judge ")) return el("span", "judged judge", `judge: grade ${judged.slice(6)}`);
    return el("span", "judged unjudged", "unjudged");
  }

  function entry(qi, rank, [u, score, grade, judged], first) {
    const item = el("li", `entry ${grade > 0 ? "relevant" : "distractor"}`);
    if (rank > K) item.classList.add("beyond-k");
    if (rank === K + 1) item.classList.add("first-beyond");
    if (rank === first) item.classList.add("first-relevant");
    item.dataset.rank = String(rank);
    item.dataset.span = spanKey(u);
    const head = el("div", "entry-head");
    head.append(el("span", "rank", `#${rank}`), el("span", "score", fmt(score)), label(grade),
                judgedMark(judged), el("span", "where", where(u)));
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

  // The score of rank k: what an expected unit needed to make the top k.
  const kthScore = (res) => (res.ranking.length >= K ? res.ranking[K - 1][1] : null);

  function missedBox(qi, res) {
    const missed = res.expected.filter((x) => x[3] === null || x[3] > K);
    const box = el("div", missed.length ? "missed" : "missed empty");
    box.append(el("h4", null, `expected but missed (${missed.length})`));
    if (!missed.length) {
      box.append(el("p", "none", res.expected.length ? `none — every expected unit is in the top ${K}`
                                                      : "no expected units for this question"));
      return box;
    }
    const items = el("ul"), kth = kthScore(res);
    for (const [u, score, grade, rank] of missed) {
      const item = el("li", "missed-unit");
      item.dataset.span = spanKey(u);
      const head = el("div", "missed-head");
      head.append(el("span", "position", rank === null ? "not retrieved" : `rank ${rank}`), label(grade),
                  el("span", "score", `score ${fmt(score)}`), el("span", "where", where(u)));
      const needed = el("span", "kth", `k-th ${fmt(kth)}`);
      needed.title = `the score of the unit at rank ${K}: what this one needed to make the top ${K}`;
      head.querySelector(".score").after(" · ", needed);
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
    if (res.searched) {
      const box = el("div", "searched");
      box.append(el("p", "searched-head", "searched as (rewritten by a chat model):"));
      res.searched.forEach((text) => box.append(el("p", "searched-text", text)));
      col.append(box);
    }
    const ranking = el("ol", "ranking");
    res.ranking.forEach((item, i) => ranking.append(entry(qi, i + 1, item, res.first)));
    col.append(ranking, missedBox(qi, res));
    return col;
  }

  // The answer layer of the scored candidate: which layer failed first, and the figures that say so.
  function answerBox(qi) {
    const row = ANSWERS.rows[qi];
    const box = el("section", "answer-layer");
    box.dataset.candidate = ANSWERS.candidate;
    box.dataset.layer = row.layer;
    const head = el("h4", null, `answer layer · ${ANSWERS.candidate} `);
    const labels = el("span", "answer-labels", `labels: ${ANSWERS.labels}`);
    if (ANSWERS.uncalibrated) {
      labels.classList.add("uncalibrated");
      labels.title = "a judge labelled these claims, and no person's sample has calibrated it yet";
    }
    head.append(labels);
    let verdict;
    if (FAILED_LAYERS.includes(row.layer)) {
      const also = row.failing.slice(1);
      verdict = el("p", "answer-verdict failed",
                   `✗ failed first at ${row.layer}${also.length ? `; also ${also.join(", ")}` : ""}`);
    }
    else if (row.layer === "ok") verdict = el("p", "answer-verdict passed", "✓ passed every layer");
    else verdict = el("p", "answer-verdict unknown", "? not known: a layer was not measured");
    const figures = el("p", "answer-figures");
    const grounded = row.no_claims ? "no factual claim (counted apart, not as grounded)"
      : row.groundedness === null ? "groundedness –"
      : `groundedness ${fmt(row.groundedness)} (${row.supported} of ${row.claims} claims supported)`;
    const relevant = row.relevance === null ? "–" : row.relevance ? "yes" : "no";
    figures.append(el("span", "groundedness", grounded), " · ",
                   el("span", "relevance", `addresses the question: ${relevant}`));
    if (row.claim_recall !== null) {
      figures.append(" · ", el("span", "claim-recall", `claim recall ${fmt(row.claim_recall)}`));
    }
    if (row.undecided) figures.append(" · ", el("span", "undecided", `${row.undecided} undecided`));
    box.append(head, verdict, figures);
    if (row.unsupported.length) {
      box.append(el("h5", null, `claims the contexts do not support (${row.unsupported.length})`));
      const items = el("ul", "unsupported-claims");
      for (const claim of row.unsupported) items.append(el("li", "unsupported-claim", claim));
      box.append(items);
    }
    return box;
  }

  // Percent-encoded UTF-8 with only letters, digits and _.-~ left as they are (Python's quote(id, safe="")).
  const encodeId = (id) => encodeURIComponent(id).replace(/[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

  function shell(q, qi) {
    const art = el("article", "question");
    art.dataset.qid = q.id;
    const head = el("header", "question-head");
    const link = el("a", "permalink", "#");
    link.href = `#${encodeId(q.id)}`;
    link.title = "link to this question";
    head.append(link, el("span", "qid", q.id), el("h2", "question-text", q.text));
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
    art.append(head, evidence);
    if (ANSWERS && ANSWERS.rows[qi]) art.append(answerBox(qi));
    art.append(el("div", "columns"));
    return art;
  }

  const shells = data.questions.map(shell);
  const questionIndex = new Map(data.questions.map((q, qi) => [q.id, qi]));
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

  const missedByAll = data.questions.map((q, qi) => data.candidates.every((c, ci) => isMiss(ci, qi)));
  const OUTCOMES = {
    "": () => true,
    "a-not-b": (qi, a, b) => b !== null && !isMiss(a, qi) && isMiss(b, qi),
    "b-not-a": (qi, a, b) => b !== null && !isMiss(b, qi) && isMiss(a, qi),
    "missed-by-all": (qi) => missedByAll[qi],
  };
  // "Answer layer failed": any layer, or the first one that failed; only for a run whose answers were scored.
  const answerLayer = (qi) => (ANSWERS && ANSWERS.rows[qi] ? ANSWERS.rows[qi].layer : null);
  const ANSWER_FILTERS = {
    "": () => true,
    "any": (qi) => FAILED_LAYERS.includes(answerLayer(qi)),
    ...Object.fromEntries(FAILED_LAYERS.map((layer) => [layer, (qi) => answerLayer(qi) === layer])),
  };

  function answerControl() {
    const box = el("label", null, "Answer layer failed ");
    box.title = `the first layer that failed each question answered in ${ANSWERS.file} (${ANSWERS.candidate})`;
    const select = el("select");
    select.id = "answer-filter";
    select.append(option("", "every question"));
    for (const value of ["any", ...FAILED_LAYERS]) {
      const n = data.questions.filter((q, qi) => ANSWER_FILTERS[value](qi)).length;
      select.append(option(value, `${value === "any" ? "any layer" : value} (${n})`));
    }
    box.append(select);
    controls.misses.closest("label").before(box);
    return select;
  }

  const answerFilter = ANSWERS ? answerControl() : null;
  const OUTCOME_LABELS = {"": "every question", "a-not-b": "A finds, B misses", "b-not-a": "B finds, A misses",
                          "missed-by-all": "missed by every candidate"};

  // Each outcome option names how many questions it keeps (before the tag, search and misses filters).
  function labelOutcomes(a, b) {
    for (const opt of controls.outcome.options) {
      const keep = OUTCOMES[opt.value];
      const n = data.questions.filter((q, qi) => keep(qi, a, b)).length;
      const pair = opt.value === "a-not-b" || opt.value === "b-not-a";
      opt.disabled = pair && b === null;
      opt.textContent = opt.disabled ? `${OUTCOME_LABELS[opt.value]} (choose B)` : `${OUTCOME_LABELS[opt.value]} (${n})`;
    }
    if (controls.outcome.selectedOptions[0].disabled) controls.outcome.value = "";
  }

  function selected() {
    const a = candidateIndex.get(controls.a.value);
    const b = controls.b.value === "" ? null : candidateIndex.get(controls.b.value);
    return [a, b];
  }

  function update() {
    const [a, b] = selected();
    labelOutcomes(a, b);
    markLeaders(a, b);
    const tag = controls.tag.value, needle = controls.search.value.trim().toLowerCase();
    const missesOnly = controls.misses.checked, outcome = OUTCOMES[controls.outcome.value];
    const answered = ANSWER_FILTERS[answerFilter ? answerFilter.value : ""];
    let shown = 0;
    data.questions.forEach((q, qi) => {
      const visible = (!tag || q.tags.includes(tag)) && (!needle || haystacks[qi].includes(needle))
        && (!missesOnly || isMiss(a, qi) || (b !== null && isMiss(b, qi))) && outcome(qi, a, b) && answered(qi);
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
    if (ANSWERS) parts.push(`answers ${ANSWERS.file} scored for ${ANSWERS.candidate}`);
    byId("run-meta").textContent = parts.join(" · ");
    byId("depth-label").textContent = String(DEPTH);
  }

  const ms = (v) => (v === null ? "–" : `${v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2)} ms`);

  function leaderboard() {
    const table = byId("leaderboard");
    for (const [cls, name] of [["mrr", "mrr"], ["recall", "recall"], ["hit-rate", "hit_rate"]]) {
      table.querySelector(`thead .${cls}`).textContent = `${name}@${K}`;
    }
    byId("leaderboard-note").textContent = `(${data.candidates.length} candidates, best first)`;
    const body = table.querySelector("tbody");
    for (const c of data.candidates) {
      const row = el("tr");
      row.dataset.candidate = c.id;
      const pickA = el("button", "pick-a", c.id), pickB = el("button", "pick-b", "B");
      pickA.type = pickB.type = "button";
      pickA.title = "show this candidate as A";
      pickB.title = "show this candidate as B, beside A";
      const name = el("td", "candidate");
      name.append(pickA);
      const b = el("td", "as-b");
      b.append(pickB);
      row.append(el("td", "rank", c.rank ?? "–"), name, el("td", "mrr", fmt(c.mrr)),
                 el("td", "recall", fmt(c.recall)), el("td", "hit-rate", fmt(c.hit_rate)),
                 el("td", "p95", ms(c.p95_ms)), b);
      body.append(row);
    }
    body.addEventListener("click", (event) => {
      const row = event.target.closest("tr[data-candidate]");
      if (!row) return;
      const control = event.target.closest("button.pick-b") ? controls.b : controls.a;
      control.value = row.dataset.candidate;
      update();
    });
  }

  function markLeaders(a, b) {
    for (const row of byId("leaderboard").querySelectorAll("tbody tr")) {
      const ci = candidateIndex.get(row.dataset.candidate);
      row.classList.toggle("is-a", ci === a);
      row.classList.toggle("is-b", ci === b);
    }
  }

  // inspector.html#<percent-encoded question id> shows that question (clearing filters that hide it).
  function questionFromHash() {
    const raw = location.hash.slice(1);
    if (!raw) return null;
    let id = raw;
    try { id = decodeURIComponent(raw); } catch (e) { /* not percent-encoding: the fragment as it is */ }
    const qi = questionIndex.get(id);
    return qi === undefined ? (questionIndex.get(raw) ?? null) : qi;
  }

  function openFromHash() {
    const qi = questionFromHash();
    for (const node of list.querySelectorAll(".question.linked")) node.classList.remove("linked");
    if (qi === null || !data.candidates.length) return;
    if (shells[qi].hidden) {
      controls.tag.value = controls.search.value = controls.outcome.value = "";
      controls.misses.checked = false;
      if (answerFilter) answerFilter.value = "";
      update();
    }
    shells[qi].classList.add("linked");
    const top = byId("top").getBoundingClientRect().height;
    document.documentElement.style.setProperty("--header-height", `${Math.ceil(top) + 8}px`);
    shells[qi].scrollIntoView({block: "start"});
    requestAnimationFrame(() => shells[qi].scrollIntoView({block: "start"}));  // once the sizes above settle
  }

  function fillControls() {
    for (const c of data.candidates) {
      const text = `${c.rank ?? "–"}. ${c.id} — mrr@${K} ${fmt(c.mrr)}`;
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
    for (const c of [controls.a, controls.b, controls.tag, controls.misses, controls.depth, controls.outcome]) {
      c.addEventListener("change", update);
    }
    controls.search.addEventListener("input", update);
    if (answerFilter) answerFilter.addEventListener("change", update);
    window.addEventListener("hashchange", openFromHash);
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
  leaderboard();
  wire();
  if (data.candidates.length) update();
  else byId("shown-count").textContent = "no candidates in this run";
  openFromHash();
})();
