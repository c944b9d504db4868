"""How the text of report.pdf is measured and broken into lines: each character's advance in the
font the PDF sets it in (DejaVu Sans, or the core Helvetica when every string fits its alphabet),
lines wrapped at spaces and, for candidate ids, after their separators ("/", ">", "@", "+"), and
cells cut with "…" only where a column is allowed to be."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import matplotlib
from matplotlib import font_manager
from matplotlib.font_manager import FontProperties
from matplotlib.ft2font import FT2Font

# Characters outside the PDF core fonts' alphabet that the report's own sentences use, written in it:
# a page all in that alphabet is set in the core fonts, several times faster than embedded TrueType.
CORE = str.maketrans({"−": "-", "≥": ">=", "≤": "<=", "→": "->", "≈": "~", "‑": "-"})


@lru_cache(maxsize=2)
def _font(bold: bool) -> FT2Font:
    path = font_manager.findfont(FontProperties(family="DejaVu Sans", weight="bold" if bold else "normal"))
    return FT2Font(path)


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
    font = _font(bold)
    font.set_size(100, 72)
    glyph = font.load_char(ord(ch))
    return glyph.linearHoriAdvance / 65536 / 100


def width(text: str, size: float, bold: bool = False) -> float:
    """``text`` set at ``size`` points, in points."""
    return sum(_advance(ch, bold, _core) for ch in text.translate(CORE)) * size


PIECE = re.compile(r"[^ />@+_,]*[ />@+_,]?")


def wrap(text: str, limit: float, size: float, bold: bool = False, ids: bool = False) -> list[str]:
    """Lines of at most ``limit`` points, broken at spaces (and at every newline). With ``ids`` a word
    wider than a line breaks after the separators of candidate ids ("/", ">", "@", "+", "_", ","); a
    piece still wider is cut by characters."""
    if "\n" in text:
        return [line for part in text.split("\n") for line in wrap(part, limit, size, bold, ids)]
    pieces = []
    for word in text.split(" "):
        if ids and width(word, size, bold) > limit:
            parts = [p for p in PIECE.findall(word) if p]
            pieces += parts[:-1] + [parts[-1] + " "]
        else:
            pieces.append(word + " ")
    lines, line = [], ""
    for piece in pieces:
        if line and width((line + piece).rstrip(), size, bold) > limit:
            lines.append(line.rstrip())
            line = ""
        while width(piece.rstrip(), size, bold) > limit and len(piece.rstrip()) > 1:  # wider than a line
            cut = max(1, _fits(piece, limit, size, bold))
            lines.append(piece[:cut])
            piece = piece[cut:]
        line += piece
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


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
    """How many leading characters of ``text`` fit in ``limit`` points."""
    total = 0.0
    for i, ch in enumerate(text.translate(CORE)):
        total += _advance(ch, bold, _core) * size
        if total > limit:
            return i
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
