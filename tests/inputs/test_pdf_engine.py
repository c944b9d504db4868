"""PDFium's characters against pdfminer's own, and the layout analysis's order made deterministic."""

from __future__ import annotations

import io

import pytest

from bench.inputs.formats import pdf_engine
from bench.inputs.formats.pdf_engine import PageBox
from bench.inputs.formats.pdf_layout import text_boxes
from bench.inputs.formats.pdf_page import Char, PageContent
from tests.inputs import make_pdf


def _pdfminer_chars(data: bytes) -> list[list[tuple[str, float, float, float, float, float, bool]]]:
    """Every page's characters as pdfminer reads them (an independent reader), spaces left out."""
    from pdfminer.converter import PDFPageAggregator
    from pdfminer.layout import LTChar
    from pdfminer.pdfdocument import PDFDocument
    from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
    from pdfminer.pdfpage import PDFPage
    from pdfminer.pdfparser import PDFParser

    manager = PDFResourceManager()
    device = PDFPageAggregator(manager, laparams=None)
    interpreter = PDFPageInterpreter(manager, device)
    pages = []
    for page in PDFPage.create_pages(PDFDocument(PDFParser(io.BytesIO(data)))):
        interpreter.process_page(page)
        chars = [o for o in device.get_result() if isinstance(o, LTChar) and o.get_text().strip()]
        pages.append([(c.get_text(), c.x0, c.y0, c.x1, c.y1, c.size, c.upright) for c in chars])
    return pages


def _boxes(data: bytes) -> list[PageBox]:
    """Each page's media box and rotation, as pdf.py takes them from pdfminer."""
    from pdfminer.pdfdocument import PDFDocument
    from pdfminer.pdfpage import PDFPage
    from pdfminer.pdfparser import PDFParser

    pages = PDFPage.create_pages(PDFDocument(PDFParser(io.BytesIO(data))))
    return [PageBox(*p.mediabox, rotate=p.rotate) for p in pages]


def _pdfium_chars(data: bytes, boxes: list[PageBox]) -> list[list[Char]]:
    with pdf_engine.open_document(data) as document:
        return [[c for c in document.page(i, box).chars if c.text.strip()] for i, box in enumerate(boxes)]


def _rotated_and_scaled() -> bytes:
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    c = canvas.Canvas(out, pagesize=(600, 800), invariant=1)
    c.setFont("Helvetica", 12)
    c.drawString(50, 700, "Plain text at twelve points")
    c.saveState()
    c.translate(50, 600)
    c.scale(0.5, 0.5)
    c.setFont("Helvetica", 20)
    c.drawString(0, 0, "Scaled to ten points")
    c.restoreState()
    c.showPage()
    c.setPageRotation(90)
    c.setFont("Helvetica", 12)
    c.drawString(50, 500, "On a page turned a quarter")
    c.showPage()
    c.save()
    return out.getvalue()


@pytest.mark.parametrize("builder", ["report", "rotated"])
def test_characters_and_boxes_are_pdfminers(builder: str) -> None:
    data = make_pdf.report_bytes() if builder == "report" else _rotated_and_scaled()
    theirs = _pdfminer_chars(data)
    ours = _pdfium_chars(data, _boxes(data))
    assert [len(p) for p in ours] == [len(p) for p in theirs]
    for page_ours, page_theirs in zip(ours, theirs, strict=True):
        for c, (text, x0, y0, x1, y1, size, upright) in zip(page_ours, page_theirs, strict=True):
            assert c.text == text
            # the same box to within a point: the standard fonts' descents differ a little between the two
            assert c.x0 == pytest.approx(x0, abs=0.5) and c.x1 == pytest.approx(x1, abs=0.5)
            assert c.y0 == pytest.approx(y0, abs=1.0) and c.y1 == pytest.approx(y1, abs=1.0)
            if upright:
                assert c.size == pytest.approx(size, abs=0.05)
            assert c.upright == upright


def test_a_scaled_string_has_its_scaled_size() -> None:
    page = _pdfium_chars(_rotated_and_scaled(), [PageBox(0, 0, 600, 800)])[0]
    sizes = {c.text: c.size for c in page}
    assert sizes["P"] == pytest.approx(12) and sizes["S"] == pytest.approx(10)


def test_ruling_lines_of_the_table_grid() -> None:
    data = make_pdf.report_bytes()
    with pdf_engine.open_document(data) as document:
        edges = document.page(2, PageBox(0, 0, 595.2756, 841.8898)).edges
    horizontal = [e for e in edges if e.horizontal]
    vertical = [e for e in edges if not e.horizontal]
    # the fixture's grid: 4 rows of cells (5 horizontal rules) and 3 columns (4 vertical rules)
    assert len({round(e.y0, 1) for e in horizontal}) == len(make_pdf.TABLE_ROWS) + 2
    assert len({round(e.x0, 1) for e in vertical}) == len(make_pdf.TABLE_HEADER) + 1
    assert all(e.y0 == e.y1 for e in horizontal) and all(e.x0 == e.x1 for e in vertical)


def _word(text: str, x: float, y: float) -> list[Char]:
    return [Char(t, x + 6 * i, y, x + 6 * i + 6, y + 10, 10) for i, t in enumerate(text)]


def test_tied_boxes_come_out_in_one_order_whatever_the_memory_addresses() -> None:
    # four boxes at the corners of a square: every pair on a side is equally far apart
    chars = _word("north", 100, 500) + _word("east", 300, 500) + _word("south", 100, 300) + _word("west", 300, 300)
    content = PageContent(600, 800, chars)
    orders = set()
    for n in range(20):
        ballast = [object() for _ in range(n * 97)]  # other allocations move the boxes' addresses
        orders.add(tuple(box.get_text() for box in text_boxes(content)))
        del ballast
    assert len(orders) == 1


def test_characters_left_out_are_not_in_any_box() -> None:
    chars = _word("keep", 100, 500) + _word("drop", 100, 480)
    boxes = text_boxes(PageContent(600, 800, chars), frozenset(range(4, 8)))
    assert "".join(box.get_text() for box in boxes).split() == ["keep"]
