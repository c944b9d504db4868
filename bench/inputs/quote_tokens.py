"""The words and numbers of a quote and of its document, as approximate anchoring compares them
(bench.inputs.quote_anchoring), with what another PDF tool broke mended where the document shows how.

Two tools agree on a word's letters and a number's digits, not on where one ends: pypdf writes
``202 1`` and ``STATEME\\nNTS`` where a line or a glyph run broke, ``theCompany`` where it lost a
space, ``December 31,2017`` with no space after a comma. The tokenizer splits what the two may
split differently (a lower-case letter before a capital; a comma that is no thousands separator),
and :func:`wanted` rejoins a quote's pieces where the document holds the joined word or number.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter

import numpy as np
import regex

from bench.text.scripts import UNSPACED_CLASS

_LETTER = rf"(?:(?![{UNSPACED_CLASS}])[^\W\d_])"
# A number: digits with thousands groups (a comma then exactly three digits) or a decimal point
# inside (``31,2017`` is two numbers); a word: a run of letters of a spaced script, ended before a
# capital that follows a lower-case letter (``ofOperations``: two words, however a tool spaced
# them); a character of a script written without spaces is a word of its own.
_TOKEN = regex.compile(
    rf"\d+(?:,\d{{3}}(?!\d)|\.\d+)*|[{UNSPACED_CLASS}]"
    rf"|{_LETTER}(?:(?<!\p{{Ll}}){_LETTER}|(?<=\p{{Ll}})(?!\p{{Lu}}){_LETTER})*"
)
_CUT = re.compile(r"\d[\d,.]*$")  # a quote's last number, as it was cut
_YEAR = re.compile(r"(?:19|20)\d\d")
_SPLIT_DIGITS = 4  # a number broken by a space or line break is rejoined up to this many digits (a year)


@functools.lru_cache(maxsize=100_000)
def key(token: str) -> str:
    """What two tools agree on: case-folded, compatibility-folded, numbers without thousands commas."""
    token = unicodedata.normalize("NFKC", token).casefold()
    return token.replace(",", "") if token[0].isdigit() else token


def tokens(text: str) -> list[tuple[str, int, int]]:
    """The words and numbers of ``text``, each with its span."""
    return [(key(m.group()), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def wanted(quote: str, vocab: dict[str, int], numbers: list[str]) -> Counter[str]:
    """The quote's tokens, with what another tool broke or ran together mended where the document
    (``vocab``: its tokens; ``numbers``: those that are numbers) has the mended words: ``cont rol``,
    ``STATEME NTS``, ``Register ed`` → one word; ``inresponse``, ``Netincome(loss)`` → ``in
    response``, ``net income loss``; ``202 1`` → ``2021`` (a number of the document no longer than a
    year, its pieces apart by spaces alone) — less a last number the quote was cut inside (``364,8``
    where the document has ``364,840``)."""
    found = tokens(quote)
    cut = _CUT.search(quote.rstrip())
    if cut and found and found[-1][2] == cut.end():
        last = key(cut.group().rstrip(",."))
        if last not in vocab and any(k.startswith(last) for k in numbers):
            found = [t for t in found if t[1] < cut.start()]
    out: list[str] = []
    i = 0
    while i < len(found):
        k = found[i][0]
        if k[0].isdigit():
            j = _joined_number(quote, found, i, vocab)
            out.append("".join(t[0] for t in found[i:j]))
            i = j
            continue
        after = found[i + 1][0] if i + 1 < len(found) else ""
        join = after and not after[0].isdigit() and k + after in vocab
        if join and (k not in vocab or after not in vocab):
            out.append(k + after)  # a word broken in two: at least one piece is no word of the document
            i += 1
        elif k in vocab or len(k) < 2:
            out.append(k)
        elif join:
            out.append(k + after)
            i += 1
        else:
            out.extend(_words_in(k, vocab) or [k])
        i += 1
    return Counter(out)


def _joined_number(quote: str, found: list[tuple[str, int, int]], i: int, vocab: dict[str, int]) -> int:
    """The end of the run of digit pieces from ``i`` that is one number of the document (``20 20``,
    ``201\\n9``): pieces of bare digits apart by one space or line break, at most :data:`_SPLIT_DIGITS`
    digits together, one of them no number of the document or together a year (two table cells
    stand apart by more, or are each a number of the document); ``i + 1`` when there is none."""
    best, joined, j = i + 1, found[i][0], i + 1
    while j < len(found) and _bare(quote, found[j - 1]) and _bare(quote, found[j]):
        gap = quote[found[j - 1][2] : found[j][1]]
        if len(gap) != 1 or not gap.isspace() or len(joined) + len(found[j][0]) > _SPLIT_DIGITS:
            break
        joined += found[j][0]
        j += 1
        known = all(found[p][0] in vocab for p in range(i, j))
        if joined in vocab and (not known or _YEAR.fullmatch(joined)):
            best = j
    return best


def _bare(quote: str, token: tuple[str, int, int]) -> bool:
    return quote[token[1] : token[2]].isdigit()


def _words_in(run: str, vocab: dict[str, int], longest: int = 30) -> list[str] | None:
    """``run`` as the fewest words of ``vocab`` (two letters or more) written without spaces, or None."""
    if len(run) > 200:
        return None
    best: list[list[str] | None] = [[]] + [None] * len(run)
    for end in range(2, len(run) + 1):
        for start in range(max(0, end - longest), end - 1):
            before, now = best[start], best[end]
            if before is not None and run[start:end] in vocab and (now is None or len(before) + 1 < len(now)):
                best[end] = [*before, run[start:end]]
    return best[-1]


class TokenIndex:
    """A document's tokens as integer ids with their offsets, and how rare each token is."""

    def __init__(self, text: str) -> None:
        found = tokens(text)
        self.vocab: dict[str, int] = {}
        ids = [self.vocab.setdefault(key, len(self.vocab)) for key, _, _ in found]
        self.ids = np.asarray(ids, dtype=np.int64)
        self.starts = np.asarray([s for _, s, _ in found], dtype=np.int64)
        self.ends = np.asarray([e for _, _, e in found], dtype=np.int64)
        counts = np.bincount(self.ids, minlength=len(self.vocab)) if len(ids) else np.zeros(0, np.int64)
        n = max(1, len(ids))
        # an inverse document frequency over the document's own tokens: "the" weighs little, a figure much
        self.weights = np.log1p(n / np.maximum(counts, 1))
        self.unseen_weight = math.log1p(n)
        self.numbers = [k for k in self.vocab if k[0].isdigit()]
        self.token_weight = self.weights[self.ids] if len(ids) else np.zeros(0)
        self.total = np.concatenate(([0.0], np.cumsum(self.token_weight)))
        breaks = np.asarray([m.start() for m in re.finditer("\n", text)], dtype=np.int64)
        self.line = np.searchsorted(breaks, self.starts)  # the line each token stands on


@functools.lru_cache(maxsize=16)
def token_index(text: str) -> TokenIndex:
    """A document's index, made once for the few documents whose quotes are being anchored."""
    return TokenIndex(text)
