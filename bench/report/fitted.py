"""Tables that fit the terminal without cutting what people copy or read.

A :class:`FittedTable` has key columns (candidate ids, run ids, metric names: what is pasted into
the next command) and value columns, most important first. It lays itself out when printed, for
the console's width: every key is shown whole (never wrapped or cut), every other cell at least
as wide as its longest word, so that no number is ever cut; headers wrap at their spaces, and text
in a script written without spaces (Chinese, Japanese, Thai) between any two characters. When
the columns do not fit side by side, the value columns that do not go into a second table (and
a third …), each starting again with the keys.

Text can be wider than any terminal: an id, or a word with no space in it, longer than the line.
Then the table's widest columns give up width (``_fit``), so that the short words, the figures
among them, stay whole; a key keeps its width while the other columns keep theirs up to
``_FLOOR`` columns. What does not fit is folded onto further lines, never cut.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import regex
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, JustifyMethod, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from bench.text.scripts import UNSPACED_CLASS, has_unspaced

_UNBOUNDED = 100_000  # columns, for measuring a table's natural width
_FLOOR = 12  # columns a value column keeps beside a key before the key folds: any figure, "[0.41, 0.52]" on one line
# What a line keeps whole: a character of a script written without spaces (with its marks), or a run of others.
_UNBROKEN = regex.compile(rf"[{UNSPACED_CLASS}]\p{{M}}*|[^{UNSPACED_CLASS}]+")


@dataclass(frozen=True)
class _Column:
    header: str
    key: bool
    justify: JustifyMethod
    min_width: int | None


@dataclass
class _Row:
    cells: list[str]
    end_section: bool = False


@dataclass
class FittedTable:
    """``rich.table.Table``'s ``add_column``, ``add_row`` and ``add_section``, laid out at print time.

    ``min_width`` of a column keeps a cell's text together where it has spaces that are no place to
    wrap (``0.500 → 0.550`` in one line, the change under it)."""

    title: str = ""
    caption: str = ""
    show_edge: bool = True
    _columns: list[_Column] = field(default_factory=list)
    _rows: list[_Row] = field(default_factory=list)

    def add_column(
        self, header: str, *, key: bool = False, justify: JustifyMethod = "right", min_width: int | None = None
    ) -> None:
        self._columns.append(_Column(header, key, "left" if key else justify, min_width))

    def add_row(self, *cells: str, end_section: bool = False) -> None:
        if len(cells) != len(self._columns):
            raise ValueError(f"{len(cells)} cells for {len(self._columns)} columns")
        self._rows.append(_Row(list(cells), end_section))

    def add_section(self) -> None:
        if self._rows:
            self._rows[-1].end_section = True

    @property
    def row_count(self) -> int:
        return len(self._rows)

    def parts(self, console: Console, width: int) -> list[list[int]]:
        """The columns (by position) of each table printed at ``width``: the keys first in each,
        then as many value columns as fit; a value column wider than any table starts one alone."""
        keys = [i for i, c in enumerate(self._columns) if c.key]
        parts: list[list[int]] = []
        current: list[int] = []
        for i, column in enumerate(self._columns):
            if column.key:
                continue
            if current and self._least_width(console, [*keys, *current, i]) > width:
                parts.append(current)
                current = []
            current.append(i)
        parts.append(current)
        return [sorted([*keys, *part]) for part in parts]

    def _least_width(self, console: Console, columns: list[int]) -> int:
        table = self._table(sorted(columns), "", "", tight=True)
        return Measurement.get(console, console.options.update(max_width=_UNBOUNDED), table).minimum

    def _least(self, i: int) -> int:
        """Column ``i``'s least width: its longest word (header and cells), or its longest line for a key."""
        c = self._columns[i]
        texts = [Text.from_markup(c.header).plain, *(Text.from_markup(r.cells[i]).plain for r in self._rows)]
        pieces = [line for t in texts for line in t.splitlines()] if c.key else [w for t in texts for w in t.split()]
        if not c.key:  # Chinese, Japanese or Thai wraps between its characters: their runs are no words
            pieces = [p for w in pieces for p in (_UNBROKEN.findall(w) if has_unspaced(w) else [w])]
        return max([c.min_width or 0, *(cell_len(w) for w in pieces)])

    def _table(self, columns: list[int], title: str, caption: str, tight: bool = False, fit: int = _UNBOUNDED) -> Table:
        """``tight``: every column at its least width, or less where they do not fit in ``fit``
        columns (``_fit``), so that rich has nothing left to squeeze: it would squeeze every column
        alike and cut the figures."""
        least = [self._least(i) for i in columns]
        widths = _fit(least, [self._columns[i].key for i in columns], fit - _frame(self.show_edge, len(columns)))
        table = Table(
            title=title or None,
            caption=caption or None,
            title_justify="left",
            caption_justify="left",
            show_edge=self.show_edge,
        )
        for i, width, whole in zip(columns, widths, least):
            c = self._columns[i]
            folded = width < whole  # an id wider than the line: folded, every character kept
            table.add_column(
                c.header,
                justify=c.justify,
                no_wrap=c.key and not folded,
                min_width=c.min_width,
                width=width if tight else None,
                overflow="ellipsis" if c.key and not folded else "fold",  # Chinese has no space to wrap at: folded
            )
        for row in self._rows:
            table.add_row(*(row.cells[i] for i in columns), end_section=row.end_section)
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        parts = self.parts(console, options.max_width)
        for n, columns in enumerate(parts):
            title = self.title if n == 0 else f"{self.title} (continued)" if self.title else "(continued)"
            natural = Measurement.get(console, options.update(max_width=_UNBOUNDED), self._table(columns, "", ""))
            tight = natural.maximum > options.max_width  # rich would squeeze it, and may crop while it does
            yield self._table(columns, title, self.caption if n == len(parts) - 1 else "", tight, options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        every = list(range(len(self._columns)))
        full = Measurement.get(console, options.update(max_width=_UNBOUNDED), self._table(every, "", ""))
        return Measurement(min(full.minimum, options.max_width), min(full.maximum, options.max_width))


def _frame(edge: bool, n: int) -> int:
    """Columns a table of ``n`` columns takes besides its cells: a space either side of each cell,
    a rule between two cells, and one at either edge."""
    return 3 * n - 1 + (2 if edge else 0)


def _fit(least: list[int], key: list[bool], room: int) -> list[int]:
    """Widths for columns whose least widths are ``least`` in ``room`` columns: those widths where
    they fit; else the keys whole, the other columns cut down from the widest to no less than
    ``_FLOOR`` (or their least, when smaller); else every column cut down from the widest. Cut
    down to a common width, the narrowest columns, the figures, keep theirs."""
    if sum(least) <= room:
        return least
    keys = sum(w for w, k in zip(least, key) if k)
    values = [w for w, k in zip(least, key) if not k]
    if values:
        cut = _level(values, room - keys)
        if sum(cut) <= room - keys and all(c >= min(w, _FLOOR) for c, w in zip(cut, values)):
            it = iter(cut)
            return [w if k else next(it) for w, k in zip(least, key)]
    return _level(least, room)


def _level(widths: list[int], room: int) -> list[int]:
    """``widths`` with the widest brought down to one level, the most that fits in ``room`` (at
    least a column each), and what is left of ``room`` to the first of those brought down."""
    level = max(1, max(widths, default=1))
    while level > 1 and sum(min(w, level) for w in widths) > room:
        level -= 1
    out = [min(w, level) for w in widths]
    spare = room - sum(out)
    for i, w in enumerate(widths):
        if spare <= 0:
            break
        if w > out[i]:
            out[i] += 1
            spare -= 1
    return out
