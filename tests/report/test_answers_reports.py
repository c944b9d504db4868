"""The answer layer in a run's reports, once `bench answers score` scored its answers: report.pdf's "Answer
layer" section, its glossary terms and page 1's line, read back with pypdf; the inspector's figures per
question and its "answer layer failed" filter, driven in headless Chromium. Without answers, neither changes."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from bench.report.answers_view import AnswerLayer, answers_lines, headline
from bench.report.inspector import permalink, write_inspector
from bench.report.pdf_answers import answers_section
from bench.report.pdf_decision import decision_section
from bench.report.pdf_layout import Table, texts
from bench.report.writer import write_reports
from bench.results import schema
from tests.helpers import headless_chromium
from tests.report.test_answers_view import JUDGE_META, LONG_ID, answer_lines, build_run, score


class Reports:
    """The reports of one tiny run written before its answers were scored (``bare``) and after."""

    def __init__(self, root: Path):
        self.folder = build_run(root)
        write_reports(self.folder)
        self.bare = root / "bare"
        self.bare.mkdir()
        for name in ("report.pdf", "inspector.html"):
            shutil.copy(self.folder / name, self.bare / name)
        self.lines = answer_lines(self.folder)
        self.judged = score(self.folder, self.lines, "judged.jsonl", JUDGE_META)
        self.people = score(self.folder, self.lines)  # last: the run folder keeps the people's figures
        write_reports(self.folder)


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> Reports:
    return Reports(tmp_path_factory.mktemp("answers-reports"))


def _pages(path: Path) -> list[str]:
    from pypdf import PdfReader

    return [" ".join(page.extract_text().split()) for page in PdfReader(path).pages]


def _starting(pages: list[str], title: str) -> list[str]:
    return [p for p in pages if p.startswith(title)]


# --- report.pdf ------------------------------------------------------------------------------------------


def test_the_pdf_gains_an_answer_layer_section_with_both_layers_side_by_side(reports: Reports):
    pages = _pages(reports.folder / "report.pdf")
    section = " ".join(_starting(pages, "Answer layer"))
    assert section, "no Answer layer page"
    summary = reports.people.summary
    recall, ground = summary["retrieval"]["recall@3"], summary["metrics"]["groundedness"]
    assert (
        f"retrieval recall@3 {recall['mean']:.3f} [{recall['ci'][0]:.3f}, {recall['ci'][1]:.3f}] 5 goldset" in section
    )
    assert (
        f"answers groundedness {ground['mean']:.3f} [{ground['ci'][0]:.3f}, {ground['ci'][1]:.3f}] 3 people" in section
    )
    assert "answers answer relevance" in section and "retrieval evidence in contexts" in section
    assert "never as one score" in section and "claims labelled by people" in section
    assert "Which layer failed first" in section and "question handling 1" in section
    for finding in summary["findings"]:
        assert finding in section
    assert "Questions that failed a layer (3 of 5)" in section
    assert LONG_ID in section and "Carrying days over needs a manager's approval" in section
    assert "retrieval, generation" in section  # q4, written from a distractor
    assert 'No factual claim (a refusal or "I don\'t know"; counted apart, not as grounded): q3.' in section
    contents = _starting(pages, "Contents")[0]
    assert "Answer layer" in contents
    glossary = " ".join(_starting(pages, "Glossary"))
    for term in ("groundedness Per answer", "answer relevance 1 if the answer", "claim recall Per answer"):
        assert term in glossary
    assert "uncalibrated" not in " ".join(pages)  # people labelled these


def test_page_one_gives_the_scored_candidates_answer_layer_in_a_line(reports: Reports):
    first = _pages(reports.folder / "report.pdf")[0]
    line = headline(reports.people.summary)
    assert line in first
    assert line.startswith(f"Answers ({reports.people.summary['candidate']}, 5 questions, labelled by people): ")
    metrics = reports.people.summary["metrics"]
    for key, name in (("groundedness", "groundedness"), ("answer_relevance", "answer relevance")):
        entry = metrics[key]
        assert f"{name} {entry['mean']:.3f} [{entry['ci'][0]:.3f}, {entry['ci'][1]:.3f}]" in line


def test_a_judges_figures_read_uncalibrated_in_the_section_and_on_page_one(reports: Reports):
    layer = AnswerLayer(reports.judged.summary, reports.judged.rows)
    section = answers_section(layer)
    [table] = [b for b in section.blocks if isinstance(b, Table) and b.header[:2] == ["layer", "metric"]]
    assert [row[4] for row in table.rows if row[0] == "answers"] == ["judge, uncalibrated"] * 3
    assert all(row[4] == "goldset" for row in table.rows if row[0] == "retrieval")
    assert "uncalibrated: no human sample compared yet" in " ".join(texts([section]))
    run = schema.load_run(reports.folder)
    page = decision_section(run.summary, run.manifest, {"answers": layer}, {}, "title")
    assert any("judge-labelled, uncalibrated): groundedness" in t for t in texts([page]))
    assert "judge-labelled, uncalibrated" in answers_lines(layer.summary)[0]


def test_without_answers_the_pdf_has_no_answer_layer(reports: Reports):
    pages = _pages(reports.bare / "report.pdf")
    text = " ".join(pages)
    assert not _starting(pages, "Answer layer") and "Answer layer" not in text
    assert "Answers (" not in pages[0] and "groundedness" not in text
    contents = _starting(_pages(reports.folder / "report.pdf"), "Contents")[0]

    def titles(text: str) -> str:  # without page numbers: the answer pages move the later sections on
        return " ".join(re.sub(r"\d+", " ", text).split())

    assert titles(contents.replace("Answer layer", "")) == titles(_starting(pages, "Contents")[0])


# --- inspector.html ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def driver():
    with headless_chromium() as browser:
        yield browser


def _open(driver, page: Path, fragment: str = ""):
    driver.get(page.resolve().as_uri() + fragment)


def _shown(driver) -> list[str]:
    return driver.execute_script(
        "return [...document.querySelectorAll('.question')].filter(q => q.checkVisibility()).map(q => q.dataset.qid)"
    )


_ANSWER_JS = """
const box = document.querySelector(`.question[data-qid="${CSS.escape(arguments[0])}"] section.answer-layer`);
if (!box) return null;
const text = (sel) => (box.querySelector(sel) || {}).textContent ?? null;
return {candidate: box.dataset.candidate, layer: box.dataset.layer, visible: box.checkVisibility(),
        labels: text('.answer-labels'), uncalibrated: box.querySelector('.answer-labels.uncalibrated') !== null,
        verdict: text('.answer-verdict'), groundedness: text('.groundedness'), relevance: text('.relevance'),
        unsupported: [...box.querySelectorAll('li.unsupported-claim')].map(li => li.textContent)};
"""


def _select(driver, element_id: str, value: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.ID, element_id)).select_by_value(value)


def test_each_answered_question_shows_its_answer_layer(driver, reports: Reports):
    _open(driver, reports.folder / "inspector.html")
    candidate = reports.people.summary["candidate"]
    long_q = driver.execute_script(_ANSWER_JS, LONG_ID)
    assert long_q == {
        "candidate": candidate,
        "layer": "generation",
        "visible": True,
        "labels": "labels: people",
        "uncalibrated": False,
        "verdict": "✗ failed first at generation",
        "groundedness": "groundedness 0.500 (1 of 2 claims supported)",
        "relevance": "addresses the question: yes",
        "unsupported": ["Carrying days over needs a manager's approval"],
    }
    q4 = driver.execute_script(_ANSWER_JS, "q4")
    assert q4["verdict"] == "✗ failed first at retrieval; also generation"
    assert q4["unsupported"] == ["Backups are kept for a year"]
    q3 = driver.execute_script(_ANSWER_JS, "q3")
    assert q3["groundedness"] == "no factual claim (counted apart, not as grounded)"
    assert q3["relevance"] == "addresses the question: no" and q3["layer"] == "question handling"
    assert driver.execute_script(_ANSWER_JS, "q1")["verdict"] == "✓ passed every layer"
    assert driver.execute_script(_ANSWER_JS, "q5")["verdict"] == "? not known: a layer was not measured"
    assert driver.execute_script(_ANSWER_JS, "q6") is None  # never answered
    assert "answers answers.jsonl scored for " + candidate in driver.find_element("id", "run-meta").text
    severe = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert severe == []  # no script error, no Content-Security-Policy refusal


def test_the_answer_layer_filter_keeps_the_questions_that_failed_that_layer(driver, reports: Reports):
    _open(driver, reports.folder / "inspector.html")
    every = _shown(driver)
    assert len(every) == 6
    options = driver.execute_script(
        "return [...document.querySelectorAll('#answer-filter option')].map(o => [o.value, o.textContent])"
    )
    assert options == [
        ["", "every question"],
        ["any", "any layer (3)"],
        ["retrieval", "retrieval (1)"],
        ["generation", "generation (1)"],
        ["question handling", "question handling (1)"],
    ]
    for value, shown in (
        ("any", [LONG_ID, "q3", "q4"]),
        ("retrieval", ["q4"]),
        ("generation", [LONG_ID]),
        ("question handling", ["q3"]),
        ("", every),
    ):
        _select(driver, "answer-filter", value)
        assert _shown(driver) == shown, value
        assert driver.find_element("id", "shown-count").text == f"{len(shown)} of 6 questions"
    _select(driver, "answer-filter", "retrieval")
    driver.execute_script("location.hash = arguments[0]", permalink("q1").removeprefix("inspector.html"))
    assert "q1" in _shown(driver)  # a permalink clears the filter that hid its question
    assert driver.execute_script("return document.getElementById('answer-filter').value") == ""


def test_a_judges_labels_read_uncalibrated_in_the_inspector(driver, reports: Reports, tmp_path: Path):
    run = schema.load_run(reports.folder)
    page = tmp_path / "inspector.html"
    layer = AnswerLayer(reports.judged.summary, reports.judged.rows)
    write_inspector(page, run.summary, run.records, run.texts, run.manifest, layer)
    _open(driver, page, permalink("q4").removeprefix("inspector.html"))
    q4 = driver.execute_script(_ANSWER_JS, "q4")
    assert q4["labels"] == "labels: judge, uncalibrated" and q4["uncalibrated"]


def test_without_answers_the_inspector_has_no_answer_layer(driver, reports: Reports):
    html = (reports.bare / "inspector.html").read_text(encoding="utf-8")
    start = html.index('id="bench-data">') + len('id="bench-data">')
    data = json.loads(html[start : html.index("</script>", start)])
    assert "answers" not in data
    _open(driver, reports.bare / "inspector.html")
    assert driver.execute_script("return document.querySelectorAll('#answer-filter, .answer-layer').length") == 0
    assert len(_shown(driver)) == 6
