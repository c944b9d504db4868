"""CMRC 2018's answers quoted from Chinese passages as a PDF extractor or a reader garbles them.

Each answer that occurs once in its passage is looked up in a copy of the passage changed the way
extracted text is (line breaks between characters, a space between every two Chinese characters,
corner brackets for curly quotes, full-width punctuation for half-width), or is itself copied with
a line break or spaces inside. ``python -m tests.inputs.cmrc_quotes`` prints how many resolve to the
answer's own span; tests/inputs/test_quotes_cjk.py holds find_quote to every one.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

from bench.inputs.quotes import QuoteError, find_quote
from bench.text.scripts import is_cjk

CMRC = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "cmrc2018-zh"

# (changed text, where each original offset went: len(text) + 1 entries)
Changed = tuple[str, list[int]]


def answers() -> list[tuple[str, int, int]]:
    """``(passage, start, end)`` of every distinct answer that occurs exactly once in its passage."""
    passages: dict[str, str] = {}
    with (CMRC / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            passages[row["_id"]] = row["text"]
    seen: set[tuple[str, int, int]] = set()
    out: list[tuple[str, int, int]] = []
    with (CMRC / "questions.jsonl").open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            text = passages[row["corpus_id"]]
            for a in row["answer_spans"]:
                key = (row["corpus_id"], a["start_index"], a["end_index"])
                quote = text[key[1] : key[2]]
                if key in seen or not quote.strip() or text.count(quote) != 1 or quote != quote.strip():
                    continue
                seen.add(key)
                out.append((text, key[1], key[2]))
    return out


def insert(text: str, at: Callable[[int], str]) -> Changed:
    """``text`` with ``at(i)`` inserted before character ``i`` (for 0 < i < len(text))."""
    parts: list[str] = []
    where: list[int] = []
    n = 0
    for i, ch in enumerate(text):
        extra = at(i) if i else ""
        parts.append(extra)
        n += len(extra)
        where.append(n)
        parts.append(ch)
        n += 1
    where.append(n)
    return "".join(parts), where


def wrapped(text: str, rng: random.Random) -> Changed:
    """Lines wrapped every 10 to 40 characters, as a PDF's text comes out: a line of CJK text
    ends between any two characters next to a CJK one, never inside a Latin word or a number."""
    breaks: set[int] = set()
    i = 0
    while i < len(text):
        i += rng.randint(10, 40)
        while i < len(text) and not (wide(text[i - 1]) or wide(text[i])):
            i += 1
        breaks.add(i)
    return insert(text, lambda i: "\n" if i in breaks else "")


def wide(ch: str) -> bool:
    """A CJK character or CJK punctuation (full-width forms included): a line may end beside it."""
    return is_cjk(ch) or "\u3000" <= ch <= "\u303f" or "\uff00" <= ch <= "\uffef"


def spaced(text: str, rng: random.Random) -> Changed:
    """A space between every two Chinese characters, as some PDF extractors write CJK text."""
    return insert(text, lambda i: " " if is_cjk(text[i - 1]) and is_cjk(text[i]) else "")


def cornered(text: str, rng: random.Random) -> Changed:
    """Curly quotes as corner brackets (the Taiwan and Hong Kong style), and the other way round."""
    swap = str.maketrans({"“": "「", "”": "」", "‘": "『", "’": "』", "「": "“", "」": "”", "『": "‘", "』": "’"})
    return text.translate(swap), list(range(len(text) + 1))


def full_width(text: str, rng: random.Random) -> Changed:
    """Half-width punctuation and digits as their full-width forms, and the other way round."""
    half = ",:;!?()0123456789"
    full = "，：；！？（）０１２３４５６７８９"
    swap = str.maketrans(half + full, full + half)
    return text.translate(swap), list(range(len(text) + 1))


CHANGES: dict[str, Callable[[str, random.Random], Changed]] = {
    "wrapped": wrapped,
    "spaced": spaced,
    "cornered": cornered,
    "full_width": full_width,
}


def resolved(change: str, seed: int = 2018) -> tuple[int, int, list[str]]:
    """How many answers resolve to their own span when the passage is changed by ``change`` (the
    quote is the reader's clean copy), or, for ``quote_*``, when the quote is changed instead."""
    rng = random.Random(seed)
    ok = total = 0
    failures: list[str] = []
    cache: dict[str, Changed] = {}
    for text, start, end in answers():
        total += 1
        quote = text[start:end]
        if change.startswith("quote_"):
            changed_quote, _ = CHANGES[change.removeprefix("quote_")](quote, rng)
            doc, want = text, (start, end)
        else:
            if text not in cache:
                cache[text] = CHANGES[change](text, rng)
            doc, where = cache[text]
            changed_quote, want = quote, (where[start], where[end - 1] + 1)
        try:
            got = find_quote(doc, changed_quote)
        except QuoteError as e:
            failures.append(f"{quote!r}: {str(e)[:160]}")
            continue
        if got == want:
            ok += 1
        else:
            failures.append(f"{quote!r}: got {doc[got[0] : got[1]]!r}")
    return ok, total, failures


def main() -> None:
    for change in [*CHANGES, *(f"quote_{c}" for c in CHANGES)]:
        ok, total, failures = resolved(change)
        print(f"{change:18} {ok:5,} of {total:,} answers resolve to their span ({ok / total:.1%})")
        for line in failures[:3]:
            print("    ", line)


if __name__ == "__main__":
    main()
