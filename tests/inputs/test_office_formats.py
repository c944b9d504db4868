"""DOCX, PPTX, XLSX and EPUB become markdown with their structure; broken files say why in one line."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.inputs import formats
from bench.inputs.formats import Extracted, Unreadable, epub, office
from tests.inputs import make_office as m

BUILDERS: dict[str, Callable[[Path], Path]] = {
    "docx": m.write_docx,
    "pptx": m.write_pptx,
    "xlsx": m.write_xlsx,
    "epub": m.write_epub,
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("office")
    made = {name: build(folder / f"fixture.{name}").read_bytes() for name, build in BUILDERS.items()}
    made["untitled"] = m.write_pptx_untitled(folder / "untitled.pptx").read_bytes()
    made["html"] = m.write_html_article(folder / "page.html").read_bytes()
    return made


def extract(name: str, data: bytes) -> Extracted:
    return formats.EXTRACTORS[name].extract(data)


def _tidy(text: str) -> None:
    assert not any(line != line.rstrip() for line in text.split("\n")), "trailing spaces"
    assert "\n\n\n" not in text and text == text.strip()
    assert "**" not in text and "http" not in text


def _table(rows: tuple[tuple[object, ...], ...]) -> str:
    lines = ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    lines.insert(1, "|" + " --- |" * len(rows[0]))
    return "\n".join(lines)


def test_docx_headings_lists_tables_and_bold_as_plain_text(files: dict[str, bytes]) -> None:
    text = extract("docx", files["docx"]).text
    lines = text.split("\n")
    assert lines[0] == f"# {m.DOCX_TITLE}"
    assert f"## {m.DOCX_SECTION}" in lines and f"## {m.DOCX_CLOSING_HEADING}" in lines
    for sentence in (m.DOCX_INTRO, m.DOCX_BOLD_SENTENCE, m.DOCX_CLOSING):
        assert sentence in lines
    for item in m.DOCX_BULLETS:
        assert f"- {item}" in lines
    assert _table(m.DOCX_TABLE) in text
    assert text.index(m.DOCX_INTRO) < text.index(m.DOCX_BULLETS[0]) < text.index(m.DOCX_CLOSING)
    _tidy(text)


def test_pptx_slides_as_sections_with_their_offsets(files: dict[str, bytes]) -> None:
    extracted = extract("pptx", files["pptx"])
    text, pages = extracted.text, extracted.pages
    assert len(pages) == 3 and pages[0] == 0
    for start, title in zip(pages, m.PPTX_TITLES, strict=True):
        assert text[start:].startswith(f"## {title}\n")
    assert m.PPTX_SUBTITLE in text[: pages[1]]
    second = text[pages[1] : pages[2]]
    assert m.PPTX_BULLETS[1][1] in second and m.PPTX_NOTES in second
    items = [("  " * level + "- " + bullet) for level, bullet in m.PPTX_BULLETS]
    assert "\n".join(items) in second
    assert second.index(items[-1]) < second.index(m.PPTX_NOTES)  # notes after the slide's text
    third = text[pages[2] :]
    assert _table(m.PPTX_TABLE) in third and m.PPTX_GROUPED in third
    _tidy(text)


def test_a_slide_without_title_is_named_by_its_number(files: dict[str, bytes]) -> None:
    extracted = extract("pptx", files["untitled"])
    assert extracted.text == f"## Slide 1\n\n{m.PPTX_UNTITLED}" and extracted.pages == (0,)


def test_xlsx_sheets_as_tables_with_their_offsets(files: dict[str, bytes]) -> None:
    extracted = extract("xlsx", files["xlsx"])
    text, pages = extracted.text, extracted.pages
    assert len(pages) == 2
    first, second = text[: pages[1]], text[pages[1] :]
    assert first.startswith(f"## {m.XLSX_SHEETS[0]}\n\n") and second.startswith(f"## {m.XLSX_SHEETS[1]}\n\n")
    assert _table(m.XLSX_RESULTS) in first  # 0.71 and 120 as written, not 120.0
    assert _table(m.XLSX_NOTES) in second
    _tidy(text)


def test_a_long_sheet_is_cut_with_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(office, "MAX_ROWS_PER_SHEET", 5)
    extracted = extract("xlsx", m.write_xlsx_long(tmp_path / "long.xlsx", 20).read_bytes())
    rows = [line for line in extracted.text.split("\n") if line.startswith("|") and "---" not in line]
    assert len(rows) == 5 and rows[-1] == "| 4 | 16 |"  # the header and four rows
    assert len(extracted.notes) == 1 and "first 5 rows" in extracted.notes[0]


def test_epub_chapters_in_spine_order_without_the_nav_document(files: dict[str, bytes]) -> None:
    text = extract("epub", files["epub"]).text
    (h1, s1), (h2, s2) = m.EPUB_CHAPTERS
    assert text == f"# {h1}\n\n{s1}\n\n# {h2}\n\n{s2}"


def test_same_bytes_same_text(files: dict[str, bytes]) -> None:
    for name in BUILDERS:
        assert extract(name, files[name]) == extract(name, bytes(files[name]))


def _one_line(error: pytest.ExceptionInfo[Unreadable]) -> str:
    message = str(error.value)
    assert message and "\n" not in message and "Traceback" not in message and 'File "' not in message
    return message


@pytest.mark.parametrize("name", list(BUILDERS))
def test_html_named_as_an_office_file_is_mislabelled(files: dict[str, bytes], name: str) -> None:
    with pytest.raises(Unreadable) as error:
        extract(name, files["html"])
    assert "rename it to .html" in _one_line(error)


@pytest.mark.parametrize("name", list(BUILDERS))
def test_zero_byte_files_are_unreadable(name: str) -> None:
    with pytest.raises(Unreadable) as error:
        extract(name, b"")
    assert "empty" in _one_line(error)


@pytest.mark.parametrize("name", list(BUILDERS))
def test_a_truncated_file_is_unreadable_in_one_line(files: dict[str, bytes], name: str) -> None:
    with pytest.raises(Unreadable) as error:
        extract(name, files[name][: len(files[name]) // 2])
    _one_line(error)


@pytest.mark.parametrize("name", list(BUILDERS))
def test_a_damaged_member_is_unreadable_in_one_line(files: dict[str, bytes], name: str) -> None:
    source = zipfile.ZipFile(io.BytesIO(files[name]))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as broken:
        for info in source.infolist():
            body = source.read(info)
            broken.writestr(info, body[: len(body) // 3] if info.filename.endswith(".xml") else body)
    with pytest.raises(Unreadable) as error:
        extract(name, out.getvalue())
    _one_line(error)


@pytest.mark.parametrize("name", ["docx", "pptx", "xlsx"])
def test_an_ole_file_is_said_to_be_encrypted_or_old(name: str) -> None:
    with pytest.raises(Unreadable) as error:
        extract(name, m.OLE_HEADER + b"\0" * 1024)
    message = _one_line(error)
    assert "password" in message and f".{name}" in message


def test_a_zip_of_another_format_names_it(files: dict[str, bytes]) -> None:
    with pytest.raises(Unreadable) as error:
        extract("docx", files["xlsx"])
    assert "an Excel workbook; rename it to .xlsx" in _one_line(error)
    with pytest.raises(Unreadable) as error:
        extract("pptx", files["docx"])
    assert "rename it to .docx" in _one_line(error)
    plain = io.BytesIO()
    with zipfile.ZipFile(plain, "w") as archive:
        archive.writestr("readme.txt", "hello")
    for name in BUILDERS:
        with pytest.raises(Unreadable) as error:
            extract(name, plain.getvalue())
        _one_line(error)


def test_an_epub_under_drm_is_refused(files: dict[str, bytes]) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(files["epub"])) as source, zipfile.ZipFile(out, "w") as book:
        for info in source.infolist():
            book.writestr(info, source.read(info))
        book.writestr(
            "META-INF/encryption.xml",
            '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
            'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
            '<enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>'
            "</enc:EncryptedData></encryption>",
        )
    with pytest.raises(Unreadable) as error:
        extract("epub", out.getvalue())
    assert "DRM" in _one_line(error)


def test_xml_entities_are_not_expanded(files: dict[str, bytes]) -> None:
    out = io.BytesIO()
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE c [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="&b;"/></rootfiles></container>'
    )
    with zipfile.ZipFile(io.BytesIO(files["epub"])) as source, zipfile.ZipFile(out, "w") as book:
        for info in source.infolist():
            book.writestr(info, bomb if info.filename == "META-INF/container.xml" else source.read(info))
    with pytest.raises(Unreadable) as error:
        extract("epub", out.getvalue())
    assert "package file" in _one_line(error)


def test_documents_without_text_give_empty_text(tmp_path: Path) -> None:
    import docx
    import openpyxl
    from pptx import Presentation

    docx.Document().save(str(tmp_path / "empty.docx"))
    Presentation().save(str(tmp_path / "empty.pptx"))
    deck = Presentation()
    deck.slides.add_slide(deck.slide_layouts[6])
    deck.save(str(tmp_path / "blank.pptx"))
    openpyxl.Workbook().save(str(tmp_path / "empty.xlsx"))
    for name in ("empty.docx", "empty.pptx", "blank.pptx", "empty.xlsx"):
        extracted = extract(name.split(".")[1], (tmp_path / name).read_bytes())
        assert extracted.text == "" and extracted.pages == ()


def test_registered_with_their_labels_and_library_versions() -> None:
    expected = {"docx": ("", "mammoth-"), "pptx": ("slide", "python-pptx-"), "xlsx": ("sheet", "openpyxl-")}
    expected["epub"] = ("", "lxml-")
    for name, (label, library) in expected.items():
        extractor = formats.for_suffix(f".{name}")
        assert extractor is not None and extractor.name == name and extractor.page_label == label
        assert library in extractor.version and "missing" not in extractor.version
    assert epub.MAX_PART_BYTES > 0
