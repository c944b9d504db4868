"""Tables found on a PDF page's characters: statements of figures with their header rows, and
ruled grids. Pages are laid out here character by character (a fixed advance per character), so
every expected table is known by hand."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from bench.inputs.formats.pdf_page import Char, Edge, PageContent
from bench.inputs.formats.pdf_tables import find_tables

SIZE = 8.0
ADVANCE = 4.5  # points per character: word spaces are one advance, columns many


def _put(chars: list[Char], text: str, y: float, *, left: float | None = None, right: float | None = None) -> None:
    """``text`` on the line at baseline ``y``, starting at ``left`` or ending at ``right``
    (figures are set flush right, as statements set them)."""
    x = left if left is not None else right - len(text) * ADVANCE  # type: ignore[operator]
    for ch in text:
        if ch != " ":
            chars.append(Char(ch, x, y - 2, x + ADVANCE * 0.9, y + SIZE - 2, SIZE))
        x += ADVANCE


COLUMNS = (400.0, 480.0, 560.0)  # right edges of the three columns of figures


def _statement() -> PageContent:
    chars: list[Char] = []
    _put(chars, "CONSOLIDATED STATEMENTS OF OPERATIONS", 760, left=200)
    _put(chars, "(in millions)", 745, left=250)
    _put(chars, "Year Ended December 31,", 720, left=420)
    for right, year in zip(COLUMNS, ("2022", "2021", "2020"), strict=True):
        _put(chars, year, 709, right=right - 5)
    rows = [
        ("Net sales", ("$", "34,229"), ("$", "35,355"), ("$", "32,184")),
        ("Operating expenses:", None, None, None),
        ("Cost of sales", "19,232", "18,795", "16,605"),
        ("Other expense, net", "(2,724)", "—", "(44)"),
        ("Net income", ("$", "5,777"), ("$", "5,921"), ("$", "5,384")),
    ]
    y = 696.0
    for label, *values in rows:
        _put(chars, label, y, left=40)
        for right, value in zip(COLUMNS, values, strict=True):
            if isinstance(value, tuple):
                _put(chars, value[0], y, left=right - 70)
                _put(chars, value[1], y, right=right)
            elif value:
                _put(chars, value, y, right=right)
        y -= 12
    _put(chars, "The notes are an integral part of these statements.", y - 30, left=40)
    return PageContent(612, 792, chars)


def test_a_statement_keeps_its_year_header_currency_and_negatives() -> None:
    page = _statement()
    (table,) = find_tables(page)
    assert table.markdown == "\n".join(
        [
            "|  | Year Ended December 31, 2022 | Year Ended December 31, 2021 | Year Ended December 31, 2020 |",
            "|---|---|---|---|",
            "| Net sales | $ 34,229 | $ 35,355 | $ 32,184 |",
            "| Operating expenses: |  |  |  |",
            "| Cost of sales | 19,232 | 18,795 | 16,605 |",
            "| Other expense, net | (2,724) | — | (44) |",
            "| Net income | $ 5,777 | $ 5,921 | $ 5,384 |",
        ]
    )
    # the title, the unit line and the note after it stay text, outside the table
    outside = "".join(c.text for i, c in enumerate(page.chars) if i not in table.chars)
    assert outside == "CONSOLIDATEDSTATEMENTSOFOPERATIONS(inmillions)Thenotesareanintegralpartofthesestatements."
    assert table.y1 > 720 > table.y0


def test_columns_set_close_together_are_split_at_their_currency_signs() -> None:
    # "44,538 $" is one word space apart: the sign belongs to the next column's amount
    chars: list[Char] = []
    for y, label, values in ((700, "Revenues", ("$ 44,538", "$ 37,403")), (688, "Cost of sales", ("24,576", "21,162"))):
        _put(chars, label, y, left=40)
        for right, value in zip((440.0, 480.0), values, strict=True):
            _put(chars, value, y, right=right)
    (table,) = find_tables(PageContent(612, 792, chars))
    assert table.markdown.splitlines()[0] == "| Revenues | $ 44,538 | $ 37,403 |"
    assert table.markdown.splitlines()[2] == "| Cost of sales | 24,576 | 21,162 |"


def test_prose_with_numbers_is_not_a_table() -> None:
    chars: list[Char] = []
    for k, line in enumerate(
        (
            "Revenue grew 12% to 34,229 million in 2022, from 30,560 million in 2021,",
            "while 1,200 people joined and 300 left across 14 countries and 3 regions.",
            "Two columns of prose side by side",
        )
    ):
        _put(chars, line, 700 - 12 * k, left=40)
    _put(chars, "with a second column", 676, left=330)
    assert find_tables(PageContent(612, 792, chars)) == []


def test_a_ruled_grid_of_words_is_cut_by_its_rules() -> None:
    chars: list[Char] = []
    xs, ys = (50.0, 150.0, 250.0), (700.0, 685.0, 670.0)
    for r, row in enumerate((("Model", "Notes"), ("minilm", "small and fast"))):
        for c, cell in enumerate(row):
            _put(chars, cell, ys[r] - 11, left=xs[c] + 4)
    edges = [Edge(xs[0], y, xs[-1], y) for y in ys] + [Edge(x, ys[-1], x, ys[0]) for x in xs]
    (table,) = find_tables(PageContent(612, 792, chars, edges))
    assert table.markdown == "| Model | Notes |\n|---|---|\n| minilm | small and fast |"
    assert len(table.chars) == len("ModelNotesminilmsmallandfast")


_LABEL = st.text(string.ascii_letters, min_size=2, max_size=10).map(str.capitalize)
_FIGURE = st.one_of(
    st.integers(0, 9_999_999).map(lambda n: f"{n:,}"),
    st.integers(1, 99_999).map(lambda n: f"({n:,})"),
    st.just("—"),
)


@settings(max_examples=60, deadline=None)
@given(
    labels=st.lists(_LABEL, min_size=2, max_size=8, unique=True),
    width=st.integers(2, 4),
    data=st.data(),
)
def test_every_value_stays_in_its_row_and_column(labels: list[str], width: int, data: st.DataObject) -> None:
    values = [[data.draw(_FIGURE) for _ in range(width)] for _ in labels]
    years = [str(2024 - k) for k in range(width)]
    chars: list[Char] = []
    rights = [260 + 90 * k for k in range(width)]
    for right, year in zip(rights, years, strict=True):
        _put(chars, year, 720, right=right)
    for r, (label, row) in enumerate(zip(labels, values, strict=True)):
        _put(chars, label, 708 - 12 * r, left=40)
        for right, value in zip(rights, row, strict=True):
            _put(chars, value, 708 - 12 * r, right=right)
    (table,) = find_tables(PageContent(612, 792, chars))
    lines = table.markdown.splitlines()
    assert lines[0] == "|  | " + " | ".join(years) + " |"
    assert lines[2:] == ["| " + " | ".join([label, *row]) + " |" for label, row in zip(labels, values, strict=True)]


def test_a_column_of_wrapped_text_keeps_each_cell_in_its_row() -> None:
    chars: list[Char] = []
    _put(chars, "Officer", 712, left=480)
    for text, left in (("Name", 40), ("Position", 160), ("Since", 480), ("Age", 540)):
        _put(chars, text, 702, left=left)
    people = (
        ("Ann Lee", ("Chief Executive Officer. Ms. Lee has led", "the company since 2012."), "2012", "61"),
        ("Bo Chan", ("Chief Financial Officer.",), "2019", "54"),
        ("Cy Diaz", ("Head of Operations. Mr. Diaz ran the", "plants in Ohio from 2001 to", "2015."), "2016", "58"),
    )
    y = 690.0
    for name, lines, since, age in people:
        _put(chars, name, y, left=40)
        _put(chars, since, y, right=500)
        _put(chars, age, y, right=555)
        for line in lines:
            _put(chars, line, y, left=160)
            y -= 10
    (table,) = find_tables(PageContent(612, 792, chars))
    assert table.markdown == "\n".join(
        [
            "| Name | Position | Officer Since | Age |",
            "|---|---|---|---|",
            "| Ann Lee | Chief Executive Officer. Ms. Lee has led the company since 2012. | 2012 | 61 |",
            "| Bo Chan | Chief Financial Officer. | 2019 | 54 |",
            "| Cy Diaz | Head of Operations. Mr. Diaz ran the plants in Ohio from 2001 to 2015. | 2016 | 58 |",
        ]
    )


def test_an_index_of_numbered_exhibits_is_a_table_and_footnotes_are_not() -> None:
    chars: list[Char] = []
    _put(chars, "Exhibit Number", 712, left=40)
    _put(chars, "Exhibit", 712, left=120)
    y = 700.0
    for number, lines in (
        ("10.13*", ("Form of Notice of Award pursuant to the 2014 Plan", "(incorporated by reference).")),
        ("10.14*", ("Employment Agreement with the Chief Executive.",)),
        ("32.1†", ("Certifications pursuant to Section 906.",)),
    ):
        _put(chars, number, y, left=40)
        for line in lines:
            _put(chars, line, y, left=120)
            y -= 10
    _put(chars, "(1)", y - 30, left=40)
    _put(chars, "Excludes deferral of share-based compensation.", y - 30, left=120)
    (table,) = find_tables(PageContent(612, 792, chars))
    assert table.markdown == "\n".join(
        [
            "| Exhibit Number | Exhibit |",
            "|---|---|",
            "| 10.13* | Form of Notice of Award pursuant to the 2014 Plan (incorporated by reference). |",
            "| 10.14* | Employment Agreement with the Chief Executive. |",
            "| 32.1† | Certifications pursuant to Section 906. |",
        ]
    )


def test_a_per_cent_sign_a_space_apart_stays_with_its_figure_and_a_date_range_stays_whole() -> None:
    chars: list[Char] = []
    _put(chars, "Revenues", 700, left=40)
    for right, value in ((300.0, "$ 44,538"), (360.0, "19 %"), (420.0, "$ 39,117")):
        _put(chars, value, 700, right=right)
    _put(chars, "Cost of sales", 688, left=40)
    for right, value in ((300.0, "24,576"), (360.0, "16 %"), (420.0, "21,643")):
        _put(chars, value, 688, right=right)
    _put(chars, "March 1 — March 31, 2021", 676, left=40)
    for right, value in ((300.0, "1,658"), (360.0, "2 %"), (420.0, "—")):
        _put(chars, value, 676, right=right)
    (table,) = find_tables(PageContent(612, 792, chars))
    lines = table.markdown.splitlines()
    assert lines[0] == "| Revenues | $ 44,538 | 19 % | $ 39,117 |"
    assert lines[2:] == ["| Cost of sales | 24,576 | 16 % | 21,643 |", "| March 1 — March 31, 2021 | 1,658 | 2 % | — |"]
