"""A corpus folder of mixed formats: documents' pages, the extraction cache, the fingerprint, and the
files left out (said, listed, refused under --strict, named when a goldset cites one)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from bench.errors import BenchError
from bench.inputs import folder
from bench.inputs.corpus import Document, load_corpus, pages_label
from bench.inputs.formats import for_suffix
from bench.inputs.goldset import load_goldset, validate_goldset
from tests.inputs import make_office, make_pdf


def _folder(root: Path) -> Path:
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "plain.md").write_text("# Plain\n\nThe markdown file stays as it is.\n", encoding="utf-8")
    make_pdf.write_report(root / "report.pdf")
    make_office.write_docx(root / "review.docx")
    return root


def test_page_range_and_its_label() -> None:
    doc = Document("a.pdf", "one\n\ntwo\n\nthree", pages=(0, 5, 10), page_label="p.")
    assert doc.page_range(0, 3) == (1, 1)
    assert doc.page_range(5, 8) == (2, 2)
    assert doc.page_range(4, 5) == (1, 1)  # ends where page 2 starts: page 1 only
    assert doc.page_range(2, 12) == (1, 3)
    assert Document("a.md", "text").page_range(0, 2) is None
    assert pages_label("p.", (4, 5)) == "p. 4–5"
    assert pages_label("slide", (2, 2)) == "slide 2"
    assert pages_label("", (1, 1)) == ""


def test_pdf_pages_known_sentence_on_its_page(tmp_path: Path) -> None:
    corpus = load_corpus(_folder(tmp_path / "c"), tmp_path / "cache")
    assert corpus.ids == ("notes/plain.md", "report.pdf", "review.docx")
    assert corpus.formats == {"notes/plain.md": "text", "report.pdf": "pdf", "review.docx": "docx"}
    pdf = corpus.get("report.pdf")
    assert len(pdf.pages) == 4 and pdf.page_label == "p."
    at = pdf.text.index(make_pdf.PAGE3_SENTENCE[:40])
    assert pdf.page_range(at, at + 40) == (3, 3)


def test_a_warm_load_extracts_nothing_and_reads_the_same(tmp_path: Path) -> None:
    root, cache = _folder(tmp_path / "c"), tmp_path / "cache"
    calls = []
    real = folder.ExtractionCache.put

    def counting(self, key, extracted):
        calls.append(key)
        real(self, key, extracted)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(folder.ExtractionCache, "put", counting)
        cold = load_corpus(root, cache)
        assert len(calls) == 2  # the PDF and the DOCX; markdown is read as it is
        warm = load_corpus(root, cache)
        assert len(calls) == 2
    assert [d.text for d in cold.documents] == [d.text for d in warm.documents]
    assert cold.fingerprint == warm.fingerprint
    assert len(list((cache).glob("*.json"))) == 2


def test_a_damaged_cache_entry_is_extracted_again(tmp_path: Path) -> None:
    root, cache = _folder(tmp_path / "c"), tmp_path / "cache"
    first = load_corpus(root, cache)
    for entry in cache.glob("*.json"):
        entry.write_text('{"text": "cut sh', encoding="utf-8")
    again = load_corpus(root, cache)
    assert [d.text for d in again.documents] == [d.text for d in first.documents]
    assert all(json.loads(e.read_text(encoding="utf-8"))["text"] for e in cache.glob("*.json"))


def test_fingerprint_of_text_files_is_as_it_always_was(tmp_path: Path) -> None:
    """Locks written before other formats were read still hold: sha256 over id, NUL, text, NUL."""
    root = tmp_path / "c"
    root.mkdir()
    (root / "a.md").write_text("Alpha.", encoding="utf-8")
    (root / "b.txt").write_text("Beta.", encoding="utf-8")
    expected = hashlib.sha256(b"a.md\0Alpha.\0b.txt\0Beta.\0").hexdigest()
    assert load_corpus(root).fingerprint == expected


def test_fingerprint_covers_the_extractor_version_and_the_source_bytes(tmp_path: Path, monkeypatch) -> None:
    root, cache = _folder(tmp_path / "c"), tmp_path / "cache"
    before = load_corpus(root, cache).fingerprint
    newer = dataclasses.replace(for_suffix(".pdf"), version="999")
    monkeypatch.setattr(folder, "for_suffix", lambda s: newer if s.lower() == ".pdf" else for_suffix(s))
    assert load_corpus(root, cache).fingerprint != before  # same text, another extractor version
    monkeypatch.undo()
    make_pdf.write_owner_only(root / "report.pdf")  # the same text in other bytes
    assert load_corpus(root, cache).get("report.pdf").text == load_corpus(root).get("report.pdf").text
    assert load_corpus(root, cache).fingerprint != before


def test_left_out_files_are_said_listed_and_refused_under_strict(tmp_path: Path) -> None:
    root = _folder(tmp_path / "c")
    make_pdf.write_scan(root / "scan.pdf")
    make_pdf.write_truncated(root / "broken.pdf")
    make_pdf.write_html_as_pdf(root / "page.pdf")
    (root / "empty.docx").write_bytes(b"")
    (root / "data.xyz").write_text("?", encoding="utf-8")
    corpus = load_corpus(root, tmp_path / "cache")
    assert corpus.ids == ("notes/plain.md", "report.pdf", "review.docx")
    kinds = {x.path: x.kind for x in corpus.left_out}
    assert kinds == {
        "broken.pdf": "unreadable",
        "data.xyz": "unsupported",
        "empty.docx": "no text",
        "page.pdf": "unreadable",
        "scan.pdf": "no text",
    }
    reasons = {x.path: x.reason for x in corpus.left_out}
    assert "OCR it first" in reasons["scan.pdf"]
    assert "HTML" in reasons["page.pdf"]
    warnings = corpus.warnings()
    assert len(warnings) == 3  # one line per kind: unsupported, unreadable, no text
    assert all("\n" not in w for w in warnings)
    assert "data.xyz" in warnings[0] and "1 .xyz" in warnings[0]
    assert "broken.pdf" in warnings[1] and "page.pdf" in warnings[1]
    assert "scan.pdf: no text layer" in warnings[2]
    manifest = corpus.left_out_manifest()
    assert [x["path"] for x in manifest["left_out"]] == sorted(kinds)
    assert manifest["formats"] == {"text": 1, "pdf": 1, "docx": 1}
    with pytest.raises(BenchError, match=r"5 files left out of the corpus \(--strict\)"):
        corpus.check_strict()


def test_a_goldset_citing_a_left_out_file_says_why(tmp_path: Path) -> None:
    root = _folder(tmp_path / "c")
    make_pdf.write_scan(root / "scan.pdf")
    corpus = load_corpus(root)
    gold = tmp_path / "gold.jsonl"
    rows = [
        {"id": "q1", "question": "What stays?", "evidence": [{"doc": "notes/plain.md", "quote": "stays as it is"}]},
        {"id": "q2", "question": "What is scanned?", "evidence": [{"doc": "scan.pdf"}]},
    ]
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (problem,) = validate_goldset(gold, corpus)
    assert problem.startswith(f"{gold}:2: question 'q2' evidence 1: document 'scan.pdf' was left out")
    assert "OCR it first" in problem
    with pytest.raises(BenchError, match="was left out of the corpus"):
        load_goldset(gold, corpus)


def test_a_folder_of_nothing_readable_says_what_it_left_out(tmp_path: Path) -> None:
    root = tmp_path / "c"
    root.mkdir()
    make_pdf.write_scan(root / "scan.pdf")
    with pytest.raises(BenchError, match=r"no documents; every file was left out \(scan.pdf: no text layer"):
        load_corpus(root)
