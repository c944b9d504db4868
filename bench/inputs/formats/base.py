"""What every document format gives and raises: the Extractor, its Extracted text, Unreadable."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.inputs.formats.limits import Limits


class Unreadable(Exception):
    """The file cannot be turned into text; ``str(e)`` says why and what to do, in one line."""


@dataclass(frozen=True, slots=True)
class Extracted:
    """A document's text and where its pages start.

    ``pages[i]`` is the character offset in ``text`` where page ``i + 1`` starts (``pages[0] == 0``);
    empty for formats without pages. ``notes`` are things the user should be told about this file
    ("read as Windows-1252", "no text layer: OCR it first").
    """

    text: str
    pages: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Extractor:
    """One document format.

    ``version`` names the extractor's own output version and the library versions it depends on:
    extracted text is cached under it and the corpus fingerprint covers it, so an upgrade that
    changes the text re-extracts and makes the goldset's lock say the corpus changed.
    ``page_label`` is how a unit's pages read ("p." for PDF pages, "slide" for slides); empty when the
    format has no pages. ``cached``: whether extraction is worth caching (not for plain text).
    ``extract`` raises ``Unreadable`` for a document over the ``Limits`` it is given.
    """

    name: str
    suffixes: tuple[str, ...]
    extract: Callable[[bytes, Limits], Extracted]
    version: str
    page_label: str = ""
    cached: bool = True


def looks_like(data: bytes) -> str:
    """What a file's first bytes say it is ("a PDF", "a zip archive (DOCX, PPTX, XLSX, EPUB)", "HTML",
    "text", "empty", "binary data"), for telling a user that a file is not what its name says."""
    head = data[:2048].lstrip()
    if not data:
        return "empty"
    if head.startswith(b"%PDF-"):
        return "a PDF"
    if data.startswith(b"PK\x03\x04"):
        return "a zip archive (DOCX, PPTX, XLSX, EPUB)"
    lowered = head[:512].lower()
    if lowered.startswith((b"<!doctype html", b"<html")) or b"<body" in lowered or b"<head" in lowered:
        return "HTML"
    if b"\0" in head:
        return "binary data"
    return "text"


def mislabelled(data: bytes, expected: str, suffix: str) -> Unreadable:
    """The error for a file whose bytes are not the format its suffix names."""
    found = looks_like(data)
    rename = {"a PDF": ".pdf", "HTML": ".html", "text": ".txt"}.get(found)
    fix = f"rename it to {rename}" if rename else "replace it with a real one or remove it"
    return Unreadable(f"not {expected} though named {suffix}: its bytes are {found}; {fix}")
