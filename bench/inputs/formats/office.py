"""Office documents: Word (DOCX), PowerPoint (PPTX) and Excel (XLSX) as markdown.

DOCX goes through mammoth's HTML (headings, lists and tables by paragraph style) and the HTML
format's markdown step; slides and sheets are written as markdown directly, one ``##`` section and
one page per slide or sheet.
"""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from bench.inputs.formats.base import Extracted, Extractor, Unreadable, mislabelled
from bench.inputs.formats.html import OUTPUT_VERSION as HTML_VERSION
from bench.inputs.formats.html import to_markdown, versions
from bench.inputs.formats.limits import LIMITS, MB, RATIO_FLOOR, Limits

OUTPUT_VERSION = "1"  # bump when the text this module gives changes for the same bytes
MAX_ROWS_PER_SHEET = 100_000  # beyond this a sheet is data, not a document; the rest is left out, and said so
OLE_MAGIC = b"\xd0\xcf\x11\xe0"
# Where each Office or EPUB zip keeps its main part, to tell a user which format a zip really is.
_ZIP_KINDS = (("word/", "a Word document", ".docx"), ("ppt/", "a PowerPoint deck", ".pptx"),
              ("xl/", "an Excel workbook", ".xlsx"), ("mimetype", "an EPUB book", ".epub"))  # fmt: skip


_MEMBER_HEADER = b"PK\x01\x02"  # the signature of a member's entry in a zip's central directory


def open_zip(data: bytes, expected: str, suffix: str, limits: Limits = LIMITS) -> zipfile.ZipFile:
    """The file as a zip, or Unreadable saying what it is instead (an old or encrypted Office file,
    another format renamed, a damaged zip, a zip bomb)."""
    if data.startswith(OLE_MAGIC):
        raise Unreadable(
            f"an OLE compound file, not {expected}: either password-protected (open it, remove the "
            f"password, save it again) or an older format renamed {suffix} (save it as {suffix})"
        )
    if not data.startswith(b"PK"):
        raise mislabelled(data, expected, suffix)
    # zipfile lists every member before any is read: count them first, by their central-directory
    # headers (a signature met by chance in packed data only overcounts, by one in billions of bytes)
    entries = data.count(_MEMBER_HEADER)
    if entries > limits.max_zip_entries:
        raise limits.over(f"a zip of {entries:,} members", "max_zip_entries", fix="replace it")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError):
        raise Unreadable(
            f"{expected} ({suffix}) cut short or damaged (not a whole zip); copy or save it again"
        ) from None
    _check_unpacked(archive, limits)
    return archive


def _check_unpacked(archive: zipfile.ZipFile, limits: Limits) -> None:
    """Unreadable when the members would unpack beyond the limits, by the sizes the zip declares.

    Every library here reads members through ``zipfile``, which never gives more than a member's
    declared size (a member that would unpack to more fails its checksum instead), so the declared
    sizes bound what is really unpacked; ``read_member`` counts the bytes as well."""
    members = archive.infolist()
    total = sum(m.file_size for m in members)
    if total > limits.max_unpacked_mb * MB:
        what = f"a zip bomb or a huge file: it unpacks to {total / MB:,.0f} MB"
        raise limits.over(what, "max_unpacked_mb", " MB", fix="replace it")
    for m in members:
        if m.file_size > RATIO_FLOOR and m.file_size > limits.max_zip_ratio * max(m.compress_size, 1):
            ratio = m.file_size / max(m.compress_size, 1)
            what = f"a zip bomb: {m.filename} unpacks to {ratio:,.0f} times its packed size"
            raise limits.over(what, "max_zip_ratio", "", fix="replace it")


def read_member(archive: zipfile.ZipFile, name: str, limit: int) -> bytes:
    """A member's bytes, read in pieces and refused past ``limit`` bytes unpacked, whatever its
    declared size says."""
    parts, size = [], 0
    with archive.open(name) as member:
        while piece := member.read(MB):
            size += len(piece)
            if size > limit:
                raise Unreadable(f"a zip bomb: {name} unpacks to over {limit / MB:,.0f} MB; replace it")
            parts.append(piece)
    return b"".join(parts)


def require_part(archive: zipfile.ZipFile, part: str, expected: str, suffix: str) -> None:
    """Unreadable, naming the zip's real format, when the archive lacks the part the format needs."""
    names = archive.namelist()
    if any(n == part or n.startswith(part) for n in names):
        return
    for prefix, kind, real in _ZIP_KINDS:
        if any(n.startswith(prefix) for n in names):
            raise Unreadable(f"not {expected} though named {suffix}: it is {kind}; rename it to {real}")
    raise Unreadable(f"a zip archive, not {expected} (it has no {part}); replace it with a real {suffix} file")


def one_line(e: BaseException) -> str:
    """An exception's message on one line, its class name when it has none."""
    text = " ".join(str(e).split())
    return (text[:200] + "…" if len(text) > 200 else text) or type(e).__name__


def failed(what: str, e: BaseException) -> Unreadable:
    return Unreadable(f"{what} that cannot be read ({one_line(e)}); open and save it again, or export it as PDF")


def finish(sections: Sequence[str], notes: Iterable[str] = (), paged: bool = True) -> Extracted:
    """Sections joined by blank lines, with the offset each starts at as its page."""
    text, pages = "", []
    for section in sections:
        if text:
            text += "\n\n"
        pages.append(len(text))
        text += section
    return Extracted(text, tuple(pages) if paged else (), tuple(notes))


def cell_text(value: Any) -> str:
    """A value as a table cell shows it: one line, ``|`` escaped, whole numbers without ``.0``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        text = "TRUE" if value else "FALSE"
    elif isinstance(value, float):
        text = f"{value:.15g}"  # Excel shows 15 significant digits: 0.1 + 0.2 reads 0.3
    elif isinstance(value, dt.datetime) and value.time() == dt.time():
        text = value.date().isoformat()
    elif isinstance(value, dt.date | dt.time):
        text = value.isoformat()
    else:
        text = str(value)
    return " ".join(text.split()).replace("|", "\\|")


def table(rows: Sequence[Sequence[str]]) -> str:
    """A markdown table, the first row its header, short rows padded."""
    width = max(len(r) for r in rows)
    lines = ["| " + " | ".join([*r, *[""] * (width - len(r))]) + " |" for r in rows]
    lines.insert(1, "|" + " --- |" * width)  # as the HTML tables read
    return "\n".join(line.replace("  |", " |") for line in lines)


# --- DOCX -----------------------------------------------------------------------------------------


def extract_docx(data: bytes, limits: Limits = LIMITS) -> Extracted:
    """A Word document through mammoth's HTML: headings, lists and tables by paragraph style."""
    import mammoth

    archive = open_zip(data, "a Word document", ".docx", limits)
    require_part(archive, "word/document.xml", "a Word document", ".docx")
    # Images become bare <img> tags (the markdown drops them) rather than base64 data: faster.
    no_images = mammoth.images.img_element(lambda image: {})
    try:
        html = mammoth.convert_to_html(io.BytesIO(data), convert_image=no_images).value
    except Exception as e:  # mammoth raises whatever its XML and zip reading meet
        raise failed("a Word document", e) from None
    return Extracted(to_markdown(html, limits))


# --- PPTX -----------------------------------------------------------------------------------------


def extract_pptx(data: bytes, limits: Limits = LIMITS) -> Extracted:
    """Slides as ``## title`` sections: text frames (bullets by level), tables, groups, then notes."""
    from pptx import Presentation

    archive = open_zip(data, "a PowerPoint deck", ".pptx", limits)
    require_part(archive, "ppt/presentation.xml", "a PowerPoint deck", ".pptx")
    try:
        deck = Presentation(io.BytesIO(data))
        slides = [_slide(number, slide) for number, slide in enumerate(deck.slides, 1)]
    except Exception as e:  # python-pptx raises KeyError, ValueError, lxml errors on a broken part
        raise failed("a PowerPoint deck", e) from None
    if not any(has_text for _, has_text in slides):
        return Extracted("")
    return finish([text for text, _ in slides])


def _slide(number: int, slide: Any) -> tuple[str, bool]:
    """A slide's markdown, and whether it holds any text beyond its heading."""
    title_shape = slide.shapes.title
    title = _flat(title_shape.text_frame.text) if title_shape is not None and title_shape.has_text_frame else ""
    blocks = list(_shapes(slide.shapes, skip=title_shape))
    if slide.has_notes_slide:
        frame = slide.notes_slide.notes_text_frame
        notes = [_flat(p.text) for p in frame.paragraphs] if frame is not None else []
        if any(notes):
            blocks.append("Notes:\n\n" + "\n\n".join(n for n in notes if n))
    has_text = bool(title or blocks)
    return "\n\n".join([f"## {title or f'Slide {number}'}", *blocks]), has_text


def _shapes(shapes: Iterable[Any], skip: Any = None) -> Iterator[str]:
    """Each shape's text as a markdown block, in the slide's order, group shapes recursed."""
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    for shape in shapes:
        if skip is not None and shape.shape_id == skip.shape_id:
            continue
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            yield from _shapes(shape.shapes)
        elif getattr(shape, "has_table", False) and shape.has_table:
            rows = [[cell_text(_flat(cell.text)) for cell in row.cells] for row in shape.table.rows]
            if any(any(r) for r in rows):
                yield table(rows)
        elif shape.has_text_frame:
            block = _frame(shape.text_frame, _is_body(shape))
            if block:
                yield block


def _is_body(shape: Any) -> bool:
    """Whether the shape is a content placeholder, whose paragraphs are bullets unless marked otherwise."""
    from pptx.enum.shapes import PP_PLACEHOLDER

    if not shape.is_placeholder:
        return False
    return shape.placeholder_format.type in (PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT)


def _frame(frame: Any, body: bool) -> str:
    """A text frame's paragraphs: bullets as ``-`` items indented by level, others as plain lines."""
    lines: list[str] = []
    for paragraph in frame.paragraphs:
        text = _flat(paragraph.text)
        if not text:
            continue
        ppr = paragraph._p.pPr  # the bullet marks live in the XML only
        marks = {child.tag.rsplit("}", 1)[-1] for child in ppr} if ppr is not None else set()
        bullet = "buNone" not in marks and (body or bool(marks & {"buChar", "buAutoNum"}))
        if bullet:
            lines.append("  " * paragraph.level + "- " + text)
        else:
            if lines and lines[-1].lstrip().startswith("- "):
                lines.append("")  # a paragraph after a list is its own block
            lines.append(text)
    return "\n".join(lines)


def _flat(text: str) -> str:
    """One line: a slide's line breaks (vertical tabs) and runs of spaces become single spaces."""
    return " ".join(text.split())


# --- XLSX -----------------------------------------------------------------------------------------


def extract_xlsx(data: bytes, limits: Limits = LIMITS) -> Extracted:
    """Each sheet as ``## name`` and a markdown table of its used rows (cached values, not formulas)."""
    import openpyxl

    archive = open_zip(data, "an Excel workbook", ".xlsx", limits)
    require_part(archive, "xl/workbook.xml", "an Excel workbook", ".xlsx")
    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as e:  # openpyxl raises InvalidFileException, KeyError, lxml errors
        raise failed("an Excel workbook", e) from None
    sections, notes, any_cell = [], [], False
    try:
        for sheet in book.worksheets:
            rows, cut = _sheet_rows(sheet)
            any_cell = any_cell or bool(rows)
            sections.append(f"## {_flat(sheet.title)}" + (f"\n\n{table(rows)}" if rows else ""))
            if cut:
                notes.append(f"sheet {sheet.title!r}: only its first {MAX_ROWS_PER_SHEET:,} rows were read")
    except Exception as e:
        raise failed("an Excel workbook", e) from None
    finally:
        book.close()
    return finish(sections, notes) if any_cell else Extracted("")


def _sheet_rows(sheet: Any) -> tuple[list[list[str]], bool]:
    """A sheet's non-empty rows as cell texts, empty columns at the right dropped; and whether it was cut."""
    if hasattr(sheet, "reset_dimensions"):
        sheet.reset_dimensions()  # some writers record a wrong used range; read what is there
    rows: list[list[str]] = []
    cut = False
    for values in sheet.iter_rows(values_only=True):
        cells = [cell_text(v) for v in values]
        while cells and not cells[-1]:
            cells.pop()
        if not cells:
            continue
        if len(rows) == MAX_ROWS_PER_SHEET:
            cut = True
            break
        rows.append(cells)
    return rows, cut


EXTRACTORS = (
    Extractor(
        name="docx",
        suffixes=(".docx",),
        extract=extract_docx,
        version=f"{OUTPUT_VERSION}+html-{HTML_VERSION}" + versions("mammoth", "beautifulsoup4", "lxml", "markdownify"),
    ),
    Extractor(
        name="pptx",
        suffixes=(".pptx",),
        extract=extract_pptx,
        version=OUTPUT_VERSION + versions("python-pptx"),
        page_label="slide",
    ),
    Extractor(
        name="xlsx",
        suffixes=(".xlsx",),
        extract=extract_xlsx,
        version=OUTPUT_VERSION + versions("openpyxl"),
        page_label="sheet",
    ),
)
