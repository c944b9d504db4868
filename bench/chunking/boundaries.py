"""Where a chunker may cut a text: sentence and clause ends in any script, words of Chinese and
Japanese, grapheme clusters.

Text of plain ASCII (no CR) needs none of this: every character is its own grapheme cluster and
no word lacks spaces, so the chunkers keep their English path for it (:func:`plain`), and English
chunks stay what they always were.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np
import regex

from bench.text.scripts import CJK, CJK_CLASS, GRAPHEME, PHRASED_CLASS, grapheme_starts
from bench.text.words import jieba_tokenizer

# The re module's \s, which the English rules were written with: regex's \s leaves out U+001C..U+001F.
_WS = r"[\s\x1c-\x1f]"
# Closing quotes and brackets that stay with the sentence or clause they end.
_CLOSE = r"\"'”’)\]」』）】》〉〕〗〙〛"
# Sentence ends that need no space after them: Chinese and Japanese (full-width and half-width),
# Devanagari danda, Arabic question mark and Urdu full stop, Armenian, Ethiopic, Myanmar, Khmer.
_STOPS = "。！？｡︒।॥؟۔։።။។៕"
_COMMAS = "，；、：︐︑︓︔﹐﹑﹔﹕،؛፣፤၊"

# A sentence ends right after one of these (the cut goes after the match).
SENTENCE = regex.compile(
    rf"[.!?…]+[\"'”’)\]]*{_WS}+"  # spaced scripts: terminal punctuation, closing quotes, a space
    rf"|(?:[{_STOPS}]|．(?![0-9０-９]))+[{_CLOSE}]*{_WS}*"  # 。！？ and the like, ．not in 3．14
    rf"|(?:[!?…⋯]|(?<![0-9])\.)[.!?…⋯]*[{_CLOSE}]*(?=[{CJK_CLASS}])"  # 好.我们, 等等……然后: no space in CJK
    rf"|(?<=[{PHRASED_CLASS}]){_WS}+(?=[{PHRASED_CLASS}])"  # a space between two Thai letters ends a phrase
)
# A clause of a sentence ends after a comma, semicolon, enumeration comma or colon of CJK (and
# Arabic, Ethiopic, Myanmar), or after the half-width ones where CJK text stands on both sides.
CLAUSE = regex.compile(
    rf"[{_COMMAS}]+[{_CLOSE}]*{_WS}*|(?<=[{CJK_CLASS}])[,;:]{_WS}*(?=[{CJK_CLASS}])",
)

_KATAKANA = regex.compile(r"[\p{Katakana}\u30fc]")  # a run of katakana is one word (loanwords)
_JIEBA_BLOCK = re.compile(r"[\u4e00-\u9fd5a-zA-Z0-9+#&._%\-]")  # what jieba segments as one block
_HAN = re.compile(r"[\u4e00-\u9fd5]")
_ASCII_WORD = re.compile(r"[a-zA-Z0-9+#&._%\-]")  # a number or Latin word inside CJK text, for jieba too
_LATIN = re.compile(r"[a-zA-Z]")
_FIRST_CJK = "\u2e80"  # no character before it is CJK (the first of the CJK radicals)
_SETTLE_REACH = 256  # characters searched back for an offset known to start a cluster
_BLOCK_REACH = 64  # characters looked at on each side of a cut to find the words around it


# Grapheme cluster rules a cut after whitespace or punctuation can meet: a mark or joiner joins the
# character before it (a space with a mark is a spacing accent), a prepended sign joins the one after
# it, and neither joins across a control character.
JOINS = regex.compile(
    r"[\p{Grapheme_Cluster_Break=Extend}\p{Grapheme_Cluster_Break=ZWJ}\p{Grapheme_Cluster_Break=SpacingMark}]"
)
PREPEND = regex.compile(r"\p{Grapheme_Cluster_Break=Prepend}")
CONTROL = regex.compile(r"[\p{Grapheme_Cluster_Break=Control}\r\n]")


def plain(text: str) -> bool:
    """Whether every character of ``text`` is a grapheme cluster of its own and a word boundary
    is always a space: ASCII without a CR (CR LF is one cluster)."""
    return text.isascii() and "\r" not in text


def joins_previous(text: str, i: int) -> bool:
    """Whether a cut at ``i``, right after whitespace or a punctuation mark, would split a grapheme
    cluster: a mark or joiner right after a character that is not a control (CR LF, Hangul
    syllables, flags and emoji sequences never follow a separator)."""
    if not 0 < i < len(text) or text[i].isascii():
        return False
    return bool(JOINS.match(text, i)) and not CONTROL.match(text, i - 1)


def _run_start(text: str, i: int, pattern: Any) -> int | None:
    """Start of the run of ``pattern`` characters that holds ``text[i - 1]``; None when it reaches
    further back than ``_BLOCK_REACH`` (no word is that long: leave such a cut where it is)."""
    j = i - 1
    while j > 0 and pattern.match(text, j - 1):
        j -= 1
        if i - j > _BLOCK_REACH:
            return None
    return j


class CutPoints:
    """Where one text may be cut: at grapheme cluster starts and, for Chinese and Japanese, not
    inside a word (jieba's words, a run of katakana) where a word boundary is near enough."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _settled(self, i: int) -> bool:
        """Whether ``i`` is a cluster start by a check of the two characters around it: before an
        ASCII or CJK character, after anything but a prepended sign (or a CR, before LF). Most
        offsets of most texts are settled so; the rest need the clusters around them."""
        t = self.text
        if i <= 0 or i >= len(t):
            return True
        c, before = t[i], t[i - 1]
        if not (c.isascii() or (CJK.match(c) and not JOINS.match(c))):
            return False
        if before.isascii():
            return not (before == "\r" and c == "\n")
        return PREPEND.match(before) is None

    def _clusters_from(self, i: int) -> int:
        """A settled cluster start at or before ``i`` to read clusters from."""
        j = i
        while j > 0 and not self._settled(j):
            j -= 1
            if i - j > _SETTLE_REACH:
                return -1
        return j

    @functools.cached_property
    def _starts(self) -> np.ndarray:
        """Every cluster start and the text's end: read whole only for a text where no settled
        offset comes within _SETTLE_REACH characters (runs of marks, say)."""
        return np.array([*grapheme_starts(self.text), len(self.text)], dtype=np.int64)

    def cluster_before(self, i: int) -> int:
        """The last grapheme cluster start at or before ``i``."""
        if self._settled(i):
            return i
        j = self._clusters_from(i)
        if j < 0:
            return int(self._starts[np.searchsorted(self._starts, i, side="right") - 1])
        for m in GRAPHEME.finditer(self.text, j):
            if m.end() > i:
                return m.start()
        return len(self.text)

    def is_cluster_start(self, i: int) -> bool:
        return self.cluster_before(i) == i

    def cluster_after(self, i: int) -> int:
        """The first grapheme cluster start after ``i``, a cluster start (the text's end at most)."""
        m = GRAPHEME.match(self.text, i)
        return m.end() if m else len(self.text)

    def cluster_starts(self, start: int, end: int) -> list[int]:
        """The cluster starts from ``start`` (a cluster start) to ``end``, both included."""
        return [m.start() for m in GRAPHEME.finditer(self.text, start, end)] + [end]

    def single_cluster(self, start: int, end: int) -> bool:
        return self.cluster_after(start) >= end

    def word_start(self, i: int) -> int:
        """``i`` where it is not inside a word of Chinese or Japanese text, else where that word
        starts: jieba's words, a run of katakana, a number or a Latin word written against CJK."""
        t = self.text
        if i <= 0 or i >= len(t):
            return i
        if t[i - 1].isascii() and t[i].isascii():
            return self._ascii_word_start(i)
        if t[i - 1].isascii() or t[i].isascii():
            return i
        if _KATAKANA.match(t, i - 1) and _KATAKANA.match(t, i):
            j = _run_start(t, i, _KATAKANA)
            return i if j is None else j
        if not (_HAN.match(t, i - 1) and _HAN.match(t, i)):
            return i
        lo = _run_start(t, i, _JIEBA_BLOCK)
        lo = i - _BLOCK_REACH if lo is None else lo
        hi = i + 1
        while hi < min(len(t), i + _BLOCK_REACH) and _JIEBA_BLOCK.match(t, hi):
            hi += 1
        word = lo
        for _, s, _ in jieba_tokenizer().tokenize(t[lo:hi]):
            if lo + s > i:
                break
            word = lo + s
        return word

    def _ascii_word_start(self, i: int) -> int:
        """Where a number or Latin word starts, when ``i`` is inside one that touches CJK text
        (``1999年``, ``满语Heseri的``) or lies in a text mostly of CJK; ``i`` itself anywhere else, so
        English text is never moved."""
        t = self.text
        if not self._has_cjk or not (_ASCII_WORD.match(t, i - 1) and _ASCII_WORD.match(t, i)):
            return i  # without CJK in the text nothing touches it and it is not mostly CJK
        start = _run_start(t, i, _ASCII_WORD)
        if start is None:
            return i
        end = i + 1
        while end < len(t) and end - i < _BLOCK_REACH and _ASCII_WORD.match(t, end):
            end += 1
        touches = (start > 0 and CJK.match(t, start - 1)) or (end < len(t) and CJK.match(t, end))
        return start if touches or self._mostly_cjk else i

    @functools.cached_property
    def _has_cjk(self) -> bool:
        """Whether the text holds any CJK character: most texts past ASCII (accents, dashes) hold
        none, which their largest character shows without scanning them with the pattern."""
        return bool(self.text) and max(self.text) >= _FIRST_CJK and CJK.search(self.text) is not None

    @functools.cached_property
    def _mostly_cjk(self) -> bool:
        """Whether CJK carries at least as much of the text as Latin letters do (a CJK character
        says about what a word of four letters does): then a Latin word is kept whole too."""
        cjk = len(CJK.findall(self.text)) if self._has_cjk else 0
        return cjk > 0 and 4 * cjk >= len(_LATIN.findall(self.text))

    def before(self, i: int, floor: int) -> int:
        """Where to cut a window meant to end at ``i`` that starts at ``floor``: ``i`` if it may be
        cut there, else the nearest point before it and after ``floor`` (a word start, else a
        grapheme cluster start); when there is none, the end of the cluster at ``floor``."""
        g = self.cluster_before(i)
        w = self.word_start(g)
        if w > floor and self.is_cluster_start(w):
            return w
        if g > floor:
            return g
        return self.cluster_after(floor)

    def words(self, start: int, end: int) -> list[int]:
        """Cuts between the words of the Chinese and Japanese text in ``[start, end)``: jieba's word
        boundaries next to a CJK character, none inside a run of katakana, none inside a cluster."""
        t = self.text
        if not CJK.search(t, start, end):
            return []
        cuts: list[int] = []
        for _, s, _ in jieba_tokenizer().tokenize(t[start:end]):
            p = start + s
            if p <= start or not self.is_cluster_start(p):
                continue
            if not (CJK.match(t, p - 1) or CJK.match(t, p)):
                continue
            if _KATAKANA.match(t, p - 1) and _KATAKANA.match(t, p):
                continue
            cuts.append(p)
        return cuts
