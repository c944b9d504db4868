"""Web pages become their content as markdown: structure kept, boilerplate and markup gone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.inputs import formats
from bench.inputs.formats import html
from tests.inputs import make_office as m


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("html")
    return {
        "article": m.write_html_article(folder / "article.html").read_bytes(),
        "plain": m.write_html_plain(folder / "plain.htm").read_bytes(),
    }


def _tidy(text: str) -> None:
    assert not any(line != line.rstrip() for line in text.split("\n")), "trailing spaces"
    assert "\n\n\n" not in text
    assert text == text.strip()


@pytest.mark.parametrize("page", ["article", "plain"])
def test_content_and_structure_survive(pages: dict[str, bytes], page: str) -> None:
    text = html.extract(pages[page]).text
    lines = text.split("\n")
    assert f"# {m.HTML_TITLE}" in lines
    assert f"## {m.HTML_SECTION}" in lines
    for item in m.HTML_ITEMS:
        assert f"- {item}" in lines
    head, *rows = m.HTML_TABLE
    table = "\n".join(["| " + " | ".join(head) + " |", "| --- | --- |", *("| " + " | ".join(r) + " |" for r in rows)])
    assert table in text
    for sentence in (m.HTML_INTRO, m.HTML_QUOTE, m.HTML_CLOSING):  # the curly quotes and &nbsp; read as shown
        assert sentence in text
    _tidy(text)


@pytest.mark.parametrize("page", ["article", "plain"])
def test_boilerplate_hidden_text_and_markup_are_gone(pages: dict[str, bytes], page: str) -> None:
    text = html.extract(pages[page]).text
    for phrase in (*m.HTML_BOILERPLATE, *m.HTML_HIDDEN, "color: black", "Docs"):
        assert phrase not in text
    for markup in ("**", "_", "](", "![", "http", "\xa0", "`"):
        assert markup not in text
    assert m.HTML_URL not in text


def test_windows_1252_is_read_by_its_meta_charset(pages: dict[str, bytes]) -> None:
    extracted = html.extract(pages["plain"])
    assert "\u201c" in extracted.text and extracted.notes == ()


def test_an_undeclared_legacy_page_is_read_as_windows_1252_with_a_note() -> None:
    extracted = html.extract("<p>It\u2019s caf\u00e9 time.</p>".encode("cp1252"))
    assert extracted.text == "It\u2019s caf\u00e9 time."
    assert len(extracted.notes) == 1 and "Windows-1252" in extracted.notes[0]


def test_a_byte_order_mark_wins() -> None:
    data = "\ufeff<meta charset='iso-8859-1'><p>na\u00efve</p>".encode()
    assert html.extract(data).text == "na\u00efve"
    assert html.extract("<p>na\u00efve</p>".encode("utf-16")).text == "na\u00efve"


def test_the_same_bytes_give_the_same_text(pages: dict[str, bytes]) -> None:
    assert html.extract(pages["article"]) == html.extract(bytes(pages["article"]))


def test_a_page_wrapped_in_a_form_keeps_its_text() -> None:
    page = (
        "<body><form action='/x'><div class='menu'><a href='/a'>Products</a></div><input name='q'>"
        "<div><h1>Service</h1><p>Tickets are answered within one day.</p><p>Weekends are extra.</p></div></form></body>"
    )
    text = html.extract(page.encode()).text
    assert text == "# Service\n\nTickets are answered within one day.\n\nWeekends are extra."


def test_an_articles_own_header_footer_and_aside_stay() -> None:
    page = (
        "<body><header><nav><a href='/'>Site</a></nav></header><article><header><h1>Title</h1></header>"
        "<p>Body text.</p><aside>A note inside the article.</aside><footer>By the author.</footer></article>"
        "<article><p>A second article.</p></article><footer>Site footer</footer></body>"
    )
    text = html.extract(page.encode()).text
    assert text.split("\n\n") == [
        "# Title",
        "Body text.",
        "A note inside the article.",
        "By the author.",
        "A second article.",
    ]


def test_main_wins_over_the_rest_of_the_page() -> None:
    page = (
        "<body><div>Promo outside</div><div role='main'><h2>Inside</h2><p>Kept.</p></div><div>Also outside</div></body>"
    )
    assert html.extract(page.encode()).text == "## Inside\n\nKept."


def test_hidden_elements_are_dropped_but_aria_hidden_text_is_seen() -> None:
    page = (
        "<p style='display: none'>gone one</p><p hidden>gone two</p><dialog>gone three</dialog>"
        "<p><span aria-hidden='true'>Seen</span> text</p><template><p>gone four</p></template>"
    )
    assert html.extract(page.encode()).text == "Seen text"


def test_a_page_of_furniture_only_keeps_its_text_rather_than_nothing() -> None:
    text = html.extract(b"<body><nav><ul><li>Home</li><li>Contact</li></ul></nav></body>").text
    assert "Home" in text and "Contact" in text


@pytest.mark.parametrize(
    "page", [b"", b"<html><head><title>T</title></head><body></body></html>", b"<script>x()</script>"]
)
def test_a_page_without_text_gives_empty_text(page: bytes) -> None:
    assert html.extract(page).text == ""


def test_nested_lists_code_and_pipes() -> None:
    page = (
        "<ul><li>outer<ul><li>inner</li></ul></li></ul><p>Run <code>pip install x</code> <b>now</b>.</p>"
        "<pre><code>line one\nline two</code></pre><table><tr><td>a|b</td><td>c</td></tr></table>"
    )
    text = html.extract(page.encode()).text
    assert "- outer\n  - inner" in text
    assert "Run pip install x now." in text
    assert "line one\nline two" in text
    assert "| a\\|b | c |\n| --- | --- |" in text
    _tidy(text)


def test_a_page_nested_too_deep_for_markdown_keeps_its_text() -> None:
    depth = 3000
    page = "<div>" * depth + "<p>Deep text.</p><p>More deep text.</p>" + "</div>" * depth
    assert html.extract(page.encode()).text == "Deep text.\n\nMore deep text."


def test_registered_for_its_suffixes_with_library_versions() -> None:
    for suffix in (".html", ".HTM", ".xhtml"):
        extractor = formats.for_suffix(suffix)
        assert extractor is not None and extractor.name == "html"
    version = formats.EXTRACTORS["html"].version
    assert re.fullmatch(
        r"\d+\.\d+\+beautifulsoup4-[\w.]+\+lxml-[\w.]+\+markdownify-[\w.]+\+trafilatura-[\w.]+", version
    )


def test_to_markdown_is_the_one_html_step(tmp_path: Path) -> None:
    assert html.to_markdown("<h3>Heading</h3><ol><li>one</li><li>two</li></ol>") == "### Heading\n\n1. one\n2. two"
