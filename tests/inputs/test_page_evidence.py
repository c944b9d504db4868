"""Pages as evidence: ``page``/``pages`` in a goldset, and `bench goldset import pages` end to end."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.errors import BenchError
from bench.inputs.corpus import Document, load_corpus
from bench.inputs.goldset import load_goldset
from bench.inputs.page_spans import PageError, page_span, runs
from tests.helpers import SHARED, finished_runs, run_cli

PAGES = (
    ("The first page speaks of apples.",),
    ("Page two is about bridges.", "Bridges carry roads over rivers."),
    ("The third page ends with tides.",),
)
# The extracted text is the pages joined by a blank line: "P1\n\nP2a\nP2b\n\nP3".
P1 = (0, 32)
P2 = (34, 93)  # 34 + len("Page two is about bridges.\nBridges carry roads over rivers.") = 34 + 59
P3 = (95, 126)  # 95 + len("The third page ends with tides.") = 95 + 31


def write_three_pages(path: Path) -> Path:
    """A 3-page PDF, each page a line or two of Helvetica (reportlab's invariant mode: same bytes each time)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=A4, invariant=1)
    for lines in PAGES:
        c.setFont("Helvetica", 11)
        for i, line in enumerate(lines):
            c.drawString(72, 770 - 14 * i, line)
        c.showPage()
    c.save()
    return path


@pytest.fixture()
def corpus_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    write_three_pages(folder / "report.pdf")
    (folder / "notes.md").write_text("# Notes\n\nMarkdown has no pages.\n")
    return folder


def _goldset(tmp_path: Path, *evidence: dict) -> Path:
    path = tmp_path / "gold.jsonl"
    rows = [{"id": f"q{i}", "question": "Which page?", "evidence": [e]} for i, e in enumerate(evidence)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _spans(tmp_path: Path, corpus_dir: Path, *evidence: dict) -> list[list[tuple]]:
    gold = load_goldset(_goldset(tmp_path, *evidence), load_corpus(corpus_dir))
    return [[(e.start, e.end, e.pages) for e in q.evidence] for q in gold.questions]


def test_the_extracted_text_is_what_the_spans_were_computed_on(corpus_dir: Path) -> None:
    doc = load_corpus(corpus_dir).get("report.pdf")
    assert doc.pages == (0, 34, 95) and len(doc.text) == 126
    assert doc.text[slice(*P2)] == "Page two is about bridges.\nBridges carry roads over rivers."


def test_pages_become_spans(tmp_path: Path, corpus_dir: Path) -> None:
    spans = _spans(
        tmp_path,
        corpus_dir,
        {"doc": "report.pdf", "page": 1},
        {"doc": "report.pdf", "page": 3},
        {"doc": "report.pdf", "pages": [2, 3]},
        {"doc": "report.pdf", "pages": [3, 1, 2]},
        {"doc": "report.pdf", "pages": [1, 3]},
    )
    assert spans == [
        [(*P1, "p. 1")],
        [(*P3, "p. 3")],
        [(P2[0], P3[1], "p. 2–3")],
        [(P1[0], P3[1], "p. 1–3")],
        [(*P1, "p. 1"), (*P3, "p. 3")],  # not contiguous: one evidence item per run
    ]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(alphabet="ab \n", max_size=6), min_size=1, max_size=6),
    st.data(),
)
def test_a_page_run_is_its_pages_text_less_the_edges(sections: list[str], data) -> None:
    """Differential: the span of pages first..last against the pages' own texts, joined as office
    extractors join them (a blank line between two), then stripped."""
    text, starts = "", []
    for section in sections:
        if text:
            text += "\n\n"
        starts.append(len(text))
        text += section
    doc = Document("d.pptx", text, pages=tuple(starts), page_label="slide")
    first = data.draw(st.integers(1, len(sections)))
    last = data.draw(st.integers(first, len(sections)))
    expected = "\n\n".join(sections[first - 1 : last]).strip()
    if not expected:
        with pytest.raises(PageError, match="no text"):
            page_span(doc, first, last)
        return
    start, end = page_span(doc, first, last)
    assert text[start:end] == expected
    first_page, last_page = doc.page_range(start, end) or (0, 0)
    assert first <= first_page <= last_page <= last  # the span lies on the pages named, never beside them


def test_runs_of_pages() -> None:
    assert runs([5, 1, 2, 3, 3, 9, 8]) == [(1, 3), (5, 5), (8, 9)]
    assert runs([]) == []


@pytest.mark.parametrize(
    ("item", "says"),
    [
        ({"doc": "report.pdf", "page": 4}, "page 4 is not in 'report.pdf', which has 3 pages (p. 1–3)"),
        ({"doc": "report.pdf", "page": 0}, "page 0 must be a whole number from 1"),
        ({"doc": "report.pdf", "pages": []}, '"pages" must be a non-empty list'),
        ({"doc": "report.pdf", "page": "2"}, "page '2' must be a whole number from 1"),
        ({"doc": "notes.md", "page": 1}, "'notes.md' has no pages"),
        ({"doc": "report.pdf", "page": 1, "quote": "apples"}, 'give either "quote" or "page"/"pages", not both'),
        ({"doc": "report.pdf", "pages": [1], "start": 0, "end": 3}, 'give either "start"/"end" or "page"/"pages"'),
        ({"doc": "report.pdf", "page": 1, "pages": [2]}, 'give either "page" (one number) or "pages"'),
        ({"doc": "report.pdf", "page_label": "iv"}, '"page_label" is not supported'),
    ],
)
def test_bad_pages_are_one_line_errors(tmp_path: Path, corpus_dir: Path, item: dict, says: str) -> None:
    path = _goldset(tmp_path, item)
    with pytest.raises(BenchError) as e:
        load_goldset(path, load_corpus(corpus_dir))
    message = str(e.value)
    assert "\n" not in message and message.startswith(f"{path}:1: question 'q0' evidence 1: ")
    assert says in message


def test_slides_and_sheets_are_pages(tmp_path: Path) -> None:
    from tests.inputs.make_office import write_pptx, write_xlsx

    folder = tmp_path / "office"
    folder.mkdir()
    write_pptx(folder / "deck.pptx")
    write_xlsx(folder / "book.xlsx")
    corpus = load_corpus(folder)
    deck, book = corpus.get("deck.pptx"), corpus.get("book.xlsx")
    path = _goldset(tmp_path, {"doc": "deck.pptx", "page": 2}, {"doc": "book.xlsx", "pages": [1, 2]})
    first, second = (q.evidence for q in load_goldset(path, corpus).questions)
    assert (first[0].start, first[0].end) == (deck.pages[1], deck.pages[2] - 2)  # "\n\n" parts slides
    assert first[0].pages == "slide 2"
    assert (second[0].start, second[0].end, second[0].pages) == (0, len(book.text), "sheet 1–2")
    bad = _goldset(tmp_path, {"doc": "deck.pptx", "page": 9})
    with pytest.raises(BenchError, match=r"slide 9 is not in 'deck.pptx', which has 3 slides \(slide 1–3\)"):
        load_goldset(bad, corpus)


def _questions(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_import_pages_end_to_end(tmp_path: Path, corpus_dir: Path) -> None:
    source = _questions(
        tmp_path / "fb.jsonl",
        [  # FinanceBench's shape: pages from 0, the evidence text as another tool copied it
            {
                "financebench_id": "fb1",
                "question": "What carries roads over rivers?",
                "answer": "Bridges.",
                "doc_name": "report",
                "evidence": [{"evidence_page_num": 1, "evidence_text": "Bridges  carry roads\nover rivers."}],
            },
            {
                "financebench_id": "fb2",
                "question": "What is on the last page?",
                "doc_name": "report",
                "evidence": [{"evidence_page_num": 2, "evidence_text": "Text another tool read differently."}],
            },
            {  # another tool read the page's two lines in the other order: anchored by words
                "financebench_id": "fb7",
                "question": "What is page two about?",
                "doc_name": "report",
                "evidence": [
                    {
                        "evidence_page_num": 1,
                        "evidence_text": "Bridges carry roads over rivers. Page two is about bridges.",
                    }
                ],
            },
            {  # the quote is on page 1, not on page 3 that is named: the page is the evidence
                "financebench_id": "fb3",
                "question": "What about apples?",
                "doc_name": "report",
                "evidence": [{"evidence_page_num": 2, "evidence_text": "speaks of apples"}],
            },
            {"financebench_id": "fb4", "question": "Beyond the end?", "doc_name": "report", "evidence_page_num": 7},
            {"financebench_id": "fb5", "question": "Unknown?", "doc_name": "missing", "evidence_page_num": 0},
            {"financebench_id": "fb6", "question": "Markdown?", "doc_name": "notes.md", "evidence_page_num": 0},
        ],
    )
    result = run_cli("goldset", "import", "pages", str(source), "--corpus", str(corpus_dir), "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "4 questions, pages counted from 0" in out
    assert "evidence found as a quote within its page: 2 (1 of them by words and numbers" in out
    assert "evidence that is the whole page: 2" in out
    for line in ("pages out of range: 1", "unknown documents: 1", "documents without pages: 1"):
        assert f"dropped, {line}" in out
    gold = [json.loads(line) for line in (tmp_path / "goldsets" / "fb.jsonl").read_text().splitlines()]
    assert [q["id"] for q in gold] == ["fb1", "fb2", "fb7", "fb3"]
    assert gold[0]["answer"] == "Bridges." and "answer" not in gold[1]
    assert gold[0]["evidence"] == [
        {"doc": "report.pdf", "quote": "Bridges carry roads over rivers.", "grade": 1}
    ]  # the document's own text
    assert gold[1]["evidence"] == [{"doc": "report.pdf", "page": 3, "grade": 1}]
    assert gold[2]["evidence"] == [  # the span bench anchored, written as the document's own text
        {"doc": "report.pdf", "quote": "Page two is about bridges.\nBridges carry roads over rivers.", "grade": 1}
    ]
    assert gold[3]["evidence"] == [{"doc": "report.pdf", "page": 3, "grade": 1}]
    config = (tmp_path / "fb.toml").read_text()
    assert 'corpus = "docs"' in config  # the corpus is used where it lies, named from the config's folder
    again = run_cli("goldset", "import", "pages", str(source), "--corpus", str(corpus_dir), "--out", str(tmp_path))
    assert again.returncode == 2 and "already exists" in again.stderr

    valid = run_cli("goldset", "validate", str(tmp_path / "goldsets" / "fb.jsonl"), "--corpus", str(corpus_dir))
    assert valid.returncode == 0, valid.stderr
    loaded = load_goldset(tmp_path / "goldsets" / "fb.jsonl", load_corpus(corpus_dir))
    assert [(e.start, e.end) for q in loaded.questions for e in q.evidence] == [
        (61, 93),
        P3,
        P2,
        P3,
    ]  # 34 + len("Page two is about bridges.\n")

    (tmp_path / "fb.toml").write_text(config.replace('["minilm", "bm25"]', '["bm25"]'))
    ran = run_cli("run", str(tmp_path / "fb.toml"))
    assert ran.returncode == 0, ran.stderr
    [run] = finished_runs(tmp_path / "results")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["candidates"]
    records = [json.loads(line) for line in (run / "per_question.jsonl").read_text().splitlines()]
    evidence = {r["question_id"]: r["evidence"] for r in records}
    assert evidence["fb1"] == [
        {
            "doc": "report.pdf",
            "start": 61,
            "end": 93,
            "grade": 1,
            "pages": "p. 2",
            "matched": "exact",
            "similarity": 1.0,
        }
    ]  # how the quote matched is kept with the span
    assert evidence["fb2"] == [{"doc": "report.pdf", "start": P3[0], "end": P3[1], "grade": 1, "pages": "p. 3"}]


def test_import_pages_one_based_flat_records_with_named_fields(tmp_path: Path, corpus_dir: Path) -> None:
    source = _questions(
        tmp_path / "flat.jsonl",
        [
            {"q": "Bridges?", "file": "report.pdf", "pg": [2, 3]},
            {"q": "Apples?", "file": "report.pdf", "pg": 1, "ev": "apples"},
        ],
    )
    args = ("--question-field", "q", "--doc-field", "file", "--page-field", "pg", "--text-field", "ev")
    result = run_cli(
        "goldset", "import", "pages", str(source), "--corpus", str(corpus_dir), "--out", str(tmp_path), *args
    )
    assert result.returncode == 0, result.stderr
    assert "pages counted from 1" in result.stdout
    gold = [json.loads(line) for line in (tmp_path / "goldsets" / "flat.jsonl").read_text().splitlines()]
    assert gold[0] == {
        "id": "q00001",
        "question": "Bridges?",
        "evidence": [{"doc": "report.pdf", "pages": [2, 3], "grade": 1}],
        "tags": ["pages"],
    }
    assert gold[1]["evidence"] == [{"doc": "report.pdf", "quote": "apples", "grade": 1}]
    zero = run_cli(
        "goldset", "import", "pages", str(source), "--corpus", str(corpus_dir), "--out", str(tmp_path),
        "--name", "zero", "--zero-based", *args,
    )  # fmt: skip
    assert zero.returncode == 0, zero.stderr
    assert "dropped, pages out of range: 1" in zero.stdout  # [3, 4]: page 4 is past the end


def test_import_pages_without_page_field_is_one_line(tmp_path: Path, corpus_dir: Path) -> None:
    source = _questions(tmp_path / "bad.jsonl", [{"question": "Where?", "doc": "report.pdf"}])
    result = run_cli("goldset", "import", "pages", str(source), "--corpus", str(corpus_dir), "--out", str(tmp_path))
    assert result.returncode == 2
    assert "no page field" in result.stderr and "--page-field" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


FILINGS = SHARED / "filings"
_FILINGS_DOCS = ("FOOTLOCKER_2022_8K_dated-2022-05-20", "ADOBE_2022_10K")  # the two shortest to extract


def _words(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z]{5,}", text))


def test_filings_import(tmp_path: Path) -> None:
    """FinanceBench's questions on real filings: pages counted from 0 land on the page whose words the
    evidence text holds (more of them than on the pages either side)."""
    if not (FILINGS / "questions.jsonl").is_file():
        pytest.skip(f"{FILINGS} is absent")
    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    for name in _FILINGS_DOCS:
        shutil.copy(FILINGS / "pdfs" / f"{name}.pdf", pdfs)
    rows = [json.loads(line) for line in (FILINGS / "questions.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r["doc_name"] in _FILINGS_DOCS]
    source = _questions(tmp_path / "filings.jsonl", rows)
    result = run_cli("goldset", "import", "pages", str(source), "--corpus", str(pdfs), "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    print(result.stdout)
    assert f"{len(rows)} questions, pages counted from 0" in result.stdout
    assert "dropped" not in result.stdout
    corpus = load_corpus(pdfs)
    gold = load_goldset(tmp_path / "goldsets" / "filings.jsonl", corpus)
    for row, question in zip(rows, gold.questions, strict=True):
        for item, evidence in zip(row["evidence"], question.evidence, strict=True):
            doc = corpus.get(evidence.doc)
            page = item["evidence_page_num"] + 1
            assert evidence.pages == f"p. {page}"
            wanted = _words(item["evidence_text"])
            share = len(wanted & _words(doc.text[evidence.start : evidence.end])) / len(wanted)
            assert share >= 0.9
            for other in (page - 1, page + 1):
                if 1 <= other <= len(doc.pages):
                    s, e = page_span(doc, other)
                    assert len(wanted & _words(doc.text[s:e])) / len(wanted) < share
