"""How the text of report.pdf is measured and broken into lines: each character's advance in the
font the PDF sets it in (DejaVu Sans, then the fallback fonts of ``fonts`` for what it lacks, or the
core Helvetica when every string fits its alphabet), lines wrapped at spaces, between Chinese and
Japanese characters (never before a closing mark such as "，" or after an opening one) and, for
candidate ids, after their separators ("/", ">", "@", "+"), and cells cut with "…" only where a
column is allowed to be, never inside a character as a reader sees it (a letter and its marks)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import matplotlib
import regex

from bench.report import fonts
from bench.text.scripts import CJK, CJK_CLASS, GRAPHEME

# Characters outside the PDF core fonts' alphabet that the report's own sentences use, written in it:
# a page all in that alphabet is set in the core fonts, several times faster than embedded TrueType.
# U+FEFF (a byte-order mark left inside a text) is invisible, and matplotlib's PDF writer fails on it.
CORE = str.maketrans({"−": "-", "≥": ">=", "≤": "<=", "→": "->", "≈": "~", "‑": "-", "\ufeff": ""})


def settable(text: str) -> str:
    """``text`` as the PDF sets it: in the core fonts' alphabet where it can be, each character no
    installed font has as U+FFFD."""
    return fonts.settable(text.translate(CORE))


@lru_cache(maxsize=2)
def _core_widths(bold: bool) -> tuple[dict[int, float], dict[str, float]]:
    """Helvetica's advances (ems) by character code and by glyph name, from matplotlib's AFM file."""
    name = "Helvetica-Bold.afm" if bold else "Helvetica.afm"
    path = Path(matplotlib.get_data_path()) / "fonts" / "pdfcorefonts" / name
    by_code, by_name = {}, {}
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.startswith("C "):
            fields = dict(f.strip().split(" ", 1) for f in line.split(";") if f.strip())
            code, advance = int(fields["C"]), float(fields["WX"]) / 1000
            by_name[fields.get("N", "")] = advance
            if 32 <= code < 127:
                by_code[code] = advance
    return by_code, by_name


_GLYPHS = {"–": "endash", "—": "emdash", "•": "bullet", "…": "ellipsis", "·": "periodcentered", "×": "multiply"}
_core = False  # measure for the PDF core fonts (Helvetica) rather than DejaVu Sans: see ``core_fonts``


@lru_cache(maxsize=16384)
def _advance(ch: str, bold: bool, core: bool) -> float:
    """A character's advance, in ems."""
    if core:
        by_code, by_name = _core_widths(bold)
        if ord(ch) in by_code and ch not in "'`":
            return by_code[ord(ch)]
        if _GLYPHS.get(ch) in by_name:
            return by_name[_GLYPHS[ch]]
    family = fonts.font_of(ch)
    if family is None:  # drawn as U+FFFD, or not at all
        if fonts.invisible(ch) or ch == "\n":
            return 0.0
        ch, family = fonts.REPLACEMENT, fonts.CHAIN[0].family
    font = fonts.ft2font(family, bold)
    if not font.get_char_index(ord(ch)):  # a bold face short of a glyph its regular face has
        font = fonts.ft2font(family, False)
    font.set_size(100, 72)
    glyph = font.load_char(ord(ch))
    return glyph.linearHoriAdvance / 65536 / 100


def width(text: str, size: float, bold: bool = False) -> float:
    """``text`` set at ``size`` points, in points."""
    return sum(_advance(ch, bold, _core) for ch in text.translate(CORE)) * size


PIECE = re.compile(r"[^ />@+_,]*[ />@+_,]?")

# A line may break between two Chinese or Japanese characters, but never before a closing mark
# ("，" "。" "」" "ー" …) nor after an opening one ("「" "（" …): each piece is a character (or a run of
# other letters) with the opening marks before it and the closing marks after it.
OPENING = "（［｛「『【〈《〔〖〘〚〝“‘"
CLOSING = "，。、．！？：；）］｝」』】〉》〕〗〙〛〞”’…‥・ーゝゞヽヾ々,.!?:;)]}%"
_OPEN, _CLOSE = regex.escape(OPENING), regex.escape(CLOSING)
CJK_PIECE = regex.compile(rf"[{_OPEN}]*(?:[{CJK_CLASS}]\p{{M}}*|[^{CJK_CLASS}{_OPEN}{_CLOSE}]+)?[{_CLOSE}]*")


def _pieces(word: str, limit: float, size: float, bold: bool, ids: bool) -> list[str]:
    """``word`` as the pieces a line may break between, the last followed by its space."""
    if ids and width(word, size, bold) > limit:
        parts = [p for p in PIECE.findall(word) if p]
    elif not word.isascii() and CJK.search(word):
        parts = [p for p in CJK_PIECE.findall(word) if p]
    else:
        return [word + " "]
    return parts[:-1] + [parts[-1] + " "] if parts else [" "]


def wrap(text: str, limit: float, size: float, bold: bool = False, ids: bool = False) -> list[str]:
    """Lines of at most ``limit`` points, broken at spaces (and at every newline) and between Chinese
    and Japanese characters. With ``ids`` a word wider than a line breaks after the separators of
    candidate ids ("/", ">", "@", "+", "_", ","); a piece still wider is cut between characters."""
    if "\n" in text:
        return [line for part in text.split("\n") for line in wrap(part, limit, size, bold, ids)]
    pieces = [piece for word in text.split(" ") for piece in _pieces(word, limit, size, bold, ids)]
    lines, line = [], ""
    for piece in pieces:
        if line and width((line + piece).rstrip(), size, bold) > limit:
            lines.append(line.rstrip())
            line = ""
        while width(piece.rstrip(), size, bold) > limit and _more_than_one(piece.rstrip()):  # wider than a line
            cut = _fits(piece, limit, size, bold) or _first(piece)
            lines.append(piece[:cut])
            piece = piece[cut:]
        line += piece
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


def _more_than_one(text: str) -> bool:
    """Whether ``text`` holds more than one character as a reader sees it."""
    return len(text) > 1 and (text.isascii() or _first(text) < len(text))


def _first(text: str) -> int:
    """The length of ``text``'s first character as a reader sees it (a letter and its marks)."""
    match = GRAPHEME.match(text)
    return match.end() if match and match.end() else 1


def unbreakable(header: str, size: float, body: float) -> float:
    """The widest part of a header that wrapping leaves whole: a word, or for a word wider than the
    column's cells, the widest piece between id separators."""
    widest = 0.0
    for line in header.split("\n"):
        for word in line.split(" "):
            w = width(word, size, True)
            if w > max(body, 80.0):
                w = max(width(p, size, True) for p in PIECE.findall(word) if p)
            widest = max(widest, w)
    return widest


def _fits(text: str, limit: float, size: float, bold: bool) -> int:
    """How many leading characters of ``text`` fit in ``limit`` points, never ending inside a
    character as a reader sees it."""
    total = 0.0
    if text.isascii():
        for i, ch in enumerate(text):
            total += _advance(ch, bold, _core) * size
            if total > limit:
                return i
        return len(text)
    for match in GRAPHEME.finditer(text):
        total += width(match.group(), size, bold)
        if total > limit:
            return match.start()
    return len(text)


def clip(text: str, limit: float, size: float, bold: bool = False) -> str:
    if width(text, size, bold) <= limit:
        return text
    return text[: max(0, _fits(text, limit - width("…", size), size, bold))].rstrip() + "…"


@contextmanager
def core_fonts(on: bool) -> Iterator[None]:
    """Measure for the PDF core fonts (narrower than DejaVu Sans) while laying out a document set in them."""
    global _core
    _core = on
    try:
        yield
    finally:
        _core = False
