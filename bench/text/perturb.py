"""Questions as people really type them: typos, no capitals, no punctuation or accents, and the other
width of Chinese and Japanese characters — each deterministic (a seed and the question's id decide
every change, whatever order the questions come in).

- ``typos``: in about one word of eight with three or more Latin letters (at least one word), one
  keyboard slip: a neighbouring key on a QWERTY keyboard, two letters swapped, one dropped or one
  doubled. Text with no such word is left as it is.
- ``case``: lower case.
- ``punctuation``: punctuation removed (every script's), accents taken off Latin letters, spaces
  collapsed.
- ``width``: full-width forms (``ＡＢＣ１２３，``) to ASCII and ASCII to full width, as a Chinese or
  Japanese input method switches them.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Callable

KINDS = ("typos", "case", "punctuation", "width")
TYPO_RATE = 1 / 8  # the share of eligible words that get a slip
_WORD = re.compile(r"[A-Za-z]{3,}")
_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _neighbours() -> dict[str, str]:
    """Each letter's neighbours on a QWERTY keyboard: left and right on its row, and the two keys above
    and the two below that touch it (each row sits half a key right of the one above)."""
    out: dict[str, str] = {}
    for r, row in enumerate(_ROWS):
        for i, ch in enumerate(row):
            near = [row[j] for j in (i - 1, i + 1) if 0 <= j < len(row)]
            for other, columns in ((r - 1, (i, i + 1)), (r + 1, (i - 1, i))):
                if 0 <= other < len(_ROWS):
                    near += [_ROWS[other][j] for j in columns if 0 <= j < len(_ROWS[other])]
            out[ch] = "".join(dict.fromkeys(near))
    return out


NEIGHBOURS = _neighbours()


def perturbed(text: str, kind: str, key: str, seed: int = 0) -> str:
    """``text`` as ``kind`` changes it; ``key`` (the question's id) and ``seed`` decide random choices."""
    rng = random.Random(f"{seed}\x00{kind}\x00{key}")
    return _KINDS[kind](text, rng)


def _typos(text: str, rng: random.Random) -> str:
    words = list(_WORD.finditer(text))
    if not words:
        return text
    chosen = [w for w in words if rng.random() < TYPO_RATE] or [rng.choice(words)]
    out, at = [], 0
    for w in chosen:
        out += [text[at : w.start()], _slip(w.group(), rng)]
        at = w.end()
    return "".join(out) + text[at:]


def _slip(word: str, rng: random.Random) -> str:
    i = rng.randrange(len(word))
    how = rng.choice(("neighbour", "swap", "drop", "double"))
    if how == "neighbour":
        near = NEIGHBOURS[word[i].lower()]
        ch = rng.choice(near)
        return word[:i] + (ch.upper() if word[i].isupper() else ch) + word[i + 1 :]
    if how == "swap" and i + 1 < len(word) and word[i] != word[i + 1]:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if how == "drop":
        return word[:i] + word[i + 1 :]
    return word[: i + 1] + word[i] + word[i + 1 :]  # doubled (and a swap of two equal letters)


def _case(text: str, rng: random.Random) -> str:
    return text.lower()


def _punctuation(text: str, rng: random.Random) -> str:
    out, base_latin = [], False
    for ch in unicodedata.normalize("NFD", text):
        if unicodedata.combining(ch):
            if not base_latin:
                out.append(ch)  # a Devanagari vowel sign or a Thai tone is not an accent to drop
            continue
        base_latin = ch < "\u0250"  # Latin letters, with their extended forms
        out.append(" " if unicodedata.category(ch).startswith("P") else ch)
    return " ".join(unicodedata.normalize("NFC", "".join(out)).split())


def _width(text: str, rng: random.Random) -> str:
    out = []
    for ch in text:
        code = ord(ch)
        if 0xFF01 <= code <= 0xFF5E:
            out.append(chr(code - 0xFEE0))
        elif 0x21 <= code <= 0x7E:
            out.append(chr(code + 0xFEE0))
        elif ch == "\u3000":
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


_KINDS: dict[str, Callable[[str, random.Random], str]] = {
    "typos": _typos,
    "case": _case,
    "punctuation": _punctuation,
    "width": _width,
}
