"""Find a goldset quote in a document's text the way a reader sees both.

A sentence copied from a rendered PDF, Word, HTML or slide page differs invisibly from the extracted
text: line wraps, hyphenation, curly quotes, ligatures, non-breaking spaces, markdown marks. A quote
that is not in the text verbatim is matched on a normalised form of both (:func:`normalise`), and the
match is mapped back to offsets into the original text. Errors say what to change: how many places
an ambiguous quote matches, or the closest passage of the document and where it first differs.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np
import regex

from bench.errors import BenchError
from bench.text.scripts import UNSPACED_CLASS

Locate = Callable[[int], str]

# Characters a reader cannot tell apart, folded one for one (so offsets do not move): every kind of
# space except the line feed (line starts still matter for markdown), quote marks (the corner
# brackets of Chinese and Japanese among them), dashes and minus, middle dots, wave dashes.
_SINGLE_QUOTES = "\u2018\u2019\u201a\u201b\u2032\u2035\u2039\u203a\u300e\u300f"  # ‘ ’ ‚ ‛ ′ ‵ ‹ › 『 』
_DOUBLE_QUOTES = (  # “ ” „ ‟ ″ ‶ « » 「 」 〝 〞 〟
    "\u201c\u201d\u201e\u201f\u2033\u2036\u00ab\u00bb\u300c\u300d\u301d\u301e\u301f"
)
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d"  # ‐ ‑ ‒ – — ― − ⸺ ⸻ ﹘ ﹣ －
_MIDDLE_DOTS = "\u30fb\u2027"  # ・ ‧ read as ·, as in 约翰·史密斯
_SPACES = (  # what str.isspace() accepts, less the line feed
    "\t\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)
_FOLD = str.maketrans(
    {**dict.fromkeys(_SINGLE_QUOTES, "'"), **dict.fromkeys(_DOUBLE_QUOTES, '"')}
    | dict.fromkeys(_DASHES, "-")
    | dict.fromkeys(_SPACES, " ")
    | dict.fromkeys(_MIDDLE_DOTS, "\u00b7")
    | {"\u301c": "~"}  # 〜 wave dash, and ～ (NFKC ~), which Japanese encodings swap
)
_FOLD_FROM = frozenset(map(chr, _FOLD))
# Invisible characters, dropped. The soft hyphen is kept until the hyphen rule has seen it.
_SOFT_HYPHEN = "\u00ad"
_INVISIBLE = frozenset("\u180e\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff")

# Markdown a reader of the rendered page does not see, replaced by a space: table delimiter rows
# (|---|:--:|), heading marks and list bullets at the start of a line (with the line break before
# them, which is whitespace anyway). Each alternative starts with a literal or a character class, so
# the regular expression engine skips ahead to candidates in C instead of trying every position.
_MARKUP = r"\n(?: *(?:#{1,6}|[-*+])(?=\s)| *(?=[^\n]*\|)(?=[^\n]*-)[ |:-]+(?=\n|\Z))"
# A space next to a character of a script written without spaces (Chinese, Japanese, Thai ...) or to
# CJK punctuation, as normalised (、。《》) or as written (「」（），：, read as ASCII once folded), is a
# gap an extractor made, not one a reader sees.
_UNSPACED = regex.compile(f"[{UNSPACED_CLASS}\u3001-\u303f]")
_FULL_WIDTH_MARK = regex.compile(
    r"[\u3001-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65\ufe10-\ufe19\ufe30-\ufe6b]"
)
# A hyphen (or soft hyphen) and the whitespace after it, or a run of whitespace.
_GAPS = re.compile("[-\u00ad] *|  +")

_LONG = 50_000  # characters from which a text is translated with a table of every code point
_SHOW = 200  # characters of a quote or passage shown in a message
_ALIGN = 1000  # quote characters aligned character by character; beyond, only the continuation is compared
_ALIKE = 30  # percent below which no passage is worth showing as the closest
_LISTED = 5  # places of an ambiguous quote named in its message
_COUNT_CAP = 10_000  # occurrences counted before "or more"


class QuoteError(BenchError):
    """A quote that names no single passage of its document; the message says what to change."""


@dataclass(frozen=True)
class Normalised:
    """A text as a reader sees it, and where each of its characters came from.

    Character ``j`` of ``text`` stands for ``original[lo[j]:hi[j]]`` (one character, or a cluster
    such as a ligature, an accent written as two code points, a run of whitespace).
    """

    text: str
    lo: np.ndarray
    hi: np.ndarray

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span of normalised characters ``start..end`` (end > start)."""
        return int(self.lo[start]), int(self.hi[end - 1])

    def at(self, j: int, size: int) -> int:
        """The original offset of normalised position ``j`` (``size`` is the original's length)."""
        return int(self.lo[j]) if j < len(self.text) else size


def normalise(text: str) -> str:
    """``text`` with what a reader cannot see folded away (see :func:`normalised`)."""
    return normalised(text).text


@functools.lru_cache(maxsize=64)
def normalised(text: str) -> Normalised:
    """The reader's form of ``text``, in linear time; cached since a document is quoted many times.

    1. One for one: every whitespace character but the line feed becomes a space; ‘ ’ ‚ ‛ ′ ‵ ‹ ›
       become '; “ ” „ ‟ ″ ‶ « » become "; dashes and minus signs become -.
    2. Markdown at a line start becomes a space: a table delimiter row (only ``|``, ``:``, ``-`` and
       spaces, with a pipe and a dash), heading marks ``#``..``######`` and ``-``/``*``/``+`` list
       bullets followed by whitespace.
    3. Each character with the combining marks after it is NFKC-normalised (ligatures, full-width
       forms, circled digits, composed vs decomposed accents); accents and case are kept.
       Zero-width and other invisible characters go.
    4. Table pipes and line feeds become spaces.
    5. A hyphen or soft hyphen between two letters goes, with the whitespace after it: ``well-known``,
       ``well-\nknown``, ``well- known`` and ``wellknown`` agree. Between letters and digits
       otherwise, a hyphen stays and the whitespace after it goes (``12-\n14`` reads ``12-14``).
       Any other soft hyphen goes. A run of spaces becomes one.
    6. A space next to a character of a script written without spaces (Chinese, Japanese, Thai,
       Lao, Khmer, Myanmar) or to CJK punctuation goes: ``十八个\n月``, ``十八 个 月`` and ``十八个月``
       agree, and so do ``使用 Python`` and ``使用Python``.
    """
    present = set(text)
    changing = [c for c in present if c not in _FOLD_FROM and _changes(c)]
    # characters that become one other character on their own (full-width and half-width forms,
    # circled digits, ...) are translated with the fixed folds, one for one; only the rest go
    # through the slower cluster path
    single = {c: f for c in changing if not _joins(c) and len(f := _fold(c)) == 1}
    special = {c for c in changing if c not in single} | {f for f in single.values() if _changes(f)}
    folded = "\n" + _translate(text, single)  # a line break first: the text's first line is a line too
    a_text, a_lo, a_hi = _rewrite(folded, _markup_and_clusters(special), _fold_match)
    b_text, b_lo, b_hi = _rewrite(a_text.replace("|", " ").replace("\n", " "), _GAPS, _gap_match)
    # without the space the added line break became, and in offsets into ``text``
    return _unspaced(text, Normalised(b_text[1:], a_lo[b_lo[1:]] - 1, a_hi[b_hi[1:] - 1] - 1), present)


def _unspaced(text: str, n: Normalised, present: set[str]) -> Normalised:
    """``n`` without the spaces next to a character of an unspaced script or CJK punctuation
    (step 6). A character counts as it reads once normalised (、。 are CJK, a corner bracket reads
    as a quote mark) or as it was written, full-width (（，, which a line may end beside as
    it may beside a Chinese character). ``present`` is the set of the characters of ``text``."""
    if text.isascii() or " " not in n.text:
        return n
    normal = np.array([ord(c) for c in _UNSPACED.findall("".join(set(n.text)))], dtype=np.uint32)
    written = np.array([ord(c) for c in _FULL_WIDTH_MARK.findall("".join(present))], dtype=np.uint32)
    if not len(normal) and not len(written):
        return n
    codes = np.frombuffer(n.text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    beside = np.isin(codes, normal)
    if len(written):
        original = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        beside |= np.isin(original[n.lo], written)
    near = np.concatenate(([False], beside[:-1])) | np.concatenate((beside[1:], [False]))
    keep = ~((codes == 32) & near)
    if keep.all():
        return n
    return Normalised(codes[keep].tobytes().decode("utf-32-le", "surrogatepass"), n.lo[keep], n.hi[keep])


def find_quote(text: str, quote: str, *, locate: Locate | None = None) -> tuple[int, int]:
    """The span ``(start, end)`` of the one passage of ``text`` that ``quote`` names.

    A quote found verbatim (CRLF read as LF) once is that span; verbatim more than once, ambiguous.
    Otherwise it is matched on :func:`normalise` of both and the span covers the original
    characters of the match. ``locate`` describes an offset (e.g. "p. 4") in messages.
    Raises :class:`QuoteError` when the quote matches no passage or several.
    """
    quote = quote.replace("\r\n", "\n")
    first = text.find(quote) if quote else -1
    if first >= 0:
        if text.find(quote, first + 1) < 0:
            return first, first + len(quote)
        raise _ambiguous(quote, text, _occurrences(text, quote), locate, "")
    q = _stripped(normalised(quote))
    if not q.text:
        raise QuoteError(f"quote {_show(quote)} has no visible text; copy a passage from the document")
    doc = normalised(text)
    places = _occurrences(doc.text, q.text)
    if len(places) == 1:
        return doc.span(places[0], places[0] + len(q.text))
    if places:
        starts = [doc.at(p, len(text)) for p in places]
        raise _ambiguous(quote, text, starts, locate, ", ignoring differences a reader cannot see")
    raise QuoteError(_not_found(text, doc, quote, q, locate))


# --- normalising ----------------------------------------------------------------------------------


def _translate(text: str, more: dict[str, str]) -> str:
    """``text`` with the fixed folds and ``more`` (one character for one each) applied.

    str.translate looks each character up in a dict, fast only on ASCII text; a long text of
    other characters goes through a table of every code point instead, at C speed."""
    if text.isascii():
        return text.translate(_FOLD)
    if len(text) < _LONG:  # a quote: building the table would cost more than it saves
        return text.translate(_FOLD | str.maketrans(more) if more else _FOLD)
    table = _fold_table()
    if more:
        table = table.copy()
        table[[ord(c) for c in more]] = [ord(f) for f in more.values()]
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return table[codes].tobytes().decode("utf-32-le", "surrogatepass")


@functools.cache
def _fold_table() -> np.ndarray:
    table = np.arange(0x110000, dtype=np.uint32)
    table[list(_FOLD)] = [ord(f) for f in _FOLD.values()]
    return table


def _markup_and_clusters(special: set[str]) -> re.Pattern[str]:
    """Markdown marks, and runs of the ``special`` characters (those of the text that NFKC or the
    invisible rule change: naming only those present keeps plain text scanned in C)."""
    parts = _MARKUP
    if special:
        chars = "[" + "".join(re.escape(c) for c in sorted(special)) + "]"
        parts += f"|{chars}{chars}*"
    return re.compile(parts, re.MULTILINE)


@functools.lru_cache(maxsize=4096)
def _changes(c: str) -> bool:
    return c in _INVISIBLE or _joins(c) or unicodedata.normalize("NFKC", c) != c


def _joins(c: str) -> bool:
    """Whether ``c`` combines with the character before it (accents, Hangul vowel and final jamo)."""
    return unicodedata.combining(c) != 0 or "\u1160" <= c <= "\u11ff"


@functools.lru_cache(maxsize=4096)
def _fold(cluster: str) -> str:
    """A base character and its accents as a reader sees them."""
    if len(cluster) == 1 and cluster in _INVISIBLE:
        return ""
    out = unicodedata.normalize("NFKC", cluster).translate(_FOLD).replace("|", " ")
    return "".join(c for c in out if c not in _INVISIBLE)


Piece = tuple[str, int, int]  # replacement text and the span [start, end) of the input it stands for


def _fold_match(s: str, m: re.Match[str], free: int) -> list[Piece]:
    if s[m.start()] == "\n":  # markup
        return [(" ", m.start(), m.end())]
    i, end = m.start(), m.end()
    if i > free and _joins(s[i]):  # an accent written as a combining mark belongs to the letter before
        i -= 1
    pieces: list[Piece] = []
    while i < end:
        j = i + 1
        while j < end and _joins(s[j]):
            j += 1
        pieces.append((_fold(s[i:j]), i, j))
        i = j
    return pieces


def _gap_match(s: str, m: re.Match[str], free: int) -> list[Piece]:
    i, j = m.start(), m.end()
    if s[i] == " ":
        return [(" ", i, j)]
    before = s[i - 1] if i else ""
    after = s[j] if j < len(s) else ""
    if before.isalpha() and after.isalpha():  # hyphenated, or a compound: both read as one word
        return [("", i, j)]
    mark = "" if s[i] == _SOFT_HYPHEN else "-"
    if j == i + 1 or (mark and before.isalnum() and after.isalnum()):  # 12-\n14 reads 12-14
        return [(mark, i, i + 1)]
    return [(mark, i, i + 1), (" ", i + 1, j)]


def _rewrite(
    s: str, pattern: re.Pattern[str], replace: Callable[[str, re.Match[str], int], list[Piece]]
) -> tuple[str, np.ndarray, np.ndarray]:
    """``s`` with each match of ``pattern`` replaced, and for each output character the span of
    ``s`` it came from: character by character where a piece keeps its length, else the piece's.

    ``replace`` gets the match and the first offset not yet taken; its pieces may start there,
    before the match."""
    texts: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    at = 0
    for m in pattern.finditer(s):
        pieces = replace(s, m, at)
        if pieces[0][1] > at:
            texts.append(s[at : pieces[0][1]])
            starts.append(at)
            ends.append(pieces[0][1])
        for piece, start, end in pieces:
            texts.append(piece)
            starts.append(start)
            ends.append(end)
        at = m.end()
    if at < len(s):
        texts.append(s[at:])
        starts.append(at)
        ends.append(len(s))
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    first = np.asarray(starts, dtype=np.int64)
    last = np.asarray(ends, dtype=np.int64)
    at_out = np.cumsum(lengths) - lengths
    shown = lengths > 0
    lengths, first, last, at_out = lengths[shown], first[shown], last[shown], at_out[shown]
    # character k of a piece that keeps its length comes from first + (k - at_out): spread the
    # per-piece shift with a cumulative sum (linear, no per-character work in Python) ...
    shift = np.zeros(int(lengths.sum()), dtype=np.int64)
    if len(shift):
        shift[at_out] = np.diff(first - at_out, prepend=0)
    lo = np.cumsum(shift) + np.arange(len(shift))
    hi = lo + 1
    # ... then the few pieces that change length stand, every character of them, for the whole piece
    other = lengths != last - first
    if other.any():
        n = lengths[other]
        k = np.repeat(at_out[other] - np.cumsum(n) + n, n) + np.arange(int(n.sum()))
        lo[k] = np.repeat(first[other], n)
        hi[k] = np.repeat(last[other], n)
    return "".join(texts), lo, hi


def _stripped(n: Normalised) -> Normalised:
    """Without the leading and trailing space (a quote's edges are not part of it)."""
    start = len(n.text) - len(n.text.lstrip(" "))
    end = len(n.text.rstrip(" "))
    return Normalised(n.text[start:end], n.lo[start:end], n.hi[start:end])


# --- messages -------------------------------------------------------------------------------------


def _occurrences(haystack: str, needle: str) -> list[int]:
    """Where ``needle`` starts in ``haystack``, overlaps included, up to a cap."""
    found: list[int] = []
    at = haystack.find(needle)
    while at >= 0 and len(found) < _COUNT_CAP:
        found.append(at)
        at = haystack.find(needle, at + 1)
    return found


def _ambiguous(quote: str, text: str, starts: list[int], locate: Locate | None, how: str) -> QuoteError:
    n = len(starts)
    count = f"{n:,} or more" if n >= _COUNT_CAP else f"{n:,}"
    listed = [f"{s:,}" + (f" ({p})" if (p := _place(locate, s)) else "") for s in starts[:_LISTED]]
    more = f" and {n - _LISTED:,} more" if n > _LISTED else ""
    return QuoteError(
        f"quote {_show(quote)} occurs more than once in the document{how} ({count} times, at characters "
        f"{', '.join(listed)}{more}); quote a longer passage or give start/end"
    )


def _place(locate: Locate | None, offset: int) -> str:
    return locate(offset) if locate else ""


def _show(s: str, limit: int = _SHOW) -> str:
    """``s`` on one line, whitespace runs as one space, control characters escaped, cut with …."""
    s = re.sub(r"\s+", " ", s)
    s = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in s)
    return '"' + (s if len(s) <= limit else s[: limit - 1] + "…") + '"'


def _not_found(text: str, doc: Normalised, quote: str, q: Normalised, locate: Locate | None) -> str:
    head = f"quote {_show(quote)} not found in the document"
    tail = "; copy it exactly from the document or give start/end"
    near = _closest(doc.text, q.text)
    if near is None or near[2] < _ALIKE:
        return f"{head}, nor any passage like it{tail}"
    p0, p1, similarity, (i1, i2, j1, j2) = near
    start = doc.at(p0, len(text))
    end = int(doc.hi[p1 - 1]) if p1 > p0 else start
    at = f"at character {start:,}" + (f", {p}" if (p := _place(locate, start)) else "")
    diff_q = q.at(j1, len(quote))
    q_has = _context(quote, diff_q, _end(q, j1, j2, len(quote)))
    d_at = doc.at(i1, len(text))
    d_has = _context(text, d_at, _end(doc, i1, i2, len(text)))
    return (
        f"{head}; the closest passage ({similarity}% alike, {at}) is {_show(text[start:end])}; they first "
        f"differ at character {diff_q:,} of the quote: the quote has {_show(q_has, 60)} where the document "
        f"has {_show(d_has, 60)}{tail}"
    )


def _end(n: Normalised, j1: int, j2: int, size: int) -> int:
    return int(n.hi[j2 - 1]) if j2 > j1 else n.at(j1, size)


def _context(s: str, i: int, j: int) -> str:
    """``s[i:j]`` widened to whole words, and the word after it, so a difference reads in context."""
    a = i
    while a > 0 and not s[a - 1].isspace() and i - a < 25:
        a -= 1
    b = j
    while b < len(s) and not s[b].isspace() and b - j < 25:
        b += 1
    while b < len(s) and s[b].isspace():
        b += 1
    while b < len(s) and not s[b].isspace() and b - j < 40:
        b += 1
    return s[a:b].strip()


def _closest(doc: str, q: str) -> tuple[int, int, int, tuple[int, int, int, int]] | None:
    """The passage of ``doc`` most like ``q``: its span, similarity in percent, and the first
    difference as ``(doc start, doc end, quote start, quote end)``, all in normalised positions.

    Candidate places come from counting the quote's character n-grams in each quote-long window of
    the document (vectorised, linear); only the best few are aligned with difflib, so a long
    document costs little, and the alignment is bounded by aligning at most the quote's head."""
    best = None
    for start in _candidates(doc, q):
        head = q[:_ALIGN]
        pad = len(head) // 2 + 8
        w0 = max(0, start - pad)
        window = doc[w0 : start + len(head) + pad]
        blocks = [b for b in SequenceMatcher(None, window, head, autojunk=False).get_matching_blocks() if b.size]
        if not blocks:
            continue
        p0 = max(0, w0 + blocks[0].a - blocks[0].b)
        p1 = min(len(doc), w0 + blocks[-1].a + blocks[-1].size + len(head) - blocks[-1].b - blocks[-1].size)
        matcher = SequenceMatcher(None, doc[p0:p1], head, autojunk=False)
        ratio = matcher.ratio()
        if best is None or ratio > best[0]:
            best = (ratio, p0, p1, matcher)
    if best is None:
        return None
    ratio, p0, p1, matcher = best
    first = next(((i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"), None)
    if first is not None:
        i1, i2, j1, j2 = first
        diff = (p0 + i1, p0 + i2, j1, j2)
        similarity = min(99, int(ratio * 100))
    else:  # the head is there: the difference lies in the rest of a long quote
        rest = len(_common_prefix(doc[p1 : p1 + len(q) - len(head)], q[len(head) :]))
        k = len(head) + rest
        diff = (p1 + rest, min(len(doc), p1 + rest + 1), k, min(len(q), k + 1))
        similarity = min(99, int(100 * k / len(q)))
        p1 = min(len(doc), p0 + len(q))
    return p0, p1, similarity, diff


def _common_prefix(a: str, b: str) -> str:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # halving, each step one C-speed comparison
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return a[:lo]


def _candidates(doc: str, q: str, keep: int = 3) -> list[int]:
    """Starts of the few quote-long windows of ``doc`` sharing the most character n-grams with ``q``."""
    for k in (5, 3, 1):
        k = min(k, len(q))
        if len(doc) < k:
            return [0] if doc else []
        # the quote's n-grams as a bit table of hash prefixes: one lookup per position, no sorting
        # (a false hit, one in thousands, barely moves a window's count)
        table = np.zeros(1 << 22, dtype=bool)
        table[_grams(q, k) >> np.uint64(42)] = True
        hits = table[_grams(doc, k) >> np.uint64(42)]
        if hits.any():
            break
    else:
        return []
    width = max(1, len(q) - k + 1)
    total = np.concatenate(([0], np.cumsum(hits, dtype=np.int64)))
    score = total[np.minimum(np.arange(len(hits)) + width, len(hits))] - total[:-1]
    found: list[int] = []
    for _ in range(keep):
        best = int(np.argmax(score))
        if score[best] <= 0:
            break
        found.append(best)
        score[max(0, best - width) : best + width] = -1
    return found


def _grams(s: str, k: int) -> np.ndarray:
    """A 64-bit rolling hash of each ``k`` characters of ``s``, one per start position."""
    codes = np.frombuffer(s.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.uint64)
    n = len(codes) - k + 1
    h = np.zeros(n, dtype=np.uint64)
    for j in range(k):
        h = h * np.uint64(1_000_003) + codes[j : j + n]
    return h * np.uint64(0x9E3779B97F4A7C15)  # mixed, so that the top bits depend on every character
