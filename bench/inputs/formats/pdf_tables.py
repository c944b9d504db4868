"""Tables on a PDF page as markdown tables, each value under its column's header.

Two kinds are found. A **table of figures** — the financial statement, drawn with or without
rules — is found from the characters alone: lines on which numbers stand in the same columns, one under the
other. Its columns are the horizontal bands the numbers share; the lines just above it whose words
stand over those bands are its header rows (``Year Ended December 31,`` spanning three columns, the
years under it), flattened into one header per column (``Year Ended December 31, 2017``), so a
value is never separated from its year. A **ruled grid** of other text (cells closed by drawn
lines) is cut into cells by pdfplumber's edge algorithm. In both kinds a lone currency sign is kept with its amount
(``$ 79,268``), a negative stays in its parentheses (``(2,724)``), and columns empty in every row
are dropped.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from bench.inputs.formats.pdf_page import Char, PageContent
from bench.text.scripts import collapse_spaces, is_cjk

_CELL_GAP = 1.0  # a gap this many font sizes wide between two characters of a line separates cells
_WORD_GAP = 0.15  # a gap this many font sizes wide between two characters is a space
_ROW_TOLERANCE = 0.35  # characters whose centres are within this many font sizes are on one line
_BLOCK_GAP = 2.6  # lines further apart than this many font sizes are not in one table
_BETWEEN = 3  # text-only lines (a section label, a wrapped label) a table may have between two figure lines
_HEADER_ROWS = 4  # header lines looked for above a table of figures
_HEADER_GAP = 1.0  # header lines sit this close (in font sizes) over each other; a title stands apart
_HEADER_SIZE = 1.2  # a line set larger than this many times a table's text is a title, not a header
_MIN_FIGURE_ROWS = 2  # lines with figures a table of figures needs
_INDENT = 3.0  # a text line starting this many font sizes right of the labels continues a cell above
_EDGE_SNAP = 3.0  # points: ruling lines this close are one line, as pdfplumber's finder snaps them
_EDGE_MIN = 3.0  # points: shorter ruling lines are marks, not rules

_CURRENCY = re.compile(r"^(?:[$€£¥₹]|US\$|C\$|A\$|HK\$|RMB|USD|EUR)$")
# a figure: a number with its sign, parentheses, currency and per cent; or a dash standing for zero
_FIGURE = re.compile(
    r"^[(\[]?[-+−–]?(?:[$€£¥₹]\s?)?[(\[]?[-+−–]?(?:\d(?:[\d,]*\d)?(?:\.\d+)?|\.\d+)\s?%?[)\]]?[)\]]?\*?$|^[—–-]{1,3}$"
)
# an exhibit's or item's number (10.13*, 32.1†); a footnote's "(1)" is no column of numbers
_NUMBER_LABEL = re.compile(r"^\d+(?:\.\d+)*[*†‡]*$")
_DIGITS = re.compile(r"\d")
_YEAR = re.compile(r"^(?:19|20)\d\d$")
_CLOSING = re.compile(r"^[)%\]]+$")


@dataclass(slots=True)
class Table:
    """A table of one page: its box (pdfminer coordinates), its markdown, and the characters of
    the page (indexes into ``PageContent.chars``) its text took."""

    x0: float
    y0: float
    x1: float
    y1: float
    markdown: str
    chars: frozenset[int] = field(default_factory=frozenset)


@dataclass(slots=True)
class _Segment:
    """A run of characters of one line with no cell-wide gap in it."""

    chars: list[int]
    x0: float
    x1: float
    y0: float
    y1: float
    text: str
    size: float

    @property
    def figure(self) -> bool:
        return bool(_FIGURE.match(self.text))


def find_tables(page: PageContent) -> list[Table]:
    """The page's tables, top to bottom: tables of figures first (the rules drawn around a
    statement are often shading, not its columns), then ruled grids among the other characters."""
    visible = [i for i, c in enumerate(page.chars) if c.upright and c.text.strip()]
    found = _figure_tables(page.chars, visible)
    taken = frozenset().union(*(t.chars for t in found)) if found else frozenset()
    found += [t for t in _ruled_tables(page) if not t.chars & taken]
    found.sort(key=lambda t: (-t.y1, t.x0))
    return found


# --- tables of figures -------------------------------------------------------------------------


def _figure_tables(chars: list[Char], indexes: list[int]) -> list[Table]:
    rows = [_segments(chars, line) for line in _lines(chars, indexes)]
    tables: list[Table] = []
    i = 0
    while i < len(rows):
        # a table of figures, or of numbered lines; the one never runs on into the other (the
        # numbered footnotes under a statement are not its rows)
        kind = _figure_row if _figure_row(rows[i]) else _numbered_row
        if not kind(rows[i]) or _years_row(rows[i]):
            i += 1
            continue
        end, last, figure_rows, between = i + 1, i, 1, 0
        label, start = rows[i][0].x0, _figures_start(rows[i : i + 1])  # where rows i..last's figures start

        while end < len(rows) and between <= _BETWEEN:
            row = rows[end]
            if _gap(rows[end - 1], row) > _BLOCK_GAP * _size(row):
                break
            if kind(row):
                last, figure_rows, between = end, figure_rows + 1, 0
                label, start = min(label, row[0].x0), _figures_start(rows[i : last + 1])
            elif not _label_only(row, start):
                break
            elif row[0].x0 > label + _INDENT * row[0].size and last == end - 1:
                last, start = end, _figures_start(rows[i : end + 1])  # a wrapped cell's next line
            else:
                between += 1
            end += 1
        if figure_rows >= _MIN_FIGURE_ROWS:
            first = i
            while (
                first > 0
                and i - first < _BETWEEN
                and _label_only(rows[first - 1], start)
                and _gap(rows[first - 1], rows[first]) <= _BLOCK_GAP * _size(rows[first])
                and not (tables and _above(tables[-1], rows[first - 1]))
            ):
                first -= 1
            table = _figure_table(chars, rows, first, last + 1)
            if table is not None:
                tables.append(table)
                i = last + 1
                continue
        i += 1
    return tables


def _above(table: Table, row: list[_Segment]) -> bool:
    """Whether a line belongs to a table already found (its last line, or above it)."""
    return min(seg.y0 for seg in row) >= table.y0 - 0.01


def _figure_row(row: list[_Segment]) -> bool:
    """A line with a figure after something else: a label and its amounts, or amounts alone."""
    return any(seg.figure for seg in row[1:])


def _numbered_row(row: list[_Segment]) -> bool:
    """A line whose number stands a column apart from its text: an index of exhibits."""
    return len(row) > 1 and _NUMBER_LABEL.match(row[0].text) is not None and not _figure_row(row)


def _years_row(row: list[_Segment]) -> bool:
    """A line whose figures are all years: the header over a statement's columns, not a row of it."""
    figures = [seg.text for seg in row if seg.figure]
    return bool(figures) and all(_YEAR.match(text) for text in figures)


def _figures_start(rows: list[list[_Segment]]) -> float:
    """Where the columns of figures begin: the leftmost figure that another line has a figure
    under or over (a number inside a label, ``Authorized shares — 500``, stands alone)."""
    figures = [(r, seg) for r, row in enumerate(rows) for seg in row[1:] if seg.figure]
    if not figures:
        return math.inf  # numbered lines: every column after the numbers is text
    shared = [
        seg.x0
        for r, seg in figures
        if any(o is not seg and q != r and o.x0 < seg.x1 and seg.x0 < o.x1 for q, o in figures)
    ]
    return min(shared) if shared else min(seg.x0 for _, seg in figures)


def _label_only(row: list[_Segment], start: float) -> bool:
    """A line of text standing wholly left of where the block's figures start: a section label
    such as ``Operating expenses:``, or the first line of a wrapped label."""
    return all(seg.x1 < start for seg in row)


def _figure_table(chars: list[Char], rows: list[list[_Segment]], first: int, end: int) -> Table | None:
    body = rows[first:end]
    start = _figures_start(body)
    texts = [
        seg
        for row in body
        if _figure_row(row) or _numbered_row(row)
        for seg in row[1:]
        if seg.x1 < start - 0.5 * seg.size
    ]
    aligned = [t for t in texts if any(o is not t and abs(o.x0 - t.x0) <= o.size for o in texts)]
    bands = _bands([seg for row in body for seg in row if seg.x0 >= start - 0.5 * seg.size] + aligned)
    if not bands:
        return None
    header: list[list[_Segment]] = []
    for row in reversed(rows[max(0, first - _HEADER_ROWS) : first]):
        below = header[0] if header else body[0]
        if (
            _gap(row, below) > (_HEADER_GAP if header else _BLOCK_GAP) * _size(row)
            or _size(row) > _HEADER_SIZE * _size(body[0])
            or not _header_row(row, bands)
        ):
            break
        header.insert(0, row)
    width = len(bands) + 1
    head = [""] * width
    for row in header:
        for seg, columns in _spans(row, bands):
            for column in columns:
                head[column] = f"{head[column]} {seg.text}".strip()
    cells: list[list[str]] = []
    for row in body:
        columns = [_columns(seg, bands, spanning=False)[0] if seg.x1 >= bands[0][0] else 0 for seg in row]
        if cells and columns[0] > 0 and not _figure_row(row) and not _numbered_row(row):
            line = cells[-1]  # the next line of a cell wrapped in a column of text
        else:
            line = [""] * width
            cells.append(line)
        for seg, column in zip(row, columns, strict=True):
            line[column] = f"{line[column]} {seg.text}".strip()
    grid = _tidy([head, *cells] if any(head) else cells)
    taken = [i for row in header + body for seg in row for i in seg.chars]
    boxes = [seg for row in header + body for seg in row]
    return Table(
        min(s.x0 for s in boxes),
        min(s.y0 for s in boxes),
        max(s.x1 for s in boxes),
        max(s.y1 for s in boxes),
        _markdown(grid),
        frozenset(taken),
    )


def _header_row(row: list[_Segment], bands: list[tuple[float, float]]) -> bool:
    """A line above a table of figures is one of its headers when its words stand over the
    figures' columns (or wholly left of them, over the labels), none crossing from the labels
    into the columns as a centred title does."""
    left = bands[0][0]
    over = [seg for seg in row if seg.x1 > left]
    return bool(over) and all(seg.x0 >= left - 2 * seg.size for seg in over)


def _spans(row: list[_Segment], bands: list[tuple[float, float]]) -> list[tuple[_Segment, list[int]]]:
    """Each header segment with the columns it heads. One that spans several columns (centred over
    them, often narrower than they are) also heads the columns beside it that nothing else in its
    line stands over."""
    spans = [(seg, _columns(seg, bands, spanning=True)) for seg in row]
    # a unit note over several columns, "(in thousands)", heads the labels once, not each column
    spans = [(seg, [0] if seg.text.startswith("(") and len(cs) > 1 else cs) for seg, cs in spans]
    spanning = [(seg, columns) for seg, columns in spans if len(columns) > 1]
    if spanning:
        covered = {c for _, columns in spans for c in columns}
        for k in range(1, len(bands) + 1):
            if k not in covered:
                centre = (bands[k - 1][0] + bands[k - 1][1]) / 2
                _, columns = min(spanning, key=lambda sc: abs((sc[0].x0 + sc[0].x1) / 2 - centre))
                columns.append(k)
                columns.sort()
    return spans


def _columns(seg: _Segment, bands: list[tuple[float, float]], *, spanning: bool) -> list[int]:
    """The table columns (1 onwards; 0 is the labels') a segment stands in: every band it overlaps
    when it may span (a header), else the one it overlaps most, or the nearest."""
    if seg.x1 < bands[0][0] - 0.5 * seg.size:
        return [0]
    overlaps = [min(seg.x1, b1) - max(seg.x0, b0) for b0, b1 in bands]
    if spanning and sum(1 for o in overlaps if o > 0) > 1:
        return [k + 1 for k, o in enumerate(overlaps) if o > 0]
    if max(overlaps) > 0:
        return [overlaps.index(max(overlaps)) + 1]
    centre = (seg.x0 + seg.x1) / 2
    return [min(range(len(bands)), key=lambda k: abs((bands[k][0] + bands[k][1]) / 2 - centre)) + 1]


def _bands(segments: list[_Segment]) -> list[tuple[float, float]]:
    """Column bands: the horizontal extents of segments that overlap, merged, left to right."""
    bands: list[list[float]] = []
    for seg in sorted(segments, key=lambda s: s.x0):
        if bands and seg.x0 < bands[-1][1]:
            bands[-1][1] = max(bands[-1][1], seg.x1)
        else:
            bands.append([seg.x0, seg.x1])
    return [(b[0], b[1]) for b in bands]


def _lines(chars: list[Char], indexes: list[int]) -> list[list[int]]:
    """Characters grouped into lines, top to bottom, each left to right."""
    order = sorted(indexes, key=lambda i: (-(chars[i].y0 + chars[i].y1) / 2, chars[i].x0))
    lines: list[list[int]] = []
    centre = 0.0
    for i in order:
        c = chars[i]
        mid = (c.y0 + c.y1) / 2
        if lines and centre - mid <= _ROW_TOLERANCE * max(c.size, 1.0):
            lines[-1].append(i)
        else:
            lines.append([i])
            centre = mid
    return [sorted(line, key=lambda i: chars[i].x0) for line in lines]


def _segments(chars: list[Char], line: list[int]) -> list[_Segment]:
    """A line cut into segments at cell-wide gaps; a lone currency sign joins the amount after it,
    a lone closing parenthesis or per cent sign the amount before it."""
    pieces: list[list[int]] = []
    for i in line:
        if pieces:
            prev = chars[pieces[-1][-1]]
            if chars[i].x0 - prev.x1 <= _CELL_GAP * max(prev.size, chars[i].size, 1.0):
                pieces[-1].append(i)
                continue
        pieces.append([i])
    segments = [_segment(chars, part) for piece in pieces for part in _split_figures(chars, piece)]
    joined: list[_Segment] = []
    for seg in segments:
        if joined and _CURRENCY.match(joined[-1].text) and seg.figure:
            joined[-1] = _segment(chars, joined[-1].chars + seg.chars, gap=" ")
        elif joined and _CLOSING.match(seg.text) and joined[-1].figure:
            joined[-1] = _segment(chars, joined[-1].chars + seg.chars, gap="")
        else:
            joined.append(seg)
    return joined


def _split_figures(chars: list[Char], piece: list[int]) -> list[list[int]]:
    """A piece cut after a figure followed, one word space on, by another amount or a currency
    sign: columns set close together (``44,538 $ 37,403``, ``19 % $ 39,117``), not one cell. A
    dash is an empty cell only at a column's distance: ``March 1 — March 31`` is one."""
    words: list[list[int]] = [[piece[0]]]
    for i in piece[1:]:
        prev = chars[words[-1][-1]]
        if chars[i].x0 - prev.x1 > _WORD_GAP * max(prev.size, chars[i].size, 1.0):
            words.append([i])
        else:
            words[-1].append(i)
    texts = ["".join(chars[i].text for i in word) for word in words]
    # a per cent sign or closing parenthesis set a space apart stays with its figure
    for k in range(len(words) - 1, 0, -1):
        if _CLOSING.match(texts[k]) and _FIGURE.match(texts[k - 1]):
            words[k - 1] += words.pop(k)
            texts[k - 1] = f"{texts[k - 1]}{texts.pop(k)}"
    parts = [list(words[0])]
    for k in range(1, len(words)):
        figure = _FIGURE.match(texts[k - 1])
        amount = figure and _DIGITS.search(texts[k - 1]) is not None  # a dash may sit inside a label
        if (amount and _FIGURE.match(texts[k]) and _DIGITS.search(texts[k])) or (figure and _CURRENCY.match(texts[k])):
            parts.append(list(words[k]))
        else:
            parts[-1].extend(words[k])
    return parts


def _segment(chars: list[Char], piece: list[int], gap: str | None = None) -> _Segment:
    cs = [chars[i] for i in piece]
    return _Segment(
        piece,
        min(c.x0 for c in cs),
        max(c.x1 for c in cs),
        min(c.y0 for c in cs),
        max(c.y1 for c in cs),
        _text(cs, gap),
        max(c.size for c in cs),
    )


def _text(cs: list[Char], gap: str | None = None) -> str:
    """Characters of one line as text: a space where they stand a word apart (none between two
    Chinese or Japanese characters); ``gap`` instead of the spaces at cell-wide gaps."""
    out = cs[0].text
    for prev, c in zip(cs, cs[1:], strict=False):
        space = c.x0 - prev.x1
        if gap is not None and space > _CELL_GAP * max(prev.size, c.size, 1.0):
            out += gap
        elif space > _WORD_GAP * max(prev.size, c.size, 1.0) and not (is_cjk(out[-1:]) and is_cjk(c.text[:1])):
            out += " "
        out += c.text
    return out


def _gap(upper: list[_Segment], lower: list[_Segment]) -> float:
    return min(s.y0 for s in upper) - max(s.y1 for s in lower)


def _size(row: list[_Segment]) -> float:
    return max(max(s.size for s in row), 1.0)


# --- ruled grids ---------------------------------------------------------------------------------


def _ruled_tables(page: PageContent) -> list[Table]:
    """Grids of drawn lines, cut into cells as pdfplumber's finder cuts them. A grid of one row or
    one column is a frame drawn around text, not a table: its text stays in the text boxes."""
    from pdfplumber.table import cells_to_tables, edges_to_intersections, intersections_to_cells, merge_edges

    h = page.height
    edges = []
    for e in page.edges:
        top, bottom = h - e.y1, h - e.y0
        horizontal = e.horizontal
        length = e.x1 - e.x0 if horizontal else bottom - top
        if length < _EDGE_MIN:
            continue
        if horizontal:
            top = bottom = (top + bottom) / 2
        else:
            mid = (e.x0 + e.x1) / 2
            e = type(e)(mid, e.y0, mid, e.y1)
        edges.append(
            {
                "x0": e.x0,
                "x1": e.x1,
                "top": top,
                "bottom": bottom,
                "doctop": top,
                "width": e.x1 - e.x0,
                "height": bottom - top,
                "orientation": "h" if horizontal else "v",
                "object_type": "line",
            }
        )
    if not edges:
        return []
    merged = merge_edges(edges, _EDGE_SNAP, _EDGE_SNAP, _EDGE_SNAP, _EDGE_SNAP)
    merged = [e for e in merged if (e["width"] if e["orientation"] == "h" else e["height"]) >= _EDGE_MIN]
    cells = intersections_to_cells(edges_to_intersections(merged, _EDGE_SNAP, _EDGE_SNAP))
    found = []
    for group in cells_to_tables(cells):
        table = _grid_table(page, group)
        if table is not None:
            found.append(table)
    return found


def _grid_table(page: PageContent, cells: list[tuple[float, float, float, float]]) -> Table | None:
    h = page.height
    tops = sorted({c[1] for c in cells})
    lefts = sorted({c[0] for c in cells})
    row_of, column_of = {t: r for r, t in enumerate(tops)}, {x: k for k, x in enumerate(lefts)}
    at = {(c[1], c[0]): c for c in cells}
    x_lo, x_hi = min(c[0] for c in cells), max(c[2] for c in cells)
    y_lo, y_hi = min(c[1] for c in cells), max(c[3] for c in cells)
    grid: list[list[list[int]]] = [[[] for _ in lefts] for _ in tops]
    taken: list[int] = []
    for i, ch in enumerate(page.chars):
        x, y = (ch.x0 + ch.x1) / 2, h - (ch.y0 + ch.y1) / 2
        if not (x_lo <= x < x_hi and y_lo <= y < y_hi) or not ch.upright or not ch.text.strip():
            continue  # outside the grid: most of a page's characters
        for (top, left), (x0, t0, x1, b1) in at.items():
            if x0 <= x < x1 and t0 <= y < b1:
                grid[row_of[top]][column_of[left]].append(i)
                taken.append(i)
                break
    rows = [[_cell_text(page.chars, members) for members in row] for row in grid]
    if any(_CURRENCY.match(v) or _CLOSING.match(v) for row in rows for v in row):
        # a lone currency sign in a cell of its own: the rules are shading behind a statement,
        # not its columns, which the figures themselves show
        return None
    rows = [row for row in rows if any(row)]
    if len(rows) < 2 or max(sum(1 for v in row if v) for row in rows) < 2:
        return None
    rows = _tidy(rows)
    if len(rows[0]) < 2:
        return None
    return Table(x_lo, h - y_hi, x_hi, h - y_lo, _markdown(rows), frozenset(taken))


def _cell_text(chars: list[Char], members: list[int]) -> str:
    """A cell's characters line by line, the lines joined as ``collapse_spaces`` joins them."""
    if not members:
        return ""
    lines = _lines(chars, members)
    return collapse_spaces("\n".join(_text([chars[i] for i in line]) for line in lines))


def _tidy(rows: list[list[str]]) -> list[list[str]]:
    """Columns empty in every row dropped; a column of lone currency signs joined to the amounts
    on its right (``$`` | ``34,229`` → ``$ 34,229``)."""
    keep = [k for k in range(len(rows[0])) if any(row[k] for row in rows)]
    rows = [[row[k] for k in keep] for row in rows]
    k = 0
    while k < len(rows[0]) - 1:
        column = [row[k] for row in rows]
        if any(column) and all(not v or _CURRENCY.match(v) for v in column):
            for row in rows:
                if row[k]:
                    row[k + 1] = f"{row[k]} {row[k + 1]}".strip()
                del row[k]
            continue
        k += 1
    return rows


def _markdown(rows: list[list[str]]) -> str:
    width = max(len(row) for row in rows)
    rows = [[v.replace("|", "\\|") for v in row] + [""] * (width - len(row)) for row in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
    return "\n".join(lines)
