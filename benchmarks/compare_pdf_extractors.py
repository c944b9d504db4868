"""Two PDF extractors side by side: bench's (pdfminer.six layout analysis through pdfplumber) and
one built on pypdf, each doing its best at headings, columns and tables.

    .venv/bin/python benchmarks/compare_pdf_extractors.py [--pages 200] [--repeats 1]

Quality: the checks below on tests/inputs/make_pdf.py's report (headings and their levels, the
two-column page read column by column, the table kept as a markdown table whose words are not
repeated, a word hyphenated across a line end, known sentences present and on their page, bullets).
Speed: pages per second on write_long's text-only PDF (best of --repeats), in this one process.

pypdf gives text fragments with their position and font size (extract_text's visitor) but no
character widths and no ruling lines, so its extractor estimates widths, finds columns from a
gutter down the middle of the page, and tables from lines of three or more short, far-apart cells.
"""

from __future__ import annotations

import argparse
import io
import math
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.inputs.formats import Extracted
from bench.inputs.formats import pdf as bench_pdf
from tests.inputs import make_pdf

_BULLET = re.compile(r"^(?:[•●○◦▪▫■□‣⁃∙·–—*-]|\(cid:\d+\)|[\uf000-\uf0ff])\s+")
_WIDTH = 0.5  # a character's width as a share of its font size, since pypdf gives no widths


def pypdf_extract(data: bytes) -> Extracted:
    """The pypdf-based extractor: fragments → lines → columns / tables / paragraphs / headings."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    pages = []
    for page in reader.pages:
        frags: list[tuple[float, float, float, str]] = []

        def visit(text: str, cm: list[float], tm: list[float], _font: object, size: float, frags: list = frags) -> None:
            if not text.strip():
                return
            m = [
                tm[0] * cm[0] + tm[1] * cm[2],
                tm[0] * cm[1] + tm[1] * cm[3],
                tm[2] * cm[0] + tm[3] * cm[2],
                tm[2] * cm[1] + tm[3] * cm[3],
                tm[4] * cm[0] + tm[5] * cm[2] + cm[4],
                tm[4] * cm[1] + tm[5] * cm[3] + cm[5],
            ]
            scale = math.hypot(m[2], m[3]) or 1.0
            for i, part in enumerate(text.split("\n")):  # one visit may hold several lines
                if part.strip():
                    frags.append((m[4], m[5] - i * size * scale * 1.2, round(size * scale * 2) / 2, part.strip()))

        page.extract_text(visitor_text=visit)
        pages.append((float(page.mediabox.width), frags))
    sizes: Counter[float] = Counter()
    for _, frags in pages:
        for _, _, size, text in frags:
            sizes[size] += len(text)
    body = sizes.most_common(1)[0][0] if sizes else 0.0
    big = sorted((s for s in sizes if body and s >= body * 1.15), reverse=True)
    levels = {s: min(i + 1, 3) for i, s in enumerate(big)}
    text, starts = "", []
    for width, frags in pages:
        page_text = _page_text(width, frags, levels)
        if page_text and text:
            text += "\n\n"
        starts.append(len(text))
        text += page_text
    return Extracted(text, tuple(starts))


def _page_text(width: float, frags: list[tuple[float, float, float, str]], levels: dict[float, int]) -> str:
    lines: list[list[tuple[float, float, float, str]]] = []
    for frag in sorted(frags, key=lambda f: (-f[1], f[0])):
        if lines and abs(lines[-1][0][1] - frag[1]) < frag[2] * 0.5:
            lines[-1].append(frag)
        else:
            lines.append([frag])
    rows = [_segments(sorted(line)) for line in lines]  # each: [(x0, x1, y, size, text), ...]
    mid = width / 2
    out: list[str] = []
    pending: list[tuple[float, float, float, float, str]] = []  # full-width lines not yet flowed
    i = 0
    while i < len(rows):
        j = i
        while j < len(rows) and len(rows[j]) >= 3 and all(len(s[4]) < 25 for s in rows[j]):
            j += 1
        if j - i >= 2:  # a table: lines of three or more short cells
            out.extend(_flow(pending, levels))
            pending = []
            cells = [[s[4].replace("|", "\\|") for s in row] for row in rows[i:j]]
            n = max(len(r) for r in cells)
            cells = [r + [""] * (n - len(r)) for r in cells]
            table = ["| " + " | ".join(cells[0]) + " |", "|" + "---|" * n]
            out.append("\n".join(table + ["| " + " | ".join(r) + " |" for r in cells[1:]]))
            i = j
            continue
        while j < len(rows) and all(s[1] <= mid or s[0] >= mid for s in rows[j]):
            j += 1
        if j - i >= 2 and any(s[0] >= mid for row in rows[i:j] for s in row):  # two columns
            out.extend(_flow(pending, levels))
            pending = []
            out.extend(_flow([s for row in rows[i:j] for s in row if s[1] <= mid], levels))
            out.extend(_flow([s for row in rows[i:j] for s in row if s[0] >= mid], levels))
            i = j
            continue
        row = rows[i]
        pending.append((row[0][0], row[-1][1], row[0][2], row[0][3], " ".join(s[4] for s in row)))
        i += 1
    out.extend(_flow(pending, levels))
    return "\n\n".join(out)


def _segments(line: list[tuple[float, float, float, str]]) -> list[tuple[float, float, float, float, str]]:
    """A line's fragments merged into segments, split where the gap is wider than a font size."""
    segs: list[list] = []
    for x, y, size, text in line:
        end = x + len(text) * size * _WIDTH
        if segs and x - segs[-1][1] < size * 1.5:
            segs[-1][1] = end
            segs[-1][4] += ("" if segs[-1][4].endswith("-") else " ") + text
        else:
            segs.append([x, end, y, size, text])
    return [tuple(s) for s in segs]  # type: ignore[misc]


def _flow(segs: list[tuple[float, float, float, float, str]], levels: dict[float, int]) -> list[str]:
    """Segments of one column, top down, as blocks: heading-size lines as # lines, the rest as
    paragraphs, a new one where the gap to the line above is wider than a line and a half."""
    blocks: list[str] = []
    para: list[str] = []
    last_y = math.inf
    for _, _, y, size, text in segs:
        level = levels.get(size)
        if para and (level or last_y - y >= size * 1.8):
            blocks.append("\n".join(para))
            para = []
        if level:
            blocks.append("#" * level + " " + text)
        else:
            para.append(_BULLET.sub("- ", text))
        last_y = y
    if para:
        blocks.append("\n".join(para))
    return blocks


def quality(extract: Callable[[bytes], Extracted]) -> dict[str, bool]:
    """Each check on the report fixture, passed or not."""
    m = make_pdf
    got = extract(m.report_bytes())
    text, pages = got.text, got.pages
    lines = text.split("\n")
    left, right = text.find(m.LEFT_COLUMN[-1]), text.find(m.RIGHT_COLUMN[0])
    header = "| " + " | ".join(m.TABLE_HEADER) + " |"
    p3 = text.find(m.PAGE3_SENTENCE)
    return {
        "headings": all(
            f"{'#' * level} {title}" in lines
            for level, title in ((1, m.TITLE), (2, m.BACKGROUND), (2, m.COLUMNS), (2, m.RESULTS), (3, m.CLOSING))
        ),
        "two columns": 0 <= left < right and all(line in text for line in m.LEFT_COLUMN + m.RIGHT_COLUMN),
        "table": header in lines and "|---|---|---|" in lines and text.count(m.TABLE_ROWS[1][0]) == 1,
        "hyphenation": f"{m.HYPHEN_HEAD}\n{m.HYPHEN_TAIL}" in text,
        "quotes": all(s in text for s in (*m.INTRO, m.PAGE3_SENTENCE, m.AFTER_TABLE, m.PAGE4_SENTENCE)),
        "page offsets": len(pages) == 4 and pages[2] <= p3 < pages[3],
        "bullets": all(f"- {item}" in lines for item in m.BULLETS),
        **flowing(extract),
    }


def flowing(extract: Callable[[bytes], Extracted]) -> dict[str, bool]:
    """Checks on write_flowing's justified, engine-wrapped text (words compared with whitespace
    collapsed, since a sentence runs over line ends)."""
    m = make_pdf
    with tempfile.TemporaryDirectory() as tmp:
        got = extract(m.write_flowing(Path(tmp) / "flowing.pdf").read_bytes())
    words = " ".join(got.text.split())
    left, right = words.find(m.FLOW_LEFT), words.find(m.FLOW_RIGHT)
    header = "| " + " | ".join(m.FLOW_TABLE[0]) + " |"
    return {
        "flowing: headings": f"# {m.FLOW_TITLE}" in got.text and f"## {m.FLOW_SECTION}" in got.text,
        "flowing: sentences whole": words.count(m.FLOW_SENTENCES[5]) == 7 and words.count(m.FLOW_SENTENCES[3]) == 7,
        # the left frame's two paragraphs read whole before the right frame starts
        "flowing: frames in order": 0 <= left < right and words[left:right].count(m.FLOW_SENTENCES[5]) == 2,
        "flowing: wrapped table": header in got.text and all(f"| {a} | {b} |" in got.text for a, b in m.FLOW_TABLE[1:]),
    }


def speed(extract: Callable[[bytes], Extracted], data: bytes, pages: int, repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        got = extract(data)
        best = min(best, time.perf_counter() - t0)
        assert len(got.pages) == pages and make_pdf.long_sentence(pages, 39) in got.text
    return pages / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=make_pdf.LONG_PAGES)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        long = make_pdf.write_long(Path(tmp) / "long.pdf", args.pages).read_bytes()
    candidates = {"pdfplumber (bench)": bench_pdf.extract, "pypdf": pypdf_extract}
    results = {name: quality(fn) for name, fn in candidates.items()}
    rates = {name: speed(fn, long, args.pages, args.repeats) for name, fn in candidates.items()}
    checks = list(next(iter(results.values())))
    names = list(candidates)
    width = max(map(len, checks + ["pages/s"])) + 2
    print("".ljust(width) + "".join(n.rjust(22) for n in names))
    for check in checks:
        print(check.ljust(width) + "".join(("pass" if results[n][check] else "FAIL").rjust(22) for n in names))
    print("passed".ljust(width) + "".join(f"{sum(results[n].values())}/{len(checks)}".rjust(22) for n in names))
    print(f"pages/s ({args.pages} p.)".ljust(width) + "".join(f"{rates[n]:.1f}".rjust(22) for n in names))


if __name__ == "__main__":
    main()
