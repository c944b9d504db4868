
"use strict";
(() => {
  const cfg = JSON.parse(document.getElementById("bench-data").textContent);
  const CONTEXT = 400;  // characters of the document shown either side of a passage at first
  const GROW = 2000;    // characters each "more context" adds on either side
  const byId = (id) => document.getElementById(id);
  const state = {list: [], current: null, q: null, chain: Promise.resolve(), windows: new Map(), written: 0};

  // Untrusted text (documents, questions, tags) only ever reaches the page through textContent.
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function button(label, title, onClick) {
    const b = el("button", null, label);
    b.type = "button";
    if (title) b.title = title;
    b.addEventListener("mousedown", (ev) => ev.preventDefault());  // keep the text selection
    b.addEventListener("click", onClick);
    return b;
  }

  async function api(path, body) {
    const init = {headers: {"X-Bench-Token": cfg.token}, cache: "no-store"};
    if (body !== undefined) {
      init.method = "POST";
      init.headers["Content-Type"] = "application/json";
      init.headers["X-Bench-CSRF"] = cfg.csrf;
      init.body = JSON.stringify(body);
    }
    const reply = await fetch(path, init);
    let data = null;
    try { data = await reply.json(); } catch (e) { data = null; }
    return {status: reply.status, data: data || {}};
  }
  const query = (params) => new URLSearchParams(params).toString();

  function say(text) {
    const m = byId("message");
    m.textContent = text || "";
    m.hidden = !text;
  }
  function saveState(s, text) {
    const node = byId("save-state");
    node.dataset.state = s;
    node.textContent = text;
  }

  // --- offsets: documents count code points, JavaScript strings count UTF-16 units ---------------

  const hasAstral = (text) => /[\uD800-\uDFFF]/.test(text);
  const cpLength = (text) => (hasAstral(text) ? Array.from(text).length : text.length);

  // The code-point offset, within a .doc-text block, of a DOM position inside it.
  function offsetIn(block, node, offset) {
    const range = document.createRange();
    range.setStart(block, 0);
    range.setEnd(node, offset);
    return cpLength(range.toString());
  }

  function blockOf(node) {
    const element = node && (node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement);
    return element ? element.closest(".doc-text") : null;
  }

  // The selection as a span of a document, or null when no document text is selected.
  function selectedSpan() {
    const sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
    const range = sel.getRangeAt(0);
    const block = blockOf(range.startContainer);
    if (!block) return null;
    const base = Number(block.dataset.start);
    const start = offsetIn(block, range.startContainer, range.startOffset);
    const end = block.contains(range.endContainer)
      ? offsetIn(block, range.endContainer, range.endOffset) : cpLength(block.textContent);
    if (end <= start) return null;
    return {doc: block.dataset.doc, start: base + start, end: base + end};
  }

  // A stretch of a document as a .doc-text block: the focus (passage or match) set off from its
  // context, the question's evidence marked. data-start is the code-point offset of its first character.
  function docText(doc, win, focus) {
    const p = el("p", "doc-text");
    p.dataset.doc = doc;
    p.dataset.start = String(win.start);
    const chars = hasAstral(win.text) ? Array.from(win.text) : null;
    const length = chars ? chars.length : win.text.length;
    const slice = (a, b) => (chars ? chars.slice(a, b).join("") : win.text.slice(a, b));
    const evidence = state.q ? state.q.evidence.filter((e) => e.doc === doc) : [];
    const cuts = new Set([0, length]);
    const local = (x) => Math.max(0, Math.min(length, x - win.start));
    for (const [s, e] of [focus || [0, 0], ...evidence.map((ev) => [ev.start, ev.end])]) {
      cuts.add(local(s));
      cuts.add(local(e));
    }
    const points = [...cuts].sort((a, b) => a - b);
    for (let i = 0; i + 1 < points.length; i++) {
      const [a, b] = [points[i], points[i + 1]];
      if (a === b) continue;
      const [sa, sb] = [a + win.start, b + win.start];
      const ev = evidence.find((x) => x.start <= sa && sb <= x.end);
      const inFocus = focus && focus[0] <= sa && sb <= focus[1];
      let node;
      if (ev) node = el("mark", `grade-${ev.grade}` + (inFocus ? " focus" : ""), slice(a, b));
      else if (inFocus) node = el("span", "focus", slice(a, b));
      else node = document.createTextNode(slice(a, b));
      p.append(node);
    }
    return p;
  }

  // A block with "more context": the window it shows is kept across redraws of the question.
  function expandable(key, doc, win, focus) {
    const box = el("div", "text-box");
    let shown = state.windows.get(key) || win;
    const draw = () => box.replaceChildren(docText(doc, shown, focus));
    draw();
    const more = button("more context", "show more of the document around it", async () => {
      const start = Math.max(0, shown.start - GROW), end = Math.min(shown.length, shown.end + GROW);
      const {status, data} = await api(`/api/doc?${query({id: doc, start, end})}`);
      if (status !== 200) return say(data.error || `error ${status}`);
      shown = data.window;
      state.windows.set(key, shown);
      draw();
      more.disabled = shown.start === 0 && shown.end === shown.length;
    });
    more.disabled = shown.start === 0 && shown.end === shown.length;
    return {box, more};
  }

  const where = (x) => [x.doc, x.page, `chars ${x.start}–${x.end}`].filter(Boolean).join(" · ");

  // --- the question ------------------------------------------------------------------------------

  function render() {
    const main = byId("question");
    const q = state.q;
    if (!q) {
      main.replaceChildren(el("p", "card", "No question to show."));
      return;
    }
    const card = el("article", "card");
    card.dataset.qid = q.id;
    card.dataset.status = q.status;
    const head = el("div", "actions");
    head.append(el("span", "qid", q.id), el("span", `status ${q.status}`, q.status), el("span", "qid", q.origin));
    const text = el("textarea");
    text.id = "question-text";
    text.value = q.question;
    text.addEventListener("change", () => {
      if (text.value.trim() && text.value !== q.question) change("text", () => ({question: text.value}));
    });
    const actions = el("div", "actions");
    actions.append(
      button("accept (a)", "accept and go to the next question", () => setStatus("accepted")),
      button("reject (r)", "reject and go to the next question", () => setStatus("rejected")),
      button("back to pending (u)", null, () => setStatus("pending")),
    );
    for (const b of actions.children) b.classList.toggle("chosen", b.textContent.startsWith(
      {accepted: "accept", rejected: "reject", pending: "back"}[q.status]));
    card.append(head, text, actions, tagRow(q), evidenceSection(q), passageSection(q));
    const editing = typing(q.id);
    main.replaceChildren(card);
    if (editing) {  // a reply redraws the question: what is being typed stays, and so does the cursor
      const field = byId(editing.id);
      if (editing.id === "question-text") field.value = editing.value;
      field.focus();
      if (editing.id === "question-text") field.setSelectionRange(editing.from, editing.to);
    }
  }

  function typing(qid) {
    const node = document.activeElement;
    if (!node || !["question-text", "tag-input"].includes(node.id)) return null;
    if (node.closest("article.card").dataset.qid !== qid) return null;
    return {id: node.id, value: node.value, from: node.selectionStart, to: node.selectionEnd};
  }

  function tagRow(q) {
    const row = el("div", "tag-row");
    row.id = "tags";
    for (const tag of q.tags) {
      const chip = el("span", "tag", tag);
      chip.dataset.tag = tag;
      chip.append(button("×", `remove tag ${tag}`, () => change("tag_remove", () => ({tag}))));
      row.append(chip);
    }
    const input = el("input");
    input.type = "text";
    input.id = "tag-input";
    input.placeholder = "add a tag";
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && input.value.trim()) change("tag_add", () => ({tag: input.value.trim()}));
    });
    row.append(input);
    return row;
  }

  function evidenceSection(q) {
    const section = el("section");
    section.id = "evidence";
    section.append(el("h2", null, `Evidence (${q.evidence.length})`));
    const list = el("ol");
    list.id = "evidence-list";
    q.evidence.forEach((ev, index) => {
      const item = el("li", "evidence-item");
      item.dataset.index = String(index);
      item.dataset.span = `${ev.doc}:${ev.start}-${ev.end}`;
      item.dataset.grade = String(ev.grade);
      const tools = el("div", "tools");
      tools.append(el("span", "where", where(ev)));
      for (const [g, label] of [[1, "1 supports"], [2, "2 answers"]]) {
        const b = button(label, `grade ${g}`, () => change("evidence_grade", () => ({index, grade: g})));
        b.classList.add("grade");
        b.classList.toggle("chosen", ev.grade === g);
        b.dataset.grade = String(g);
        tools.append(b);
      }
      tools.append(button("remove", "remove this evidence", () => change("evidence_remove", () => ({index}))));
      item.append(tools, el("span", "quote", ev.text));
      list.append(item);
    });
    section.append(list);
    if (!q.evidence.length) section.append(el("p", "warning", "No evidence yet: select text below and press e."));
    else if (q.status === "accepted") section.append(el("p", "where", "in the goldset"));
    const add = button("add selected text as evidence (e)", null, () => addSelection(1));
    add.id = "add-selection";
    section.append(add);
    return section;
  }

  function passageSection(q) {
    const section = el("section");
    section.id = "passages";
    section.append(el("h2", null, `Passages (${q.passages.length})`));
    q.passages.forEach((p, i) => {
      const item = el("div", "passage");
      item.dataset.span = `${p.doc}:${p.start}-${p.end}`;
      const tools = el("div", "tools");
      tools.append(el("span", "where", where(p)));
      for (const f of p.found_by) {
        const score = f.score === null || f.score === undefined ? "" : ` · ${Number(f.score).toFixed(3)}`;
        tools.append(el("span", "found", `${f.retriever} #${f.rank}${score}`));
      }
      if (p.distractor) tools.append(el("span", "found distractor", p.distractor));
      item.append(tools);
      if (p.missing) {
        item.append(el("p", "warning", "this document is not in the corpus"));
      } else {
        const {box, more} = expandable(`${q.id}/${i}`, p.doc, p.window, [p.start, p.end]);
        const whole = button("add passage as evidence", "the whole passage, grade 1",
          () => change("evidence_add", () => ({doc: p.doc, start: p.start, end: p.end, grade: 1})));
        const row = el("div", "tools");
        row.append(more, whole);
        item.append(box, row);
      }
      section.append(item);
    });
    return section;
  }

  // --- changes: one at a time, each on the version the last reply gave -------------------------

  function change(op, args) {
    const qid = state.q.id;
    state.chain = state.chain.then(async () => {
      const extra = args ? args() : {};
      if (extra === null) return;
      const summary = state.list.find((x) => x.id === qid);
      saveState("saving", "saving…");
      const {status, data} = await api("/api/change", {id: qid, version: summary.version, op, context: CONTEXT, ...extra});
      if (status === 200 || status === 409) {
        update(data.question);
        if (status === 200) {
          state.written = data.written;
          saveState("saved", "saved");
          say("");
        } else {
          saveState("conflict", "not saved");
          say(`${qid}: ${data.error}`);
        }
      } else {
        saveState("error", "not saved");
        say(data.error || `error ${status}`);
      }
      drawProgress();
    }).catch((e) => { saveState("error", "not saved"); say(String(e)); });
    return state.chain;
  }

  function update(q) {
    const i = state.list.findIndex((x) => x.id === q.id);
    if (i >= 0) state.list[i] = {id: q.id, question: q.question, status: q.status, evidence: q.evidence.length, version: q.version};
    if (state.q && state.q.id === q.id) {
      state.q = q;
      render();
    }
    drawList();
  }

  function setStatus(status) {
    if (!state.q) return;
    const go = status !== "pending" && (status === "rejected" || state.q.evidence.length > 0);
    change("status", () => ({status})).then(() => {
      if (status === "accepted" && !state.q.evidence.length) say(`${state.q.id}: accepted, but without evidence it stays out of the goldset`);
      else if (go && byId("save-state").dataset.state === "saved") move(1);
    });
  }

  function addSelection(grade) {
    const span = selectedSpan();
    if (!span) return say("select some text of a passage or search hit first");
    window.getSelection().removeAllRanges();
    change("evidence_add", () => ({...span, grade}));
  }

  function gradeKey(grade) {
    if (selectedSpan()) return addSelection(grade);
    if (!state.q || !state.q.evidence.length) return;
    change("evidence_grade", () => ({index: state.q.evidence.length - 1, grade}));
  }

  // --- navigation --------------------------------------------------------------------------------

  const pendingOnly = () => byId("pending-only").checked;

  function visible() {
    return state.list.filter((x) => !pendingOnly() || x.status === "pending" || x.id === state.current);
  }

  function move(step) {
    const i = state.list.findIndex((x) => x.id === state.current);
    for (let j = i + step; j >= 0 && j < state.list.length; j += step) {
      if (!pendingOnly() || state.list[j].status === "pending") return show(state.list[j].id);
    }
    say(step > 0 ? "no further question" + (pendingOnly() ? " pending" : "") : "no earlier question");
  }

  async function show(qid) {
    await state.chain;
    const {status, data} = await api(`/api/question?${query({id: qid, context: CONTEXT})}`);
    if (status !== 200) return say(data.error || `error ${status}`);
    state.current = qid;
    state.q = data.question;
    history.replaceState(null, "", `${location.pathname}${location.search}#q=${encodeURIComponent(qid)}`);
    update(data.question);
    window.scrollTo(0, 0);
    drawProgress();
  }

  function drawList() {
    const items = byId("question-items");
    items.replaceChildren(...visible().map((x) => {
      const li = el("li", `${x.status}${x.id === state.current ? " current" : ""}`, `${x.id} · ${x.question}`);
      li.dataset.qid = x.id;
      li.title = x.question;
      li.addEventListener("click", () => show(x.id));
      return li;
    }));
  }

  function drawProgress() {
    const done = state.list.filter((x) => x.status !== "pending").length;
    byId("progress").textContent = `${done} of ${state.list.length} reviewed`;
    const i = state.list.findIndex((x) => x.id === state.current);
    byId("position").textContent = i >= 0 ? `question ${i + 1} of ${state.list.length}` : "";
    byId("paths").textContent = `${cfg.draft} → ${cfg.goldset} (${state.written} question${state.written === 1 ? "" : "s"} written)` +
      (cfg.run ? ` · passages marked “${cfg.run}” are a run's top distractors` : "");
  }

  // --- search ------------------------------------------------------------------------------------

  async function runSearch(text) {
    const status = byId("search-status"), hits = byId("search-hits");
    if (!text.trim()) return;
    status.textContent = "searching…";
    const reply = await api(`/api/search?${query({q: text})}`);
    if (reply.status !== 200) { status.textContent = reply.data.error || `error ${reply.status}`; return; }
    const found = reply.data.hits;
    status.textContent = found.length ? `${found.length}${reply.data.truncated ? "+" : ""} matches` : "no match";
    hits.replaceChildren(...found.map((h, i) => {
      const li = el("li", "search-hit");
      li.dataset.span = `${h.doc}:${h.start}-${h.end}`;
      const {box, more} = expandable(`search/${text}/${i}`, h.doc, h.window, [h.start, h.end]);
      const row = el("div", "tools");
      row.append(more, button("add selection", "the selected text as evidence (e)", () => addSelection(1)));
      li.append(el("div", "where", where(h)), box, row);
      return li;
    }));
  }

  // --- start -------------------------------------------------------------------------------------

  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.target.closest && ev.target.closest("input, textarea, select")) {
      if (ev.key === "Escape") ev.target.blur();
      return;
    }
    const keys = {
      a: () => setStatus("accepted"), r: () => setStatus("rejected"), u: () => setStatus("pending"),
      j: () => move(1), n: () => move(1), k: () => move(-1), p: () => move(-1),
      e: () => addSelection(1), 1: () => gradeKey(1), 2: () => gradeKey(2),
      "/": () => byId("search").focus(),
    };
    const action = keys[ev.key];
    if (action) {
      ev.preventDefault();
      action();
    }
  });
  byId("prev").addEventListener("click", () => move(-1));
  byId("next").addEventListener("click", () => move(1));
  byId("pending-only").addEventListener("change", drawList);
  byId("search-form").addEventListener("submit", (ev) => { ev.preventDefault(); runSearch(byId("search").value); });
  byId("draft-name").textContent = cfg.title;

  (async () => {
    const {status, data} = await api("/api/questions");
    if (status !== 200) return say(data.error || `error ${status}`);
    state.list = data.questions;
    state.written = data.written;
    let wanted = "";
    try { wanted = decodeURIComponent((location.hash.match(/^#q=(.*)$/) || [])[1] || ""); } catch (e) { wanted = ""; }
    const first = state.list.find((x) => x.id === wanted) || state.list.find((x) => x.status === "pending") || state.list[0];
    if (first) await show(first.id);
    else render();
    document.body.dataset.ready = "1";
  })();
})();
