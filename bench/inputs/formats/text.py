"""Plain text and markdown: UTF-8 (with or without a byte-order mark), UTF-16 with one, or a legacy
Western encoding (Windows-1252, which includes Latin-1) where the bytes can only be that."""

from __future__ import annotations

import codecs
import unicodedata

from bench.inputs.formats.base import Extracted, Extractor, Unreadable
from bench.inputs.formats.limits import LIMITS, Limits

# Characters Windows-1252 text holds beyond letters: typographic quotes, dashes, symbols.
_TYPOGRAPHY = set("‘’‚“”„–—…•€£¥§©®°±×÷¶·«»¿¡™¢")
_PLAUSIBLE = 0.9  # share of non-ASCII characters that must be letters or typography


def decode(data: bytes, limits: Limits = LIMITS) -> Extracted:
    """The bytes as text with LF line ends, and a note when they were not UTF-8. Only the file's
    size is limited (before it is read)."""
    notes: tuple[str, ...] = ()
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as e:
            raise Unreadable(f"not valid UTF-16 text (byte {e.start}); convert it to UTF-8") from None
        notes = ("read as UTF-16 (it starts with a UTF-16 byte-order mark)",)
    else:
        bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
        try:
            text = data[bom:].decode("utf-8")
        except UnicodeDecodeError as e:
            text = _legacy(data, bom + e.start)
            notes = ("not UTF-8: read as Windows-1252 (Latin-1); save it as UTF-8 to be sure",)
    nul = text.find("\0")
    if nul >= 0:  # valid UTF-8 can still be a binary file; NUL never occurs in text
        raise Unreadable(f"a NUL byte (character {nul}), so a binary file, not text; remove it or save it as text")
    return Extracted(text.replace("\r\n", "\n"), notes=notes)


def _legacy(data: bytes, bad: int) -> str:
    """Windows-1252 text, when nothing else fits the bytes; Unreadable otherwise."""
    cannot = Unreadable(f"not UTF-8 text (byte {bad}) and its encoding cannot be told; convert it to UTF-8")
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:  # five bytes are undefined in Windows-1252
        raise cannot from None
    odd = [c for c in text if ord(c) > 127]
    fits = sum(1 for c in odd if c in _TYPOGRAPHY or unicodedata.category(c).startswith("L"))
    controls = any(unicodedata.category(c) == "Cc" and c not in "\t\n\r\f" for c in text)
    if controls or fits < _PLAUSIBLE * len(odd):
        raise cannot
    return text


EXTRACTORS = (
    Extractor(
        name="text",
        suffixes=(".md", ".markdown", ".txt", ".rst"),
        extract=decode,
        version="1",
        cached=False,
    ),
)
