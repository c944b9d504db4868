"""Running headers and footers: which margin lines repeat on most pages of a PDF."""

from __future__ import annotations

from collections import Counter

from bench.inputs.formats.pdf_margins import MarginLine, key, note, running


def test_page_numbers_and_roman_numerals_share_a_key() -> None:
    assert key("Page 12 of 80", top=False) == key("page 3  of 80", top=False) == ("page # of #", False)
    assert key("iv", top=False) == key("12", top=False) == ("#", False)
    assert key("Part II", top=True) == key("Part IV", top=True)
    assert key("Civil", top=True) == ("civil", True)  # a word made of roman letters is not a numeral
    assert key("Table of Contents", top=True) != key("Table of Contents", top=False)


def test_lines_on_most_pages_are_running_and_others_are_not() -> None:
    lines = [MarginLine(p, "ACME Corp. Annual Report", True) for p in range(10)]
    lines += [MarginLine(p, str(p + 1), False) for p in range(1, 10)]
    lines += [MarginLine(p, "Note 4 continued", True) for p in (3, 4)]  # two pages only
    lines += [MarginLine(p, "Risk Factors", True) for p in range(4)]  # four of ten: not most
    found = running(lines, pages=10)
    assert found == {("acme corp. annual report", True): "ACME Corp. Annual Report", ("#", False): "2"}


def test_a_short_document_has_no_running_lines() -> None:
    lines = [MarginLine(p, "Title", True) for p in range(2)]
    assert running(lines, pages=2) == {}
    assert running([MarginLine(p, "Title", True) for p in range(3)], pages=3) == {("title", True): "Title"}


def test_the_note_names_what_was_left_out() -> None:
    left_out = Counter({("acme corp.", True): 10, ("#", False): 9})
    examples = {("acme corp.", True): "ACME Corp.", ("#", False): "2"}
    assert note(left_out, examples, 10) == (
        "running headers and footers left out of the text: "
        "“ACME Corp.” (top, 10 of 10 pages); page numbers (bottom, 9 of 10 pages)"
    )


def test_a_long_line_repeated_but_for_its_numbers_is_body_text() -> None:
    body = "Page {} line 0: retrieval quality depends on chunking and the model and the index"
    lines = [MarginLine(p, body.format(p + 1), True) for p in range(5)]
    lines += [MarginLine(p, "Section 1", True) for p in range(5)]
    assert running(lines, pages=5) == {("section #", True): "Section 1"}


def test_ties_are_named_in_one_order_whatever_order_they_were_counted_in() -> None:
    examples = {("b", False): "B", ("a", True): "A", ("c", True): "C"}
    one = Counter({("b", False): 4, ("c", True): 4, ("a", True): 4})
    other = Counter({("a", True): 4, ("b", False): 4, ("c", True): 4})
    assert note(one, examples, 4) == note(other, examples, 4)
    assert note(one, examples, 4).endswith(
        "“A” (top, 4 of 4 pages); “C” (top, 4 of 4 pages); “B” (bottom, 4 of 4 pages)"
    )
