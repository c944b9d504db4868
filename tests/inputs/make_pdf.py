"""PDF fixtures for the document tests, written with reportlab (and pypdf for encryption).

Each builder writes one PDF to the path it is given and returns that path. The text on each page
is fixed and named by the constants below, so a test can look for a sentence and the page it is on.
The unencrypted builders are deterministic: the same call writes the same bytes (reportlab's
invariant mode).

``write_report`` (4 pages, the main fixture):

- page 1: heading ``TITLE`` (24 pt), paragraph ``INTRO`` (11 pt), heading ``BACKGROUND`` (16 pt),
  a paragraph whose first line ends in ``HYPHEN_HEAD`` and whose second starts with
  ``HYPHEN_TAIL`` (``measure-`` / ``ments``), then the bullet list ``BULLETS`` (``•`` items);
- page 2: heading ``COLUMNS`` (16 pt) across the page, then two columns of 11 pt text:
  ``LEFT_COLUMN`` lines on the left (paragraphs of 2 and 2), ``RIGHT_COLUMN`` lines on the right
  (paragraphs of 1 and 3);
- page 3: heading ``RESULTS`` (16 pt), the sentence ``PAGE3_SENTENCE``, a table drawn as a grid of
  lines with ``TABLE_HEADER`` and ``TABLE_ROWS``, then ``AFTER_TABLE``;
- page 4: heading ``CLOSING`` (13 pt, a third heading size) and ``PAGE4_SENTENCE``.
"""

from __future__ import annotations

import io
from pathlib import Path

TITLE = "Retrieval Benchmark Report"
INTRO = (
    "This report compares retrieval settings on a small corpus.",
    "Each section below looks at one part of the pipeline.",
)
BACKGROUND = "Background"
HYPHEN_HEAD = "The latency figures come from repeated measure-"
HYPHEN_TAIL = "ments on one machine, taken after a warm-up run."
BULLETS = ("Chunk size changes recall the most.", "Overlap helps short questions.", "Reranking costs latency.")
COLUMNS = "Two Column Layout"
LEFT_COLUMN = (
    "Left column opens the story here.",
    "It keeps going down the left side,",
    "line after line in its own lane,",
    "and the left column ends right here.",
)
RIGHT_COLUMN = (
    "Right column begins after that.",
    "It is read only once the left",
    "column has been read to the end,",
    "and the right column ends here.",
)
RESULTS = "Results"
PAGE3_SENTENCE = "The sentence known to be on page three is this one."
TABLE_HEADER = ("Model", "Recall", "Latency")
TABLE_ROWS = (("minilm", "0.71", "12ms"), ("bge-small", "0.78", "19ms"), ("e5-base", "0.81", "35ms"))
AFTER_TABLE = "The table above lists every model that was tried."
CLOSING = "Closing Remarks"
PAGE4_SENTENCE = "The last page closes the report with this sentence."

SCAN_PAGES = 2
LONG_PAGES = 200
USER_PASSWORD = "secret"
OWNER_PASSWORD = "owner-only"

_BODY = ("Vera", 11)
_LEAD = 14  # body line spacing, points


def _canvas(target: Path | io.BytesIO):
    """A canvas whose fonts are reportlab's own Bitstream Vera, embedded as TrueType subsets with a
    ToUnicode map, as real PDFs have (the standard 14 fonts would read "•" back as "(cid:127)")."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.pdfgen import canvas

    for name, file in (("Vera", "Vera.ttf"), ("Vera-Bold", "VeraBd.ttf")):
        if name not in pdfmetrics.getRegisteredFontNames():
            pdfmetrics.registerFont(TTFont(name, file))

    return canvas.Canvas(target if isinstance(target, io.BytesIO) else str(target), pagesize=A4, invariant=1)


def _lines(c, x: float, y: float, lines: tuple[str, ...], font: tuple[str, int] = _BODY) -> float:
    """Draws lines top down from baseline y; returns the baseline below the last one."""
    c.setFont(*font)
    for line in lines:
        c.drawString(x, y, line)
        y -= font[1] * 1.3 if font[1] > _BODY[1] else _LEAD
    return y


def _heading(c, x: float, y: float, text: str, size: int) -> float:
    c.setFont("Vera-Bold", size)
    c.drawString(x, y, text)
    return y - size * 1.6


def _report(target: Path | io.BytesIO) -> None:
    c = _canvas(target)
    # page 1: headings, paragraphs, a hyphenated word, a bullet list
    y = _heading(c, 72, 770, TITLE, 24)
    y = _lines(c, 72, y, INTRO) - _LEAD
    y = _heading(c, 72, y, BACKGROUND, 16)
    y = _lines(c, 72, y, (HYPHEN_HEAD, HYPHEN_TAIL)) - _LEAD
    c.setFont(*_BODY)
    for item in BULLETS:
        c.drawString(80, y, "•")
        c.drawString(92, y, item)
        y -= _LEAD
    c.showPage()
    # page 2: a heading across the page, then two columns
    # paragraph breaks at different heights in the two columns, so no row reads straight across
    y = _heading(c, 72, 770, COLUMNS, 16)
    _lines(c, 72, _lines(c, 72, y, LEFT_COLUMN[:2]) - _LEAD, LEFT_COLUMN[2:])
    _lines(c, 320, _lines(c, 320, y, RIGHT_COLUMN[:1]) - _LEAD, RIGHT_COLUMN[1:])
    c.showPage()
    # page 3: a sentence, a table drawn as a grid of lines, a sentence after it
    y = _heading(c, 72, 770, RESULTS, 16)
    y = _lines(c, 72, y, (PAGE3_SENTENCE,)) - _LEAD
    rows = (TABLE_HEADER, *TABLE_ROWS)
    widths, height = (120, 90, 90), 22
    xs = [72.0]
    for w in widths:
        xs.append(xs[-1] + w)
    top = y
    ys = [top - i * height for i in range(len(rows) + 1)]
    c.setLineWidth(0.8)
    for yy in ys:
        c.line(xs[0], yy, xs[-1], yy)
    for xx in xs:
        c.line(xx, ys[0], xx, ys[-1])
    for r, row in enumerate(rows):
        c.setFont("Vera-Bold" if r == 0 else "Vera", 11)
        for i, cell in enumerate(row):
            c.drawString(xs[i] + 6, ys[r] - 15, cell)
    _lines(c, 72, ys[-1] - 2 * _LEAD, (AFTER_TABLE,))
    c.showPage()
    # page 4: a third heading size, a closing sentence
    y = _heading(c, 72, 770, CLOSING, 13)
    _lines(c, 72, y, (PAGE4_SENTENCE,))
    c.showPage()
    c.save()


def report_bytes() -> bytes:
    """The bytes ``write_report`` writes."""
    buffer = io.BytesIO()
    _report(buffer)
    return buffer.getvalue()


def write_report(path: Path) -> Path:
    """The 4-page report described in the module docstring: headings in three sizes, paragraphs,
    a hyphenated word, a bullet list, a two-column page, a table drawn with lines."""
    path.write_bytes(report_bytes())
    return path


def write_scan(path: Path, pages: int = SCAN_PAGES) -> Path:
    """A scan-like PDF: ``pages`` pages, each one grey image with dark bars, and no text layer."""
    from PIL import Image, ImageDraw
    from reportlab.lib.utils import ImageReader

    c = _canvas(path)
    for p in range(pages):
        image = Image.new("L", (400, 560), 230)
        draw = ImageDraw.Draw(image)
        for row in range(40, 520, 24):
            draw.rectangle((40, row, 360 - 15 * ((row + p) % 7), row + 10), fill=40)
        c.drawImage(ImageReader(image), 50, 50, width=495, height=740)
        c.showPage()
    c.save()
    return path


def write_partly_scanned(path: Path) -> Path:
    """3 pages: page 1 holds the ``INTRO`` lines as text, pages 2 and 3 are images only (so 2 of 3
    pages have no text layer)."""
    from PIL import Image
    from reportlab.lib.utils import ImageReader

    c = _canvas(path)
    _lines(c, 72, 770, INTRO)
    c.showPage()
    for _ in range(2):
        c.drawImage(ImageReader(Image.new("L", (200, 280), 200)), 50, 50, width=495, height=740)
        c.showPage()
    c.save()
    return path


def _encrypt(path: Path, user_password: str) -> Path:
    from pypdf import PdfReader, PdfWriter
    from pypdf.constants import UserAccessPermissions

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(report_bytes())))
    # printing only, no copying: what an owner password is usually set for
    writer.encrypt(
        user_password=user_password,
        owner_password=OWNER_PASSWORD,
        algorithm="AES-128",
        permissions_flag=UserAccessPermissions.PRINT,
    )
    buffer = io.BytesIO()
    writer.write(buffer)
    path.write_bytes(buffer.getvalue())
    return path


def write_encrypted(path: Path) -> Path:
    """The report encrypted (AES-128) with the user password ``USER_PASSWORD``: it cannot be opened
    without it."""
    return _encrypt(path, USER_PASSWORD)


def write_owner_only(path: Path) -> Path:
    """The report encrypted (AES-128) with an owner password only (empty user password) that forbids
    copying: it opens without a password, and reads the same as ``write_report``."""
    return _encrypt(path, "")


def write_truncated(path: Path) -> Path:
    """The report cut to its first half: it starts ``%PDF-`` but its cross-reference table and end
    are missing."""
    data = report_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def write_corrupt(path: Path) -> Path:
    """A file with a PDF header and end marker but garbage between them."""
    path.write_bytes(b"%PDF-1.4\n" + bytes(range(256)) * 8 + b"\nstartxref\n99999\n%%EOF\n")
    return path


def write_html_as_pdf(path: Path) -> Path:
    """An HTML page saved under a .pdf name (as browsers do with a failed download)."""
    path.write_bytes(b"<!DOCTYPE html>\n<html><head><title>Not found</title></head><body>404</body></html>\n")
    return path


def long_sentence(page: int, line: int) -> str:
    """The body line ``line`` (from 0) of page ``page`` (from 1) of ``write_long``."""
    return f"Page {page} line {line}: retrieval quality depends on chunking and the embedding model."


def write_long(path: Path, pages: int = LONG_PAGES) -> Path:
    """A text-only PDF of ``pages`` pages, for speed: each page a 16 pt heading ``Section {page}``
    and 40 body lines ``long_sentence(page, line)`` in 4 paragraphs of 10."""
    c = _canvas(path)
    for p in range(1, pages + 1):
        y = _heading(c, 72, 780, f"Section {p}", 16)
        for block in range(4):
            y = _lines(c, 72, y, tuple(long_sentence(p, block * 10 + i) for i in range(10))) - _LEAD
        c.showPage()
    c.save()
    return path


FLOW_TITLE = "Flowing Layout Study"
FLOW_SECTION = "Method"
FLOW_SENTENCES = tuple(
    f"Sentence {i} of the flowing study says that {topic} matters for retrieval quality."
    for i, topic in enumerate(("chunk size", "overlap", "the tokenizer", "the index", "reranking", "the model"))
)
FLOW_LEFT = "The left frame of the flowing page starts with this sentence."
FLOW_RIGHT = "The right frame of the flowing page starts with this sentence."
FLOW_TABLE = (
    ("Setting", "What it changes in the pipeline"),
    ("chunk size", "how much text each vector stands for, and so how precise a hit can be"),
    ("overlap", "whether a sentence cut at a chunk border is still found whole"),
)


def write_flowing(path: Path) -> Path:
    """A 3-page document laid out by reportlab's platypus, as word processors lay out text: justified
    paragraphs wrapped by the layout engine rather than placed line by line.

    - page 1: heading ``FLOW_TITLE`` (22 pt), heading ``FLOW_SECTION`` (15 pt), then three justified
      10 pt paragraphs, each made of all of ``FLOW_SENTENCES``;
    - page 2: two frames side by side; the left starts with ``FLOW_LEFT``, the right with
      ``FLOW_RIGHT``, each followed by justified paragraphs of ``FLOW_SENTENCES``;
    - page 3: a two-column grid table ``FLOW_TABLE`` whose long cells wrap over several lines.
    """
    from reportlab.lib import colors
    from reportlab.lib.enums import TA_JUSTIFY
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.platypus import (
        BaseDocTemplate,
        Frame,
        FrameBreak,
        NextPageTemplate,
        PageBreak,
        PageTemplate,
        Paragraph,
        Table,
        TableStyle,
    )

    _canvas(io.BytesIO())  # registers the fonts
    body = ParagraphStyle("body", fontName="Vera", fontSize=10, leading=13, alignment=TA_JUSTIFY, spaceAfter=8)
    h1 = ParagraphStyle("h1", fontName="Vera-Bold", fontSize=22, leading=28, spaceAfter=10)
    h2 = ParagraphStyle("h2", fontName="Vera-Bold", fontSize=15, leading=20, spaceAfter=6)
    width, height = A4
    doc = BaseDocTemplate(str(path), pagesize=A4, invariant=1)
    full = Frame(72, 72, width - 144, height - 144, id="full")
    gap, col = 24, (width - 144 - 24) / 2
    left, right = Frame(72, 72, col, height - 144, id="left"), Frame(72 + col + gap, 72, col, height - 144, id="right")
    doc.addPageTemplates([PageTemplate(id="one", frames=[full]), PageTemplate(id="two", frames=[left, right])])
    para = " ".join(FLOW_SENTENCES)
    story = [Paragraph(FLOW_TITLE, h1), Paragraph(FLOW_SECTION, h2)]
    story += [Paragraph(para, body) for _ in range(3)]
    story += [NextPageTemplate("two"), PageBreak(), Paragraph(FLOW_LEFT + " " + para, body), Paragraph(para, body)]
    story += [FrameBreak(), Paragraph(FLOW_RIGHT + " " + para, body), Paragraph(para, body)]
    story += [NextPageTemplate("one"), PageBreak()]
    cell = ParagraphStyle("cell", parent=body, alignment=0, spaceAfter=0)
    table = Table([[Paragraph(c, cell) for c in row] for row in FLOW_TABLE], colWidths=(110, 220))
    table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.8, colors.black), ("VALIGN", (0, 0), (-1, -1), "TOP")]))
    story.append(table)
    doc.build(story)
    return path
