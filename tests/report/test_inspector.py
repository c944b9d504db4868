"""The inspector page, built from a real `bench run` whose corpus and goldset hold hostile HTML, then read back
in headless Chromium: what the filters show, how rankings are labelled, and that no data ever runs as code."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench.report.inspector import inspector_data, write_inspector
from bench.results import schema
from bench.results.schema import QuestionRecord, RankedUnit
from tests.helpers import DOCS, QUESTIONS, finished_runs, headless_chromium, run_cli, write_project

SCRIPT_PART = "<script>window.__pwned = 1</script>"
HOSTILE = SCRIPT_PART + '<img src=x onerror="window.__pwned=2"> </script> & "quotes"'
HOSTILE_QUESTION = "Are stickers <b>allowed</b> on laptops?\u2028Really & truly?"
TAGS = {"q1": ["hr", "easy"], "q2": ["hr"], "q3": ["it"], "q4": ["ops", "easy"], "q5": ["ops"], "q6": ["ops"]}


def _build_run(root: Path, whole_documents: bool = False) -> Path:
    """A finished run of the tiny project, with a hostile paragraph and a question whose evidence is on it."""
    config = write_project(root, whole_documents=whole_documents)
    assert "kb/laptops.md" in DOCS
    with (root / "corpus" / "kb" / "laptops.md").open("a", encoding="utf-8") as f:
        f.write(f"\n{HOSTILE} Stickers\u2028on laptops are forbidden.\n")
    gold = [json.loads(line) for line in (root / "gold.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [q["id"] for q in gold] == [q[0] for q in QUESTIONS]
    for q in gold:
        q["tags"] = TAGS[q["id"]]
    evidence = (
        {"doc": "kb/laptops.md", "grade": 2}
        if whole_documents
        else {"doc": "kb/laptops.md", "quote": HOSTILE, "grade": 2}
    )
    gold.append({"id": "q7", "question": HOSTILE_QUESTION, "evidence": [evidence], "tags": ["it", "hostile"]})
    (root / "gold.jsonl").write_text("".join(json.dumps(q) + "\n" for q in gold), encoding="utf-8")
    result = run_cli("run", str(config), "--no-report")
    assert result.returncode == 0, result.stderr
    [run] = finished_runs(root / "results")
    return run


def _load(folder: Path) -> tuple:
    """What the inspector is written from: summary, records, texts and manifest."""
    run = schema.load_run(folder)
    return run.summary, run.records, run.texts, run.manifest


class Run:
    """A finished run, its stored files and its inspector page."""

    def __init__(self, folder: Path):
        self.summary, self.records, self.texts, self.manifest = _load(folder)
        self.page = folder / "inspector.html"
        write_inspector(self.page, self.summary, self.records, self.texts, self.manifest)
        self.k = self.summary.k
        self.ids = [c.id for c in sorted(self.summary.candidates, key=lambda c: c.rank)]
        self.qids = list(dict.fromkeys(r.question_id for r in self.records))

    def record(self, candidate: str, qid: str) -> QuestionRecord:
        return next(r for r in self.records if r.candidate == candidate and r.question_id == qid)

    def misses(self, candidate: str) -> set[str]:
        return {
            r.question_id
            for r in self.records
            if r.candidate == candidate and (r.first_relevant_rank is None or r.first_relevant_rank > self.k)
        }


@pytest.fixture(scope="module")
def chunk_run(tmp_path_factory) -> Run:
    return Run(_build_run(tmp_path_factory.mktemp("chunks")))


@pytest.fixture(scope="module")
def driver():
    with headless_chromium() as browser:
        yield browser


def _open(driver, page: Path):
    driver.get(page.resolve().as_uri())
    return driver


def _select(driver, element_id: str, value: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.ID, element_id)).select_by_value(value)


def _click(driver, element_id: str) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.ID, element_id).click()


def _shown(driver) -> list[str]:
    """Question ids of the question elements the browser renders (not hidden)."""
    return driver.execute_script(
        "return [...document.querySelectorAll('.question')].filter(q => q.checkVisibility()).map(q => q.dataset.qid)"
    )


def _count(driver) -> str:
    return driver.execute_script("return document.getElementById('shown-count').textContent")


# The page as the browser draws it: per question and column, the visible ranking and the missed list.
_COLUMNS_JS = """
return [...document.querySelectorAll('.question')].filter(q => q.checkVisibility()).map(q => ({
  qid: q.dataset.qid,
  columns: [...q.querySelectorAll('.candidate-column')].map(c => ({
    candidate: c.dataset.candidate, x: c.getBoundingClientRect().left,
    entries: [...c.querySelectorAll('li.entry')].filter(e => e.checkVisibility()).map(e => ({
      rank: Number(e.dataset.rank), span: e.dataset.span, label: e.querySelector('.label').textContent,
      first: e.classList.contains('first-relevant')})),
    missed: [...c.querySelectorAll('.missed li.missed-unit')].map(m => ({
      span: m.dataset.span, position: m.querySelector('.position').textContent})),
  })),
}));
"""


def _span(entry: RankedUnit) -> str:
    return f"{entry.doc_id}:{entry.start}-{entry.end}"


def test_every_question_is_shown_and_counted(driver, chunk_run: Run):
    _open(driver, chunk_run.page)
    n = len(chunk_run.qids)
    assert n == len(QUESTIONS) + 1
    assert _shown(driver) == chunk_run.qids
    assert _count(driver) == f"{n} of {n} questions"
    severe = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert severe == []  # no script error, no Content-Security-Policy refusal of the page's own code


def test_misses_only_keeps_the_questions_candidate_a_misses(driver, chunk_run: Run):
    _open(driver, chunk_run.page)
    best, other = chunk_run.ids[0], chunk_run.ids[-1]
    assert driver.execute_script("return document.getElementById('candidate-a').value") == best
    _click(driver, "misses-only")
    misses = chunk_run.misses(best)
    assert set(_shown(driver)) == misses
    assert _count(driver) == f"{len(misses)} of {len(chunk_run.qids)} questions"
    _select(driver, "candidate-b", other)  # with B chosen: questions either of them misses
    either = misses | chunk_run.misses(other)
    assert either != misses
    assert set(_shown(driver)) == either
    assert _count(driver) == f"{len(either)} of {len(chunk_run.qids)} questions"


def test_tag_filter_and_search_show_exactly_the_matching_questions(driver, chunk_run: Run):
    _open(driver, chunk_run.page)
    tag_options = driver.execute_script(
        "return [...document.querySelectorAll('#tag-filter option')].map(o => [o.value, o.textContent])"
    )
    assert tag_options[0] == ["", "all tags"]
    assert ["ops", "ops (3)"] in tag_options and ["hostile", "hostile (1)"] in tag_options
    _select(driver, "tag-filter", "it")
    assert _shown(driver) == ["q3", "q7"]
    assert _count(driver) == f"2 of {len(chunk_run.qids)} questions"
    _select(driver, "tag-filter", "")
    from selenium.webdriver.common.by import By

    driver.find_element(By.ID, "search").send_keys("VACATION")
    assert _shown(driver) == ["q1"]


def test_candidate_b_adds_a_column_to_the_right(driver, chunk_run: Run):
    _open(driver, chunk_run.page)
    a, b = chunk_run.ids[0], chunk_run.ids[1]
    before = driver.execute_script(_COLUMNS_JS)
    assert all([c["candidate"] for c in q["columns"]] == [a] for q in before)
    _select(driver, "candidate-b", b)
    after = driver.execute_script(_COLUMNS_JS)
    assert len(after) == len(chunk_run.qids)
    for q in after:
        assert [c["candidate"] for c in q["columns"]] == [a, b]
        assert q["columns"][0]["x"] < q["columns"][1]["x"]
    _select(driver, "candidate-b", "")
    assert all(len(q["columns"]) == 1 for q in driver.execute_script(_COLUMNS_JS))


def test_hostile_text_is_shown_as_text_and_never_runs(driver, chunk_run: Run):
    from selenium.webdriver.common.by import By

    _open(driver, chunk_run.page)
    assert driver.execute_script("return window.__pwned === undefined")
    for element_id in ("show-depth", "misses-only"):
        _click(driver, element_id)
    _select(driver, "candidate-b", chunk_run.ids[-1])
    for button in driver.find_elements(By.CSS_SELECTOR, "button.more"):
        button.click()
    assert driver.execute_script("return window.__pwned === undefined")
    _click(driver, "misses-only")
    hostile = [t.text for t in chunk_run.texts if "__pwned" in t.text]
    assert any(SCRIPT_PART in text for text in hostile) and any(
        'onerror="window.__pwned=2">' in text for text in hostile
    )
    for text in hostile:  # every hostile unit appears, literally, as visible text
        holders = driver.execute_script(
            "return [...document.querySelectorAll('.unit-text')].filter(e => e.textContent === arguments[0])", text
        )
        assert any(h.is_displayed() for h in holders), text
    [question] = driver.find_elements(By.CSS_SELECTOR, '.question[data-qid="q7"] .question-text')
    assert question.get_attribute("textContent") == HOSTILE_QUESTION
    assert driver.execute_script("return document.querySelectorAll('.question-text b').length") == 0
    scripts = driver.execute_script("return [...document.querySelectorAll('script')].map(s => [s.id, s.type])")
    assert scripts == [["bench-data", "application/json"], ["", ""]]
    assert driver.execute_script("return document.querySelectorAll('img, [onerror]').length") == 0
    assert driver.execute_script("return window.__pwned === undefined")


def test_labels_first_relevant_and_missed_units_follow_the_records(driver, chunk_run: Run):
    _open(driver, chunk_run.page)
    k, missed_seen, labels = chunk_run.k, 0, set()
    for candidate in chunk_run.ids:
        _select(driver, "candidate-a", candidate)
        for q in driver.execute_script(_COLUMNS_JS):
            [column] = q["columns"]
            record = chunk_run.record(candidate, q["qid"])
            top = [_span(e) for e in record.ranking[:k]]
            assert [e["span"] for e in column["entries"]] == top
            for shown, stored in zip(column["entries"], record.ranking):
                expected = f"ground truth (grade {stored.grade})" if stored.grade > 0 else "distractor"
                assert shown["label"] == expected
                labels.add(expected.split(" (")[0])
            first = [e["rank"] for e in column["entries"] if e["first"]]
            rank = record.first_relevant_rank
            assert first == ([rank] if rank is not None and rank <= k else [])
            ranks = {_span(e): i for i, e in reversed(list(enumerate(record.ranking, start=1)))}
            missed = [e for e in record.expected if _span(e) not in top]
            assert column["missed"] == [
                {"span": _span(e), "position": f"rank {ranks[_span(e)]}" if _span(e) in ranks else "not retrieved"}
                for e in missed
            ]
            missed_seen += len(missed)
    assert labels == {"ground truth", "distractor"}
    assert missed_seen > 0


def test_show_to_depth_reveals_ranks_past_k(driver, chunk_run: Run):
    _open(driver, chunk_run.page)
    a = chunk_run.ids[0]
    lengths = [len(chunk_run.record(a, qid).ranking) for qid in chunk_run.qids]
    assert max(lengths) > chunk_run.k
    shown = driver.execute_script(_COLUMNS_JS)
    assert [len(q["columns"][0]["entries"]) for q in shown] == [min(n, chunk_run.k) for n in lengths]
    _click(driver, "show-depth")
    shown = driver.execute_script(_COLUMNS_JS)
    assert [len(q["columns"][0]["entries"]) for q in shown] == lengths


def test_document_unit_shows_document_names_and_their_beginning(driver, tmp_path: Path):
    run = Run(_build_run(tmp_path, whole_documents=True))
    assert run.summary.unit == "document"
    _open(driver, run.page)
    rows = driver.execute_script("""return [...document.querySelectorAll('.entry')].map(e => [
        e.querySelector('.where').textContent, e.querySelector('.unit-text').textContent])""")
    assert rows
    for where, text in rows:
        assert where in DOCS
        assert text.startswith(DOCS[where][:40])


def test_embedded_data_round_trips_and_cannot_close_its_script(chunk_run: Run):
    html = chunk_run.page.read_text(encoding="utf-8")
    [blob] = re.findall(r'<script type="application/json" id="bench-data">(.*?)</script>', html, re.DOTALL)
    args = (chunk_run.summary, chunk_run.records, chunk_run.texts, chunk_run.manifest)
    assert json.loads(blob) == inspector_data(*args)
    assert not re.search(r"[<>&\u2028\u2029]", blob)
    assert "\\u003cscript\\u003ewindow.__pwned" in blob
    assert "<script>window.__pwned" not in html and "<img" not in html
    assert html.count("<script") == 2
    [csp] = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)
    assert "default-src 'none'" in csp and "unsafe-eval" not in csp
    assert not re.search(r"https?://", html)


def test_same_run_gives_identical_bytes(chunk_run: Run, tmp_path: Path):
    first, second = tmp_path / "one.html", tmp_path / "two.html"
    write_inspector(first, chunk_run.summary, chunk_run.records, chunk_run.texts, chunk_run.manifest)
    write_inspector(second, *_load(chunk_run.page.parent))
    assert first.read_bytes() == second.read_bytes() == chunk_run.page.read_bytes()
