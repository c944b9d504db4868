"""Web pages: the page's content as markdown, without the site's navigation, banners and footers.

A web page reads as its article (``page_markdown``): trafilatura finds it, without the related
links, share bars and comments pages rarely mark as such, and bench writes it; a page where it
finds too little keeps its content as its own markup marks it (``content``).

The text is what a reader sees and quotes: link text without its URL, bold and italic text without
``**`` or ``_``, no images. Structure stays as markdown (``#`` headings, ``-`` items, ``|`` tables)
for the chunkers. ``to_markdown`` is the one HTML-to-markdown step; DOCX (through mammoth's HTML)
and EPUB chapters go through it too.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from functools import cache
from importlib import metadata
from typing import TYPE_CHECKING, Any

from bench.inputs.formats.base import Extracted, Extractor
from bench.inputs.formats.limits import LIMITS, Limits

if TYPE_CHECKING:
    from bs4 import BeautifulSoup, Tag

OUTPUT_VERSION = "2"  # bump when to_markdown's text changes for the same HTML (DOCX and EPUB go through it)
_PAGE_VERSION = "2"  # bump when a web page's text changes for the same bytes (the article step below)

# Never text a reader sees.
_INVISIBLE = ("script", "style", "noscript", "template", "svg", "math", "iframe", "object", "canvas", "head")
# Site furniture wherever it sits: a search box or a menu is never the page's content.
_FURNITURE = frozenset({"nav", "form"})
_FURNITURE_ROLES = frozenset({"navigation", "search"})
# A page's banner and footer; inside a section of the page they are its own title or byline.
_PAGE_FRAME = frozenset({"header", "footer"})
_SECTIONS = ("article", "aside", "main", "nav", "section")
_ELEMENT = dict.fromkeys(("nav", "form", "header", "footer", "aside"), True)  # furniture by element, not by name
_ROLES = frozenset({"navigation", "search", "banner", "contentinfo", "complementary"})
_DIALOG = re.compile(r"(^|[\s_-])(cookies?|consent|gdpr|cookiebanner)([\s_-]|$)", re.IGNORECASE)
_DIALOG_MAX_CHARS = 1500  # a consent banner is short; a longer match is more likely an article about cookies
# Pages without semantic elements name their furniture in ids and classes; whole names only, so a
# "content-header" or a "menu-card" recipe stays.
_FURNITURE_NAMES = frozenset({
    "header", "footer", "menu", "sidebar", "navbar", "nav", "navigation", "breadcrumb", "breadcrumbs",
    "masthead", "topbar", "top-bar", "site-header", "site-footer", "site-nav", "skip-link",
})  # fmt: skip
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_FORM_SHARE = 0.5  # an element holding most of the page's text wraps the page (an ASP.NET form), it is no menu
# Browsers nest no deeper than this (Blink's parser); below it an element keeps its text, not its
# shape, so the furniture rules, which look up and down the tree, stay linear in the page's size.
MAX_DEPTH = 512


def versions(*dists: str) -> str:
    """``+name-version`` for each library, read from the installed metadata ("missing" if absent)."""
    return "".join(f"+{dist}-{_version(dist)}" for dist in dists)


@cache
def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "missing"


def decode(data: bytes) -> tuple[str, tuple[str, ...]]:
    """The page's text, by byte-order mark, then ``<meta charset>``, then UTF-8, then Windows-1252
    (what browsers assume for an undeclared legacy page); with a note when the reading is a guess."""
    from bs4.dammit import EncodingDetector

    for bom, name in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):
            return data.decode(name, errors="replace").lstrip("\ufeff"), ()
    declared = EncodingDetector.find_declared_encoding(data[:4096], is_html=True, search_entire_document=False)
    if declared:
        try:
            codec = codecs.lookup(declared).name
        except LookupError:
            codec = ""
        if codec.startswith(("utf-16", "utf-32")):  # browsers read such a declaration in ASCII bytes as UTF-8
            codec = "utf-8"
        if codec == "latin-1":  # the HTML standard reads ISO-8859-1 as its superset, Windows-1252
            codec = "cp1252"
        if codec:
            text = data.decode(codec, errors="replace")
            if "\ufffd" in text and b"\xef\xbf\xbd" not in data and codec != "utf-8":
                return text, (f"some bytes are not {declared} as its meta charset says; they read as \ufffd",)
            return text, ()
    try:
        return data.decode("utf-8"), ()
    except UnicodeDecodeError:
        note = "no charset declared and not UTF-8: read as Windows-1252; declare <meta charset> to be sure"
        return data.decode("cp1252", errors="replace"), (note,)


def parse(html: str) -> BeautifulSoup:
    """The document tree (lxml's HTML parser: fast, and forgiving like a browser)."""
    from bs4 import BeautifulSoup

    return BeautifulSoup(html, "lxml")


def content(soup: BeautifulSoup) -> Tag:
    """The page's content: its ``<main>`` (or single ``<article>``) with furniture and hidden parts taken out.

    Removal stops short of whatever holds the content, so a page wrapped whole in a ``<form>`` keeps
    its text: losing a quoted sentence is worse than keeping a menu.
    """
    from bs4 import Tag

    _take_out_unseen(soup)
    _flatten_below(soup, MAX_DEPTH)
    root = _root(soup)
    whole = len(root.get_text())
    for tag in [t for t in root.descendants if isinstance(t, Tag) and _furniture(t)]:
        if tag.decomposed:
            continue
        size = len(tag.get_text())
        if size > _FORM_SHARE * whole:  # it holds most of the page: the page's wrapper, not a menu
            if tag.name == "form":
                tag.unwrap()  # an ASP.NET page's form: keep what it holds, lose its search box below
            continue
        # A consent banner or a box named furniture is short; a long one may be the article after all.
        if _ELEMENT.get(tag.name) or tag.get("role") in _ROLES or size < _DIALOG_MAX_CHARS:
            tag.decompose()
    return root


def _flatten_below(soup: BeautifulSoup, depth: int) -> None:
    """Each element at ``depth`` that holds elements keeps only its strings, in order."""
    from bs4 import NavigableString, Tag

    depths = {id(soup): 0}
    boundary = []
    for tag in soup.descendants:
        if isinstance(tag, Tag):
            depths[id(tag)] = d = depths[id(tag.parent)] + 1
            if d == depth and any(isinstance(child, Tag) for child in tag.contents):
                boundary.append(tag)
    for tag in boundary:
        strings = list(tag.strings)
        tag.clear()
        for string in strings:
            tag.append(NavigableString(string))


def _furniture(tag: Tag) -> bool:
    """Whether an element is the site's rather than the page's: menus, search, banners, sidebars, consent."""
    name, role = tag.name, tag.get("role")
    if name in _FURNITURE or role in _FURNITURE_ROLES:
        return True
    if name in _PAGE_FRAME or role in ("banner", "contentinfo"):
        return _page_level(tag)
    if name == "aside" or role == "complementary":
        return tag.find_parent("article") is None  # inside an article an aside is its note or glossary box
    return _consent(tag) or _named_furniture(tag)


def _page_level(tag: Tag) -> bool:
    """Whether a header or footer frames the page (ARIA's rule: inside no section) rather than an article.

    A header holding an ``<h1>`` but no menu is the article's title in a page that does not mark the
    article up, so it stays.
    """
    if tag.get("role") in ("banner", "contentinfo"):
        return True
    if tag.find_parent(_SECTIONS) is not None:
        return False
    return not (tag.name == "header" and tag.find("h1") is not None and tag.find("nav") is None)


def _hidden(tag: Tag) -> bool:
    """Whether the page never shows the element: ``hidden``, an inline ``display: none``, a shut dialog."""
    if tag.has_attr("hidden") or (tag.name == "dialog" and not tag.has_attr("open")):
        return True
    style = tag.get("style")
    return isinstance(style, str) and _HIDDEN_STYLE.search(style) is not None


def _consent(tag: Tag) -> bool:
    """A cookie or consent banner, by its id or class (no element for it exists)."""
    names = [tag.get("id") or "", *(tag.get("class") or ())]
    return any(isinstance(n, str) and _DIALOG.search(n) for n in names) and tag.name not in ("html", "body", "main")


def _named_furniture(tag: Tag) -> bool:
    """A ``<div id="header">``, ``<div class="menu">``: furniture by name, unless it holds the page's title."""
    names = [tag.get("id") or "", *(tag.get("class") or ())]
    named = any(isinstance(n, str) and n.lower() in _FURNITURE_NAMES for n in names)
    return named and tag.name not in ("html", "body", "main", "article") and tag.find("h1") is None


def _root(soup: BeautifulSoup) -> Tag:
    """``<main>`` or ``[role=main]``, else the one ``<article>``, else the body."""
    main = soup.find("main") or soup.find(lambda t: t.get("role") == "main")
    if main is not None and main.get_text(strip=True):
        return main
    articles = soup.find_all("article")
    outer = [a for a in articles if a.find_parent("article") is None]
    if len(outer) == 1 and outer[0].get_text(strip=True):
        return outer[0]
    return soup.body or soup


@cache
def _converter() -> Any:
    """A markdownify converter that writes what a reader sees: no emphasis, links, images or escapes."""
    from markdownify import MarkdownConverter

    def plain(self: Any, el: Any, text: str, parent_tags: Any) -> str:
        return text

    def nothing(self: Any, el: Any, text: str, parent_tags: Any) -> str:
        return ""

    def br(self: Any, el: Any, text: str, parent_tags: Any) -> str:
        return " " if "_inline" in parent_tags else "\n"

    def cell(name: str) -> Any:
        inherited = getattr(MarkdownConverter, name)

        def convert(self: Any, el: Any, text: str, parent_tags: Any) -> str:
            return str(inherited(self, el, text.replace("|", "\\|"), parent_tags))  # a "|" would split the cell

        return convert

    inline = ("a", "b", "strong", "em", "i", "u", "s", "del", "strike", "code", "kbd", "samp", "sub", "sup", "mark")
    methods: dict[str, Callable[..., str]] = {f"convert_{name}": plain for name in inline}
    methods.update(convert_img=nothing, convert_video=nothing, convert_br=br)
    blocks = ("header", "footer", "aside", "main", "nav", "figure", "details", "summary", "address", "hgroup")
    methods.update({f"convert_{name}": vars(MarkdownConverter)["convert_div"] for name in blocks})  # not run together
    methods.update(convert_td=cell("convert_td"), convert_th=cell("convert_th"))
    Reader = type("Reader", (MarkdownConverter,), methods)
    return Reader(
        heading_style="atx",
        bullets="-",
        escape_asterisks=False,
        escape_underscores=False,
        escape_misc=False,
        table_infer_header=True,  # every table gets its |---| row, so it reads as a table
    )


_TIDY = str.maketrans({"\xa0": " ", "\xad": None, "\u200b": None, "\r": None})


def markdown(node: Tag) -> str:
    """The element as tidy markdown: no trailing spaces, at most one blank line in a row."""
    try:
        text = str(_converter().convert_soup(node)).translate(_TIDY)
    except RecursionError:  # markdownify recurses per element: a page nested deep keeps its text, not its shape
        text = "\n\n".join(" ".join(s.split()) for s in node.stripped_strings).translate(_TIDY)
    lines = [line.rstrip() for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")


def to_markdown(html: str, limits: Limits = LIMITS) -> str:
    """An HTML document's content as markdown (see ``content``); empty when it shows no text.
    Unreadable when it has more elements than ``limits`` allow (counted before parsing)."""
    elements = html.count("<") - html.count("</")  # at least as many as the parser makes
    if elements > limits.max_html_elements:
        raise limits.over(f"markup of about {elements:,} elements", "max_html_elements")
    soup = parse(html)
    text = markdown(content(soup))
    if not text and soup.get_text(strip=True):  # everything was furniture: keep it rather than lose the text
        soup = parse(html)
        _take_out_unseen(soup)  # what the page never shows stays out even then
        text = markdown(soup.body or soup)
    return text


def _take_out_unseen(soup: BeautifulSoup) -> None:
    """Scripts, styles, templates and every element the page hides, taken out of ``soup``."""
    from bs4 import Tag

    for tag in [t for t in soup.descendants if isinstance(t, Tag) and (t.name in _INVISIBLE or _hidden(t))]:
        if not tag.decomposed:  # not inside one already taken out
            tag.decompose()


# Below this many words trafilatura's article is too little to trust (it found none, or a caption):
# the page keeps its content as the page's own markup marks it (``to_markdown``), so no page
# silently loses its text. A page this short holds little boilerplate to lose anyway.
_ARTICLE_MIN_WORDS = 50


def article(html: str) -> tuple[str, str]:
    """The page's article as HTML (trafilatura's main-content detection: no menus, related links,
    share bars, comments), and the page's title; both empty when trafilatura finds no article.

    What the page never shows (scripts, templates, ``hidden``, ``display: none``) is taken out first:
    trafilatura would read it.
    """
    import trafilatura
    from lxml import etree

    try:
        tree = trafilatura.load_html(html)
        if tree is None:
            return "", ""
        styled = [t for t in tree.xpath("//*[@style]") if _HIDDEN_STYLE.search(t.get("style"))]
        for tag in [*tree.xpath(_NEVER_SHOWN), *styled]:
            if tag.getparent() is not None:  # not the root, not inside one already taken out
                tag.drop_tree()  # its tail is the next element's text and stays
        found = trafilatura.bare_extraction(
            tree,
            include_tables=True,
            include_formatting=True,  # headings and lists stay elements, so they stay markdown
            include_comments=False,
            include_links=False,
            include_images=False,
            with_metadata=True,  # the title
            favor_precision=True,  # measured on saved news pages: fewer related links, little text lost
        )
    except (ValueError, TypeError, etree.LxmlError, RecursionError):  # a tree it cannot build: the page's own reading
        return "", ""
    body = getattr(found, "body", None)
    if body is None:
        return "", ""
    for tag in body.iter():  # parents before children, so a code element knows whether it is in a block
        _as_html(tag)
    title = getattr(found, "title", None) or ""
    return etree.tostring(body, method="html", encoding="unicode"), " ".join(title.split())


_NEVER_SHOWN = "//template|//noscript|//dialog[not(@open)]|//*[@hidden]"
# trafilatura's markup (TEI-like) as the HTML it stands for; its own HTML writer loses numbered lists and
# writes inline code as a block. Links and emphasis are plain text to a reader (``_converter``).
_TEI_HTML = {"item": "li", "quote": "blockquote", "lb": "br", "ref": "span", "hi": "span", "row": "tr"}


def _as_html(tag: Any) -> None:
    """One element of trafilatura's markup renamed to its HTML element, its attributes dropped."""
    name, rend = tag.tag, tag.get("rend") or ""
    if name == "head":
        level = rend[1:] if re.fullmatch(r"h[1-6]", rend) else "3"
        tag.tag = f"h{level}"
    elif name == "list":
        tag.tag = "ol" if rend == "ol" else "ul"
    elif name == "cell":
        tag.tag = "th" if tag.get("role") == "head" else "td"
    elif name == "code":  # a block (its own paragraph, or code in code) or code inside a sentence
        parent = tag.getparent()
        block = parent is None or parent.tag in ("body", "blockquote") or tag.find("code") is not None
        tag.tag = "pre" if block and (parent is None or parent.tag != "pre") else "code"
    elif name == "graphic":
        tag.tag, tag.text = "span", None
    else:
        tag.tag = _TEI_HTML.get(name, name)
    tag.attrib.clear()


def page_markdown(html: str, limits: Limits = LIMITS) -> str:
    """A web page's article as markdown, under a ``#`` heading of its title; the page's content
    (``to_markdown``) when no article stands out."""
    found, title = article(html) if html.count("<") - html.count("</") <= limits.max_html_elements else ("", "")
    text = markdown(parse(found)) if found else ""
    if len(text.split()) < _ARTICLE_MIN_WORDS:
        return to_markdown(html, limits)
    if title and not text.startswith("#") and not re.search(rf"^#+ {re.escape(title)}$", text, re.MULTILINE):
        text = f"# {title}\n\n{text}"  # chunkers and readers know the page by its title
    return text


def extract(data: bytes, limits: Limits = LIMITS) -> Extracted:
    """A web page's article as markdown, and a note when its encoding had to be guessed."""
    html, notes = decode(data)
    return Extracted(page_markdown(html, limits), notes=notes)


EXTRACTORS = (
    Extractor(
        name="html",
        suffixes=(".html", ".htm", ".xhtml"),
        extract=extract,
        version=f"{OUTPUT_VERSION}.{_PAGE_VERSION}" + versions("beautifulsoup4", "lxml", "markdownify", "trafilatura"),
    ),
)
