"""Hostile files stay bounded: a zip bomb, a PDF of a hundred thousand pages or a page tree nested
thousands deep, a page of a hundred thousand nested tags, a file of hundreds of megabytes. Each is
refused (or read) within the limits, left out with a one-line reason naming the file, the limit and
the setting that raises it, and the rest of the corpus is read as usual."""

from __future__ import annotations

import json
import os
import struct
import threading
import time
import zipfile
import zlib
from pathlib import Path

import pytest

from bench.inputs.corpus import UNREADABLE, Corpus
from bench.inputs.extraction_cache import ExtractionCache
from bench.inputs.folder import load_folder
from bench.inputs.formats import LIMITS, Limits, Unreadable, html
from bench.inputs.formats.limits import MB
from tests.helpers import finished_runs, run_cli, write_project
from tests.inputs import make_office as m
from tests.inputs import make_pdf

NOTES = "# Notes\n\nThe rest of the corpus is read as usual.\n"
BOUND = 10.0  # seconds: generous, where the time taken is what a test proves


def _corpus(folder: Path) -> Path:
    """Two ordinary documents, for a hostile one to be put beside."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notes.md").write_text(NOTES, encoding="utf-8")
    m.write_html_article(folder / "guide.html")
    return folder


def _load(folder: Path, limits: Limits = LIMITS) -> tuple[Corpus, float]:
    started = time.perf_counter()
    corpus = load_folder(folder, ExtractionCache(None), limits=limits)
    return corpus, time.perf_counter() - started


def _left_out(corpus: Corpus, name: str, *words: str) -> str:
    """The hostile file's reason, after checking that it alone is left out and said so in one line."""
    assert corpus.ids == ("guide.html", "notes.md")
    assert corpus.get("notes.md").text == NOTES.rstrip("\n") + "\n"
    [x] = corpus.left_out
    assert (x.path, x.kind) == (name, UNREADABLE)
    assert "\n" not in x.reason and "Traceback" not in x.reason
    for word in words:
        assert word in x.reason, x.reason
    [line] = [line for line in corpus.warnings() if name in line]
    assert f"{name}: {x.reason}" in line
    return x.reason


# --- zip bombs ------------------------------------------------------------------------------------


def _with_member(path: Path, name: str, megabytes: int) -> Path:
    """``path``, a real DOCX, with a member of that many megabytes of zeros added (packed ~250×)."""
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z, z.open(name, "w") as f:
        chunk = bytes(MB)
        for _ in range(megabytes):
            f.write(chunk)
    return path


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A Word document holding 300 MB of zeros in about 1 MB."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.docx"
    return _with_member(m.write_docx(path), "word/media/zeros.bin", 300).read_bytes()


def test_a_zip_bomb_is_refused_by_its_declared_size_before_anything_is_unpacked(tmp_path: Path, bomb: bytes) -> None:
    folder = _corpus(tmp_path / "corpus")
    (folder / "bomb.docx").write_bytes(bomb)
    corpus, elapsed = _load(folder)
    reason = _left_out(corpus, "bomb.docx", "zip bomb", "it unpacks to 30", "200 MB", "documents.max_unpacked_mb")
    assert reason.endswith("; replace it or raise the limit")
    assert elapsed < BOUND


def test_a_member_packed_too_well_is_refused_by_its_ratio(tmp_path: Path) -> None:
    folder = _corpus(tmp_path / "corpus")
    _with_member(m.write_docx(folder / "ratio.docx"), "word/media/zeros.bin", 20)
    corpus, _ = _load(folder)
    _left_out(
        corpus, "ratio.docx", "word/media/zeros.bin unpacks to", "times its packed size", "documents.max_zip_ratio"
    )
    assert len(_load(folder, Limits(max_zip_ratio=10_000))[0]) == 3  # raised, it is read


def test_a_zip_of_too_many_members_is_refused_before_they_are_listed(tmp_path: Path) -> None:
    # a million empty members fit in 90 MB, under max_file_mb, and take zipfile ~10 s and ~550 MB to list
    folder = _corpus(tmp_path / "corpus")
    path = m.write_docx(folder / "many.docx")
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_STORED) as z:
        for i in range(10_001):
            z.writestr(zipfile.ZipInfo(f"word/media/{i}"), b"")
    corpus, _ = _load(folder)
    reason = _left_out(corpus, "many.docx", "a zip of 10,0", "members", "10,000", "documents.max_zip_entries")
    assert reason.endswith("; replace it or raise the limit")
    assert len(_load(folder, Limits(max_zip_entries=20_000))[0]) == 3  # raised, it is read


def _declare_size(data: bytes, name: str, size: int) -> bytes:
    """The zip with ``name``'s unpacked size declared as ``size`` in its local and central headers."""
    out = bytearray(data)
    at = out.find(b"PK\x01\x02")
    while at >= 0:
        length = struct.unpack_from("<H", out, at + 28)[0]
        if out[at + 46 : at + 46 + length] == name.encode():
            struct.pack_into("<I", out, at + 24, size)
            struct.pack_into("<I", out, struct.unpack_from("<I", out, at + 42)[0] + 22, size)
        at = out.find(b"PK\x01\x02", at + 4)
    return bytes(out)


def test_a_member_that_lies_about_its_size_is_never_unpacked_beyond_it(tmp_path: Path) -> None:
    folder = _corpus(tmp_path / "corpus")
    docx = m.write_docx(tmp_path / "lying.docx")
    with zipfile.ZipFile(docx) as source, zipfile.ZipFile(tmp_path / "big.docx", "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            if info.filename == "word/document.xml":
                with out.open(info.filename, "w") as f:
                    for _ in range(100):
                        f.write(bytes(MB))
            else:
                out.writestr(info, source.read(info))
    (folder / "lying.docx").write_bytes(_declare_size((tmp_path / "big.docx").read_bytes(), "word/document.xml", 1000))
    corpus, elapsed = _load(folder)
    _left_out(corpus, "lying.docx", "a Word document that cannot be read", "CRC")
    assert elapsed < BOUND


def test_parts_bench_unpacks_itself_are_read_in_pieces_and_cut_off_at_the_cap(tmp_path: Path) -> None:
    from bench.inputs.formats import office

    with zipfile.ZipFile(tmp_path / "book.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("chapter.xhtml", bytes(3 * MB))
    with zipfile.ZipFile(tmp_path / "book.zip") as z:
        assert len(office.read_member(z, "chapter.xhtml", 3 * MB)) == 3 * MB
        with pytest.raises(Unreadable, match=r"a zip bomb: chapter.xhtml unpacks to over 2 MB"):
            office.read_member(z, "chapter.xhtml", 2 * MB)


# --- PDF ------------------------------------------------------------------------------------------


def _raw_pdf(objects: list[bytes]) -> bytes:
    """A PDF of these objects (numbered from 1; the first is the catalog), with its cross-reference table."""
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def _blank_pages(pages: int) -> bytes:
    kids = b" ".join(b"%d 0 R" % (n + 3) for n in range(pages))
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>"
    head = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages)]
    return _raw_pdf(head + [page] * pages)


def _one_stream_page(encoding: bytes, packed: bytes) -> bytes:
    """A one-page PDF whose content stream is ``packed`` under the filter ``encoding``."""
    return _raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R"
            b" /Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>",
            b"<< /Length %d /Filter /%s >>\nstream\n%s\nendstream" % (len(packed), encoding, packed),
        ]
    )


_TEXT = b"BT /F1 12 Tf 10 100 Td (Backups are kept for a year.) Tj ET\n"


def _packed(encoding: str, spaces: int) -> bytes:
    """A page's text, then ``spaces`` spaces (a multiple of 128), packed under ``encoding``."""
    data = _TEXT + b" " * spaces
    if encoding == "FlateDecode":
        return zlib.compress(data, 1)
    if encoding == "LZWDecode":
        from pypdf._codecs._codecs import LzwCodec

        return LzwCodec().encode(data)
    # RunLength: the text as one literal run, then a space repeated 128 times per two bytes
    return bytes([len(_TEXT) - 1]) + _TEXT + b"\x81 " * (spaces // 128) + b"\x80"


@pytest.mark.parametrize("encoding", ["FlateDecode", "LZWDecode", "RunLengthDecode"])
def test_a_pdf_stream_that_unpacks_too_far_is_refused_as_it_unpacks(tmp_path: Path, encoding: str) -> None:
    # pdfminer unpacks a stream whole: half a megabyte of FlateDecode PDF took 1 GB of memory
    folder = _corpus(tmp_path / "corpus")
    (folder / "bomb.pdf").write_bytes(_one_stream_page(encoding.encode(), _packed(encoding, 3 * 2**20)))
    corpus, elapsed = _load(folder, Limits(max_unpacked_mb=2))
    reason = _left_out(
        corpus, "bomb.pdf", f"a decompression bomb: a {encoding} stream", "2 MB", "documents.max_unpacked_mb"
    )
    assert reason.endswith("; replace it or raise the limit")
    assert elapsed < BOUND
    raised = _load(folder, Limits(max_unpacked_mb=4))[0]  # raised, it is read
    assert "Backups are kept for a year." in raised.get("bomb.pdf").text


def test_a_damaged_pdf_stream_is_bounded_too_and_pdfminer_is_its_own_outside_bench() -> None:
    from pdfminer import pdftypes

    from bench.inputs.formats import pdf_streams

    cut = zlib.compress(b" " * (3 * MB))[:-4]  # no checksum: pdfminer unpacks it byte by byte
    with pdf_streams.bounded(2 * MB), pytest.raises(pdf_streams.StreamTooLarge):
        pdftypes.decompress_corrupted(cut)
    with pdf_streams.bounded(4 * MB):
        assert pdftypes.decompress_corrupted(cut) == b" " * (3 * MB)
        with pytest.raises(zlib.error, match="incomplete or truncated"):
            pdftypes.zlib.decompress(cut)
    assert pdftypes.zlib.decompress(zlib.compress(b" " * (3 * MB))) == b" " * (3 * MB)  # unbounded outside


def test_a_pdf_of_a_hundred_thousand_pages_is_refused_at_the_page_limit(tmp_path: Path) -> None:
    folder = _corpus(tmp_path / "corpus")
    (folder / "huge.pdf").write_bytes(_blank_pages(100_000))
    corpus, elapsed = _load(folder)
    _left_out(corpus, "huge.pdf", "a PDF with too many pages", "2,000 pages", "documents.max_pages", "split it")
    assert elapsed < BOUND


def test_the_page_limit_is_a_setting(tmp_path: Path) -> None:
    folder = _corpus(tmp_path / "corpus")
    make_pdf.write_report(folder / "report.pdf")  # 4 pages
    corpus, _ = _load(folder, Limits(max_pages=3))
    assert corpus.left_out[0].path == "report.pdf" and "limit of 3 pages" in corpus.left_out[0].reason
    assert "report.pdf" in _load(folder, Limits(max_pages=4))[0]


def test_a_page_tree_nested_thousands_deep_is_left_out_without_a_traceback(tmp_path: Path) -> None:
    folder = _corpus(tmp_path / "corpus")
    chain = [b"<< /Type /Pages /Kids [%d 0 R] /Count 1 >>" % (n + 3) for n in range(5000)]
    page = b"<< /Type /Page /MediaBox [0 0 200 200] >>"
    (folder / "deep.pdf").write_bytes(_raw_pdf([b"<< /Type /Catalog /Pages 2 0 R >>", *chain, page]))
    corpus, elapsed = _load(folder)
    _left_out(corpus, "deep.pdf", "cannot read it as a PDF (objects nested too deeply)")
    assert elapsed < BOUND


def test_a_slow_pdf_stops_at_the_time_limit_even_off_the_main_thread(tmp_path: Path) -> None:
    folder = _corpus(tmp_path / "corpus")
    make_pdf.write_long(folder / "long.pdf", pages=40)  # a few seconds to extract
    found: list[tuple[Corpus, float]] = []
    reader = threading.Thread(target=lambda: found.append(_load(folder, Limits(max_seconds=0.2))))
    reader.start()
    reader.join()
    [(corpus, elapsed)] = found
    _left_out(corpus, "long.pdf", "extracting it took too long", "limit of 0.2 s", "documents.max_seconds")
    assert elapsed < 2.0


# --- HTML -----------------------------------------------------------------------------------------


def _nested(tag: str, depth: int) -> bytes:
    """A page whose text lies ``depth`` elements deep, then a paragraph after them."""
    close = f"</{tag[1:-1].split()[0]}>"
    return f"<html><body><main>{tag * depth}Deep text.{close * depth}<p>After.</p></main></body></html>".encode()


def test_a_page_nested_a_hundred_thousand_deep_keeps_its_text_in_bounded_time(tmp_path: Path) -> None:
    folder = _corpus(tmp_path / "corpus")
    (folder / "deep.html").write_bytes(_nested("<div>", 100_000))
    corpus, elapsed = _load(folder)
    assert corpus.ids == ("deep.html", "guide.html", "notes.md") and not corpus.left_out
    assert corpus.get("deep.html").text == "Deep text.\n\nAfter."
    assert elapsed < BOUND


def test_nested_furniture_is_linear_not_quadratic() -> None:
    # each <header> was measured against all it holds: 8,000 of them took minutes before the depth cap
    for tag in ("<header>", '<div class="menu">', "<aside>"):
        started = time.perf_counter()
        assert html.extract(_nested(tag, 8000)).text == "Deep text.\n\nAfter."
        assert time.perf_counter() - started < BOUND


def test_a_page_of_too_many_elements_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    folder = _corpus(tmp_path / "corpus")
    (folder / "big.html").write_bytes(b"<html><body>" + b"<p>x</p>" * 20_000 + b"</body></html>")
    corpus, elapsed = _load(folder, Limits(max_html_elements=10_000))
    _left_out(corpus, "big.html", "markup of about 20,002 elements", "limit of 10,000", "documents.max_html_elements")
    assert elapsed < BOUND


def test_a_page_slower_than_the_time_limit_is_stopped_mid_parse(tmp_path: Path) -> None:
    folder = _corpus(tmp_path / "corpus")
    (folder / "slow.html").write_bytes(_nested("<div>", 100_000))  # about 3 s
    corpus, elapsed = _load(folder, Limits(max_seconds=0.3))
    _left_out(corpus, "slow.html", "extracting it took too long", "documents.max_seconds")
    assert elapsed < 2.0


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the swallowed raise, reported
def test_the_time_limit_holds_when_it_first_fires_inside_a_garbage_collector_callback(tmp_path: Path) -> None:
    import gc

    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "notes.md").write_text(NOTES, encoding="utf-8")
    (folder / "slow.html").write_bytes(_nested("<div>", 100_000))  # about 3 s to read
    calls = []

    def slow_callback(phase: str, info: dict) -> None:  # the timer's raise lands here, and is swallowed
        if phase == "start" and len(calls) < 3:
            calls.append(phase)
            time.sleep(0.5)

    gc.collect()
    gc.callbacks.append(slow_callback)
    try:
        corpus, elapsed = _load(folder, Limits(max_seconds=0.3))
    finally:
        gc.callbacks.remove(slow_callback)
    assert calls  # collections ran, and slept, while the timer was armed
    [x] = corpus.left_out
    assert x.path == "slow.html" and "extracting it took too long" in x.reason
    assert elapsed < 2.5  # stopped soon after the swallowed raise, not after the whole page


# --- big files ------------------------------------------------------------------------------------


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    folder = _corpus(tmp_path / "corpus")
    with open(folder / "dump.txt", "wb") as f:
        f.truncate(200 * MB)  # sparse: 200 MB by its size, nothing on disk
    corpus, elapsed = _load(folder)
    _left_out(corpus, "dump.txt", "a file of 200 MB", "limit of 100 MB", "documents.max_file_mb")
    assert elapsed < BOUND
    os.truncate(folder / "dump.txt", 0)
    (folder / "dump.txt").write_text("x" * (2 * MB), encoding="utf-8")
    _left_out(_load(folder, Limits(max_file_mb=1))[0], "dump.txt", "a file of 2 MB", "limit of 1 MB")


def test_settings_from_a_config_table() -> None:
    assert Limits.from_settings({"max_pages": 5000, "max_file_mb": 0.5}, "bench.toml") == Limits(
        max_pages=5000, max_file_mb=0.5
    )
    for table, message in (
        ({"max_page": 1}, r"\[documents\]: unknown key 'max_page'; did you mean 'max_pages'"),
        ({"max_pages": 2.5}, r"\[documents\]: max_pages = 2.5 must be a positive integer"),
        ({"max_seconds": 0}, r"\[documents\]: max_seconds = 0 must be a positive number"),
        ({"max_seconds": True}, "must be a positive number"),
    ):
        with pytest.raises(Exception, match=message):
            Limits.from_settings(table, "bench.toml")


# --- the command line -----------------------------------------------------------------------------


def test_bench_run_warns_of_the_bomb_in_one_line_and_scores_the_rest(tmp_path: Path, bomb: bytes) -> None:
    write_project(tmp_path)
    (tmp_path / "corpus" / "bomb.docx").write_bytes(bomb)
    result = run_cli("run", "bench.toml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    [line] = [line for line in result.stderr.splitlines() if "bomb.docx" in line]
    assert line.startswith("warning: ") and "left out 1 file that cannot be read" in line
    assert "zip bomb" in line and "documents.max_unpacked_mb" in line
    assert len(finished_runs(tmp_path / "results")) == 1


def test_the_limits_are_read_from_the_configs_documents_table(tmp_path: Path) -> None:
    from tests.helpers import CONFIG

    write_project(tmp_path, CONFIG + "\n[documents]\nmax_file_mb = 0.01\n")
    (tmp_path / "corpus" / "long.txt").write_text("Backups are kept for a long time.\n" * 1000, encoding="utf-8")
    stats = run_cli("corpus", "stats", "bench.toml", "--json", cwd=tmp_path)
    assert stats.returncode == 0, stats.stderr
    [left_out] = json.loads(stats.stdout)["left_out"]
    assert left_out["path"] == "long.txt" and "a file of 0.034 MB, over the limit of 0.01 MB" in left_out["reason"]
    write_project(tmp_path, CONFIG + "\n[documents]\nmax_page = 5\n")
    refused = run_cli("run", "bench.toml", "--dry-run", cwd=tmp_path)
    assert refused.returncode == 2 and "[documents]: unknown key 'max_page'" in refused.stderr
