"""HTML, DOCX, PPTX, XLSX and EPUB fixtures for the document tests.

Each ``write_*`` builder writes one file to the path it is given and returns that path. The text in
each is fixed by the constants below, so a test can look for a sentence where it should be (and
for boilerplate where it should not):

- ``write_html_article``: a page whose ``<main>`` holds an ``<article>``: ``HTML_TITLE`` (h1, in the
  article's own ``<header>``), ``HTML_INTRO`` (a link and a bold word in it, a ``&nbsp;``),
  ``HTML_QUOTE`` (curly quotes), ``HTML_SECTION`` (h2) with the list ``HTML_ITEMS``, the table
  ``HTML_TABLE`` (``<thead>``), and ``HTML_CLOSING``. Around it, boilerplate that must not come
  out: ``HTML_BOILERPLATE`` (a cookie banner, the site banner, the menu, a sidebar, the footer) and
  ``HTML_HIDDEN`` (hidden and script text). Links point at ``HTML_URL``.
- ``write_html_plain``: the same content without ``<main>`` or ``<article>`` (a ``<div>`` between
  a ``<header>``/``<nav>`` and a ``<footer>``), encoded as Windows-1252 with a ``<meta charset>``.
- ``write_docx``: ``DOCX_TITLE`` (Heading 1), ``DOCX_INTRO``, ``DOCX_SECTION`` (Heading 2),
  ``DOCX_BOLD_SENTENCE`` (its words ``DOCX_BOLD_WORDS`` in a bold run), the bulleted list
  ``DOCX_BULLETS``, the table ``DOCX_TABLE`` (first row the header), ``DOCX_CLOSING_HEADING``
  (Heading 2) and ``DOCX_CLOSING``.
- ``write_pptx``: three slides titled ``PPTX_TITLES``; slide 1 a subtitle ``PPTX_SUBTITLE``; slide 2
  bullets ``PPTX_BULLETS`` as (level, text) pairs at levels 0 and 1, and speaker notes
  ``PPTX_NOTES``; slide 3 the table ``PPTX_TABLE`` and a group shape holding ``PPTX_GROUPED``.
  ``write_pptx_untitled``: one slide without a title holding ``PPTX_UNTITLED``.
- ``write_xlsx``: sheet ``XLSX_SHEETS[0]`` holds ``XLSX_RESULTS`` (first row the header) and sheet
  ``XLSX_SHEETS[1]`` holds ``XLSX_NOTES``; ``write_xlsx_long(path, rows)`` one sheet of many rows.
- ``write_epub``: chapters ``EPUB_CHAPTERS`` as (heading, sentence) pairs in spine order; their
  files are named so that alphabetical or manifest order would put chapter 2 first.

``OLE_HEADER`` starts every OLE compound file: a password-protected Office file or an old .doc.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

HTML_TITLE = "Choosing a Chunk Size"
HTML_INTRO = "Chunk size changes recall more than any other setting we measured."
HTML_QUOTE = "As one reviewer put it, \u201csmaller chunks find the sentence, larger ones explain it.\u201d"
HTML_SECTION = "What We Tried"
HTML_ITEMS = ("Fixed windows of 256 tokens.", "Recursive splits on headings.", "Sentence windows with overlap.")
HTML_TABLE = (("Chunker", "Recall"), ("fixed", "0.71"), ("recursive", "0.78"))
HTML_CLOSING = "Recursive splitting kept the most answers intact across the corpus."
HTML_URL = "https://example.org/chunking/guide"
HTML_BOILERPLATE = (
    "We use cookies to improve your experience.",
    "Example Docs Home",
    "Pricing and Plans",
    "Related articles you may like",
    "Copyright 2024 Example Corp. All rights reserved.",
)
HTML_HIDDEN = ("This text is hidden from readers.", "window.analytics")

DOCX_TITLE = "Quarterly Retrieval Review"
DOCX_INTRO = "This document summarises the retrieval results of the last quarter."
DOCX_SECTION = "Findings"
DOCX_BOLD_SENTENCE = "The recall figure rose sharply after reranking was turned on."
DOCX_BOLD_WORDS = "rose sharply"
DOCX_BULLETS = ("Reranking helped long questions.", "Hybrid search helped names.", "Small models were fast enough.")
DOCX_TABLE = (("Setting", "Recall", "Latency"), ("dense", "0.74", "20ms"), ("hybrid", "0.81", "31ms"))
DOCX_CLOSING_HEADING = "Next Steps"
DOCX_CLOSING = "Next quarter we will measure the effect of chunk overlap."

PPTX_TITLES = ("Retrieval at a Glance", "What Changed", "Numbers")
PPTX_SUBTITLE = "A short tour of this quarter's results."
PPTX_BULLETS = (
    (0, "Recall went up on every corpus."),
    (1, "The legal corpus gained the most."),
    (1, "The news corpus gained the least."),
    (0, "Latency stayed under budget."),
)
PPTX_NOTES = "Mention that the legal corpus was re-chunked first."
PPTX_TABLE = (("Corpus", "Recall"), ("legal", "0.83"), ("news", "0.69"))
PPTX_GROUPED = "Grouped shapes carry this caption."
PPTX_UNTITLED = "A slide without any title placeholder."

XLSX_SHEETS = ("Results", "Notes")
XLSX_RESULTS = (("Model", "Recall", "Queries"), ("minilm", 0.71, 120), ("bge-small", 0.78, 120))
XLSX_NOTES = (("Topic", "Note"), ("scope", "Only English questions were scored."), ("owner", "Search team"))

EPUB_CHAPTERS = (
    ("The First Chapter", "The first chapter introduces the benchmark and its corpora."),
    ("The Second Chapter", "The second chapter reports the results on every corpus."),
)

OLE_HEADER = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def _html_body(wrap_in_main: bool) -> str:
    """The article of the HTML fixtures, with its boilerplate around it."""
    banner, home, pricing, related, copyright_ = HTML_BOILERPLATE
    hidden, script = HTML_HIDDEN
    intro_link = HTML_INTRO.replace("recall", f'<a href="{HTML_URL}">recall</a>').replace(
        "more than", "<strong>more</strong>&nbsp;than"
    )
    items = "".join(f"<li>{item}</li>" for item in HTML_ITEMS)
    head, *rows = HTML_TABLE
    table = (
        "<table><thead><tr>" + "".join(f"<th>{c}</th>" for c in head) + "</tr></thead><tbody>"
        + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
        + "</tbody></table>"
    )  # fmt: skip
    article = (
        f"<header><h1>{HTML_TITLE}</h1></header>\n<p>{intro_link}</p>\n<p>{HTML_QUOTE}</p>\n"
        f"<div hidden>{hidden}</div>\n<h2>{HTML_SECTION}</h2>\n<ul>{items}</ul>\n{table}\n"
        f'<p><em>{HTML_CLOSING}</em> <img src="chart.png" alt="a chart"></p>\n'
    )
    content = (
        f"<main><article>{article}</article><aside><h3>{related}</h3></aside></main>"
        if wrap_in_main
        else f'<div class="content">{article}</div><aside>{related}</aside>'
    )
    return (
        f'<div class="cookie-banner" role="dialog"><p>{banner}</p><button>OK</button></div>\n'
        f'<header><a href="/">{home}</a><nav><ul><li><a href="/pricing">{pricing}</a></li>'
        f'<li><a href="/docs">Docs</a></li></ul></nav></header>\n{content}\n'
        f"<footer><p>{copyright_}</p></footer>\n<script>{script}('page');</script>\n"
    )


def write_html_article(path: Path) -> Path:
    """A UTF-8 page whose ``<main><article>`` holds the content, boilerplate around it."""
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Guide</title>'
        f"<style>body {{ color: black; }}</style></head>\n<body>\n{_html_body(True)}</body></html>\n"
    )
    path.write_bytes(page.encode("utf-8"))
    return path


def write_html_plain(path: Path) -> Path:
    """The same page with no ``<main>`` or ``<article>``, in Windows-1252 declared by ``<meta charset>``."""
    page = (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1252">'
        f"<title>Guide</title></head>\n<body>\n{_html_body(False)}</body></html>\n"
    )
    path.write_bytes(page.encode("cp1252"))
    return path


def write_docx(path: Path) -> Path:
    """A Word document with two heading levels, a bold run, a bulleted list and a table."""
    import docx

    document = docx.Document()
    document.add_heading(DOCX_TITLE, level=1)
    document.add_paragraph(DOCX_INTRO)
    document.add_heading(DOCX_SECTION, level=2)
    before, after = DOCX_BOLD_SENTENCE.split(DOCX_BOLD_WORDS)
    paragraph = document.add_paragraph(before)
    paragraph.add_run(DOCX_BOLD_WORDS).bold = True
    paragraph.add_run(after)
    for item in DOCX_BULLETS:
        document.add_paragraph(item, style="List Bullet")
    table = document.add_table(rows=len(DOCX_TABLE), cols=len(DOCX_TABLE[0]))
    for r, row in enumerate(DOCX_TABLE):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_heading(DOCX_CLOSING_HEADING, level=2)
    document.add_paragraph(DOCX_CLOSING)
    document.save(str(path))
    return path


def write_pptx(path: Path) -> Path:
    """Three slides: a title slide, bullets at two levels with notes, a table and a group shape."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[0])  # Title Slide
    first.shapes.title.text = PPTX_TITLES[0]
    first.placeholders[1].text = PPTX_SUBTITLE
    second = deck.slides.add_slide(deck.slide_layouts[1])  # Title and Content
    second.shapes.title.text = PPTX_TITLES[1]
    frame = second.placeholders[1].text_frame
    for i, (level, text) in enumerate(PPTX_BULLETS):
        paragraph = frame.paragraphs[0] if i == 0 else frame.add_paragraph()
        paragraph.text = text
        paragraph.level = level
    second.notes_slide.notes_text_frame.text = PPTX_NOTES
    third = deck.slides.add_slide(deck.slide_layouts[5])  # Title Only
    third.shapes.title.text = PPTX_TITLES[2]
    rows, cols = len(PPTX_TABLE), len(PPTX_TABLE[0])
    table = third.shapes.add_table(rows, cols, Inches(1), Inches(2), Inches(6), Inches(2)).table
    for r, row in enumerate(PPTX_TABLE):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    group = third.shapes.add_group_shape()
    group.shapes.add_textbox(Inches(1), Inches(5), Inches(6), Inches(1)).text_frame.text = PPTX_GROUPED
    deck.save(str(path))
    return path


def write_pptx_untitled(path: Path) -> Path:
    """One blank-layout slide (no title) with a text box holding ``PPTX_UNTITLED``."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])  # Blank
    slide.shapes.add_textbox(Inches(1), Inches(1), Inches(6), Inches(1)).text_frame.text = PPTX_UNTITLED
    deck.save(str(path))
    return path


def write_xlsx(path: Path) -> Path:
    """A workbook of two sheets, ``XLSX_RESULTS`` (numbers) and ``XLSX_NOTES`` (text)."""
    import openpyxl

    book = openpyxl.Workbook()
    first = book.active
    assert first is not None
    first.title = XLSX_SHEETS[0]
    for row in XLSX_RESULTS:
        first.append(list(row))
    second = book.create_sheet(XLSX_SHEETS[1])
    for row in XLSX_NOTES:
        second.append(list(row))
    book.save(str(path))
    return path


def write_xlsx_long(path: Path, rows: int) -> Path:
    """One sheet, "Long": a header ("n", "square") and then ``rows`` rows of ``n``, ``n * n``."""
    import openpyxl

    book = openpyxl.Workbook(write_only=True)
    sheet = book.create_sheet("Long")
    sheet.append(["n", "square"])
    for n in range(1, rows + 1):
        sheet.append([n, n * n])
    book.save(str(path))
    return path


_CONTAINER = (
    '<?xml version="1.0"?>\n<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
    '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
    "</rootfiles></container>"
)


def write_epub(path: Path) -> Path:
    """An EPUB 3 of two chapters (and a nav document outside the spine), written as a zip by hand."""
    # Chapter 1 lives in z_intro.xhtml and chapter 2 in a_results.xhtml, listed second-first in the
    # manifest: only the spine gives the reading order.
    files = ("text/z_intro.xhtml", "text/a_results.xhtml")
    manifest = "".join(f'<item id="ch{i + 1}" href="{files[i]}" media-type="application/xhtml+xml"/>' for i in (1, 0))
    opf = (
        '<?xml version="1.0" encoding="utf-8"?>\n<package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
        'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        '<dc:identifier id="id">urn:uuid:bench-fixture</dc:identifier><dc:title>Fixture</dc:title>'
        f'</metadata><manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" '
        f'properties="nav"/>{manifest}</manifest><spine><itemref idref="ch1"/><itemref idref="ch2"/></spine></package>'
    )
    nav = (
        '<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml" '
        'xmlns:epub="http://www.idpf.org/2007/ops"><head><title>Contents</title></head><body>'
        '<nav epub:type="toc"><ol><li><a href="text/z_intro.xhtml">One</a></li></ol></nav></body></html>'
    )
    with zipfile.ZipFile(path, "w") as book:
        # The mimetype entry comes first and uncompressed, as the EPUB container format requires.
        book.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr("META-INF/container.xml", _CONTAINER, compress_type=zipfile.ZIP_DEFLATED)
        book.writestr("OEBPS/content.opf", opf, compress_type=zipfile.ZIP_DEFLATED)
        book.writestr("OEBPS/nav.xhtml", nav, compress_type=zipfile.ZIP_DEFLATED)
        for name, (heading, sentence) in zip(files, EPUB_CHAPTERS, strict=True):
            chapter = (
                '<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">'
                f"<head><title>{heading}</title></head><body><section><h1>{heading}</h1>"
                f"<p>{sentence}</p></section></body></html>"
            )
            book.writestr("OEBPS/" + name, chapter, compress_type=zipfile.ZIP_DEFLATED)
    return path
