"""A corpus folder extracted in worker processes is the corpus extracted in one: the same ids, texts,
pages, left-out reasons, notes and cache entries; the limits hold in each worker, and an interrupted
load leaves no worker behind."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import zipfile
from multiprocessing.process import BaseProcess
from pathlib import Path

import pytest

from bench.errors import BenchError
from bench.inputs.corpus import NO_TEXT, UNREADABLE, UNSUPPORTED, Corpus
from bench.inputs.extraction_cache import ExtractionCache
from bench.inputs.extraction_workers import cores, worker_count
from bench.inputs.folder import load_folder
from bench.inputs.formats import Limits
from bench.inputs.formats.limits import MB
from tests.inputs import make_office as m
from tests.inputs import make_pdf


def _html(path: Path, i: int) -> None:
    page = m.write_html_article(path).read_bytes()
    own = f"<p>Article {i} has a paragraph of its own about corpus {i}.</p></article>".encode()
    path.write_bytes(page.replace(b"</article>", own, 1))


def _docx(path: Path, i: int) -> None:
    import docx

    m.write_docx(path)
    document = docx.Document(str(path))
    document.add_paragraph(f"Review {i} adds a paragraph of its own.")
    document.save(str(path))


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every format, documents that read, one that reads with a note, and files left out for each reason."""
    root = tmp_path_factory.mktemp("parallel") / "corpus"
    (root / "sub").mkdir(parents=True)
    for i in range(4):
        _html(root / f"page-{i}.html", i)
        _docx(root / "sub" / f"review-{i}.docx", i)
        make_pdf.write_long(root / f"long-{i}.pdf", pages=2 + i)
    make_pdf.write_report(root / "report.pdf")
    make_pdf.write_flowing(root / "flowing.pdf")
    make_pdf.write_partly_scanned(root / "partly.pdf")  # read, with a note
    make_pdf.write_scan(root / "scan.pdf")  # no text layer
    make_pdf.write_corrupt(root / "corrupt.pdf")
    m.write_pptx(root / "deck.pptx")
    m.write_xlsx(root / "sheet.xlsx")
    m.write_epub(root / "book.epub")
    (root / "copy-of-page-0.html").write_bytes((root / "page-0.html").read_bytes())  # extracted once
    (root / "corrupt-copy.pdf").write_bytes((root / "corrupt.pdf").read_bytes())
    (root / "notes.md").write_text("# Notes\n\nPlain text is read here.\n", encoding="utf-8")
    (root / "empty.txt").write_text("", encoding="utf-8")
    (root / "data.xyz").write_text("unknown", encoding="utf-8")
    return root


def _load(root: Path, cache: Path, limits: Limits, seen: list | None = None) -> tuple[Corpus, ExtractionCache]:
    extraction = ExtractionCache(cache)

    def progress(done: int, total: int) -> None:
        if seen is not None:
            seen.append((done, total, len(multiprocessing.active_children())))

    return load_folder(root, extraction, progress, limits), extraction


def _everything(corpus: Corpus) -> tuple:
    docs = [(d.id, d.text, d.pages, d.page_label) for d in corpus.documents]
    return docs, corpus.left_out, corpus.notes, corpus.formats, corpus.provenance, corpus.fingerprint


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_parallel_read_is_the_serial_read_byte_for_byte(folder: Path, tmp_path: Path) -> None:
    serial, serial_cache = _load(folder, tmp_path / "serial", Limits(workers=1))
    seen: list[tuple[int, int, int]] = []
    parallel, parallel_cache = _load(folder, tmp_path / "parallel", Limits(workers=3), seen)

    assert _everything(parallel) == _everything(serial)
    assert list(parallel.notes) == list(serial.notes)  # in path order too, not as workers finished
    assert _files(tmp_path / "parallel") == _files(tmp_path / "serial")
    assert (
        parallel_cache.extracted == serial_cache.extracted == 19
    )  # the scan's empty text too; a copy is not extracted again
    # what was read and why the rest was not, as a user would check it
    assert len(parallel) == 20 and "notes.md" in parallel and "sub/review-3.docx" in parallel
    kinds = {x.path: x.kind for x in parallel.left_out}
    assert kinds == {
        "corrupt-copy.pdf": UNREADABLE,
        "corrupt.pdf": UNREADABLE,
        "data.xyz": UNSUPPORTED,
        "empty.txt": NO_TEXT,
        "scan.pdf": NO_TEXT,
    }
    assert parallel.get("copy-of-page-0.html").text == parallel.get("page-0.html").text
    assert "partly.pdf" in parallel.notes
    assert make_pdf.long_sentence(5, 3) in parallel.get("long-3.pdf").text
    # progress counts every file once, in order, and workers did the extracting
    assert [(d, t) for d, t, _ in seen] == [(i, 25) for i in range(1, 26)]
    assert max(n for _, _, n in seen) == 3
    assert multiprocessing.active_children() == []  # the workers are gone once the folder is read


def test_a_warm_load_after_a_parallel_one_extracts_nothing(folder: Path, tmp_path: Path) -> None:
    cold, _ = _load(folder, tmp_path / "cache", Limits(workers=2))
    seen: list[tuple[int, int, int]] = []
    warm, cache = _load(folder, tmp_path / "cache", Limits(workers=2), seen)
    assert cache.extracted == 0 and _everything(warm) == _everything(cold)
    assert max(n for _, _, n in seen) == 0  # nothing to extract: no worker is started


def test_copies_of_one_file_are_extracted_once_as_in_one_process(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    _html(root / "a.html", 0)
    (root / "b.html").write_bytes((root / "a.html").read_bytes())
    _html(root / "c.html", 1)
    (root / "d.pdf").write_bytes(b"%PDF-1.4 cut short")
    (root / "e.pdf").write_bytes(b"%PDF-1.4 cut short")
    parallel, cache = _load(root, tmp_path / "parallel", Limits(workers=2))
    serial, _ = _load(root, tmp_path / "serial", Limits(workers=1))
    assert cache.extracted == 2 and _everything(parallel) == _everything(serial)
    assert parallel.ids == ("a.html", "b.html", "c.html") and [x.path for x in parallel.left_out] == ["d.pdf", "e.pdf"]
    assert parallel.left_out[0].reason == parallel.left_out[1].reason


def _bomb(path: Path) -> None:
    """A real DOCX holding 300 MB of zeros in about 1 MB."""
    m.write_docx(path)
    with (
        zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z,
        z.open("word/media/zeros.bin", "w") as f,
    ):
        for _ in range(300):
            f.write(bytes(MB))


def test_hostile_documents_among_ordinary_ones_are_left_out_in_a_worker_with_their_reasons(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    for i in range(3):
        _html(root / f"page-{i}.html", i)
    make_pdf.write_report(root / "report.pdf")
    _bomb(root / "bomb.docx")
    make_pdf.write_long(root / "many-pages.pdf", pages=12)
    seen: list[tuple[int, int, int]] = []
    corpus, cache = _load(root, tmp_path / "cache", Limits(max_pages=10, workers=2), seen)

    assert corpus.ids == ("page-0.html", "page-1.html", "page-2.html", "report.pdf")
    reasons = {x.path: x.reason for x in corpus.left_out}
    assert set(reasons) == {"bomb.docx", "many-pages.pdf"}
    assert "zip bomb" in reasons["bomb.docx"] and "documents.max_unpacked_mb" in reasons["bomb.docx"]
    assert "too many pages" in reasons["many-pages.pdf"] and "documents.max_pages" in reasons["many-pages.pdf"]
    assert all("\n" not in r and "Traceback" not in r for r in reasons.values())
    assert all(x.kind == UNREADABLE for x in corpus.left_out)
    assert cache.extracted == 4 and len(list((tmp_path / "cache").glob("*.json"))) == 4  # none for the refused
    assert max(n for _, _, n in seen) == 2


def test_the_time_limit_holds_in_a_worker(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    _html(root / "page.html", 0)
    (root / "slow.html").write_bytes(
        b"<html><body><main>" + b"<div>" * 100_000 + b"Deep." + b"</div>" * 100_000 + b"</main></body></html>"
    )  # about 3 s to read
    (fast := tmp_path / "fast").mkdir()
    _html(fast / "page.html", 0)
    started = time.perf_counter()
    _load(fast, tmp_path / "cache-fast", Limits(max_seconds=0.5, workers=2))
    baseline = time.perf_counter() - started  # the workers started and one page read, on this machine now
    started = time.perf_counter()
    corpus, _ = _load(root, tmp_path / "cache", Limits(max_seconds=0.5, workers=2))
    assert corpus.ids == ("page.html",)
    [x] = corpus.left_out
    assert x.path == "slow.html" and "extracting it took too long" in x.reason
    # the 0.5 s limit and some slack past what the same read without the slow file took: not its 3 s
    assert time.perf_counter() - started < baseline + 1.5


def _slow_folder(root: Path) -> Path:
    root.mkdir()
    for i in range(3):
        make_pdf.write_long(root / f"long-{i}.pdf", pages=60 + i)  # several seconds each
    (root / "z-notes.md").write_text("Read after the PDFs are sent to the workers.\n", encoding="utf-8")
    return root


def test_ctrl_c_stops_the_workers_at_once(tmp_path: Path) -> None:
    root = _slow_folder(tmp_path / "corpus")
    workers: list[BaseProcess] = []

    def interrupt(done: int, total: int) -> None:
        workers.extend(multiprocessing.active_children())
        raise KeyboardInterrupt

    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        load_folder(root, ExtractionCache(tmp_path / "cache"), interrupt, Limits(workers=2))
    assert time.perf_counter() - started < 3.0  # not after the PDFs were read
    assert len(workers) == 2 and not any(w.is_alive() for w in workers)
    assert multiprocessing.active_children() == []
    assert not list((tmp_path / "cache").glob("*.json"))


def test_a_worker_that_dies_is_an_error_naming_the_files_not_a_hang(tmp_path: Path) -> None:
    root = _slow_folder(tmp_path / "corpus")

    def kill_one(done: int, total: int) -> None:
        if done == 1:
            pid = multiprocessing.active_children()[0].pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)  # as the kernel's OOM killer does

    with pytest.raises(BenchError, match=r"a worker process extracting documents stopped .* long-\d\.pdf"):
        load_folder(root, ExtractionCache(None), kill_one, Limits(workers=2))
    assert multiprocessing.active_children() == []


def test_workers_are_a_setting_of_the_documents_table() -> None:
    assert Limits.from_settings({"workers": 3}, "bench.toml").workers == 3
    assert worker_count(Limits(workers=1)) == 1 and worker_count(Limits()) == cores() >= 1
    for value in (0, 1.5, True):
        with pytest.raises(BenchError, match=r"\[documents\]: workers = .* must be a positive integer"):
            Limits.from_settings({"workers": value}, "bench.toml")
