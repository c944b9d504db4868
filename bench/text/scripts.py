"""Scripts of characters, grapheme clusters and display width: what every stage needs to treat
Chinese, Japanese, Korean, Thai, Devanagari, Arabic or Cyrillic text as correctly as English.

``regex`` gives Unicode's own definitions (``\\X`` grapheme clusters, ``\\p{Script}``), so a Thai
vowel mark or a Devanagari virama stays with the letter it belongs to.
"""

from __future__ import annotations

import unicodedata

import regex

# Scripts written without spaces between words: a lexical matcher cannot find words by spaces.
# Han (Chinese characters, also in Japanese), Hiragana and Katakana are CJK; Hangul is spaced.
CJK_CLASS = r"\p{Han}\p{Hiragana}\p{Katakana}\u3005\u3006\u30fc"  # 々 〆 ー belong to the words around them
# Scripts that put spaces between phrases and sentences but not between words.
PHRASED_CLASS = r"\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}"
UNSPACED_CLASS = CJK_CLASS + PHRASED_CLASS
CJK = regex.compile(f"[{CJK_CLASS}]")
UNSPACED = regex.compile(f"[{UNSPACED_CLASS}]")
GRAPHEME = regex.compile(r"\X")


def is_cjk(ch: str) -> bool:
    """Whether ``ch`` is a Han, Hiragana or Katakana character."""
    return CJK.match(ch) is not None


def has_unspaced(text: str) -> bool:
    """Whether ``text`` holds any character of a script written without spaces (CJK, Thai …)."""
    return UNSPACED.search(text) is not None


def grapheme_starts(text: str) -> list[int]:
    """Offsets where each grapheme cluster of ``text`` begins (a letter with its combining marks,
    an emoji sequence, a CR LF): the only places a text may be cut without breaking a character
    as a reader sees it."""
    return [m.start() for m in GRAPHEME.finditer(text)]


def char_width(ch: str) -> int:
    """Columns ``ch`` takes in a terminal or a monospaced label: 2 for wide and full-width
    characters (CJK, Hangul, full-width forms), 0 for combining marks and invisible characters,
    else 1."""
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Columns ``text`` takes when shown: wide characters count two, marks none."""
    if text.isascii():
        return len(text)
    return sum(map(char_width, text))


def shorten(text: str, width: int, ellipsis: str = "…") -> str:
    """``text`` cut to at most ``width`` columns, ending in ``ellipsis`` when cut; never inside a
    grapheme cluster."""
    if display_width(text) <= width:
        return text
    room = width - display_width(ellipsis)
    out, used = [], 0
    for m in GRAPHEME.finditer(text):
        w = display_width(m.group())
        if used + w > room:
            break
        out.append(m.group())
        used += w
    return "".join(out).rstrip() + ellipsis


# CJK characters with the punctuation and full-width forms written among them (。，「」！ …).
_CJK_TEXT = f"[{CJK_CLASS}\u3000-\u303f\uff00-\uffef]"
_SPACE_IN_CJK = regex.compile(rf"(?<={_CJK_TEXT}) (?={_CJK_TEXT})")


def collapse_spaces(text: str) -> str:
    """``text`` on one line: each run of whitespace one space, and none left between two CJK
    characters, where a line break is only where a line was wrapped (Chinese and Japanese put no
    space between words; Korean and Thai do, and keep theirs)."""
    out = " ".join(text.split())
    return _SPACE_IN_CJK.sub("", out) if CJK.search(out) else out
