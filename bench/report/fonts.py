"""The fonts that set the reports' text, and which of them sets each character.

DejaVu Sans comes first, so Latin, Greek and Cyrillic look as they always have; each character it
lacks goes to the first font of the chain that has it: Noto Sans CJK (the plots only) or WenQuanYi
Micro Hei for Chinese, Japanese and Korean, then Noto Sans of each further script. report.pdf
embeds its fonts as TrueType (Type 42), which matplotlib cannot do for fonts with CFF outlines such
as Debian's Noto Sans CJK (it writes them where TrueType belongs, and readers refuse them or warn),
so the PDF's chain leaves CFF fonts out. A character no font of the chain has is set as U+FFFD.

Fonts installed after matplotlib built its font cache are found all the same: a family the cache
does not know is looked for among the system's font files and registered.

``python -m bench.report.fonts`` prints the Debian packages of the fonts that are missing.
"""

from __future__ import annotations

import logging
import os
import struct
import sys
import unicodedata
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING

import regex

if TYPE_CHECKING:
    from matplotlib.ft2font import FT2Font

REPLACEMENT = "\ufffd"  # DejaVu Sans has it: what a character no font has is drawn as


@dataclass(frozen=True)
class Font:
    family: str
    files: tuple[str, ...]  # the file names its package installs, to find it where matplotlib's cache does not
    package: str  # the Debian package that installs it


_CJK_PACKAGE = "fonts-noto-cjk"
_CORE_PACKAGE = "fonts-noto-core"
_SCRIPTS = (  # Noto Sans of living scripts, in fonts-noto-core (DejaVu Sans sets some Arabic and Hebrew)
    *("Thai", "Devanagari", "Arabic", "Hebrew", "Bengali", "Tamil", "Telugu", "Kannada", "Malayalam", "Gujarati"),
    *("Gurmukhi", "Oriya", "Sinhala", "Khmer", "Lao", "Myanmar", "Georgian", "Armenian", "Ethiopic", "Syriac"),
    *("Thaana", "Mongolian", "Symbols", "Math"),
)

CHAIN = (
    Font("DejaVu Sans", (), "matplotlib"),
    Font("Noto Sans CJK SC", ("NotoSansCJK-Regular.ttc", "NotoSansCJK-Bold.ttc"), _CJK_PACKAGE),
    Font("WenQuanYi Micro Hei", ("wqy-microhei.ttc",), "fonts-wqy-microhei"),
    *(Font(f"Noto Sans {s}", (f"NotoSans{s}-Regular.ttf", f"NotoSans{s}-Bold.ttf"), _CORE_PACKAGE) for s in _SCRIPTS),
)
# Characters that take no room and need no glyph: left out, never counted missing, where no font has them.
_INVISIBLE = regex.compile(r"[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\uFE00-\uFE0F\U000E0100-\U000E01EF]")
_EAST_ASIAN = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Bopomofo}\u3000-\u303F\uFF00-\uFFEF]")


# ---------------------------------------------------------------------------------------------------
# Which fonts there are


@cache
def _register_missing() -> None:
    """Register the chain's font files that matplotlib's font cache does not know (installed after
    it was built), once per process."""
    from matplotlib import font_manager

    known = {f.name for f in font_manager.fontManager.ttflist}
    wanted = {name for font in CHAIN if font.family not in known for name in font.files}
    if not wanted:
        return
    for path in sorted(font_manager.findSystemFonts()):
        if os.path.basename(path) in wanted:
            try:
                font_manager.fontManager.addfont(path)
            except (OSError, RuntimeError):  # a broken font file: as if it were not there
                continue


@cache
def _known() -> frozenset[str]:
    from matplotlib import font_manager

    return frozenset(f.name for f in font_manager.fontManager.ttflist)


@cache
def _face(family: str, bold: bool) -> tuple[str, int] | None:
    """(path, face index) of ``family`` as matplotlib resolves it for drawing, or None when not installed."""
    from matplotlib import font_manager
    from matplotlib.font_manager import FontProperties

    if family not in _known():
        _register_missing()
        _known.cache_clear()
        if family not in _known():
            return None  # findfont would log a warning for it
    quiet = logging.getLogger("matplotlib.font_manager")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # "failed to find font weight bold": the regular face sets bold text then
    try:
        found = font_manager.findfont(
            FontProperties(family=family, weight="bold" if bold else "normal"), fallback_to_default=False
        )
    except ValueError:
        return None
    finally:
        quiet.setLevel(level)
    return str(found), getattr(found, "face_index", 0)


@cache
def _cff(path: str, index: int) -> bool:
    """Whether the face has CFF outlines (OpenType "OTTO"), which report.pdf cannot embed as TrueType."""
    try:
        with open(path, "rb") as f:
            head = f.read(12)
            if head[:4] == b"ttcf":
                f.seek(12 + 4 * index)
                (offset,) = struct.unpack(">I", f.read(4))
                f.seek(offset)
                head = f.read(4)
    except OSError:
        return True
    return head[:4] == b"OTTO"


@cache
def available(family: str, pdf: bool) -> bool:
    """Whether ``family`` is installed (and, for report.pdf, has TrueType outlines)."""
    face = _face(family, False)
    return face is not None and not (pdf and _cff(*face))


def families(pdf: bool) -> tuple[str, ...]:
    """The chain's installed families in order; for report.pdf without those of CFF outlines."""
    return tuple(font.family for font in CHAIN if available(font.family, pdf))


@cache
def ft2font(family: str, bold: bool) -> FT2Font:
    """Our own FT2Font of ``family`` (never matplotlib's shared one, whose size its drawing sets)."""
    from matplotlib.ft2font import FT2Font

    face = _face(family, bold) or _face(family, False)
    assert face is not None
    try:
        return FT2Font(face[0], face_index=face[1])
    except TypeError:  # matplotlib before 3.10 opens a collection's first face only
        return FT2Font(face[0])


# ---------------------------------------------------------------------------------------------------
# Which font sets a character


@lru_cache(maxsize=65536)
def font_of(ch: str, pdf: bool = True) -> str | None:
    """The family that sets ``ch``: the first of the chain that has its glyph; None when none has."""
    code = ord(ch)
    for font in CHAIN:  # a font is looked up only once a character needs it: English text needs DejaVu Sans alone
        if available(font.family, pdf) and ft2font(font.family, False).get_char_index(code):
            return font.family
    return None


_CONTROL = regex.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


def _plain(text: str) -> bool:
    """Printable ASCII (newlines aside): what DejaVu Sans sets whole, the common case checked fast."""
    return text.isascii() and _CONTROL.search(text) is None


def invisible(ch: str) -> bool:
    return _INVISIBLE.match(ch) is not None


def missing(text: str, pdf: bool = True) -> set[str]:
    """The characters of ``text`` that no font of the chain has (invisible ones aside)."""
    if _plain(text):
        return set()
    return {ch for ch in set(text) if font_of(ch, pdf) is None and not invisible(ch) and ch != "\n"}


def settable(text: str, pdf: bool = True) -> str:
    """``text`` as it is set: each character no font has as U+FFFD, invisible ones no font has left out."""
    gone = [] if _plain(text) else [ch for ch in set(text) if ch != "\n" and font_of(ch, pdf) is None]
    for ch in gone:
        text = text.replace(ch, "" if invisible(ch) else REPLACEMENT)
    return text


def needed(text: str, pdf: bool = True) -> list[str] | None:
    """The families that set ``text``, DejaVu Sans first; None when DejaVu Sans sets all of it, so that
    text is drawn exactly as before fallback fonts existed."""
    if text.isascii():
        return None
    used = {font_of(ch, pdf) for ch in set(text)} - {None}
    if used <= {CHAIN[0].family}:
        return None
    return [f for f in families(pdf) if f in used or f == CHAIN[0].family]


# ---------------------------------------------------------------------------------------------------
# Saying what is missing


def packages_for(chars: set[str]) -> list[str]:
    """The font packages that would set ``chars``, those not installed; none when they are all installed."""
    installed = {font.package for font in CHAIN if available(font.family, False)}
    wanted = set()
    for ch in chars:
        wanted |= {_CJK_PACKAGE, "fonts-wqy-microhei"} if _EAST_ASIAN.match(ch) else {_CORE_PACKAGE}
    return sorted(wanted - installed)


def missing_warning(chars: set[str], where: str) -> str:
    """One line: which characters ``where`` shows as U+FFFD (a box in a plot), and what to install."""
    listed = sorted(chars)
    shown = ", ".join(f"{ch} U+{ord(ch):04X} {unicodedata.name(ch, '').lower()}".rstrip() for ch in listed[:8])
    more = f" and {len(listed) - 8} more" if len(listed) > 8 else ""
    packages = packages_for(chars)
    fix = (
        f"install {' '.join(packages)} (apt-get install {' '.join(packages)}; see README, set-up) and run bench report"
        if packages
        else "no font bench uses has them"
    )
    count = f"{len(listed)} character{'s' if len(listed) != 1 else ''}"
    drawn = f"drawn as {REPLACEMENT} or a box"
    return f"bench: warning: no installed font has {count} of {where} ({drawn}): {shown}{more}; {fix}"


def missing_packages() -> list[str]:
    """The Debian packages of the chain's fonts that are not installed."""
    return sorted({font.package for font in CHAIN[1:] if not available(font.family, False)})


if __name__ == "__main__":  # `make fonts`
    print(" ".join(missing_packages()))
    sys.exit(0)
