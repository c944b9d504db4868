"""A PDF's pages read with PDFium (pypdfium2's raw API) as ``PageContent``: characters and ruling lines.

PDFium parses content streams in C, several times faster than pdfminer's Python parser, and keeps
each character's position, font size and Unicode. What the layout analysis needs is then made to
look as pdfminer gives it, so the same analysis groups the same lines:

- coordinates are pdfminer's: points from the bottom left of the page's media box, y up, the
  page's ``/Rotate`` applied (PDFium gives unrotated user space);
- a character's box runs from its font's descent to that plus its font size, as pdfminer's
  ``LTChar`` does (PDFium's loose box gives the descent and the advance; its top is the font's
  ascent, which differs from font to font);
- line breaks PDFium makes up (``FPDFText_IsGenerated``) are dropped: the layout analysis decides
  where lines end, as it does with pdfminer; a space it makes up between two words of a line is
  kept as a space of no width, since PDFium drops the page's own space that follows it;
- a ligature (``ﬁ``, or a glyph that maps to ``fi``) is one character with both letters;
- a hyphen that PDFium marks as ending a line is ``-`` again, and a glyph with no Unicode mapping
  reads ``(cid:N)`` as pdfminer writes it.

Ruling lines are the horizontal and vertical segments of every painted path, form XObjects
included (pdfplumber's edges: lines, rectangle sides, straight parts of curves).

PDFium is not thread-safe: one document is read at a time in a process (``_LOCK``).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from bench.inputs.formats.pdf_page import Char, Edge, PageContent

_LOCK = threading.Lock()
_AXIS = 0.01  # points: a segment whose ends differ this little across is horizontal (or vertical)
_GENERATED_WHITESPACE = frozenset(" \r\n")
_HYPHEN = "\x02"  # PDFium's code for a hyphen that ends a line


class PdfiumError(Exception):
    """PDFium could not open the document; ``code`` is its ``FPDF_ERR_*`` code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class PageBox:
    """Where a page's coordinates start: its media box (user space) and its ``/Rotate``, as pdfminer reads them."""

    x0: float
    y0: float
    x1: float
    y1: float
    rotate: int = 0

    def transform(self) -> tuple[float, float, float, float, float, float]:
        """User space to pdfminer's page space, as pdfminer's interpreter sets its first CTM."""
        x0, y0, x1, y1 = self.x0, self.y0, self.x1, self.y1
        if self.rotate == 90:
            return (0, -1, 1, 0, -y0, x1)
        if self.rotate == 180:
            return (-1, 0, 0, -1, x1, y1)
        if self.rotate == 270:
            return (0, 1, -1, 0, y1, -x0)
        return (1, 0, 0, 1, -x0, -y0)

    @property
    def size(self) -> tuple[float, float]:
        w, h = abs(self.x1 - self.x0), abs(self.y1 - self.y0)
        return (h, w) if self.rotate in (90, 270) else (w, h)


@contextmanager
def open_document(data: bytes) -> Iterator[Document]:
    """The document in ``data``, opened with the empty password (a PDF with an owner password only
    opens); ``PdfiumError`` if it cannot be opened."""
    import pypdfium2.raw as pdfium

    with _LOCK:
        buffer = ctypes.create_string_buffer(data, len(data))  # PDFium reads it in place: kept alive
        handle = pdfium.FPDF_LoadMemDocument64(buffer, len(data), None)
        if not handle:
            code = pdfium.FPDF_GetLastError()
            raise PdfiumError(code, _ERRORS.get(code, f"error {code}"))
        try:
            yield Document(handle)
        finally:
            pdfium.FPDF_CloseDocument(handle)
            del buffer


_ERRORS = {
    1: "unknown error",
    2: "file not found",
    3: "not a PDF or damaged",
    4: "password required",
    5: "unsupported security handler",
    6: "page not found",
}


class Document:
    """An open PDFium document; pages are read one at a time and closed at once."""

    def __init__(self, handle: object) -> None:
        self._handle = handle

    @property
    def pages(self) -> int:
        import pypdfium2.raw as pdfium

        return int(pdfium.FPDF_GetPageCount(self._handle))

    def media_box(self, index: int) -> PageBox:
        """The page's media box and rotation as PDFium reads them (for pages pdfminer did not list)."""
        import pypdfium2.raw as pdfium

        page = pdfium.FPDF_LoadPage(self._handle, index)
        try:
            box = [ctypes.c_float() for _ in range(4)]
            if not pdfium.FPDFPage_GetMediaBox(page, *map(ctypes.byref, box)):
                return PageBox(0, 0, pdfium.FPDF_GetPageWidthF(page), pdfium.FPDF_GetPageHeightF(page))
            rotate = pdfium.FPDFPage_GetRotation(page) * 90
            return PageBox(box[0].value, box[1].value, box[2].value, box[3].value, rotate)
        finally:
            pdfium.FPDF_ClosePage(page)

    def page(self, index: int, box: PageBox) -> PageContent:
        """The page's characters and ruling lines in pdfminer's coordinates for ``box``."""
        import pypdfium2.raw as pdfium

        page = pdfium.FPDF_LoadPage(self._handle, index)
        if not page:
            raise PdfiumError(6, f"page {index + 1} cannot be read")
        try:
            width, height = box.size
            content = PageContent(width, height)
            text_page = pdfium.FPDFText_LoadPage(page)
            try:
                content.chars = _chars(text_page, box.transform())
            finally:
                pdfium.FPDFText_ClosePage(text_page)
            content.edges = _edges(page, box.transform())
            return content
        finally:
            pdfium.FPDF_ClosePage(page)


def _chars(text_page: object, ctm: tuple[float, ...]) -> list[Char]:  # noqa: C901 - one pass per character, inline for speed
    """The page's characters in the order PDFium lists them (the content's order), boxes as pdfminer's."""
    import pypdfium2.raw as pdfium

    n = pdfium.FPDFText_CountChars(text_page)
    if n <= 0:
        return []
    units = (ctypes.c_ushort * (n + 1))()
    written = pdfium.FPDFText_GetText(text_page, 0, n, units)
    text = bytes(units)[: 2 * max(written - 1, 0)].decode("utf-16-le", "surrogatepass")
    if len(text) != n:  # characters beyond the BMP take two units: ask one by one
        text = "".join(chr(pdfium.FPDFText_GetUnicode(text_page, i)) for i in range(n))
    rect, matrix = pdfium.FS_RECTF(), pdfium.FS_MATRIX()
    rect_p, matrix_p = ctypes.byref(rect), ctypes.byref(matrix)
    loose_box, font_size = pdfium.FPDFText_GetLooseCharBox, pdfium.FPDFText_GetFontSize
    char_matrix = pdfium.FPDFText_GetMatrix
    is_generated, unicode_of = pdfium.FPDFText_IsGenerated, pdfium.FPDFText_GetUnicode
    unmapped = pdfium.FPDFText_HasUnicodeMapError
    ca, cb, cc, cd, ce, cf = ctm
    out: list[Char] = []
    last: tuple[float, float, float, float] | None = None
    for i, t in enumerate(text):
        if t in _GENERATED_WHITESPACE and is_generated(text_page, i):
            last = None
            if t == " " and out and out[-1].text.strip():
                _word_space(out, text_page, i, ctm)
            continue
        if t == "\ufffe":  # no place in the page's text: a line-end hyphen, or a glyph without Unicode
            code = unicode_of(text_page, i)
            if code == 0:
                continue
            t = "-" if chr(code) == _HYPHEN else chr(code)
        elif (t < " " or "\x7f" <= t < "\xa0") and unmapped(text_page, i):
            t = f"(cid:{ord(t)})"  # PDFium used the glyph's code as its Unicode
        loose_box(text_page, i, rect_p)
        left, bottom, right, top = rect.left, rect.bottom, rect.right, rect.top
        key = (left, bottom, right, top)
        if key == last:  # the pieces of one ligature share its box
            out[-1].text += t
            continue
        last = key
        size = font_size(text_page, i)
        char_matrix(text_page, i, matrix_p)
        a, b, c, d = matrix.a, matrix.b, matrix.c, matrix.d
        if b == 0 and c == 0 and d != 0 and size > 0:  # set straight: pdfminer's box, descent to descent + size
            if d > 0:
                top = bottom + size * d
            else:
                bottom = top + size * d
        # to pdfminer's page space (an axis-aligned box stays one)
        x0, y0 = ca * left + cc * bottom + ce, cb * left + cd * bottom + cf
        x1, y1 = ca * right + cc * top + ce, cb * right + cd * top + cf
        if x1 < x0:
            x0, x1 = x1, x0
        if y1 < y0:
            y0, y1 = y1, y0
        # pdfminer's test of a character drawn upright, on its matrix with the page's first CTM
        ma, mb = a * ca + b * cc, a * cb + b * cd
        mc, md = c * ca + d * cc, c * cb + d * cd
        out.append(Char(t, x0, y0, x1, y1, y1 - y0, ma * md > 0 and mb * mc <= 0))
    return out


def _word_space(out: list[Char], text_page: object, i: int, ctm: tuple[float, ...]) -> None:
    """A word space PDFium made up in place of the page's own, which it drops after its own (it
    keeps one space of a run): a space of no width where the next word starts, on the line of the
    character before, so the words stay apart even where glyphs' boxes overhang the gap."""
    import pypdfium2.raw as pdfium

    x, y = ctypes.c_double(), ctypes.c_double()
    if not pdfium.FPDFText_GetCharOrigin(text_page, i, ctypes.byref(x), ctypes.byref(y)):
        return
    ca, cb, cc, cd, ce, cf = ctm
    px, py = ca * x.value + cc * y.value + ce, cb * x.value + cd * y.value + cf
    prev = out[-1]
    if not prev.upright or not 0 <= px - prev.x1 < 2 * prev.size or not prev.y0 <= py <= prev.y1:
        return  # a gap wider than a word space, or not on the line: the layout decides
    out.append(Char(" ", px, prev.y0, px, prev.y1, prev.size, True))


def _edges(page: object, ctm: tuple[float, ...]) -> list[Edge]:
    import pypdfium2.raw as pdfium

    edges: list[Edge] = []
    count, get = pdfium.FPDFPage_CountObjects, pdfium.FPDFPage_GetObject
    for i in range(count(page)):
        _object_edges(get(page, i), ctm, edges)
    return edges


def _object_edges(obj: object, outer: tuple[float, ...], edges: list[Edge]) -> None:
    """The horizontal and vertical segments of a painted path, or of the paths inside a form."""
    import pypdfium2.raw as pdfium

    kind = pdfium.FPDFPageObj_GetType(obj)
    if kind not in (pdfium.FPDF_PAGEOBJ_PATH, pdfium.FPDF_PAGEOBJ_FORM):
        return
    m = pdfium.FS_MATRIX()
    if not pdfium.FPDFPageObj_GetMatrix(obj, ctypes.byref(m)):
        return
    matrix = _multiply((m.a, m.b, m.c, m.d, m.e, m.f), outer)
    if kind == pdfium.FPDF_PAGEOBJ_FORM:
        for j in range(pdfium.FPDFFormObj_CountObjects(obj)):
            _object_edges(pdfium.FPDFFormObj_GetObject(obj, j), matrix, edges)
        return
    fill, stroke = ctypes.c_int(), ctypes.c_int()
    drawn = pdfium.FPDFPath_GetDrawMode(obj, ctypes.byref(fill), ctypes.byref(stroke))
    if not drawn or not (fill.value or stroke.value):
        return  # a clipping path paints nothing
    a, b, c, d, e, f = matrix
    x, y = ctypes.c_float(), ctypes.c_float()
    xp, yp = ctypes.byref(x), ctypes.byref(y)
    start: tuple[float, float] | None = None
    prev: tuple[float, float] | None = None
    for k in range(pdfium.FPDFPath_CountSegments(obj)):
        segment = pdfium.FPDFPath_GetPathSegment(obj, k)
        pdfium.FPDFPathSegment_GetPoint(segment, xp, yp)
        point = (a * x.value + c * y.value + e, b * x.value + d * y.value + f)
        kind = pdfium.FPDFPathSegment_GetType(segment)
        if kind == pdfium.FPDF_SEGMENT_MOVETO:
            start = point
        elif prev is not None:
            _add(edges, prev, point)
            if pdfium.FPDFPathSegment_GetClose(segment) and start is not None:
                _add(edges, point, start)
        prev = point


def _add(edges: list[Edge], p: tuple[float, float], q: tuple[float, float]) -> None:
    (px, py), (qx, qy) = p, q
    if abs(py - qy) <= _AXIS and abs(px - qx) > _AXIS:
        y = (py + qy) / 2
        edges.append(Edge(min(px, qx), y, max(px, qx), y))
    elif abs(px - qx) <= _AXIS and abs(py - qy) > _AXIS:
        x = (px + qx) / 2
        edges.append(Edge(x, min(py, qy), x, max(py, qy)))


def _multiply(m: tuple[float, ...], n: tuple[float, ...]) -> tuple[float, float, float, float, float, float]:
    """``m`` then ``n``: the matrix of a point mapped by ``m`` and then by ``n`` (PDF's row-vector order)."""
    a, b, c, d, e, f = m
    a2, b2, c2, d2, e2, f2 = n
    return (
        a * a2 + b * c2,
        a * b2 + b * d2,
        c * a2 + d * c2,
        c * b2 + d * d2,
        e * a2 + f * c2 + e2,
        e * b2 + f * d2 + f2,
    )
