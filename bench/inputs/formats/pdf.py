"""PDF: text from pdfminer.six's layout analysis (through pdfplumber), in markdown-like blocks.

pdfminer groups characters into text boxes in reading order (a two-column page reads column by
column) and keeps each character's font size, so a line set larger than the body text becomes a
``#`` heading, ranked by size. Tables come from pdfplumber's ``find_tables`` (ruling lines, as real
PDFs draw them) as markdown tables; their characters are left out of the text boxes so their words
are not repeated. Line breaks and hyphenation stay as the page has them.

A page with no characters has no text layer (a scan); the note says to OCR it. Encrypted PDFs open
with the empty user password when they have one (an owner password only), else raise ``Unreadable``.
"""

from __future__ import annotations

import bisect
import io
import itertools
import re
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.metadata import version as _dist_version
from typing import Any

from bench.inputs.formats import pdf_streams
from bench.inputs.formats.base import Extracted, Extractor, Unreadable, mislabelled
from bench.inputs.formats.limits import LIMITS, MB, Limits
from bench.text.scripts import collapse_spaces, is_cjk

_OUTPUT_VERSION = "2"  # bump when the text this module makes from the same library output changes

_HEADING_RATIO = 1.15  # a line this much larger than the body text is a heading
_HEADING_MAX_CHARS = 200  # longer runs of large text are body text set large (a cover, a pull quote)
_LEVELS = 3  # heading sizes ranked beyond the third are all ###
# Bullet glyphs, and symbol-font glyphs with no Unicode mapping ("(cid:127)", private-use Wingdings)
_BULLET = re.compile(r"^(?:[•●○◦▪▫■□‣⁃∙·–—*-]|\(cid:\d+\)|[\uf000-\uf0ff])\s+")
_SPLIT_GAP = 3.0  # widest word space, in line heights, that a split line is joined across
_SPLIT_WINDOW = 6.0  # lines this many line heights above and below tell a word space from a gutter
_EOF_WINDOW = 1024  # readers look for %%EOF in the file's last 1024 bytes


def _version() -> str:
    return f"{_OUTPUT_VERSION}+pdfplumber-{_dist_version('pdfplumber')}+pdfminer.six-{_dist_version('pdfminer.six')}"


@dataclass(slots=True)
class _Line:
    text: str
    size: float  # the most common character size in the line, to the half point


@dataclass(slots=True)
class _Page:
    """One page's blocks in reading order: lists of text lines, or finished markdown tables."""

    blocks: list[list[_Line] | str] = field(default_factory=list)
    has_chars: bool = False


def extract(data: bytes, limits: Limits = LIMITS) -> Extracted:
    """The PDF's text as markdown-like blocks, the offset where each page starts, and notes."""
    if b"%PDF-" not in data[:1024]:
        raise mislabelled(data, "a PDF", ".pdf")
    if b"%%EOF" not in data[-_EOF_WINDOW:]:
        # pdfminer would rebuild a truncated file from the objects it finds and silently lose pages
        raise Unreadable("cannot read it as a PDF (truncated: no end-of-file marker); re-export it or remove it")
    pages, sizes = _read(data, limits)
    body = sizes.most_common(1)[0][0] if sizes else 0.0
    levels = _heading_levels(pages, body)
    text, starts = "", []
    for page in pages:
        page_text = "\n\n".join(_render(block, levels) for block in page.blocks).strip("\n")
        if page_text and text:
            text += "\n\n"
        starts.append(len(text))
        text += page_text
    blank = sum(1 for page in pages if not page.has_chars)
    notes: tuple[str, ...] = ()
    if not pages:
        notes = ("no pages",)
    elif blank == len(pages):
        return Extracted("", tuple(starts), ("no text layer: OCR it first",))
    elif blank:
        notes = (f"{blank} of {len(pages)} pages have no text layer (scanned?); OCR them to search them",)
    return Extracted(text, tuple(starts), notes)


def _read(data: bytes, limits: Limits) -> tuple[list[_Page], Counter[float]]:
    """Every page's blocks, and the count of characters of each font size in the document."""
    import pdfplumber
    from pdfminer.pdfdocument import PDFDocument, PDFEncryptionError, PDFPasswordIncorrect
    from pdfminer.pdfpage import PDFPage
    from pdfminer.pdfparser import PDFParser
    from pdfplumber.utils.exceptions import PdfminerException

    sizes: Counter[float] = Counter()
    deadline = time.monotonic() + limits.max_seconds
    try:
        with pdf_streams.bounded(int(limits.max_unpacked_mb * MB)):
            # counted before pdfplumber lists (and on closing, visits) them all: millions stop at the limit
            document = PDFDocument(PDFParser(io.BytesIO(data)))
            if (
                sum(1 for _ in itertools.islice(PDFPage.create_pages(document), limits.max_pages + 1))
                > limits.max_pages
            ):
                raise limits.over("a PDF with too many pages", "max_pages", " pages")
            del document
            # all_texts: text inside form XObjects (whole pages, for some producers) is grouped too
            with pdfplumber.open(io.BytesIO(data), laparams={"all_texts": True}) as pdf:
                pages = []
                for page in pdf.pages:
                    if time.monotonic() > deadline:  # where the timer signal cannot stop it (another thread)
                        raise limits.too_slow()
                    pages.append(_read_page(page, sizes))
                    page.close()  # drop the page's cached objects: memory stays flat on long files
    except Unreadable:
        raise
    except pdf_streams.StreamTooLarge as e:
        what = f"a decompression bomb: a {e.encoding} stream in it unpacks too far"
        raise limits.over(what, "max_unpacked_mb", " MB", fix="replace it") from None
    except Exception as e:  # pdfminer raises many kinds (syntax, type, key, value, EOF, ...)
        wrapped = isinstance(e, PdfminerException) and e.args and isinstance(e.args[0], BaseException)
        cause = e.args[0] if wrapped else e
        if isinstance(cause, RecursionError):  # a page tree or object nested thousands deep
            raise Unreadable("cannot read it as a PDF (objects nested too deeply); re-export it or remove it") from None
        if isinstance(cause, PDFPasswordIncorrect):
            raise Unreadable("encrypted with a password; save an unencrypted copy") from None
        if isinstance(cause, PDFEncryptionError):
            raise Unreadable(
                f"encrypted in a way that cannot be read ({_one_line(cause)}); save an unencrypted copy"
            ) from None
        raise Unreadable(f"cannot read it as a PDF ({_one_line(cause)}); re-export it or remove it") from None
    return pages, sizes


def _one_line(e: BaseException) -> str:
    message = " ".join(str(e).split())[:120]
    return f"{type(e).__name__}: {message}" if message else type(e).__name__


def _read_page(page: Any, sizes: Counter[float]) -> _Page:
    """A page's text boxes and tables, in reading order, without the characters inside tables."""
    out = _Page()
    # pdfplumber's object dicts cost more than the layout analysis: build them only on pages
    # that draw lines or rectangles, which a ruled table needs
    tables = _tables(page) if _draws_lines(page.layout) else []
    # table boxes in pdfminer's coordinates (y up from the media box's bottom), to test characters
    mb_x0, mb_top = page.mediabox[0], page.mediabox[1]
    boxes = [
        (x0 - mb_x0, page.height - bottom + mb_top, x1 - mb_x0, page.height - top + mb_top)
        for (x0, top, x1, bottom), _ in tables
    ]
    found = [(box, _pieces(box, boxes, out)) for box in _text_boxes(page.layout)]
    _join_split_lines([piece for _, pieces in found for piece in pieces])
    placed = [False] * len(tables)
    for box, pieces in found:
        lines = []
        for piece in pieces:
            if piece.sizes:  # a piece joined onto another has none left
                sizes.update(piece.sizes)
                lines.append(_Line(" ".join(piece.text.split()), statistics.mode(piece.sizes)))
        if not lines:
            continue
        # a table goes before the first box below its top that it overlaps horizontally
        for i, (_, table) in enumerate(tables):
            if not placed[i] and box.y1 <= boxes[i][3] and box.x0 < boxes[i][2] and box.x1 > boxes[i][0]:
                out.blocks.append(table)
                placed[i] = True
        out.blocks.append(lines)
    out.blocks.extend(table for i, (_, table) in enumerate(tables) if not placed[i])
    return out


@dataclass(slots=True)
class _Piece:
    """A text line of pdfminer's, or what is left of it outside tables, with its box."""

    text: str
    sizes: list[float]
    x0: float
    y0: float
    x1: float
    y1: float


def _pieces(box: Any, tables: list[tuple[float, float, float, float]], out: _Page) -> list[_Piece]:
    from pdfminer.layout import LTChar

    pieces = []
    for line in box:
        kept = []
        for item in line:
            if isinstance(item, LTChar):
                if item.get_text().strip():
                    out.has_chars = True
                cx, cy = (item.x0 + item.x1) / 2, (item.y0 + item.y1) / 2
                if not any(b[0] <= cx <= b[2] and b[1] <= cy <= b[3] for b in tables):
                    kept.append(item)
            elif kept:  # a space or line end pdfminer inserted, after a kept character
                kept.append(item)
        chars = [item for item in kept if isinstance(item, LTChar) and item.get_text().strip()]
        if chars:
            pieces.append(
                _Piece(
                    "".join(item.get_text() for item in kept).strip(),
                    [round(c.size * 2) / 2 for c in chars],
                    min(c.x0 for c in chars),
                    min(c.y0 for c in chars),
                    max(c.x1 for c in chars),
                    max(c.y1 for c in chars),
                )
            )
    return pieces


def _join_split_lines(pieces: list[_Piece]) -> None:
    """Joins the parts of one line that pdfminer split at a wide word space (justified text in a
    narrow column), in place. A gap is a word space, not a column gutter, when most of the lines
    of the same size around it, and level with the two parts, run across it."""
    by_height = sorted(pieces, key=lambda p: p.y0)
    heights = [p.y0 for p in by_height]
    rows: dict[int, list[_Piece]] = defaultdict(list)
    for piece in pieces:
        rows[round(piece.y0)].append(piece)
    for a in sorted(pieces, key=lambda p: p.x0):
        while a.sizes:
            h, row = a.y1 - a.y0, round(a.y0)
            right = [
                b
                for b in rows[row - 1] + rows[row] + rows[row + 1]
                if b is not a
                and b.sizes
                and abs(b.y0 - a.y0) < 0.3 * h
                and abs(b.y1 - a.y1) < 0.3 * h
                and a.x1 - 0.5 < b.x0 < a.x1 + _SPLIT_GAP * h
            ]
            if not right:
                break
            b = min(right, key=lambda p: p.x0)
            lo = bisect.bisect_left(heights, a.y0 - _SPLIT_WINDOW * h)
            hi = bisect.bisect_right(heights, a.y0 + _SPLIT_WINDOW * h)
            near = [
                o
                for o in by_height[lo:hi]
                if o.sizes
                and abs(o.y0 - a.y0) >= 0.5 * h
                and abs((o.y1 - o.y0) - h) < 0.2 * h
                and o.x1 > a.x0
                and o.x0 < b.x1  # in the same column as the two, if any
            ]
            if not near or 2 * sum(1 for o in near if o.x0 < a.x1 and o.x1 > b.x0) <= len(near):
                break
            gap = "" if is_cjk(a.text[-1:]) and is_cjk(b.text[:1]) else " "  # Chinese puts no space between words
            a.text, a.sizes, a.x1 = f"{a.text}{gap}{b.text}", a.sizes + b.sizes, b.x1
            b.sizes = []


def _draws_lines(container: Any) -> bool:
    from pdfminer.layout import LTCurve, LTFigure

    return any(isinstance(obj, LTCurve) or (isinstance(obj, LTFigure) and _draws_lines(obj)) for obj in container)


def _text_boxes(container: Any) -> Iterator[Any]:
    """The text boxes of a page, figures' boxes at the figure's place, in pdfminer's order."""
    from pdfminer.layout import LTFigure, LTTextBox

    for obj in container:
        if isinstance(obj, LTTextBox):
            yield obj
        elif isinstance(obj, LTFigure):
            yield from _text_boxes(obj)


def _tables(page: Any) -> list[tuple[tuple[float, float, float, float], str]]:
    """The page's ruled tables as (bbox, markdown), top to bottom. A grid of one row or one column
    is a frame drawn around text, not a table: its text stays in the text boxes."""
    found = []
    for table in page.find_tables():
        rows = [[_cell(cell) for cell in row] for row in table.extract()]
        rows = [row for row in rows if any(row)]
        if len(rows) < 2 or max(len(row) for row in rows) < 2:
            continue
        width = max(len(row) for row in rows)
        rows = [row + [""] * (width - len(row)) for row in rows]
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
        lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
        found.append((tuple(table.bbox), "\n".join(lines)))
    found.sort(key=lambda t: (t[0][1], t[0][0]))
    return found


def _cell(value: str | None) -> str:
    """A table cell on one line: a line wrapped inside a cell joins with a space, or with none
    between two Chinese or Japanese characters."""
    return collapse_spaces(value or "").replace("|", "\\|")


def _heading_levels(pages: list[_Page], body: float) -> dict[float, int]:
    """Heading level by font size: sizes above the body text's, largest first, as 1, 2, 3, 3, ..."""
    found = {line.size for page in pages for block in page.blocks if isinstance(block, list) for line in block}
    big = sorted((s for s in found if body and s >= body * _HEADING_RATIO), reverse=True)
    return {size: min(rank + 1, _LEVELS) for rank, size in enumerate(big)}


def _render(block: list[_Line] | str, levels: dict[float, int]) -> str:
    """A text box as markdown: runs of heading-size lines as one ``#`` line each, the rest as a
    paragraph with its line breaks kept and bullet lines as ``- `` items."""
    if isinstance(block, str):
        return block
    parts: list[str] = []
    run: list[_Line] = []
    for line in [*block, None]:
        if run and (line is None or levels.get(line.size) != levels.get(run[0].size)):
            level = levels.get(run[0].size)
            joined = " ".join(r.text for r in run)
            if level and len(joined) <= _HEADING_MAX_CHARS:
                parts.append("#" * level + " " + joined)
            else:
                parts.append("\n".join(_BULLET.sub("- ", r.text) for r in run))
            run = []
        if line is not None:
            run.append(line)
    return "\n\n".join(parts)


EXTRACTORS = (Extractor(name="pdf", suffixes=(".pdf",), extract=extract, version=_version(), page_label="p."),)
