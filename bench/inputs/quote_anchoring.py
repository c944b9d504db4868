"""Anchor a goldset quote that another tool copied: by its words and numbers, as annotation tools
re-attach a highlight to a page whose text changed.

Evidence copied from a PDF viewer or another parser differs from bench's text by more than what a
reader cannot see (bench.inputs.quotes): bench renders a table as markdown rows (``| Net sales |  | $
| 34,229 |``), the other tool put a cell on each line, read the columns in another order, or read
the table column by column where bench read it row by row. Such a quote is anchored on the sequence
of its words and numbers alone (table rules, cell separators, empty-cell dashes, currency cells and
markdown marks are no words), in whatever order the two tools read them:

1. the document is indexed once (its tokens and their offsets, cached per text);
2. the few stretches of the document with the most of the quote's tokens are found by a sliding
   window over the whole index (vectorised);
3. within each, the span that best covers the quote's tokens (a multiset, each token weighted by how
   rare it is in the document) while taking in few others is chosen;
4. its similarity is the weighted share of the quote's tokens it holds. A span that lacks one of
   the quote's numbers names a different fact and is never accepted (a page number the quote
   copied, which a PDF's text leaves out, is no figure: :func:`_folios`); a span below
   :data:`THRESHOLD`, or one as similar as another place of the document, is an error that names
   the closest passages.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import regex

from bench.inputs.quote_tokens import TokenIndex, token_index, tokens, wanted
from bench.inputs.quotes import Locate, QuoteError, find_quote

EXACT, NORMALISED, APPROXIMATE = "exact", "normalised", "approximate"

# Measured on FinanceBench's evidence and on passages cut from pypdf's text of the same filings
# (benchmarks/quote_anchoring.py, docs/goldsets.md): the least similarity accepted.
THRESHOLD = 0.85
# Two places whose similarities differ by less than this are one quote matching twice: ambiguous.
AMBIGUOUS_MARGIN = 0.05
MIN_TOKENS = 4  # fewer words and numbers than this say too little to be anchored approximately
_CANDIDATES = 4  # stretches of the document refined per quote
_WIDTHS = (0.6, 0.8, 1.0, 1.25, 1.6, 2.0, 2.5, 3.2, 4.0)  # span lengths tried, in quote lengths
# What a span token that is none of the quote's costs, against what one of the quote's gains: low,
# since a table read in another order scatters a row's cells among the other rows'.
_EXTRA = 0.05
_STRAY = 2  # of the quote's words, on a span's first or last line among as many others: not the quote's line
_OFF_PAGE = 0.15  # of the quote's tokens a span holds, on a page at its edge: not the quote's page
_REACH = 4  # how far, in quote lengths, on either side of a rich stretch its best span may reach

_OPENING = "(\"'‘“$€£¥"
_CLOSING = ".,;:!?)%\"'’”"


@dataclass(frozen=True, slots=True)
class Anchor:
    """Where a quote lies in its document, how it was matched and how alike the two are (1.0:
    the same text, or the same as a reader sees it)."""

    start: int
    end: int
    matched: str  # EXACT, NORMALISED or APPROXIMATE
    similarity: float


@dataclass(frozen=True)
class _Place:
    first: int  # token positions [first, last)
    last: int
    similarity: float
    missing_numbers: tuple[str, ...]


def anchor_quote(
    text: str,
    quote: str,
    *,
    locate: Locate | None = None,
    threshold: float = THRESHOLD,
    pages: Sequence[int] = (),
) -> Anchor:
    """The one passage of ``text`` that ``quote`` names: verbatim, as a reader sees it
    (:func:`bench.inputs.quotes.find_quote`), else by its words and numbers (:func:`approximate`).

    Raises :class:`QuoteError` when a quote is ambiguous, or is like no passage closely enough."""
    try:
        start, end = find_quote(text, quote, locate=locate)
    except QuoteError as strict:
        if "occurs more than once" in str(strict):
            raise
        try:
            return approximate(text, quote, locate=locate, threshold=threshold, pages=pages)
        except _Weak as weak:
            raise QuoteError(f"{strict}{weak.why}") from None
    verbatim = text[start:end] == quote.replace("\r\n", "\n")
    return Anchor(start, end, EXACT if verbatim else NORMALISED, 1.0)


class _Weak(QuoteError):
    """No passage is alike enough; ``why`` adds what the word-by-word comparison found."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def approximate(
    text: str,
    quote: str,
    *,
    locate: Locate | None = None,
    threshold: float = THRESHOLD,
    pages: Sequence[int] = (),
) -> Anchor:
    """The span of ``text`` whose words and numbers are most like ``quote``'s, in any order.
    ``pages``: where the text's pages start, if it has any (see :func:`_folios`).

    Raises :class:`QuoteError` (the message says what was found) when the best span's similarity is
    under ``threshold``, it lacks one of the quote's numbers, or another place is about as alike."""
    index = token_index(text)
    wanted = _wanted(index, quote)
    size = sum(wanted.values())
    if size < MIN_TOKENS:
        raise _Weak(f"; it has too few words and numbers ({size}) to be matched by them: quote more")
    places = _best_places(index, quote, pages, threshold, wanted)
    if not places:
        raise _Weak("; no passage has its words and numbers")
    best = places[0]
    if best.missing_numbers or best.similarity < threshold:
        raise _Weak(f"; by its words and numbers, the closest passage is {_describe(text, index, best, locate)}")
    rivals = [p for p in places[1:] if p.similarity >= best.similarity - AMBIGUOUS_MARGIN and not p.missing_numbers]
    if rivals:
        both = " and ".join(_describe(text, index, p, locate) for p in (best, rivals[0]))
        raise QuoteError(
            f"quote {_show(quote)} is not in the document as written, and by its words and numbers it is "
            f"as much like two passages: {both}; quote a longer passage or give start/end"
        )
    start, end = _widened(text, int(index.starts[best.first]), int(index.ends[best.last - 1]))
    return Anchor(start, end, APPROXIMATE, best.similarity)


def _widened(text: str, start: int, end: int) -> tuple[int, int]:
    """The span with the marks that belong to its first and last word: ``(1,234)``, ``rivers.``, ``5%``."""
    while start > 0 and text[start - 1] in _OPENING:
        start -= 1
    while end < len(text) and text[end] in _CLOSING:
        end += 1
    return start, end


@dataclass(frozen=True, slots=True)
class Candidate:
    """A passage like a quote: its span, its similarity, and the quote's numbers it lacks."""

    start: int
    end: int
    similarity: float
    missing_numbers: tuple[str, ...]


def candidates(text: str, quote: str, pages: Sequence[int] = ()) -> list[Candidate]:
    """The passages of ``text`` most like ``quote`` by words and numbers, best first (those that
    hold all of its numbers before those that do not)."""
    index = token_index(text)
    return [
        Candidate(int(index.starts[p.first]), int(index.ends[p.last - 1]), p.similarity, p.missing_numbers)
        for p in _best_places(index, quote, pages, THRESHOLD)
    ]


_RUNNING_LINE = 6  # words and numbers at most of a running header or footer a quote may carry
_NEAR = 20  # tokens on either side of a span where a quote's edge line would stand if it were text


def _best_places(
    index: TokenIndex, quote: str, pages: Sequence[int], threshold: float, wanted: Counter[str] | None = None
) -> list[_Place]:
    """The quote's places (:func:`_places`); where none is alike enough, those of the quote less a
    short first or last line or two that the document does not hold near the span: a running header
    or footer ("Table of Contents", ``2021 FORM 10-K 66``) a viewer copies and bench leaves out.
    ``wanted``: the quote's tokens, where the caller has them already."""
    places = _places(index, _wanted(index, quote) if wanted is None else wanted, _folios(index, quote, pages))
    if _good(places, threshold):
        return places
    for rest, dropped in _without_edge_lines(quote):
        alt = _places(index, _wanted(index, rest), _folios(index, rest, pages))
        if _good(alt, threshold) and not _near(index, alt[0], dropped):
            return alt
    return places


def _good(places: list[_Place], threshold: float) -> bool:
    return bool(places) and not places[0].missing_numbers and places[0].similarity >= threshold


def _without_edge_lines(quote: str) -> list[tuple[str, str]]:
    """The quote less its first, last, first and last, or two first or last lines, where what is
    left out is as short as a running line and holds no number (a changed figure is never left out;
    folios are :func:`_folios`'s)."""
    lines = [line for line in quote.splitlines() if line.strip()]
    out = []
    for head, tail in ((1, 0), (0, 1), (1, 1), (2, 0), (0, 2)):
        if head + tail >= len(lines):
            continue
        groups = [lines[:head], lines[len(lines) - tail :]]
        rest = "\n".join(lines[head : len(lines) - tail])
        if len(tokens(rest)) < 2 * MIN_TOKENS:
            continue
        if all(_running_like("\n".join(g)) for g in groups if g):
            out.append((rest, "\n".join(lines[:head] + lines[len(lines) - tail :])))
    return out


def _running_like(line: str) -> bool:
    found = tokens(line)
    return 0 < len(found) <= _RUNNING_LINE and not any(k[0].isdigit() for k, _, _ in found)


def _near(index: TokenIndex, place: _Place, dropped: str) -> bool:
    """Whether the document holds half or more of ``dropped``'s words within :data:`_NEAR` tokens
    of ``place``: then the lines are the document's text, not its running lines."""
    words = [k for k, _, _ in tokens(dropped) if not k[0].isdigit()]
    if not words:
        return False
    lo, hi = max(0, place.first - _NEAR), min(len(index.ids), place.last + _NEAR)
    around = {int(i) for i in index.ids[lo:hi]}
    held = sum(1 for w in words if index.vocab.get(w, -1) in around)
    return 2 * held >= len(words)


_FOLIO = regex.compile(r"\d{1,4}")
_FOLIO_LINE = 6  # words and numbers at most on a page's running line


@dataclass(frozen=True)
class _Folios:
    """Numbers of the quote's first and last lines that may be page furniture, and the token
    positions where the document's pages start and end."""

    head: frozenset[str]
    tail: frozenset[str]
    edges: frozenset[int]
    starts: np.ndarray  # the same token positions, sorted


def _folios(index: TokenIndex, quote: str, pages: Sequence[int]) -> _Folios:
    """A quote copied from a page viewer carries the page's running lines ("Table of Contents",
    ``F-4``, ``2021 FORM 10-K 59``), which bench leaves out of a PDF's text. A short first or last
    line's small numbers (four digits at most, written without separators: a page number, a year)
    are not asked of a span that reaches (or crosses) the start, or the end, of a page: they are
    its folio, not a figure."""
    if not pages:
        return _Folios(frozenset(), frozenset(), frozenset(), np.zeros(0, dtype=np.int64))
    lines = [line for line in quote.splitlines() if line.strip()]

    def small(line: str) -> frozenset[str]:
        found = tokens(line)
        if len(found) > _FOLIO_LINE:
            return frozenset()
        return frozenset(key for key, s, e in found if _FOLIO.fullmatch(line[s:e]))

    edges = {int(e) for e in np.searchsorted(index.starts, np.asarray(pages, dtype=np.int64))} | {0, len(index.ids)}
    head, tail = (small(lines[0]), small(lines[-1])) if lines else (frozenset(), frozenset())
    return _Folios(head, tail, frozenset(edges), np.asarray(sorted(edges), dtype=np.int64))


def _wanted(index: TokenIndex, quote: str) -> Counter[str]:
    return wanted(quote, index.vocab, index.numbers)


@dataclass(frozen=True, slots=True)
class _Quote:
    """A quote's distinct tokens (``keys``) as one document sees them, each by its position in ``keys``."""

    keys: list[str]
    need: np.ndarray  # how often the quote holds each
    weight: np.ndarray  # how rare each is in the document (one it lacks: rarer than any it holds)
    is_number: np.ndarray  # whether each is a number
    whole: float  # the weight of all the quote's tokens
    size: int  # the quote's tokens, repeats counted


def _places(index: TokenIndex, wanted: Counter[str], folios: _Folios) -> list[_Place]:
    """The best span in each of the few stretches richest in the quote's tokens, best first."""
    keys = list(wanted)
    ids = np.asarray([index.vocab.get(k, -1) for k in keys], dtype=np.int64)
    need = np.asarray([wanted[k] for k in keys], dtype=np.int64)
    weight = np.where(ids >= 0, index.weights[np.maximum(ids, 0)], index.unseen_weight) if len(ids) else ids
    is_number = np.asarray([k[0].isdigit() for k in keys], dtype=bool)
    quote = _Quote(keys, need, weight, is_number, float((weight * need).sum()), int(need.sum()))
    size = quote.size
    seen = ids >= 0
    if not seen.any() or not len(index.ids):
        return []
    # the quote's token of each document position (-1: none), then a window's weight in the quote's
    # tokens: the stretches to refine
    lookup = np.full(len(index.vocab), -1, dtype=np.int64)
    lookup[ids[seen]] = np.flatnonzero(seen)
    which = lookup[index.ids]
    hit = np.where(which >= 0, index.token_weight, 0.0)
    width = min(size, len(hit))
    total = np.concatenate(([0.0], np.cumsum(hit)))
    score = total[width:] - total[:-width]
    places: list[_Place] = []
    for _ in range(_CANDIDATES):
        at = int(np.argmax(score))
        if score[at] <= 0:
            break
        score[max(0, at - width) : at + width] = -1.0
        lo, hi = max(0, at - round(_REACH * width)), min(len(hit), at + round((1 + _REACH) * width))
        region = which[lo:hi].copy()
        for p in places:  # a place found already is not found again: the next best lies elsewhere
            region[max(0, p.first - lo) : max(0, p.last - lo)] = -1
        page = np.searchsorted(folios.starts, np.arange(lo, hi), side="right")  # each token's page
        place = _best_span(index, quote, region, lo, page)
        if place is not None and place.similarity > 0 and not any(_overlap(place, p) for p in places):
            places.append(_without_folios(place, folios))
    places.sort(key=lambda p: (bool(p.missing_numbers), -p.similarity))
    return places


def _without_folios(place: _Place, folios: _Folios) -> _Place:
    """``place`` not lacking the quote's folios where it reaches (or crosses) a page's edge."""
    head = any(place.first <= e < place.last for e in folios.edges)
    tail = any(place.first < e <= place.last for e in folios.edges)
    exempt = (folios.head if head else frozenset()) | (folios.tail if tail else frozenset())
    if not exempt or not place.missing_numbers:
        return place
    return _Place(place.first, place.last, place.similarity, tuple(k for k in place.missing_numbers if k not in exempt))


def _overlap(a: _Place, b: _Place) -> bool:
    return a.first < b.last and b.first < a.last


def _best_span(index: TokenIndex, quote: _Quote, which: np.ndarray, offset: int, page: np.ndarray) -> _Place | None:
    """Within one stretch (``which``: the quote token at each position; ``offset``: where it starts;
    ``page``: the page of each position), the span with the most weight of the quote's tokens less
    :data:`_EXTRA` of the weight of the rest, over a few lengths."""
    need, weight, keys = quote.need, quote.weight, quote.keys
    n = len(which)
    if not n:
        return None
    # counts of each quote token up to each position, one row per token the stretch holds (the
    # others add nothing to any span)
    pos = np.flatnonzero(which >= 0)
    rows, row_of = np.unique(which[pos], return_inverse=True)
    marks = np.zeros((len(rows), n + 1), dtype=np.float32)
    marks[row_of, pos + 1] = 1.0
    counts = np.cumsum(marks, axis=1)
    cap, w_rows = need[rows].astype(np.float32)[:, None], weight[rows].astype(np.float32)
    span_weight = index.total[offset : offset + n + 1] - index.total[offset]

    def gain_of(inside: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
        """The weight of the quote's tokens in each span ``first..last`` (``inside``: the counts of
        each token in each), less _EXTRA of the rest."""
        matched = w_rows @ np.minimum(inside, cap)
        return matched - _EXTRA * (span_weight[last] - span_weight[first] - matched)

    def gain(first: np.ndarray, last: np.ndarray) -> np.ndarray:
        return gain_of(counts[:, last] - counts[:, first], first, last)

    best: tuple[float, int, int] | None = None
    for factor in _WIDTHS:
        w = min(n, max(1, round(quote.size * factor)))
        firsts = np.arange(n + 1 - w)
        gains = gain_of(counts[:, w:] - counts[:, : n + 1 - w], firsts, firsts + w)  # slices: no gathering
        a = int(np.argmax(gains))
        if best is None or gains[a] > best[0]:
            best = (float(gains[a]), a, a + w)
    assert best is not None
    _, a, b = best
    # the widths are coarse: move each edge to where the gain is best, twice
    reach = max(4, (b - a) // 4)
    for _ in range(2):
        starts = np.arange(max(0, a - reach), min(b, a + reach + 1))
        a = int(starts[np.argmax(gain(starts, np.full(len(starts), b)))])
        ends = np.arange(max(a + 1, b - reach), min(n, b + reach) + 1)
        b = int(ends[np.argmax(gain(np.full(len(ends), a), ends))])
    a, b = _trim(which, need, quote.is_number, index.line[offset : offset + n], a, b)
    a, b = _off_page(which, need, quote.is_number, page, a, b)
    got = np.zeros(len(need))
    got[rows] = np.minimum(counts[:, b] - counts[:, a], need[rows])
    missing = tuple(keys[k] for k in np.flatnonzero(got < need) if keys[k][0].isdigit())
    share = float(weight @ got) / quote.whole if quote.whole else 0.0
    return _Place(offset + a, offset + b, round(share, 6), missing)  # rounded: 0.8 is 0.8, not 0.7999…


def _trim(
    which: np.ndarray, need: np.ndarray, numbers: np.ndarray, lines: np.ndarray, a: int, b: int
) -> tuple[int, int]:
    """``a..b`` less the tokens at its edges that add nothing (none of the quote's, or one more of a
    token the span already holds as often as the quote does), and less an edge line that holds at
    most :data:`_STRAY` of the quote's words among as many others (the "of" of the sentence before
    a table): its line is not the quote's."""
    have = Counter(int(k) for k in which[a:b] if k >= 0)
    while True:
        a, b = _without_spare_edges(which, need, have, a, b)
        if a >= b or lines[a] == lines[b - 1]:
            return a, b
        first = a + int(np.searchsorted(lines[a:b], lines[a], side="right"))
        last = a + int(np.searchsorted(lines[a:b], lines[b - 1], side="left"))
        if _stray_line(range(a, first), which, need, numbers, have):
            _drop(range(a, first), which, have)
            a = first
        elif _stray_line(range(last, b), which, need, numbers, have):
            _drop(range(last, b), which, have)
            b = last
        else:
            return a, b


def _without_spare_edges(which: np.ndarray, need: np.ndarray, have: Counter[int], a: int, b: int) -> tuple[int, int]:
    """``a..b`` less the tokens at its edges that add nothing: none of the quote's, or one more of a
    token the span already holds as often as the quote does. ``have`` (the span's count of each of
    the quote's tokens) is kept in step."""
    while a < b:
        k = int(which[a])
        if k >= 0:
            if have[k] <= need[k]:
                break
            have[k] -= 1
        a += 1
    while b > a:
        k = int(which[b - 1])
        if k >= 0:
            if have[k] <= need[k]:
                break
            have[k] -= 1
        b -= 1
    return a, b


def _stray_line(run: range, which: np.ndarray, need: np.ndarray, numbers: np.ndarray, have: Counter[int]) -> bool:
    """Whether the tokens ``run`` (a span's edge line) hold at most :data:`_STRAY` of the quote's
    tokens the span needs, as many others or more, and none of the quote's numbers."""
    used = [i for i in run if (k := int(which[i])) >= 0 and have[k] <= need[k]]
    return len(used) <= _STRAY and len(run) - len(used) >= len(used) and not numbers[which[used]].any()


def _drop(run: range, which: np.ndarray, have: Counter[int]) -> None:
    """Takes the tokens ``run`` out of the span's counts ``have``."""
    for i in run:
        if which[i] >= 0:
            have[int(which[i])] -= 1


def _off_page(
    which: np.ndarray, need: np.ndarray, numbers: np.ndarray, page: np.ndarray, a: int, b: int
) -> tuple[int, int]:
    """``a..b`` less its part on the page before, or after, the page that holds most of it, where
    that part holds no number of the quote and at most :data:`_OFF_PAGE` of the quote's tokens the
    span holds: the next page's heading repeats words of the quote, not the quote."""
    while a < b and page[a] != page[b - 1]:
        used = [i for i in range(a, b) if which[i] >= 0]
        first = a + int(np.searchsorted(page[a:b], page[a], side="right"))
        last = a + int(np.searchsorted(page[a:b], page[b - 1], side="left"))
        head = [i for i in used if i < first]
        tail = [i for i in used if i >= last]
        if len(head) <= len(tail) and _stray_part(head, used, which, numbers):
            a = first
        elif _stray_part(tail, used, which, numbers):
            b = last
        else:
            break
        a, b = _trim(which, need, numbers, np.zeros(len(which), dtype=np.int64), a, b)
    return a, b


def _stray_part(part: list[int], used: list[int], which: np.ndarray, numbers: np.ndarray) -> bool:
    return len(part) <= _OFF_PAGE * len(used) and not numbers[which[part]].any()


def _describe(text: str, index: TokenIndex, place: _Place, locate: Locate | None) -> str:
    start, end = int(index.starts[place.first]), int(index.ends[place.last - 1])
    where = f"at character {start:,}" + (f", {p}" if locate and (p := locate(start)) else "")
    lacks = f", lacking the quote's {', '.join(place.missing_numbers[:3])}" if place.missing_numbers else ""
    return f"{_show(text[start:end], 120)} ({round(100 * place.similarity)}% alike, {where}{lacks})"


def _show(s: str, limit: int = 200) -> str:
    s = " ".join(s.split())
    return '"' + (s if len(s) <= limit else s[: limit - 1] + "…") + '"'
