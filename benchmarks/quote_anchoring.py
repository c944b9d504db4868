"""Recall, precision and speed of approximate quote anchoring on real filings.

    .venv/bin/python benchmarks/quote_anchoring.py [--filings DIR] [--texts PICKLE] [--pages 12] [--seed 0]

Positives: FinanceBench's evidence texts (questions.jsonl; copied by another PDF tool) on their page
(``evidence_page_num`` + 1, physical, 1-based), and passages cut from pypdf's text of random pages of
the same filings: 1–6 consecutive lines, and whole tables (runs of lines with two numbers or more),
each anchored on its page and in the whole document. Negatives, which must not anchor: the same
passages in another filing, the passages with one number changed, and FinanceBench's evidence texts
in every other filing. A negative that is in the other filing verbatim or as a reader sees it (a
sentence every 10-K carries) is counted apart: it is there. Prints the rates at thresholds around
:data:`bench.inputs.quote_anchoring.THRESHOLD` and the time per quote.

``--texts`` reads (and, when absent, writes) the filings' extracted texts as a pickle, so that a
second run does not extract them again; without the shared data it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from bench.inputs.quote_anchoring import (
    AMBIGUOUS_MARGIN,
    APPROXIMATE,
    MIN_TOKENS,
    THRESHOLD,
    candidates,
    tokens,
)
from bench.inputs.quotes import QuoteError, find_quote

DEFAULT = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets" / "filings"
_NUMBER = re.compile(r"\d[\d,.]*\d|\d")
TOOLS = ("pypdf", "pdfminer")  # the plain-text tools whose passages are quoted
THRESHOLDS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


@dataclass
class Outcome:
    """One quote's result before a threshold: how it matched strictly, else its best approximate place."""

    kind: str  # "exact"/"normalised" (found strictly), "ambiguous" (strictly), or APPROXIMATE
    similarity: float = 0.0  # the best place's, 0 when it lacks a number of the quote
    rival: float = 0.0  # the next place's similarity
    start: int = -1
    end: int = -1
    seconds: float = 0.0

    def accepted(self, threshold: float) -> bool:
        if self.kind in ("exact", "normalised"):
            return True
        if self.kind != APPROXIMATE:
            return False
        return self.similarity >= threshold and self.rival < self.similarity - AMBIGUOUS_MARGIN


def outcome(text: str, quote: str, pages: tuple[int, ...] = (0,)) -> Outcome:
    t = time.perf_counter()
    try:
        s, e = find_quote(text, quote)
        return Outcome("exact", 1.0, 0.0, s, e, time.perf_counter() - t)
    except QuoteError as err:
        if "occurs more than once" in str(err):
            return Outcome("ambiguous", seconds=time.perf_counter() - t)
    places = candidates(text, quote, pages)
    seconds = time.perf_counter() - t
    if not places:
        return Outcome(APPROXIMATE, seconds=seconds)
    best = places[0]
    rival = max((p.similarity for p in places[1:] if not p.missing_numbers), default=0.0)
    sim = 0.0 if best.missing_numbers else best.similarity
    return Outcome(APPROXIMATE, sim, rival, best.start, best.end, seconds)


def load_texts(filings: Path, pickled: Path | None) -> dict[str, tuple[str, tuple[int, ...]]]:
    if pickled is not None and pickled.is_file():
        return pickle.loads(pickled.read_bytes())
    from bench.inputs.corpus import load_corpus

    corpus = load_corpus(filings / "pdfs")
    texts = {d.id: (d.text, d.pages) for d in corpus.documents}
    if pickled is not None:
        pickled.write_bytes(pickle.dumps(texts))
    return texts


def plain_lines(tool: str, reader: object, path: Path, page: int) -> list[str]:
    """The lines of ``page`` (1-based) as ``tool`` reads it: pypdf's ``extract_text``, or pdfminer's
    plain mode (``pdfminer.high_level.extract_text``)."""
    if tool == "pypdf":
        return (reader.pages[page - 1].extract_text() or "").splitlines()  # type: ignore[attr-defined]
    from pdfminer.high_level import extract_text

    return extract_text(str(path), page_numbers=[page - 1]).splitlines()


def page_text(text: str, pages: tuple[int, ...], page: int) -> tuple[int, str]:
    start = pages[page - 1]
    end = pages[page] if page < len(pages) else len(text)
    return start, text[start:end]


def on_page(pages: tuple[int, ...], page: int, start: int, end: int) -> bool:
    first = pages[page - 1]
    last = pages[page] if page < len(pages) else 1 << 62
    return start < last and end > first


def passages(lines: list[str], rng: random.Random, n: int) -> list[str]:
    """``n`` runs of 1–6 consecutive lines with enough words and numbers, and the page's tables."""
    lines = [line for line in lines if tokens(line)]
    out: list[str] = []
    for _ in range(n * 4):
        if len(out) >= n or not lines:
            break
        k = rng.randint(1, 6)
        i = rng.randrange(0, max(1, len(lines) - k + 1))
        quote = "\n".join(lines[i : i + k])
        if len(tokens(quote)) >= MIN_TOKENS:
            out.append(quote)
    return out


def tables(lines: list[str]) -> list[str]:
    """Runs of 4 lines or more that each hold two numbers or more: a table as pypdf reads it."""
    out, run = [], []
    for line in [*lines, ""]:
        if len(_NUMBER.findall(line)) >= 2:
            run.append(line)
            continue
        if len(run) >= 4:
            out.append("\n".join(run))
        run = []
    return out


def changed_number(quote: str, rng: random.Random) -> str | None:
    numbers = [m for m in _NUMBER.finditer(quote) if any(c != "0" for c in m.group())]
    if not numbers:
        return None
    m = rng.choice(numbers)
    digits = [i for i in range(m.start(), m.end()) if quote[i].isdigit()]
    i = digits[-1]
    return quote[:i] + str((int(quote[i]) + rng.randint(1, 8)) % 10) + quote[i + 1 :]


def rates(name: str, rows: list[Outcome], positive: bool, right: list[bool] | None = None) -> None:
    if not rows:
        print(f"{name}: none")
        return
    strict = sum(r.kind in ("exact", "normalised") for r in rows)
    cells = []
    for t in THRESHOLDS:
        ok = [r.accepted(t) and (right is None or right[i]) for i, r in enumerate(rows)]
        share = sum(ok) / len(rows)
        cells.append(f"{t:.2f}:{100 * (share if positive else 1 - share):5.1f}%")
    what = "anchored" if positive else "rejected"
    print(f"{name} (n={len(rows)}, strict matches {strict}) {what}: " + "  ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--filings", type=Path, default=DEFAULT)
    parser.add_argument("--texts", type=Path, help="pickle of the extracted texts, read or written")
    parser.add_argument("--pages", type=int, default=12, help="random pages per filing")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--missed", type=Path, help="write the passages missed on their page here (JSON lines)")
    args = parser.parse_args()
    if not (args.filings / "questions.jsonl").is_file():
        print(f"{args.filings}: no filings (questions.jsonl, pdfs/); nothing to measure")
        return
    import pypdf

    rng = random.Random(args.seed)
    missed_rows: list[dict[str, object]] = []
    t = time.perf_counter()
    texts = load_texts(args.filings, args.texts)
    size = sum(len(v[0]) for v in texts.values())
    print(f"texts: {len(texts)} filings, {size:,} characters ({time.perf_counter() - t:.0f} s)")
    ids = sorted(texts)
    t = time.perf_counter()
    for doc in ids:
        candidates(texts[doc][0], "warm the index of this document")
    index_seconds = (time.perf_counter() - t) / len(ids)

    # FinanceBench
    fb_page, fb_doc, fb_right, fb_wrong = [], [], [], []
    for line in (args.filings / "questions.jsonl").read_text().splitlines():
        row = json.loads(line)
        doc = next(d for d in ids if Path(d).stem == row["doc_name"])
        text, pages = texts[doc]
        for ev in row["evidence"]:
            page = ev["evidence_page_num"] + 1
            _, body = page_text(text, pages, page)
            fb_page.append(outcome(body, ev["evidence_text"]))
            whole = outcome(text, ev["evidence_text"], pages)
            fb_doc.append(whole)
            fb_right.append(on_page(pages, page, whole.start, whole.end))
            for other in ids:
                if other != doc:
                    fb_wrong.append(outcome(texts[other][0], ev["evidence_text"], texts[other][1]))

    # passages cut from two tools' plain text of the same random pages; each tool draws its own
    # passages (its own random stream, so that adding a tool changes no other tool's figures)
    pos_page, pos_doc, pos_right, other_doc, changed = [], [], [], [], []
    kinds: list[tuple[str, str]] = []
    changed_by: list[str] = []
    streams = {tool: random.Random(f"{args.seed}-{tool}") if tool != "pypdf" else rng for tool in TOOLS}
    for n, doc in enumerate(ids):
        text, pages = texts[doc]
        path = args.filings / "pdfs" / doc
        reader = pypdf.PdfReader(str(path))
        other = ids[(n + 1) % len(ids)]
        for page in sorted(rng.sample(range(1, len(pages) + 1), min(args.pages, len(pages)))):
            _, body = page_text(text, pages, page)
            for tool in TOOLS:
                lines = plain_lines(tool, reader, path, page)
                found = [(q, "lines") for q in passages(lines, streams[tool], 3)]
                found += [(q, "table") for q in tables(lines)[:1]]
                for quote, kind in found:
                    kinds.append((tool, kind))
                    pos_page.append(outcome(body, quote))
                    whole = outcome(text, quote, pages)
                    pos_doc.append(whole)
                    pos_right.append(on_page(pages, page, whole.start, whole.end))
                    other_doc.append(outcome(texts[other][0], quote, texts[other][1]))
                    if (bad := changed_number(quote, streams[tool])) is not None:
                        changed.append(outcome(body, bad))
                        changed_by.append(tool)
                    if args.missed is not None and not pos_page[-1].accepted(THRESHOLD):
                        missed_rows.append({"tool": tool, "doc": doc, "page": page, "kind": kind, "quote": quote})

    print(f"index: {index_seconds * 1000:.0f} ms a filing (tokens and their offsets, once per text)")
    print("share at each threshold (positives: anchored, on the right page where the whole filing is searched;")
    print("negatives: rejected, counting those truly there verbatim apart)")
    rates("FinanceBench evidence, on its page", fb_page, True)
    rates("FinanceBench evidence, in its whole filing", fb_doc, True, fb_right)
    for tool in TOOLS:
        for kind in ("lines", "table"):
            sel = [i for i, k in enumerate(kinds) if k == (tool, kind)]
            rates(f"{tool} {kind}, on their page", [pos_page[i] for i in sel], True)
            right = [pos_right[i] for i in sel]
            rates(f"{tool} {kind}, in the whole filing", [pos_doc[i] for i in sel], True, right)
    for tool in TOOLS:
        mine = [r for r, k in zip(other_doc, kinds) if k[0] == tool]
        there = [r for r in mine if r.kind in ("exact", "normalised", "ambiguous")]
        rates(f"{tool} passages in another filing (not there verbatim)", [r for r in mine if r not in there], False)
        print(f"  … of which there verbatim or as a reader sees them: {len(there)}")
        rates(
            f"{tool} passages with one number changed, on their page",
            [r for r, t in zip(changed, changed_by) if t == tool],
            False,
        )
    rates("FinanceBench evidence in every other filing", fb_wrong, False)
    every = [r.seconds for r in fb_page + fb_doc + pos_page + pos_doc + other_doc + changed + fb_wrong]
    print(
        f"time a quote: median {statistics.median(every) * 1000:.1f} ms, "
        f"p99 {sorted(every)[int(0.99 * (len(every) - 1))] * 1000:.1f} ms, max {max(every) * 1000:.1f} ms "
        f"({len(every)} quotes; the threshold in use is {THRESHOLD})"
    )
    if args.missed is not None:
        args.missed.write_text("".join(json.dumps(row) + "\n" for row in missed_rows))
        print(f"passages missed on their page at {THRESHOLD}: {len(missed_rows)}, written to {args.missed}")


if __name__ == "__main__":
    main()
