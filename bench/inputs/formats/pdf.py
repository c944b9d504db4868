"""PDF: text from pdfminer.six's layout analysis of the characters PDFium reads, in markdown-like blocks.

PDFium (``pdf_engine``) reads each page's characters, with their boxes and font sizes, and its
ruling lines; pdfminer's layout analysis (``pdf_layout``) groups the characters into text boxes in
reading order (a two-column page reads column by column), the same for the same bytes in every
run. A line set larger than the body text becomes a ``#`` heading, ranked by size. Tables
(``pdf_tables``) become markdown tables; their characters are left out of the text boxes so their
words are not repeated. Line breaks and hyphenation stay as the page has them.

A page with no characters has no text layer (a scan); the note says to OCR it. Encrypted PDFs open
with the empty user password when they have one (an owner password only), else raise ``Unreadable``.
"""

from __future__ import annotations

import bisect
import io
import re
import statistics
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from importlib.metadata import version as _dist_version
from typing import Any

from pdfminer.layout import LTChar

from bench.inputs.formats import pdf_engine, pdf_margins, pdf_streams
from bench.inputs.formats.base import Extracted, Extractor, Unreadable, mislabelled
from bench.inputs.formats.limits import LIMITS, MB, Limits
from bench.inputs.formats.pdf_engine import PageBox
from bench.inputs.formats.pdf_layout import text_boxes
from bench.inputs.formats.pdf_margins import MarginLine
from bench.inputs.formats.pdf_page import PageContent
from bench.inputs.formats.pdf_tables import find_tables
from bench.text.scripts import is_cjk

_OUTPUT_VERSION = "3"  # bump when the text this module makes from the same library output changes

_HEADING_RATIO = 1.15  # a line this much larger than the body text is a heading
_HEADING_MAX_CHARS = 200  # longer runs of large text are body text set large (a cover, a pull quote)
_LEVELS = 3  # heading sizes ranked beyond the third are all ###
# Bullet glyphs, and symbol-font glyphs with no Unicode mapping ("(cid:127)", private-use Wingdings)
_BULLET = re.compile(r"^(?:[•●○◦▪▫■□‣⁃∙·–—*-]|\(cid:\d+\)|[\uf000-\uf0ff])\s+")
_SPLIT_GAP = 3.0  # widest word space, in line heights, that a split line is joined across
_SPLIT_WINDOW = 6.0  # lines this many line heights above and below tell a word space from a gutter
_EOF_WINDOW = 1024  # readers look for %%EOF in the file's last 1024 bytes


def _version() -> str:
    libraries = ("pypdfium2", "pdfminer.six", "pdfplumber")  # characters, layout, ruled tables' cells
    return "+".join([_OUTPUT_VERSION, *(f"{name}-{_dist_version(name)}" for name in libraries)])


@dataclass(slots=True)
class _Line:
    text: str
    size: float  # the most common character size in the line, to the half point
    margin: bool | None = None  # among the page's first (True) or last (False) lines, else None


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
    running_note = _leave_out_running_lines(pages)
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
    if running_note:
        notes += (running_note,)
    return Extracted(text, tuple(starts), notes)


def _leave_out_running_lines(pages: list[_Page]) -> str:
    """Drops the running headers and footers (``pdf_margins``) from the pages' text boxes, in
    place; the note that names them, or "" when there are none."""
    margin = [
        MarginLine(k, line.text, line.margin)
        for k, page in enumerate(pages)
        for block in page.blocks
        if isinstance(block, list)
        for line in block
        if line.margin is not None
    ]
    running = pdf_margins.running(margin, len(pages))
    if not running:
        return ""
    left_out: Counter[tuple[str, bool]] = Counter()
    for page in pages:
        on_page = set()
        for k, block in enumerate(page.blocks):
            if isinstance(block, list):
                kept = []
                for line in block:
                    key = pdf_margins.key(line.text, line.margin) if line.margin is not None else None
                    if key in running:
                        on_page.add(key)
                    else:
                        kept.append(line)
                page.blocks[k] = kept
        left_out.update(on_page)
        page.blocks = [block for block in page.blocks if block]
    return pdf_margins.note(left_out, running, len(pages))


def _read(data: bytes, limits: Limits) -> tuple[list[_Page], Counter[float]]:
    """Every page's blocks, and the count of characters of each font size in the document."""
    from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect

    sizes: Counter[float] = Counter()
    deadline = time.monotonic() + limits.max_seconds
    try:
        boxes = _page_boxes(data, limits, deadline)
        with pdf_engine.open_document(data) as pdf:
            if pdf.pages > limits.max_pages:
                raise limits.over("a PDF with too many pages", "max_pages", " pages")
            pages = []
            for i in range(pdf.pages):
                if time.monotonic() > deadline:  # where the timer signal cannot stop it (another thread)
                    raise limits.too_slow()
                box = boxes[i] if i < len(boxes) else pdf.media_box(i)
                pages.append(_read_page(pdf.page(i, box), sizes))
    except Unreadable:
        raise
    except pdf_streams.StreamTooLarge as e:
        what = f"a decompression bomb: a {e.encoding} stream in it unpacks too far"
        raise limits.over(what, "max_unpacked_mb", " MB", fix="replace it") from None
    except RecursionError:  # a page tree or object nested thousands deep
        raise Unreadable("cannot read it as a PDF (objects nested too deeply); re-export it or remove it") from None
    except PDFPasswordIncorrect:
        raise Unreadable("encrypted with a password; save an unencrypted copy") from None
    except PDFEncryptionError as e:
        raise Unreadable(f"encrypted in a way that cannot be read ({_one_line(e)}); save an unencrypted copy") from None
    except Exception as e:  # pdfminer raises many kinds (syntax, type, key, value, EOF, ...); PDFium its codes
        raise Unreadable(f"cannot read it as a PDF ({_one_line(e)}); re-export it or remove it") from None
    return pages, sizes


def _page_boxes(data: bytes, limits: Limits, deadline: float) -> list[PageBox]:
    """Each page's media box and rotation, as pdfminer walks the page tree: counted up to the page
    limit before any page is read, and every stream the pages draw with unpacked, bounded, before
    PDFium unpacks them unbounded."""
    from pdfminer.pdfdocument import PDFDocument
    from pdfminer.pdfpage import PDFPage
    from pdfminer.pdfparser import PDFParser

    limit = int(limits.max_unpacked_mb * MB)
    boxes: list[PageBox] = []
    with pdf_streams.bounded(limit):
        document = PDFDocument(PDFParser(io.BytesIO(data)))
        for page in pdf_streams.check_pages(PDFPage.create_pages(document), limit):
            if len(boxes) == limits.max_pages:
                raise limits.over("a PDF with too many pages", "max_pages", " pages")
            x0, y0, x1, y1 = page.mediabox
            boxes.append(PageBox(x0, y0, x1, y1, page.rotate))
            if time.monotonic() > deadline:
                raise limits.too_slow()
    return boxes


def _one_line(e: BaseException) -> str:
    message = " ".join(str(e).split())[:120]
    return f"{type(e).__name__}: {message}" if message else type(e).__name__


def _read_page(content: PageContent, sizes: Counter[float]) -> _Page:
    """A page's text boxes and tables, in reading order; the characters of a table are in its
    markdown only, never in the text boxes."""
    out = _Page(has_chars=any(char.text.strip() for char in content.chars))
    tables = find_tables(content) if content.chars else []
    taken = frozenset().union(*(table.chars for table in tables)) if tables else frozenset()
    found = [(box, _pieces(box)) for box in text_boxes(content, taken)]
    _join_split_lines([piece for _, pieces in found for piece in pieces])
    edges = _edge_lines([piece for _, pieces in found for piece in pieces if piece.sizes])
    placed = [False] * len(tables)
    for box, pieces in found:
        lines = []
        for piece in pieces:
            if piece.sizes:  # a piece joined onto another has none left
                sizes.update(piece.sizes)
                lines.append(_Line(" ".join(piece.text.split()), statistics.mode(piece.sizes), edges.get(id(piece))))
        if not lines:
            continue
        # a table goes before the first box below its top that it overlaps horizontally
        for i, table in enumerate(tables):
            if not placed[i] and box.y1 <= table.y1 and box.x0 < table.x1 and box.x1 > table.x0:
                out.blocks.append(table.markdown)
                placed[i] = True
        out.blocks.append(lines)
    out.blocks.extend(table.markdown for i, table in enumerate(tables) if not placed[i])
    return out


def _edge_lines(pieces: list[_Piece]) -> dict[int, bool]:
    """The lines a running header or footer could be: the page's topmost few (True) and its
    bottommost few (False), by ``id`` of their piece. Pages printed from the web end where their
    text ends, so a footer is the last line, wherever it stands."""
    order = sorted(pieces, key=lambda p: -p.y1)
    edges = {id(p): False for p in order[-pdf_margins.EDGE_LINES :]}
    edges.update({id(p): True for p in order[: pdf_margins.EDGE_LINES]})
    return edges


@dataclass(slots=True)
class _Piece:
    """A text line of pdfminer's, or what is left of it outside tables, with its box."""

    text: str
    sizes: list[float]
    x0: float
    y0: float
    x1: float
    y1: float


def _pieces(box: Any) -> list[_Piece]:
    """A text box's lines, each with its characters' sizes and box."""
    pieces = []
    for line in box:
        chars = [item for item in line if isinstance(item, LTChar) and item.get_text().strip()]
        if chars:
            pieces.append(
                _Piece(
                    line.get_text().strip(),
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
