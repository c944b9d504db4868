"""The PDF format: structure kept as markdown, pages mapped, and the files it cannot read named."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.inputs.formats import Unreadable, for_suffix
from bench.inputs.formats.pdf import extract
from tests.inputs import make_pdf as m


@pytest.fixture(scope="module")
def report() -> tuple[str, tuple[int, ...]]:
    got = extract(m.report_bytes())
    assert got.notes == ()
    return got.text, got.pages


def test_registered_for_pdf_with_page_label_and_library_versions() -> None:
    extractor = for_suffix(".PDF")
    assert extractor is not None and extractor.name == "pdf" and extractor.page_label == "p."
    assert "pypdfium2-" in extractor.version and "pdfminer.six-" in extractor.version


def test_headings_become_markdown_lines_ranked_by_size(report: tuple[str, tuple[int, ...]]) -> None:
    lines = report[0].split("\n")
    assert f"# {m.TITLE}" in lines
    assert {f"## {m.BACKGROUND}", f"## {m.COLUMNS}", f"## {m.RESULTS}"} <= set(lines)
    assert f"### {m.CLOSING}" in lines
    assert not any(line.startswith("#") and "sentence" in line for line in lines)  # body text is no heading


def test_paragraphs_bullets_and_hyphenation_kept(report: tuple[str, tuple[int, ...]]) -> None:
    text = report[0]
    assert "\n".join(m.INTRO) in text  # the page's line break kept inside the paragraph
    assert f"\n\n{m.HYPHEN_HEAD}\n{m.HYPHEN_TAIL}\n\n" in text
    assert "\n".join(f"- {item}" for item in m.BULLETS) in text


def test_table_is_a_markdown_table_and_its_words_are_not_repeated(report: tuple[str, tuple[int, ...]]) -> None:
    text = report[0]
    table = "\n".join(
        ["| " + " | ".join(m.TABLE_HEADER) + " |", "|---|---|---|"]
        + ["| " + " | ".join(r) + " |" for r in m.TABLE_ROWS]
    )
    assert f"{m.PAGE3_SENTENCE}\n\n{table}\n\n{m.AFTER_TABLE}" in text
    for word in (*m.TABLE_HEADER, *(cell for row in m.TABLE_ROWS for cell in row)):
        assert text.count(word) == 1, word


def test_two_columns_read_one_after_the_other(report: tuple[str, tuple[int, ...]]) -> None:
    text = report[0]
    at = [text.find(line) for line in (*m.LEFT_COLUMN, *m.RIGHT_COLUMN)]
    assert -1 not in at and at == sorted(at)


def test_page_offsets_map_sentences_to_their_pages(report: tuple[str, tuple[int, ...]]) -> None:
    text, pages = report
    assert len(pages) == 4 and pages[0] == 0
    for page, sentence in ((1, m.INTRO[0]), (2, m.LEFT_COLUMN[0]), (3, m.PAGE3_SENTENCE), (4, m.PAGE4_SENTENCE)):
        at = text.find(sentence)
        end = pages[page] if page < len(pages) else len(text)
        assert pages[page - 1] <= at < end, (page, sentence)
    assert all(text[start - 2 : start] == "\n\n" for start in pages[1:])  # pages joined by a blank line


def test_same_bytes_give_the_same_text() -> None:
    data = m.report_bytes()
    assert extract(data) == extract(data)


def test_justified_lines_split_at_wide_word_spaces_are_joined(tmp_path: Path) -> None:
    got = extract(m.write_flowing(tmp_path / "flowing.pdf").read_bytes())
    words = " ".join(got.text.split())
    assert words.count(m.FLOW_SENTENCES[5]) == 7  # three on page 1, two in each frame of page 2
    assert "  " not in got.text
    left, right = words.find(m.FLOW_LEFT), words.find(m.FLOW_RIGHT)
    assert 0 <= left < right and words[left:right].count(m.FLOW_SENTENCES[5]) == 2
    assert all(f"| {a} | {b} |" in got.text for a, b in m.FLOW_TABLE)


def test_scan_gives_no_text_and_says_to_ocr_it(tmp_path: Path) -> None:
    got = extract(m.write_scan(tmp_path / "scan.pdf").read_bytes())
    assert got.text == "" and got.pages == (0,) * m.SCAN_PAGES
    assert len(got.notes) == 1 and "no text layer" in got.notes[0] and "OCR" in got.notes[0]


def test_partly_scanned_counts_the_pages_without_text(tmp_path: Path) -> None:
    got = extract(m.write_partly_scanned(tmp_path / "partly.pdf").read_bytes())
    assert got.text == "\n".join(m.INTRO) and len(got.pages) == 3
    assert got.notes == ("2 of 3 pages have no text layer (scanned?); OCR them to search them",)


def test_owner_password_only_reads_like_the_plain_file(tmp_path: Path, report: tuple[str, tuple[int, ...]]) -> None:
    got = extract(m.write_owner_only(tmp_path / "owner.pdf").read_bytes())
    assert (got.text, got.pages) == report


def _one_line_error(data: bytes) -> str:
    with pytest.raises(Unreadable) as caught:
        extract(data)
    message = str(caught.value)
    assert message and "\n" not in message and "Traceback" not in message and "File " not in message
    return message


def test_user_password_is_unreadable_with_what_to_do(tmp_path: Path) -> None:
    message = _one_line_error(m.write_encrypted(tmp_path / "locked.pdf").read_bytes())
    assert "encrypted with a password" in message and "unencrypted copy" in message


@pytest.mark.parametrize("builder", [m.write_truncated, m.write_corrupt])
def test_broken_pdf_is_unreadable(tmp_path: Path, builder) -> None:
    message = _one_line_error(builder(tmp_path / "broken.pdf").read_bytes())
    assert message.startswith("cannot read it as a PDF (") and message.endswith("re-export it or remove it")


def test_html_saved_as_pdf_is_named_for_what_it_is(tmp_path: Path) -> None:
    message = _one_line_error(m.write_html_as_pdf(tmp_path / "page.pdf").read_bytes())
    assert "not a PDF" in message and "HTML" in message and ".html" in message


@pytest.mark.parametrize("data", [b"", b"plain words, not a PDF\n", b"\x00\x01\x02binary"])
def test_other_bytes_are_mislabelled(data: bytes) -> None:
    assert "not a PDF though named .pdf" in _one_line_error(data)


def test_a_garbled_page_stream_is_unreadable_not_a_crash() -> None:
    data = m.report_bytes()
    at = data.find(b"stream", len(data) // 3)
    garbled = data[: at + 7] + bytes(range(256)) * 4 + data[at + 7 + 1024 :]
    try:
        got = extract(garbled)
    except Unreadable as e:
        assert "\n" not in str(e)
    else:
        assert len(got.pages) == 4  # pdfminer may read past a broken stream: then the rest still reads
