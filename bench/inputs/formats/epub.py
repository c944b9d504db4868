"""EPUB books: each chapter of the spine, in reading order, through the HTML format's markdown step.

The container's XML is parsed without entities, DTDs or network access, so a crafted book cannot
expand entities or read other files.
"""

from __future__ import annotations

import posixpath
import zipfile
from typing import Any
from urllib.parse import unquote

from bench.inputs.formats.base import Extracted, Extractor, Unreadable
from bench.inputs.formats.html import OUTPUT_VERSION as HTML_VERSION
from bench.inputs.formats.html import decode, to_markdown, versions
from bench.inputs.formats.limits import LIMITS, Limits
from bench.inputs.formats.office import failed, one_line, open_zip, read_member

OUTPUT_VERSION = "1"  # bump when the text this module gives changes for the same bytes
MAX_PART_BYTES = 64 * 2**20  # a chapter larger than this unpacked is a zip bomb, not prose
_CHAPTER_TYPES = ("application/xhtml+xml", "text/html")
# Font obfuscation (IDPF, Adobe) leaves the text readable; any other encryption is DRM.
_FONT_OBFUSCATION = ("http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC")
_NS = {
    "c": "urn:oasis:names:tc:opendocument:xmlns:container",
    "opf": "http://www.idpf.org/2007/opf",
    "enc": "http://www.w3.org/2001/04/xmlenc#",
}


def extract_epub(data: bytes, limits: Limits = LIMITS) -> Extracted:
    """The book's chapters in spine order, separated by blank lines."""
    book = open_zip(data, "an EPUB book", ".epub", limits)
    try:
        return _extract(book, limits)
    except Unreadable:
        raise
    except Exception as e:  # a damaged member, bad XML in a chapter
        raise failed("an EPUB book", e) from None


def _extract(book: zipfile.ZipFile, limits: Limits) -> Extracted:
    names = set(book.namelist())
    if "META-INF/container.xml" not in names:
        raise Unreadable(
            "a zip archive without META-INF/container.xml, so not an EPUB book; replace it with a real one"
        )
    if "META-INF/encryption.xml" in names:
        _refuse_drm(_xml(book, "META-INF/encryption.xml"))
    root = _xml(book, "META-INF/container.xml").find(".//c:rootfile", _NS)
    opf_path = root.get("full-path") if root is not None else None
    if not opf_path or opf_path not in names:
        raise Unreadable("an EPUB book whose container names no package file (.opf); save it again from its editor")
    opf = _xml(book, opf_path)
    base = posixpath.dirname(opf_path)
    manifest = {
        item.get("id"): item
        for item in opf.iterfind("opf:manifest/opf:item", _NS)
        if item.get("media-type") in _CHAPTER_TYPES and item.get("href")
    }
    chapters, notes = [], []
    for ref in opf.iterfind("opf:spine/opf:itemref", _NS):
        item = manifest.get(ref.get("idref"))
        if item is None:
            continue
        path = posixpath.normpath(posixpath.join(base, unquote(item.get("href", "").split("#")[0])))
        if path not in names:
            notes.append(f"chapter {path} is listed in the book but missing from it")
            continue
        html, _ = decode(_read(book, path))
        text = to_markdown(html, limits)
        if text:
            chapters.append(text)
    return Extracted("\n\n".join(chapters), notes=tuple(notes))


def _refuse_drm(encryption: Any) -> None:
    methods = {m.get("Algorithm", "") for m in encryption.iterfind(".//enc:EncryptionMethod", _NS)}
    if methods - set(_FONT_OBFUSCATION):
        raise Unreadable("an EPUB book under DRM (its chapters are encrypted); use a DRM-free copy")


def _read(book: zipfile.ZipFile, name: str) -> bytes:
    if book.getinfo(name).file_size > MAX_PART_BYTES:
        raise Unreadable(f"an EPUB book with a part over {MAX_PART_BYTES // 2**20} MiB unpacked ({name}); not read")
    return read_member(book, name, MAX_PART_BYTES)


def _xml(book: zipfile.ZipFile, name: str) -> Any:
    """A member's XML tree, parsed safely: no entity expansion, no DTD, no network."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
    try:
        return etree.fromstring(_read(book, name), parser)
    except etree.XMLSyntaxError as e:
        raise Unreadable(f"an EPUB book whose {name} is not well-formed XML ({one_line(e)}); save it again") from None


EXTRACTORS = (
    Extractor(
        name="epub",
        suffixes=(".epub",),
        extract=extract_epub,
        version=f"{OUTPUT_VERSION}+html-{HTML_VERSION}" + versions("lxml", "beautifulsoup4", "markdownify"),
    ),
)
