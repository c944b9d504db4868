"""bench's HTML extractor against trafilatura, side by side, on pages with known content.

Run ``.venv/bin/python benchmarks/compare_html_extractors.py [--rounds 20]``. Each page below (and
the two HTML fixtures of the tests) comes with sentences that must come out verbatim, boilerplate
that must not, and the structure it holds (headings, a list, a table). For each extractor, in one
process, the script prints:

- recall: known sentences found verbatim (as a reader would quote them), and found once markdown
  emphasis and links are taken out (``**``, ``_``, ``[text](url)``), which forgives formatting;
- boilerplate: menu, banner, cookie and footer phrases, hidden and script text left out;
- structure: ``#`` heading lines, ``- `` items and a ``| --- |`` table row where the page has them;
- speed: documents per second over the pages (best of ``--rounds`` passes), and over one long page.

Then, where ../shared/datasets/web-articles is (91 saved news and blog pages of Zyte's article
extraction benchmark, with the article body a person marked), each extractor's F1, precision and
recall there by the benchmark's own score (word 4-shingles, tests/inputs/shingles.py), and pages
per second over them (one pass).

"bench whole page" is the page's content as bench read it before the article step (``to_markdown``:
``<main>`` or a lone ``<article>`` without semantic furniture); "bench" is bench's reading now.
trafilatura runs as ``extract(html, output_format="markdown", include_tables=True)``, and again
with ``favor_recall=True``.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.inputs.formats import html as bench_html
from tests.inputs import make_office, shingles


@dataclass(frozen=True)
class Page:
    name: str
    data: bytes
    sentences: tuple[str, ...]
    boilerplate: tuple[str, ...]
    structure: tuple[str, ...]  # of "heading", "list", "table"


_DOCS = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Install</title></head><body>
<div id="top-bar"><a href="/">ProjectX documentation</a> <a href="/search">Search the docs</a></div>
<div class="wrapper"><div class="sphinxsidebar" role="navigation"><h3>Table of contents</h3>
<ul><li><a href="#a">Installing from a wheel</a></li><li><a href="#b">Configuration reference</a></li></ul></div>
<div class="body" role="main"><h1>Installing ProjectX</h1>
<p>ProjectX installs from a wheel on every supported platform.</p>
<div class="admonition note"><p>Note</p><p>Python 3.10 or newer is required for the command line tool.</p></div>
<h2>Steps</h2><ol><li>Create a virtual environment first.</li><li>Install the wheel with pip.</li></ol>
<pre><code>pip install projectx</code></pre>
<p>The <code>--user</code> flag is not needed inside a virtual environment.</p>
<table><tr><th>Platform</th><th>Wheel</th></tr><tr><td>Linux</td><td>manylinux</td></tr></table>
</div></div><div class="footer">&copy; Copyright ProjectX developers. Built with a theme.</div></body></html>"""

_SHORT = """<html><head><meta charset="utf-8"><title>FAQ</title></head><body>
<header><nav><a href="/">Home of the Shop</a> | <a href="/help">Help centre</a></nav></header>
<main><h1>Can I return an item?</h1><p>Items can be returned within thirty days of delivery.</p></main>
<footer>Shop Ltd, registered in nowhere.</footer></body></html>"""

_FORM = """<html><head><meta charset="utf-8"></head><body><form id="aspnetForm" method="post" action="/page.aspx">
<div id="header"><div class="menu"><a href="/a">Products overview</a> <a href="/b">Support portal</a></div>
<input type="text" name="q"><input type="submit" value="Search"></div>
<div id="content"><h1>Service Levels</h1><p>Support tickets are answered within one business day.</p>
<ul><li>Critical issues get a reply within two hours.</li><li>Other issues wait for the next business day.</li></ul>
<p>Weekend support is available on the premium plan only.</p></div>
<div id="footer">Terms of use and privacy policy</div></form></body></html>"""

_BLOG = """<html><head><meta charset="utf-8"><title>Notes</title></head><body>
<nav class="site-nav"><a href="/">Field Notes blog</a> <a href="/archive">Archive by month</a></nav>
<article><h1>Measuring Search Quality</h1><p class="byline">By A. Writer</p>
<p>Offline evaluation needs a goldset that reflects real questions.</p>
<blockquote><p>A benchmark is only as good as its questions.</p></blockquote>
<h2>Three lessons</h2><ul><li>Label with care.<ul><li>Two annotators per question.</li></ul></li>
<li>Keep a held-out set.</li></ul>
<table><tr><td>Metric</td><td>Value</td></tr><tr><td>nDCG@10</td><td>0.64</td></tr></table>
<p>Short answers are easier to grade than long ones.</p></article>
<div class="comments"><h3>3 comments</h3><p>Great post, thanks!</p></div>
<div id="cookie-consent">This site uses cookies for analytics.</div>
<footer>Field Notes is written in the open.</footer></body></html>"""


def pages() -> list[Page]:
    """The pages of the comparison with what each must and must not give."""
    with tempfile.TemporaryDirectory() as tmp:
        article = make_office.write_html_article(Path(tmp) / "a.html").read_bytes()
        plain = make_office.write_html_plain(Path(tmp) / "p.html").read_bytes()
    known = (
        make_office.HTML_TITLE,
        make_office.HTML_INTRO,
        make_office.HTML_QUOTE,
        *make_office.HTML_ITEMS,
        make_office.HTML_CLOSING,
    )
    junk = (*make_office.HTML_BOILERPLATE, *make_office.HTML_HIDDEN)
    return [
        Page("fixture article", article, known, junk, ("heading", "list", "table")),
        Page("fixture plain cp1252", plain, known, junk, ("heading", "list", "table")),
        Page(
            "docs page",
            _DOCS.encode(),
            (
                "Installing ProjectX",
                "ProjectX installs from a wheel on every supported platform.",
                "Python 3.10 or newer is required for the command line tool.",
                "Create a virtual environment first.",
                "The --user flag is not needed inside a virtual environment.",
            ),
            ("Search the docs", "Configuration reference", "Built with a theme"),
            ("heading", "list", "table"),
        ),
        Page(
            "short FAQ",
            _SHORT.encode(),
            ("Can I return an item?", "Items can be returned within thirty days of delivery."),
            ("Home of the Shop", "Help centre", "registered in nowhere"),
            ("heading",),
        ),
        Page(
            "form-wrapped page",
            _FORM.encode(),
            (
                "Service Levels",
                "Support tickets are answered within one business day.",
                "Critical issues get a reply within two hours.",
                "Weekend support is available on the premium plan only.",
            ),
            ("Products overview", "Support portal"),
            ("heading", "list"),
        ),
        Page(
            "blog post",
            _BLOG.encode(),
            (
                "Measuring Search Quality",
                "Offline evaluation needs a goldset that reflects real questions.",
                "A benchmark is only as good as its questions.",
                "Two annotators per question.",
                "Short answers are easier to grade than long ones.",
            ),
            ("Field Notes blog", "Archive by month", "uses cookies for analytics", "written in the open"),
            ("heading", "list", "table"),
        ),
    ]


def long_page() -> bytes:
    """One long article (about 300 KB): 400 sections of a heading, two paragraphs and a list."""
    sections = "".join(
        f"<h2>Section {i}</h2><p>Paragraph {i} says something about <a href='/x{i}'>topic {i}</a> at length, "
        f"with <strong>some</strong> emphasis.</p><p>A second paragraph for section {i}.</p>"
        f"<ul><li>item {i}a</li><li>item {i}b</li></ul>"
        for i in range(400)
    )
    return f"<html><body><nav>menu</nav><main><h1>Long</h1>{sections}</main></body></html>".encode()


def _bench(data: bytes) -> str:
    return bench_html.extract(data).text


def _bench_whole(data: bytes) -> str:
    return bench_html.to_markdown(bench_html.decode(data)[0])


def _trafilatura(favor_recall: bool) -> Callable[[bytes], str]:
    import trafilatura

    def run(data: bytes) -> str:
        text = trafilatura.extract(data, output_format="markdown", include_tables=True, favor_recall=favor_recall)
        return text or ""

    return run


def _unmarked(text: str) -> str:
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return " ".join(re.sub(r"[*_`]", "", text).split())


def _structure(text: str, kind: str) -> bool:
    pattern = {"heading": r"^#{1,6} \S", "list": r"^\s*(-|\*|\d+\.) \S", "table": r"^\|( ?:?-+:? ?\|)+$"}[kind]
    return re.search(pattern, text, re.MULTILINE) is not None


def _speed(extract: Callable[[bytes], str], docs: list[bytes], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for data in docs:
            extract(data)
        best = min(best, time.perf_counter() - start)
    return len(docs) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--show", action="store_true", help="print each extractor's text of each page")
    args = parser.parse_args()
    tools = {
        "bench whole page": _bench_whole,
        "bench": _bench,
        "trafilatura": _trafilatura(False),
        "trafilatura recall": _trafilatura(True),
    }
    corpus = pages()
    totals = {name: [0, 0, 0, 0, 0, 0, 0] for name in tools}  # verbatim, unmarked, n, clean, n, struct, n
    print("per page, for each extractor: recall verbatim, recall unmarked, boilerplate left out, structure kept")
    print(f"{'page':<24}" + "".join(f"{name:>28}" for name in tools))
    for page in corpus:
        row = f"{page.name:<24}"
        for name, extract in tools.items():
            text = extract(page.data)
            if args.show:
                print(f"\n--- {name}: {page.name}\n{text}\n")
            flat, unmarked = " ".join(text.split()), _unmarked(text)
            verbatim = sum(s in flat for s in page.sentences)
            forgiven = sum(s in unmarked for s in page.sentences)
            clean = sum(b not in unmarked for b in page.boilerplate)
            kept = sum(_structure(text, kind) for kind in page.structure)
            n, b, k = len(page.sentences), len(page.boilerplate), len(page.structure)
            row += f"{f'{verbatim}/{n}  {forgiven}/{n}  {clean}/{b}  {kept}/{k}':>28}"
            t = totals[name]
            for i, v in enumerate((verbatim, forgiven, n, clean, b, kept, k)):
                t[i] += v
        print(row)
    print(f"{'total':<24}" + "".join(
        f"{f'{t[0]}/{t[2]}  {t[1]}/{t[2]}  {t[3]}/{t[4]}  {t[5]}/{t[6]}':>28}" for t in totals.values()
    ))  # fmt: skip
    docs = [page.data for page in corpus]
    big = [long_page()]
    for extract in tools.values():
        extract(docs[0])  # warm up: imports, compiled patterns
    print(f"\n{'speed':<24}" + "".join(f"{name:>28}" for name in tools))
    small = {name: _speed(extract, docs, args.rounds) for name, extract in tools.items()}
    print(f"{'pages, docs/s':<24}" + "".join(f"{v:>28.1f}" for v in small.values()))
    large = {name: _speed(extract, big, max(3, args.rounds // 5)) for name, extract in tools.items()}
    print(f"{f'long page ({len(big[0]) // 1000} KB), docs/s':<24}" + "".join(f"{v:>28.2f}" for v in large.values()))
    if shingles.WEB_ARTICLES.is_dir():
        web_articles(tools)


def web_articles(tools: dict[str, Callable[[bytes], str]]) -> None:
    """Each extractor's score and speed on the saved pages of the article extraction benchmark."""
    saved = shingles.web_articles()
    scores, speeds = {}, {}
    for name, extract in tools.items():
        start = time.perf_counter()
        texts = [extract(data) for _, data, _ in saved]
        speeds[name] = len(saved) / (time.perf_counter() - start)
        scores[name] = shingles.score(shingles.matching(body, text) for (_, _, body), text in zip(saved, texts))
    print(f"\n{f'web-articles ({len(saved)} pages)':<24}" + "".join(f"{name:>28}" for name in tools))
    print(
        f"{'F1 (precision, recall)':<24}"
        + "".join(f"{f'{f:.3f} ({p:.3f}, {r:.3f})':>28}" for f, p, r in scores.values())
    )
    print(f"{'pages/s':<24}" + "".join(f"{v:>28.1f}" for v in speeds.values()))


if __name__ == "__main__":
    main()
