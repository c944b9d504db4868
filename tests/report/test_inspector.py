"""The inspector page, built from a real `bench run` whose corpus and goldset hold hostile HTML, then read back
in headless Chromium: what the filters show, how rankings are labelled, and that no data ever runs as code;
the leaderboard, permalinks, outcome filters, previews of long units and the k-th score of missed units."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from bench.core.records import QuestionRecord, RankedUnit
from bench.report.inspector import inspector_data, permalink, write_inspector
from bench.results import schema
from tests.helpers import CONFIG, DOCS, QUESTIONS, finished_runs, headless_chromium, run_cli, write_project

SCRIPT_PART = "<script>window.__pwned = 1</script>"
HOSTILE = SCRIPT_PART + '<img src=x onerror="window.__pwned=2"> </script> & "quotes"'
HOSTILE_QUESTION = "Are stickers <b>allowed</b> on laptops?\u2028Really & truly?"
TAGS = {"q1": ["hr", "easy"], "q2": ["hr"], "q3": ["it"], "q4": ["ops", "easy"], "q5": ["ops"], "q6": ["ops"]}

# A long document whose evidence lies far past the first few hundred characters, chunked whole by "page", asked
# about under an id that is unsafe in a URL; and a question no candidate can answer (no word in common).
UNSAFE_ID = "q8 ünsafe/#?&<b>%20'(x)"
FILLER = [
    "The cafeteria opens at seven and serves breakfast until half past nine on weekdays.",
    "Bicycles belong in the basement racks; the courtyard must stay clear for deliveries.",
    "Meeting rooms on the third floor are booked through the shared calendar, not by e-mail.",
    "Printers on each floor hold recycled paper; colour printing needs a cost centre code.",
    "Lockers are assigned for one year and emptied in the first week of every January.",
    "Plants in the lobby are watered by the facilities team on Tuesdays and Fridays.",
    "Lost property is kept at reception for thirty days and then given to charity.",
    "Fire drills happen twice a year and everyone leaves by the nearest marked stairway.",
]
EVIDENCE_LONG = "Visitors must sign the guest register at the front desk and wear a badge."
HANDBOOK = "# Office handbook\n\n" + "\n\n".join(FILLER) + "\n\n" + EVIDENCE_LONG + "\n\n" + FILLER[0] + "\n"
EXTRA_QUESTIONS = [
    {
        "id": UNSAFE_ID,
        "question": "Where do guests sign the register when they arrive?",
        "evidence": [{"doc": "kb/handbook.md", "quote": EVIDENCE_LONG, "grade": 2}],
        "tags": ["long"],
    },
    {
        "id": "q9",
        "question": (
            "Full-time employees accrue how many paid leave weeks per calendar year, "
            "and what laptop memory and disk do engineers receive?"
        ),
        "evidence": [
            {
                "doc": "ops/oncall.txt",
                "quote": "Escalate to the incident commander when a page is not resolved",
                "grade": 1,
            }
        ],
        "tags": ["unanswerable"],
    },
]
PAGE_CHUNKER = '\n[chunkers.page]\nkind = "tokens"\nsize = 400\n'


def _build_run(root: Path, whole_documents: bool = False) -> Path:
    """A finished run of the tiny project, with a hostile paragraph and a question whose evidence is on it."""
    config = write_project(
        root, config=CONFIG if whole_documents else CONFIG + PAGE_CHUNKER, whole_documents=whole_documents
    )
    if not whole_documents:
        (root / "corpus" / "kb" / "handbook.md").write_text(HANDBOOK, encoding="utf-8")
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
    if not whole_documents:
        gold += EXTRA_QUESTIONS
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

    def finds(self, candidate: str) -> set[str]:
        """Questions where the candidate has a unit of grade > 0 within the top k, read off its ranking."""
        return {
            r.question_id
            for r in self.records
            if r.candidate == candidate and any(e.grade > 0 for e in r.ranking[: self.k])
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


def _press(driver, element) -> None:
    """A real click on an element brought to the middle of the window, clear of the sticky header."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


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
    assert n == len(QUESTIONS) + 1 + len(EXTRA_QUESTIONS)
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


# "more" pressed on every shown entry not yet expanded (the preview test presses one as a user does).
_EXPAND_JS = (
    "document.querySelectorAll('li:not(.expanded) > button.more').forEach(b => b.checkVisibility() && b.click())"
)


def test_hostile_text_is_shown_as_text_and_never_runs(driver, chunk_run: Run):
    from selenium.webdriver.common.by import By

    _open(driver, chunk_run.page)
    assert driver.execute_script("return window.__pwned === undefined")
    for element_id in ("show-depth", "misses-only"):
        _click(driver, element_id)
    _select(driver, "candidate-b", chunk_run.ids[-1])
    driver.execute_script(_EXPAND_JS)
    assert driver.execute_script("return window.__pwned === undefined")
    _click(driver, "misses-only")
    hostile = [t for t in chunk_run.texts if "__pwned" in t.text]
    assert any(SCRIPT_PART in t.text for t in hostile) and any('onerror="window.__pwned=2">' in t.text for t in hostile)
    for unit in hostile:  # every hostile unit appears, literally, as visible text where a candidate ranks it
        span = f"{unit.doc_id}:{unit.start}-{unit.end}"
        candidate = next(r.candidate for r in chunk_run.records if span in map(_span, r.ranking))
        _select(driver, "candidate-a", candidate)
        driver.execute_script(_EXPAND_JS)
        holders = driver.execute_script(
            "return [...document.querySelectorAll('.unit-text')].filter(e => e.textContent === arguments[0])",
            unit.text,
        )
        assert any(h.is_displayed() for h in holders), unit.text
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


# --- leaderboard, permalinks, outcome filters, previews, the k-th score ------------------------------------


def _fmt(value: float | None) -> str:
    """A score as the page writes it: the stored four decimals, shown to three, halves away from zero."""
    if value is None:
        return "–"
    return str(Decimal(round(value, 4)).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP))


def _p95(candidate) -> float | None:
    ops = candidate.ops
    if ops.get("end_to_end_ms_p95") is not None:
        return ops["end_to_end_ms_p95"]
    parts = [ops.get(f"{step}_ms_p95") for step in ("query_embed", "search", "rerank")]
    return None if all(p is None for p in parts) else sum(p or 0.0 for p in parts)


def _leaderboard(driver) -> list[dict]:
    return driver.execute_script("""return [...document.querySelectorAll('#leaderboard tbody tr')].map(r => ({
        id: r.dataset.candidate, rank: r.querySelector('.rank').textContent,
        name: r.querySelector('.pick-a').textContent, mrr: r.querySelector('.mrr').textContent,
        recall: r.querySelector('.recall').textContent, hit: r.querySelector('.hit-rate').textContent,
        p95: r.querySelector('.p95').textContent,
        a: r.classList.contains('is-a'), b: r.classList.contains('is-b')}))""")


def _check_leaderboard(rows: list[dict], summary) -> None:
    ordered = sorted(summary.candidates, key=lambda c: c.rank)
    assert [r["id"] for r in rows] == [r["name"] for r in rows] == [c.id for c in ordered]
    k = summary.k
    for row, c in zip(rows, ordered):
        assert row["rank"] == str(c.rank)
        assert (row["mrr"], row["recall"], row["hit"]) == tuple(
            _fmt(c.quality[f"{m}@{k}"]) for m in ("mrr", "recall", "hit_rate")
        )
        expected = _p95(c)
        if expected is None:
            assert row["p95"] == "–"
        else:
            assert row["p95"].endswith(" ms")
            assert float(row["p95"].removesuffix(" ms")) == pytest.approx(expected, rel=0.01, abs=0.006)


def test_leaderboard_lists_the_candidates_in_rank_order_and_selects_them(driver, chunk_run: Run):
    from selenium.webdriver.common.by import By

    _open(driver, chunk_run.page)
    rows = _leaderboard(driver)
    _check_leaderboard(rows, chunk_run.summary)
    assert [r["a"] for r in rows] == [True] + [False] * (len(rows) - 1) and not any(r["b"] for r in rows)
    third, last = chunk_run.ids[2], chunk_run.ids[-1]
    _press(driver, driver.find_elements(By.CSS_SELECTOR, "#leaderboard tbody tr .pick-a")[2])
    _press(driver, driver.find_elements(By.CSS_SELECTOR, "#leaderboard tbody tr .pick-b")[-1])
    chosen = "return [document.getElementById('candidate-a').value, document.getElementById('candidate-b').value]"
    assert driver.execute_script(chosen) == [third, last]
    rows = _leaderboard(driver)
    assert [r["id"] for r in rows if r["a"]] == [third] and [r["id"] for r in rows if r["b"]] == [last]
    for q in driver.execute_script(_COLUMNS_JS):
        assert [c["candidate"] for c in q["columns"]] == [third, last]


def test_leaderboard_follows_rank_not_stored_order_and_prefers_the_stored_end_to_end(driver, chunk_run, tmp_path):
    first, second, *rest = sorted(chunk_run.summary.candidates, key=lambda c: c.rank)
    untimed = {f"{s}_ms_p95": None for s in ("query_embed", "search", "rerank", "end_to_end")}
    candidates = [
        dataclasses.replace(first, ops=first.ops.merged({"end_to_end_ms_p95": 1234.0})),
        dataclasses.replace(second, ops=second.ops.merged(untimed)),
        *rest,
    ]
    summary = dataclasses.replace(chunk_run.summary, candidates=candidates[::-1])
    page = tmp_path / "inspector.html"
    write_inspector(page, summary, chunk_run.records, chunk_run.texts, chunk_run.manifest)
    _open(driver, page)
    rows = _leaderboard(driver)
    _check_leaderboard(rows, summary)
    assert [r["p95"] for r in rows[:2]] == ["1234 ms", "–"]


def _linked_and_in_view(driver) -> list:
    """The questions marked as linked, and whether the first is shown just below the sticky header (or the
    page is scrolled as far as it goes)."""
    time.sleep(0.15)  # the page scrolls once more after the next frame
    return driver.execute_script("""
        const linked = [...document.querySelectorAll('.question.linked')];
        if (!linked.length) return [[], false];
        const top = linked[0].getBoundingClientRect().top;
        const header = document.getElementById('top').getBoundingClientRect().bottom;
        const end = window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 2;
        return [linked.map(q => q.dataset.qid), linked[0].checkVisibility() && top >= header - 1
                && top < window.innerHeight && (top <= header + 40 || end)];""")


def test_a_permalink_opens_its_question_on_load_and_on_hashchange(driver, chunk_run: Run):
    from selenium.webdriver.common.by import By

    assert permalink(UNSAFE_ID) == "inspector.html#q8%20%C3%BCnsafe%2F%23%3F%26%3Cb%3E%2520%27%28x%29"
    for qid in (UNSAFE_ID, "q5", "q2"):
        driver.get(chunk_run.page.resolve().as_uri() + permalink(qid).removeprefix("inspector.html"))
        assert _linked_and_in_view(driver) == [[qid], True]
        assert driver.execute_script("return window.scrollY") > 0
    hrefs = driver.execute_script(
        "return [...document.querySelectorAll('.question')].map(q => [q.dataset.qid, "
        "q.querySelector('a.permalink').getAttribute('href')])"
    )
    assert hrefs == [[qid, permalink(qid).removeprefix("inspector.html")] for qid in chunk_run.qids]
    driver.execute_script("location.hash = arguments[0]", permalink("q6").removeprefix("inspector.html"))
    assert _linked_and_in_view(driver) == [["q6"], True]
    _select(driver, "tag-filter", "it")  # the filters hide q1: opening it clears them
    assert "q1" not in _shown(driver)
    _press(driver, driver.find_element(By.CSS_SELECTOR, '.question[data-qid="q3"] a.permalink'))
    assert _linked_and_in_view(driver) == [["q3"], True]
    assert driver.execute_script("return location.hash") == "#q3"
    driver.execute_script("location.hash = '#q1'")
    assert _linked_and_in_view(driver) == [["q1"], True]
    assert driver.execute_script("return document.getElementById('tag-filter').value") == ""
    assert _shown(driver) == chunk_run.qids
    driver.execute_script("location.hash = '#no-such-question'")
    assert _linked_and_in_view(driver) == [[], False]
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []


def _outcome_labels(driver) -> dict[str, str]:
    return dict(
        driver.execute_script(
            "return [...document.querySelectorAll('#outcome-filter option')].map(o => [o.value, o.textContent])"
        )
    )


# Candidates A and B and the outcome filter chosen as a user's change of each select does, in one round trip;
# what the page then shows.
_CHOOSE_JS = """
const [a, b, outcome] = arguments;
for (const [id, value] of [['candidate-a', a], ['candidate-b', b], ['outcome-filter', outcome]]) {
  const select = document.getElementById(id);
  select.value = value;
  select.dispatchEvent(new Event('change'));
}
return {
  shown: [...document.querySelectorAll('.question')].filter(q => q.checkVisibility()).map(q => q.dataset.qid),
  count: document.getElementById('shown-count').textContent,
  labels: Object.fromEntries([...document.querySelectorAll('#outcome-filter option')]
    .map(o => [o.value, o.textContent])),
};
"""


def test_outcome_filters_show_exactly_the_questions_the_records_give(driver, chunk_run: Run):
    _open(driver, chunk_run.page)
    qids, n = chunk_run.qids, len(chunk_run.qids)
    finds = {c: chunk_run.finds(c) for c in chunk_run.ids}
    assert all(finds[c] == set(qids) - chunk_run.misses(c) for c in chunk_run.ids)
    missed_by_all = [q for q in qids if not any(q in finds[c] for c in chunk_run.ids)]
    assert "q9" in missed_by_all and len(missed_by_all) < n
    assert _outcome_labels(driver)["a-not-b"] == "A finds, B misses (choose B)"
    _select(driver, "outcome-filter", "missed-by-all")
    assert _shown(driver) == missed_by_all
    assert _count(driver) == f"{len(missed_by_all)} of {n} questions"
    assert _outcome_labels(driver)["missed-by-all"] == f"missed by every candidate ({len(missed_by_all)})"
    _select(driver, "tag-filter", "unanswerable")  # the other filters still narrow it
    assert _shown(driver) == ["q9"]
    _select(driver, "tag-filter", "")
    _select(driver, "outcome-filter", "")
    nonempty = 0
    for a in chunk_run.ids:
        for b in chunk_run.ids:
            if a == b:
                continue
            a_not_b = [q for q in qids if q in finds[a] and q not in finds[b]]
            b_not_a = [q for q in qids if q in finds[b] and q not in finds[a]]
            for value, expected in (("a-not-b", a_not_b), ("b-not-a", b_not_a)):
                page = driver.execute_script(_CHOOSE_JS, a, b, value)
                assert page["shown"] == expected, (a, b, value)
                assert page["count"] == f"{len(expected)} of {n} questions"
                assert page["labels"]["a-not-b"] == f"A finds, B misses ({len(a_not_b)})"
                assert page["labels"]["b-not-a"] == f"B finds, A misses ({len(b_not_a)})"
            nonempty += bool(a_not_b)
    assert nonempty > 0
    _select(driver, "outcome-filter", "a-not-b")
    _select(driver, "candidate-b", "")  # without B the pair filter lets go
    assert driver.execute_script("return document.getElementById('outcome-filter').value") == ""
    assert _shown(driver) == qids


def test_missed_by_all_asks_every_candidate_not_only_a_and_b(driver, chunk_run: Run, tmp_path: Path):
    """The best candidate made to miss q1 (which the others find): q1 is still not missed by all."""
    best = chunk_run.ids[0]
    records = [
        dataclasses.replace(
            r,
            ranking=[dataclasses.replace(e, grade=0) for e in r.ranking],
            first_relevant_rank=None,
        )
        if (r.candidate, r.question_id) == (best, "q1")
        else r
        for r in chunk_run.records
    ]
    page = tmp_path / "inspector.html"
    write_inspector(page, chunk_run.summary, records, chunk_run.texts, chunk_run.manifest)
    found = {(r.candidate, r.question_id) for r in records if any(e.grade > 0 for e in r.ranking[: chunk_run.k])}
    missed_by_all = [q for q in chunk_run.qids if not any((c, q) in found for c in chunk_run.ids)]
    best_misses = [q for q in chunk_run.qids if (best, q) not in found]
    assert "q1" in best_misses and "q1" not in missed_by_all
    _open(driver, page)
    for a, b in ((best, ""), (best, chunk_run.ids[1]), (chunk_run.ids[-1], best)):
        assert driver.execute_script(_CHOOSE_JS, a, b, "missed-by-all")["shown"] == missed_by_all


def test_a_long_units_preview_shows_its_evidence_not_its_beginning(driver, chunk_run: Run):
    from selenium.webdriver.common.by import By

    [long_unit] = [t for t in chunk_run.texts if EVIDENCE_LONG in t.text and len(t.text) > 2 * 420]
    offset = long_unit.text.index(EVIDENCE_LONG)
    assert offset > 420 and not long_unit.text[:420].count(EVIDENCE_LONG)
    span = f"{long_unit.doc_id}:{long_unit.start}-{long_unit.end}"
    _open(driver, chunk_run.page)
    _select(driver, "tag-filter", "long")
    checked = 0
    for candidate in chunk_run.ids:
        _select(driver, "candidate-a", candidate)
        selector = f'.question[data-qid="{UNSAFE_ID}"] li[data-span="{span}"]'
        for item in driver.find_elements(By.CSS_SELECTOR, selector):
            if not item.is_displayed():
                continue  # a rank past k
            preview = item.find_element(By.CSS_SELECTOR, ".unit-preview")
            full = item.find_element(By.CSS_SELECTOR, ".unit-text")
            assert preview.is_displayed() and not full.is_displayed()
            text = preview.get_attribute("textContent")
            assert EVIDENCE_LONG in text and text.startswith("… ") and len(text) < len(long_unit.text)
            assert [m.get_attribute("textContent") for m in preview.find_elements(By.TAG_NAME, "mark")] == [
                EVIDENCE_LONG
            ]
            mark = preview.find_element(By.TAG_NAME, "mark")
            assert mark.is_displayed() and mark.rect["height"] > 0
            _press(driver, item.find_element(By.CSS_SELECTOR, "button.more"))
            assert full.is_displayed() and not preview.is_displayed()
            assert full.get_attribute("textContent") == long_unit.text
            checked += 1
    assert checked > 0
    clamped = driver.execute_script("return document.querySelectorAll('.clampable:not(.windowed)').length")
    assert clamped > 0  # a long distractor, with nothing to centre on, still starts at its beginning


def _missed_scores(driver) -> list[dict]:
    return driver.execute_script("""return [...document.querySelectorAll('.question')]
        .filter(q => q.checkVisibility()).flatMap(q => [...q.querySelectorAll('.missed-unit')].map(m => ({
            qid: q.dataset.qid, span: m.dataset.span, score: m.querySelector('.score').textContent,
            kth: m.querySelector('.kth').textContent})))""")


def _check_missed_scores(driver, run_records: dict, ids: list[str], k: int) -> int:
    seen = 0
    for candidate in ids:
        _select(driver, "candidate-a", candidate)
        for row in _missed_scores(driver):
            record = run_records[candidate, row["qid"]]
            [unit] = [e for e in record.expected if _span(e) == row["span"]]
            assert row["score"] == f"score {_fmt(unit.score)}"
            kth = record.ranking[k - 1].score if len(record.ranking) >= k else None
            assert row["kth"] == f"k-th {_fmt(kth)}"
            seen += 1
    return seen


def test_missed_units_show_the_score_they_needed(driver, chunk_run: Run, tmp_path: Path):
    _open(driver, chunk_run.page)
    records = {(r.candidate, r.question_id): r for r in chunk_run.records}
    assert _check_missed_scores(driver, records, chunk_run.ids, chunk_run.k) > 0
    # Unscored units (past a reranker's top, or BM25 sharing no term) read "–".
    unscored = [
        dataclasses.replace(
            r,
            ranking=[dataclasses.replace(e, score=None) if i >= 1 else e for i, e in enumerate(r.ranking)],
            expected=[dataclasses.replace(e, score=None) for e in r.expected],
        )
        for r in chunk_run.records
    ]
    page = tmp_path / "inspector.html"
    write_inspector(page, chunk_run.summary, unscored, chunk_run.texts, chunk_run.manifest)
    _open(driver, page)
    records = {(r.candidate, r.question_id): r for r in unscored}
    assert _check_missed_scores(driver, records, chunk_run.ids, chunk_run.k) > 0
    rows = _missed_scores(driver)
    assert rows and {(r["score"], r["kth"]) for r in rows} == {("score –", "k-th –")}
