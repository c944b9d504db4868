"""How report.pdf's pages are laid out: sections of blocks (paragraphs, tables, definition lists,
charts) flowed down A4 landscape pages, then drawn as matplotlib figures.

Widths are measured in the font the PDF sets (``pdf_text``), so nothing runs off a page: long
table headers wrap after the separators of candidate ids ("/", ">", "@", "+"), a column too wide
for the page makes the table's type smaller, and a table too wide at its type splits into tables
of its columns. The flow keeps a paragraph's lines together (a long one splits
with at least two lines on each side), never ends a page with a heading or starts one with the
last row of a table, and fills a page before starting the next. Every page gets a footer with
"page N of M"; the contents page lists where each section starts.
"""

from __future__ import annotations

import dataclasses
import io
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import matplotlib.image
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from bench.report import fonts
from bench.report.pdf_text import CORE, clip, core_fonts, settable, unbreakable, width, wrap

PAGE = (11.69, 8.27)  # A4 landscape, inches
W, H = PAGE[0] * 72, PAGE[1] * 72  # points
LEFT, RIGHT = 34.0, PAGE[0] * 72 - 34.0
WIDTH = RIGHT - LEFT
TOP = 30.0  # the title's top
BODY_TOP = TOP + 30.0  # below the title
BOTTOM = H - 40.0  # the body ends above the footer
FOOTER = H - 20.0
GREY = "0.35"
HEADER_FILL, STRIPE_FILL = "#eef2f7", "#f6f6f6"


# ---------------------------------------------------------------------------------------------------
# Blocks


@dataclass
class Para:
    """A paragraph, wrapped to the page; ``bullet`` hangs before its first line. A heading
    (``keep_next``) stays on the page of what follows it."""

    text: str
    size: float = 9.0
    bold: bool = False
    colour: str = "black"
    bullet: str = ""
    indent: float = 0.0
    space_after: float = 5.0
    keep_next: bool = False


@dataclass
class Table:
    """Rows of text cells under a header that wraps to its columns; columns sized to their widest
    cell. Cells of ``clip`` columns are cut with "…" when the page is too narrow for them."""

    header: list[str]
    rows: list[list[str]]
    size: float = 7.5
    clip: frozenset[int] = frozenset()
    bold: frozenset[tuple[int, int]] = frozenset()  # (row, column) cells set in bold
    row_height: float = 1.8  # times the type size
    space_after: float = 12.0
    repeat: int = 0  # a table too wide at ``size`` splits into tables of its columns, these first ones in each


@dataclass
class Terms:
    """A definition list: each term in bold, its definition wrapped beside it; an item never splits."""

    items: list[tuple[str, str]]
    size: float = 8.5
    space_after: float = 4.0


@dataclass
class Chart:
    """A chart's PNG filling the page, under an invisible copy of its title so the page can be searched."""

    png: bytes


Block = Para | Table | Terms | Chart


@dataclass
class Section:
    title: str
    blocks: list[Block]
    listed: bool = True  # on the contents page


@dataclass
class Page:
    title: str  # drawn at the top; invisible over a chart
    section: str
    ops: list[tuple] = field(
        default_factory=list
    )  # ("text", x, y, text, size, bold, colour, ha) | ("rect", …) | ("chart", png)


# ---------------------------------------------------------------------------------------------------
# Measuring and wrapping


# ---------------------------------------------------------------------------------------------------
# The flow


def paginate(sections: list[Section]) -> list[Page]:
    pages: list[Page] = []
    for section in sections:
        pages += _Flow(section).pages
    return pages


class _Flow:
    """One section flowed down as many pages as it needs."""

    def __init__(self, section: Section) -> None:
        self.section = section
        self.pages: list[Page] = []
        self.y = BODY_TOP
        blocks = section.blocks
        if blocks and all(isinstance(b, Chart) for b in blocks):
            for block in blocks:
                self.pages.append(Page(section.title, section.title, [("chart", block.png)]))  # type: ignore[union-attr]
            return
        self._new()
        for i, block in enumerate(blocks):
            after = blocks[i + 1] if i + 1 < len(blocks) else None
            if isinstance(block, Para):
                self._para(block, after)
            elif isinstance(block, Table):
                self._table(block)
            elif isinstance(block, Terms):
                self._terms(block)

    # -- pages

    def _new(self) -> None:
        title = self.section.title if not self.pages else f"{self.section.title} (continued)"
        self.pages.append(Page(title, self.section.title))
        self.y = BODY_TOP

    @property
    def _fresh(self) -> bool:
        return self.y == BODY_TOP

    def _room(self) -> float:
        return BOTTOM - self.y

    def _text(
        self, x: float, y: float, text: str, size: float, bold: bool = False, colour: str = "black", ha: str = "left"
    ) -> None:
        self.pages[-1].ops.append(("text", x, y, settable(text), size, bold, colour, ha))

    def _rect(self, x: float, y: float, w: float, h: float, colour: str) -> None:
        self.pages[-1].ops.append(("rect", x, y, w, h, colour))

    # -- paragraphs

    def _para_lines(self, p: Para) -> tuple[list[str], float, float]:
        hang = width(p.bullet + " ", p.size, p.bold) if p.bullet else 0.0
        x = LEFT + p.indent + hang
        return wrap(p.text, RIGHT - x, p.size, p.bold), x, p.size * 1.4

    def _para(self, p: Para, after: Block | None) -> None:
        lines, x, step = self._para_lines(p)
        need = len(lines) * step + (_first_height(after) if p.keep_next and after is not None else 0.0)
        room = int(self._room() // step)
        splits = len(lines) > 6 and not p.keep_next and room >= 2  # a long paragraph may split, 2+ lines a side
        if not self._fresh and need > self._room() and not splits:
            self._new()
        first = True
        while lines:
            fit = max(1, int(self._room() // step))
            if fit < len(lines) and len(lines) - fit < 2 and fit > 2:
                fit -= 1  # the next page never starts with a paragraph's last line alone
            self._lines(p, lines[:fit], x, step, first)
            first, lines = False, lines[fit:]
            if lines:
                self._new()
        self.y += p.space_after

    def _lines(self, p: Para, lines: list[str], x: float, step: float, first: bool) -> None:
        if p.bullet and first:
            self._text(LEFT + p.indent, self.y, p.bullet, p.size, p.bold, p.colour)
        for line in lines:
            self._text(x, self.y, line, p.size, p.bold, p.colour)
            self.y += step

    # -- tables

    def _table(self, t: Table) -> None:
        if t.repeat or (
            not t.clip and len(t.header) > 2 and sum(_natural(t, j, 6.0) for j in range(len(t.header))) > WIDTH
        ):
            # too wide even in the smallest type: split into tables of its columns, the first in each
            parts = _column_groups(dataclasses.replace(t, repeat=max(t.repeat, 1)))
            if len(parts) > 1:
                for part in parts:
                    self._table(part)
                return
        size, widths = _column_widths(t)
        pad = size * 0.6
        header = [wrap(h, w - 2 * pad + 0.01, size, bold=True, ids=True) for h, w in zip(t.header, widths)]
        head_step = size * 1.25
        grid = _Grid(header, widths, size, max(len(lines) for lines in header) * head_step + size * 0.8, head_step)
        head_h, row_h = grid.head_h, size * t.row_height
        rows = [
            [clip(cell, w - 2 * pad, size) if j in t.clip else cell for j, (cell, w) in enumerate(zip(row, widths))]
            for row in t.rows
        ]
        done = 0
        while True:
            least = min(3, len(rows) - done)
            if not self._fresh and head_h + least * row_h > self._room():
                self._new()
            fit = max(1, int((self._room() - head_h) // row_h))
            left = len(rows) - done
            if fit < left and left - fit == 1 and fit > 2:
                fit -= 1  # never a page that starts with a table's last row alone
            self._draw_table(t, grid, rows[done : done + fit], done)
            done += min(fit, left)
            if done >= len(rows):
                break
            self._new()
        self.y += t.space_after

    def _draw_table(self, t: Table, grid: _Grid, rows: list[list[str]], offset: int) -> None:
        """The header, then ``rows`` (the table's rows from ``offset`` on), striped."""
        header, widths, size, head_h, head_step = grid.header, grid.widths, grid.size, grid.head_h, grid.head_step
        row_h = size * t.row_height
        total = sum(widths)
        self._rect(LEFT, self.y, total, head_h, HEADER_FILL)
        x = LEFT
        for lines, w in zip(header, widths):
            for n, line in enumerate(lines):
                self._text(x + size * 0.6, self.y + size * 0.4 + n * head_step, line, size, bold=True)
            x += w
        self.y += head_h
        for i, row in enumerate(rows):
            if i % 2:
                self._rect(LEFT, self.y, total, row_h, STRIPE_FILL)
            x = LEFT
            for j, (cell, w) in enumerate(zip(row, widths)):
                self._text(x + size * 0.6, self.y + (row_h - size * 1.15) / 2, cell, size, (offset + i, j) in t.bold)
                x += w
            self.y += row_h

    # -- definition lists

    def _terms(self, t: Terms) -> None:
        size = t.size
        column = min(max(width(term, size, bold=True) for term, _ in t.items) + size * 1.5, WIDTH * 0.3)
        step = size * 1.4
        items = [
            (wrap(term, column - size, size, bold=True, ids=True), wrap(definition, WIDTH - column, size))
            for term, definition in t.items
        ]
        heights = [max(len(names), len(lines)) * step + t.space_after for names, lines in items]
        for i, (names, lines) in enumerate(items):
            last_two = i == len(items) - 2 and heights[i] + heights[i + 1] > self._room()
            if not self._fresh and (heights[i] > self._room() or last_two):  # never a last item alone
                self._new()
            for n, name in enumerate(names):
                self._text(LEFT, self.y + n * step, name, size, bold=True)
            for n, line in enumerate(lines):
                self._text(LEFT + column, self.y + n * step, line, size)
            self.y += heights[i]


def _first_height(block: Block) -> float:
    """What of ``block`` must share a page with the heading before it: two lines, or a table's header
    and three rows."""
    if isinstance(block, Para):
        return 2 * block.size * 1.4
    if isinstance(block, Table):
        return block.size * (3.5 + 3 * block.row_height)
    if isinstance(block, Terms):
        return 2 * block.size * 1.4
    return 0.0


def _natural(t: Table, j: int, size: float) -> float:
    body = max((width(row[j], size, (i, j) in t.bold) for i, row in enumerate(t.rows)), default=0.0)
    return max(body, unbreakable(t.header[j], size, body)) + size * 1.2


def _column_groups(t: Table) -> list[Table]:
    """``t`` as the fewest tables of even width that fit the page at its type size, each beginning with
    its first ``repeat`` columns."""
    fixed = list(range(t.repeat))
    rest = list(range(t.repeat, len(t.header)))
    widths = {j: _natural(t, j, t.size) for j in range(len(t.header))}
    room = WIDTH - sum(widths[j] for j in fixed)
    for groups in range(1, len(rest) + 1):
        per = math.ceil(len(rest) / groups)
        chunks = [rest[i : i + per] for i in range(0, len(rest), per)]
        if all(sum(widths[j] for j in chunk) <= room for chunk in chunks):
            break
    out = []
    for chunk in chunks:
        keep = fixed + chunk
        where = {j: n for n, j in enumerate(keep)}
        out.append(
            dataclasses.replace(
                t,
                header=[t.header[j] for j in keep],
                rows=[[row[j] for j in keep] for row in t.rows],
                clip=frozenset(where[j] for j in t.clip if j in where),
                bold=frozenset((i, where[j]) for i, j in t.bold if j in where),
                repeat=0,
            )
        )
    return out


@dataclass(frozen=True)
class _Grid:
    """A table's geometry on the page, the same on every page it runs over: wrapped header lines,
    column widths and type size (points), the header's height and its line step."""

    header: list[list[str]]
    widths: list[float]
    size: float
    head_h: float
    head_step: float


def _column_widths(t: Table) -> tuple[float, list[float]]:
    """The type size and the column widths (points) that fit the page: each column as wide as its
    widest cell (a header may wrap, down to its widest word), smaller type while they do not fit,
    then clippable columns narrowed; what is left over opens wrapped headers to one line, the
    narrowest needs first, and the rest is shared out evenly."""
    size = t.size
    while True:
        pad = size * 1.2
        natural = [_natural(t, j, size) for j in range(len(t.header))]
        if sum(natural) <= WIDTH or size <= 6.0:
            break
        size -= 0.5
    total = sum(natural)
    if total > WIDTH and t.clip:  # narrow the clippable columns to what is left
        fixed = sum(w for j, w in enumerate(natural) if j not in t.clip)
        share = max(WIDTH - fixed, 0.0) / sum(natural[j] for j in t.clip)
        natural = [w * share if j in t.clip else w for j, w in enumerate(natural)]
        total = sum(natural)
    if total > WIDTH:  # last resort: everything narrower
        return size, [w * WIDTH / total for w in natural]
    spare = WIDTH - total
    opens = [
        (max(width(line, size, True) for line in name.split("\n")) + pad - natural[j], j)
        for j, name in enumerate(t.header)
    ]
    for need, j in sorted(o for o in opens if o[0] > 0):
        if need > spare:
            break
        natural[j] += need
        spare -= need
    return size, [w + spare / len(natural) for w in natural]


# ---------------------------------------------------------------------------------------------------
# Drawing


def draw(pages: list[Page], footer: str) -> list[Figure]:
    """Each page as a figure, with its title and the footer ``footer · page N of M``."""
    figures = []
    for n, page in enumerate(pages, start=1):
        fig = Figure(figsize=PAGE)
        charted = any(op[0] == "chart" for op in page.ops)
        title = settable(page.title)
        fig.text(
            LEFT / W,
            _baseline(TOP, 16),
            title,
            fontsize=16,
            weight="bold",
            va="baseline",
            parse_math=False,
            **_font(title),
        )
        if charted:  # the chart draws its own title: this copy is there to be searched
            fig.texts[-1].set_alpha(0.0)
        for op in page.ops:
            if op[0] == "text":
                _, x, y, text, size, bold, colour, ha = op
                fig.text(
                    x / W,
                    _baseline(y, size),
                    text,
                    fontsize=size,
                    weight="bold" if bold else "normal",
                    color=colour,
                    va="baseline",
                    ha=ha,
                    parse_math=False,  # "$0.25 … $0.10" is money, not mathtext
                    **_font(text),
                )
            elif op[0] == "rect":
                _, x, y, w, h, colour = op
                fig.add_artist(
                    Rectangle(
                        (x / W, 1 - (y + h) / H),
                        w / W,
                        h / H,
                        transform=fig.transFigure,
                        facecolor=colour,
                        edgecolor="none",
                    )
                )
            elif op[0] == "chart":
                ax = fig.add_axes((0.03, 0.06, 0.94, 0.91))
                ax.imshow(matplotlib.image.imread(io.BytesIO(op[1]), format="png")[..., :3], interpolation="none")
                ax.axis("off")
        fig.text(
            LEFT / W,
            _baseline(FOOTER, 7.5),
            settable(footer),
            fontsize=7.5,
            color=GREY,
            va="baseline",
            parse_math=False,
            **_font(settable(footer)),
        )
        number = f"page {n} of {len(pages)}"
        fig.text(RIGHT / W, _baseline(FOOTER, 7.5), number, fontsize=7.5, color=GREY, va="baseline", ha="right")
        figures.append(fig)
    return figures


def _font(text: str) -> dict:
    """The font families ``text`` is drawn in, where DejaVu Sans alone cannot set it: each character in
    the first of them that has it, as ``pdf_text`` measured it."""
    families = fonts.needed(text)
    return {"fontfamily": families} if families else {}


def _baseline(top: float, size: float) -> float:
    """The figure-fraction height of the baseline of a line whose top is ``top`` points down the page:
    every line set on its baseline, so lines without tall letters do not ride up."""
    return 1 - (top + size * 0.8) / H


def book(front: list[Section], body: list[Section], core: bool = False) -> list[Page]:
    """The ``front`` sections' pages, then a contents of the ``body`` sections (each listed one's title
    and the page it starts on), then the body's pages; measured for the PDF core fonts when ``core``."""
    with core_fonts(core):
        return _book(front, body)


def texts(sections: list[Section]) -> Iterator[str]:
    """Every string the sections will set, ``CORE`` applied (before characters no font has are replaced)."""
    for section in sections:
        yield section.title.translate(CORE)
        for block in section.blocks:
            if isinstance(block, Para):
                yield (block.bullet + block.text).translate(CORE)
            elif isinstance(block, Table):
                yield from (cell.translate(CORE) for row in [block.header, *block.rows] for cell in row)
            elif isinstance(block, Terms):
                yield from (text.translate(CORE) for item in block.items for text in item)


def _book(front: list[Section], body: list[Section]) -> list[Page]:
    front_pages = paginate(front)
    body_pages = [_Flow(section).pages for section in body]
    listed = [section for section in body if section.listed]
    per_page = int((BOTTOM - BODY_TOP) // CONTENTS_STEP)
    start = len(front_pages) + max(1, math.ceil(len(listed) / per_page)) + 1
    entries = []
    for section, pages in zip(body, body_pages):
        if section.listed:
            entries.append((section.title, start))
        start += len(pages)
    contents: list[Page] = []
    for first in range(0, max(len(entries), 1), per_page):
        page = Page("Contents" if not contents else "Contents (continued)", "Contents")
        y = BODY_TOP
        for title, number in entries[first : first + per_page]:
            page.ops.append(("text", LEFT + 20, y, settable(title), 10.5, False, "black", "left"))
            page.ops.append(("text", LEFT + 20 + WIDTH * 0.62, y, str(number), 10.5, False, "black", "right"))
            y += CONTENTS_STEP
        contents.append(page)
    return front_pages + contents + [page for pages in body_pages for page in pages]


CONTENTS_STEP = 10.5 * 1.75
