"""`bench goldset review`: a draft reviewed in headless Chromium (shortcuts, evidence chosen by selecting
text, offsets in code points past astral characters, everything kept across a reload and a SIGKILL),
the server's guards (token, CSRF, Host, paths, versions) and the goldset it writes."""

from __future__ import annotations

import dataclasses
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bench.drafting.draft import ACCEPTED, REJECTED, load_draft
from bench.drafting.review.distractors import distractors
from bench.drafting.review.server import ReviewServer
from bench.drafting.review.store import ReviewStore, journal_path
from bench.inputs.corpus import load_corpus
from bench.inputs.goldset import load_goldset
from tests.helpers import REPO, free_port, headless_chromium

EVIL = (
    "# Safety notes\n\nNever paste <script>alert(1)</script> into the wiki.\n\n"
    "<img src=x onerror=alert(1)> is how attackers probe.\n\nThe fire exit is behind the kitchen.\n"
)
EMOJI = "# Mood 😀 board 🎉\n\nBackups are kept for thirty-five days.\n\nRestores are tested 😀 every quarter.\n"
FILLER = "".join(f"Filler line {i} about nothing.\n" for i in range(60))
LONG = "Marker far away.\n" + FILLER + "Engineers receive a laptop with 32 GB of memory.\n" + FILLER
DOCS = {"emoji.md": EMOJI, "evil.md": EVIL, "long.md": LONG}


def _span(doc: str, quote: str) -> tuple[int, int]:
    start = DOCS[doc].index(quote)  # Python counts code points, as the goldset does
    return start, start + len(quote)


def _passage(doc: str, quote: str, retriever: str = "bm25", rank: int = 1) -> dict:
    start, end = _span(doc, quote)
    return {"doc": doc, "start": start, "end": end, "found_by": [{"retriever": retriever, "rank": rank, "score": 1.5}]}


QUESTIONS = [
    ("q1", "How long are backups kept?", _passage("emoji.md", "Backups are kept for thirty-five days.")),
    ("q2", "Where is the fire exit?", _passage("evil.md", "<img src=x onerror=alert(1)> is how attackers probe.")),
    ("q3", "How much memory do laptops have?", _passage("long.md", "Engineers receive a laptop with 32 GB of memory.")),
]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    draft = tmp_path / "goldsets" / "demo.draft.jsonl"
    draft.parent.mkdir()
    rows = [{"id": q, "question": text, "status": "pending", "passages": [p]} for q, text, p in QUESTIONS]
    draft.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return {"corpus": corpus, "draft": draft, "goldset": tmp_path / "goldsets" / "demo.jsonl"}


@pytest.fixture
def server(files):
    store = ReviewStore(files["draft"], load_corpus(files["corpus"]), files["goldset"])
    srv = ReviewServer(store, free_port())
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="module")
def browser():
    with headless_chromium() as driver:
        yield driver


def _wait(condition, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


def _stored(files, qid: str):
    return load_draft(files["draft"]).question(qid)


_SELECT = """
const [selector, needle] = arguments;
const block = document.querySelector(selector);
const walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
const nodes = []; let full = "";
while (walker.nextNode()) { nodes.push([walker.currentNode, full.length]); full += walker.currentNode.data; }
const at = full.indexOf(needle);
if (at < 0) return false;
const find = (o, end) => nodes.find(([n, s]) => (end ? s < o && o <= s + n.data.length
                                                     : s <= o && o < s + n.data.length));
const range = document.createRange();
const [sn, ss] = find(at, false), [en, es] = find(at + needle.length, true);
range.setStart(sn, at - ss);
range.setEnd(en, at + needle.length - es);
const sel = window.getSelection();
sel.removeAllRanges();
sel.addRange(range);
return true;
"""


def _select(driver, selector: str, needle: str) -> None:
    """A DOM selection of ``needle`` in the first element matching ``selector``, as a drag would make."""
    assert driver.execute_script(_SELECT, selector, needle), f"{needle!r} not in {selector}"


def _keys(driver, keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(keys).perform()


def _current(driver) -> str:
    return _wait(
        lambda: driver.execute_script("const c = document.querySelector('article.card'); return c && c.dataset.qid")
    )


def _text(driver, selector: str) -> str:
    """The text shown in the first element matching ``selector``, read at once (the page redraws)."""
    return driver.execute_script("return document.querySelector(arguments[0]).textContent", selector)


def _open(driver, url: str) -> None:
    driver.get(url)
    _wait(lambda: driver.execute_script("return document.body.dataset.ready === '1'"))


def test_a_draft_reviewed_in_the_browser_is_kept_exactly(browser, server, files):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    _open(browser, server.url)
    assert _current(browser) == "q1"
    assert browser.find_element(By.ID, "progress").text == "0 of 3 reviewed"
    assert "a accept" in browser.find_element(By.ID, "shortcuts").text

    # q1: evidence past two astral characters, added with e, graded 2 with the key, a tag, a new text
    quote = "Backups are kept for thirty-five days."
    _select(browser, ".passage .doc-text", quote)
    _keys(browser, "e")
    _wait(lambda: _stored(files, "q1").evidence)
    ev = _stored(files, "q1").evidence[0]
    assert (ev.doc, ev.start, ev.end, ev.grade) == ("emoji.md", *_span("emoji.md", quote), 1)
    _wait(lambda: browser.find_elements(By.CSS_SELECTOR, ".evidence-item"))
    _keys(browser, "2")
    _wait(lambda: _stored(files, "q1").evidence[0].grade == 2)
    _wait(lambda: browser.find_elements(By.CSS_SELECTOR, ".evidence-item[data-grade='2']"))
    tag = browser.find_element(By.ID, "tag-input")
    tag.send_keys("retention", Keys.ENTER)
    _wait(lambda: _stored(files, "q1").tags == ("retention",))
    _wait(lambda: browser.find_elements(By.CSS_SELECTOR, ".tag[data-tag='retention']"))
    text = browser.find_element(By.ID, "question-text")
    text.clear()
    text.send_keys("How long are nightly backups kept?")
    browser.find_element(By.ID, "progress").click()  # leaving the field saves it
    _wait(lambda: _stored(files, "q1").question == "How long are nightly backups kept?")
    _keys(browser, "a")
    _wait(lambda: _stored(files, "q1").status == ACCEPTED)
    _wait(lambda: _current(browser) == "q2")  # accepting goes on to the next question
    assert load_goldset(files["goldset"], load_corpus(files["corpus"])).questions[0].id == "q1"

    # q2: the hostile document is text; evidence found by searching the corpus
    shown = _text(browser, ".passage .doc-text")
    assert "<script>alert(1)</script>" in shown and "<img src=x onerror=alert(1)>" in shown
    assert not browser.find_elements(By.CSS_SELECTOR, "main script, main img, #search-panel img")
    _keys(browser, "/")
    browser.find_element(By.ID, "search").send_keys("KITCHEN fire", Keys.ENTER)
    _wait(lambda: browser.find_elements(By.CSS_SELECTOR, ".search-hit"))
    hit = browser.find_element(By.CSS_SELECTOR, ".search-hit")
    assert hit.get_attribute("data-span") == "evil.md:{}-{}".format(*_span("evil.md", "kitchen"))
    browser.find_element(By.ID, "progress").click()  # out of the search field, so keys are shortcuts again
    _select(browser, ".search-hit .doc-text", "behind the kitchen")
    _keys(browser, "e")
    _wait(lambda: _stored(files, "q2").evidence)
    ev = _stored(files, "q2").evidence[0]
    assert (ev.doc, ev.start, ev.end) == ("evil.md", *_span("evil.md", "behind the kitchen"))
    _keys(browser, "r")
    _wait(lambda: _stored(files, "q2").status == REJECTED)

    # q3, counted: open → select a sentence (one drag) → 2 (added as grade 2) → a (accepted, next)
    _wait(lambda: _current(browser) == "q3")
    actions = 0
    quote = "Engineers receive a laptop with 32 GB of memory."
    _select(browser, ".passage .doc-text", quote)
    actions += 1
    _keys(browser, "2")
    actions += 1
    _wait(lambda: _stored(files, "q3").evidence)
    _keys(browser, "a")
    actions += 1
    _wait(lambda: _stored(files, "q3").status == ACCEPTED)
    print(f"\nreviewing one question (accept with one evidence span of grade 2, then next): {actions} actions")
    ev = _stored(files, "q3").evidence[0]
    assert (ev.start, ev.end, ev.grade) == (*_span("long.md", quote), 2)
    assert actions == 3

    # more context: a sentence far outside the first window, selected once it is shown
    _wait(lambda: browser.find_element(By.ID, "progress").text == "3 of 3 reviewed")
    _keys(browser, "u")
    _wait(lambda: _stored(files, "q3").status == "pending")
    _wait(lambda: browser.execute_script("return document.querySelector('article.card').dataset.status") == "pending")
    assert "Marker far away." not in _text(browser, ".passage .doc-text")
    browser.find_element(By.XPATH, "//button[text()='more context']").click()
    _wait(lambda: "Marker far away." in _text(browser, ".passage .doc-text"))
    _select(browser, ".passage .doc-text", "Marker far away.")
    _keys(browser, "1")
    _wait(lambda: len(_stored(files, "q3").evidence) == 2)
    assert _stored(files, "q3").evidence[1] == type(ev)("long.md", 0, len("Marker far away."), 1)
    _keys(browser, "a")
    _wait(lambda: _stored(files, "q3").status == ACCEPTED)

    # a reload shows what was stored
    browser.refresh()
    _wait(lambda: browser.execute_script("return document.body.dataset.ready === '1'"))
    assert _current(browser) == "q3"
    assert browser.find_element(By.ID, "progress").text == "3 of 3 reviewed"
    grades = [e.get_attribute("data-grade") for e in browser.find_elements(By.CSS_SELECTOR, ".evidence-item")]
    assert grades == ["2", "1"]
    _keys(browser, "k")
    _wait(lambda: _current(browser) == "q2")
    _keys(browser, "k")
    _wait(lambda: _current(browser) == "q1")
    assert browser.find_element(By.ID, "question-text").get_attribute("value") == "How long are nightly backups kept?"
    assert [t.get_attribute("data-tag") for t in browser.find_elements(By.CSS_SELECTOR, ".tag")] == ["retention"]

    gold = load_goldset(files["goldset"], load_corpus(files["corpus"]))
    assert [q.id for q in gold.questions] == ["q1", "q3"]
    assert not journal_path(files["draft"]).read_bytes()
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    alerts = browser.execute_script("return typeof window.alert")  # still there: nothing replaced it
    assert not errors, errors
    assert alerts == "function"


# --- the server's guards ---------------------------------------------------------------------------------


def _request(srv, method: str, path: str, headers=None, body=None, host: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host or f"127.0.0.1:{srv.port}")
        data = json.dumps(body).encode() if body is not None else None
        for key, value in {**(headers or {}), **({"Content-Type": "application/json"} if data else {})}.items():
            conn.putheader(key, value)
        if data is not None:
            conn.putheader("Content-Length", str(len(data)))
        conn.endheaders(data)
        reply = conn.getresponse()
        payload = reply.read()
        return reply.status, dict(reply.getheaders()), payload
    finally:
        conn.close()


def test_every_request_needs_the_token_host_and_csrf_and_names_corpus_documents_only(server):
    srv = server
    auth = {"X-Bench-Token": srv.token}
    write = {**auth, "X-Bench-CSRF": srv.csrf}
    assert _request(srv, "GET", "/")[0] == 403
    assert _request(srv, "GET", "/?token=wrong")[0] == 403
    status, headers, page = _request(srv, "GET", f"/?token={srv.token}")
    assert status == 200
    assert "script-src 'sha256-" in headers["Content-Security-Policy"] and "unsafe-inline" not in page.decode()
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["Cache-Control"] == "no-store"
    assert _request(srv, "GET", "/api/questions")[0] == 403
    assert _request(srv, "GET", f"/api/questions?token={srv.token}")[0] == 403  # the API wants the header
    status, headers, _ = _request(srv, "GET", "/api/questions", auth)
    assert status == 200 and headers["Cache-Control"] == "no-store"
    assert _request(srv, "GET", "/api/questions", auth, host=f"localhost:{srv.port}")[0] == 200
    assert _request(srv, "GET", "/api/questions", auth, host=f"evil.example:{srv.port}")[0] == 403
    assert _request(srv, "GET", "/api/questions", auth, host="127.0.0.1")[0] == 403
    for path in ("/../../etc/passwd", "/api/doc?id=../bench.toml", "/api/doc?id=/etc/passwd", "/static/review.js"):
        assert _request(srv, "GET", path, auth)[0] == 404, path
    assert _request(srv, "GET", "/api/question?id=nope", auth)[0] == 404
    assert _request(srv, "GET", "/api/doc?id=evil.md&start=0&end=5", auth)[0] == 200

    version = srv.store.version("q1")
    edit = {"id": "q1", "version": version, "op": "tag_add", "tag": "x"}
    assert _request(srv, "POST", "/api/change", auth, edit)[0] == 403
    assert _request(srv, "POST", "/api/change", {**auth, "X-Bench-CSRF": "wrong"}, edit)[0] == 403
    assert _request(srv, "POST", "/api/change", {"X-Bench-CSRF": srv.csrf}, edit)[0] == 403
    assert _request(srv, "POST", "/api/../../etc/passwd", write, edit)[0] == 404
    bad = {**edit, "op": "evidence_add", "doc": "../bench.toml", "start": 0, "end": 3}
    assert _request(srv, "POST", "/api/change", write, bad)[0] == 400

    # two tabs send a change made on the same version: one is kept, the other told (409)
    barrier, statuses = threading.Barrier(2), []

    def send(status: str) -> None:
        barrier.wait()
        code, _, body = _request(srv, "POST", "/api/change", write, {**edit, "op": "status", "status": status})
        statuses.append((code, json.loads(body)))

    threads = [threading.Thread(target=send, args=(s,)) for s in (ACCEPTED, REJECTED)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(code for code, _ in statuses) == [200, 409]
    kept = next(body for code, body in statuses if code == 200)["question"]
    told = next(body for code, body in statuses if code == 409)["question"]
    assert told["status"] == kept["status"] == srv.store.draft.question("q1").status
    assert told["version"] == srv.store.version("q1") != version


def test_a_journal_left_by_a_crash_is_replayed(files, monkeypatch):
    import bench.drafting.review.store as store_module

    corpus = load_corpus(files["corpus"])
    store = ReviewStore(files["draft"], corpus, files["goldset"])
    start, end = _span("emoji.md", "thirty-five days")

    def crash(draft):
        raise OSError("the machine went down")

    monkeypatch.setattr(store_module, "save_draft", crash)
    with pytest.raises(OSError):
        store.change("q1", store.version("q1"), "evidence_add", {"doc": "emoji.md", "start": start, "end": end})
    monkeypatch.undo()
    assert not _stored(files, "q1").evidence  # the draft was not rewritten
    with journal_path(files["draft"]).open("a") as f:
        f.write('{"id": "q2", "question": "cut off mid-wr')  # a torn last line: never acknowledged
    again = ReviewStore(files["draft"], corpus, files["goldset"])
    assert again.replayed == 1
    assert _stored(files, "q1").evidence[0].start == start
    assert _stored(files, "q2") == load_draft(files["draft"]).question("q2")
    assert not journal_path(files["draft"]).read_bytes()


def _start(files) -> tuple[subprocess.Popen, ReviewServer]:
    return review_process(files["draft"], files["corpus"])


def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def review_process(draft: Path, corpus: Path) -> tuple[subprocess.Popen, ReviewServer]:
    """`bench goldset review` in a process of its own, and a handle with its port and session token."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench", "goldset", "review", str(draft), "--corpus", str(corpus)]
        + ["--no-browser", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        # Ctrl-C as a terminal sends it, even where the tests were started in the background (a shell
        # starts those with SIGINT ignored, and a child inherits that)
        preexec_fn=_interruptible,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("open "):
            token = line.strip().rpartition("token=")[2]
            break
    else:
        raise AssertionError(f"no address printed (exit {proc.wait()})")
    handle = type("Remote", (), {"port": port, "token": token})()
    return proc, handle  # type: ignore[return-value]


def test_nothing_acknowledged_is_lost_when_the_server_is_killed(files):
    proc, srv = _start(files)
    try:
        status, _, body = _request(srv, "GET", "/api/page-that-is-not-there", {"X-Bench-Token": srv.token})
        assert status == 404
        _, _, page = _request(srv, "GET", f"/?token={srv.token}")
        csrf = json.loads(page.decode().split('id="bench-data">')[1].split("</script>")[0])["csrf"]
        write = {"X-Bench-Token": srv.token, "X-Bench-CSRF": csrf}
        questions = json.loads(_request(srv, "GET", "/api/questions", write)[2])["questions"]
        start, end = _span("emoji.md", "kept for thirty-five days")
        q1 = {"id": "q1", "op": "evidence_add", "doc": "emoji.md", "start": start, "end": end, "grade": 2}
        status, _, body = _request(srv, "POST", "/api/change", write, {**q1, "version": questions[0]["version"]})
        assert status == 200
        version = json.loads(body)["question"]["version"]
        status, _, _ = _request(
            srv, "POST", "/api/change", write, {"id": "q1", "version": version, "op": "status", "status": ACCEPTED}
        )
        assert status == 200
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    proc, srv = _start(files)
    try:
        got = json.loads(_request(srv, "GET", "/api/question?id=q1", {"X-Bench-Token": srv.token})[2])["question"]
        assert got["status"] == ACCEPTED
        assert [(e["start"], e["end"], e["grade"]) for e in got["evidence"]] == [(start, end, 2)]
        assert got["evidence"][0]["text"] == "kept for thirty-five days"
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C: a clean stop that says where the goldset is
        out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert f"goldset: {files['goldset']} (1 question)" in out and "bench goldset validate" in out
    assert [q.id for q in load_goldset(files["goldset"], load_corpus(files["corpus"])).questions] == ["q1"]


def test_a_runs_top_distractors_join_the_passages(files):
    from bench.core.records import QuestionRecord, RankedUnit, UnitLabel
    from bench.core.summary import CandidateResult, Manifest, RunSummary
    from bench.results.schema import StoredRun

    def unit(doc: str, quote: str, grade: int) -> RankedUnit:
        start, end = _span(doc, quote)
        return RankedUnit(id=f"{doc}:{start}", doc_id=doc, start=start, end=end, score=0.5, grade=grade)

    ranking = [unit("emoji.md", "Backups are kept", 1)] + [unit("long.md", f"Filler line {i} ", 0) for i in range(7)]
    record = QuestionRecord(
        candidate="best", question_id="other-id", question="how long are  BACKUPS kept?",
        tags=[], ranking=ranking, expected=[], evidence=[],
    )  # fmt: skip
    summary = RunSummary(
        k=3, depth=8, unit="chunk", ndcg_gain="exp", min_overlap=0.5,
        candidates=[CandidateResult(id="best", model="m", chunker="c", index="flat", search=None, rank=1)],
    )  # fmt: skip
    run = StoredRun(files["draft"].parent, summary, Manifest(run_id="run-7"), [record], [])
    store = ReviewStore(files["draft"], load_corpus(files["corpus"]), files["goldset"])
    store.extra_passages = distractors(run, store.draft)
    passages = store.question("q1", 100)["passages"]
    extra = [p for p in passages if p["distractor"]]
    assert len(extra) == 5 and {p["distractor"] for p in extra} == {"distractor in run-7"}
    assert [p["found_by"][0]["rank"] for p in extra] == [2, 3, 4, 5, 6]
    assert all(p["window"]["text"] for p in extra)
    # a relevance judge's holes graded relevant come first, with its grade; the best's list skips them
    hole = ranking[3]
    graded = [
        UnitLabel(
            question_id="other-id",
            unit=u.id,
            doc_id=u.doc_id,
            start=u.start,
            end=u.end,
            grade=grade,
            by="judge",
            model="m",
            rubric="relevance-v1",
            rubric_sha256="s",
            reply="{}",
        )
        for u, grade in ((hole, 3), (ranking[4], 1))
    ]
    judged_run = dataclasses.replace(run, judgments=graded)
    queue = distractors(judged_run, store.draft)[store.draft.questions[0].id]
    assert (queue[0].label, queue[0].start) == ("judge grade 3 in run-7", hole.start)
    assert [x.found_by[0].rank for x in queue[1:]] == [2, 3, 5, 6, 7]  # rank 4 is the judge's; grade 1 stays
