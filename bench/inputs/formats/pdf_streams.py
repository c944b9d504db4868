"""What pdfminer may unpack from one stream of a PDF: ``max_unpacked_mb``, as for an Office file's members.

pdfminer unpacks each stream whole, with no bound of its own, so half a megabyte of PDF can unpack to
a gigabyte in memory (FlateDecode packs a run of one byte ~1000×, LZW ~2500×, RunLength 64×). While
bench extracts a PDF (``bounded``), pdfminer's three unpackers stop a stream at the limit with
``StreamTooLarge``; anywhere else they are pdfminer's own, unchanged. They are swapped in pdfminer's
``pdftypes`` module, the one place pdfminer unpacks streams, once and for the whole process.

PDFium, which reads the pages' text, unpacks streams in C with no such bound, so before it reads a
document ``check_pages`` unpacks every stream the pages draw with (content streams, form XObjects,
fonts and their maps, Type 3 glyphs, tiling patterns) just far enough to know it stays within the
limit. A FlateDecode stream, nearly all of them, is counted as it unpacks and nothing is kept;
other filters are unpacked by pdfminer's bounded unpackers.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from io import BytesIO
from typing import Any

from pdfminer.pdftypes import LITERALS_FLATE_DECODE, PDFObjRef, PDFStream

# bytes one stream may unpack to, in the extraction under way in this thread; None outside one
_LIMIT: ContextVar[int | None] = ContextVar("pdf_stream_limit", default=None)


class StreamTooLarge(BaseException):
    """A stream unpacked past the limit. Not an Exception: pdfminer's ``except Exception`` blocks
    must not take it for a damaged stream and carry on."""

    def __init__(self, encoding: str) -> None:
        super().__init__(encoding)
        self.encoding = encoding  # the PDF filter's name: FlateDecode, LZWDecode, RunLengthDecode


@contextmanager
def bounded(limit: int) -> Iterator[None]:
    """Within, no stream pdfminer unpacks in this thread grows past ``limit`` bytes."""
    _install()
    token = _LIMIT.set(limit)
    try:
        yield
    finally:
        _LIMIT.reset(token)


class _Decompressor:
    """A ``zlib`` decompressor that counts what it gives out, for pdfminer's reading of damaged
    streams byte by byte."""

    def __init__(self, inner: Any, limit: int) -> None:
        self._inner, self._left = inner, limit

    def decompress(self, data: bytes, max_length: int = 0) -> bytes:
        out = self._inner.decompress(data, max_length)
        self._left -= len(out)
        if self._left < 0:
            raise StreamTooLarge("FlateDecode")
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Zlib:
    """``zlib`` as pdfminer's ``pdftypes`` uses it, with each stream's output bounded."""

    error = zlib.error

    def decompress(self, data: bytes, wbits: int = zlib.MAX_WBITS, bufsize: int = zlib.DEF_BUF_SIZE) -> bytes:
        limit = _LIMIT.get()
        if limit is None:
            return zlib.decompress(data, wbits, bufsize)
        inner = zlib.decompressobj(wbits)
        out = inner.decompress(data, limit + 1)
        if len(out) > limit:
            raise StreamTooLarge("FlateDecode")
        if not inner.eof:  # as zlib.decompress says of a stream cut short; pdfminer then tries harder
            raise zlib.error("Error -5 while decompressing data: incomplete or truncated stream")
        return out

    def decompressobj(self, *args: Any, **kwargs: Any) -> Any:
        inner, limit = zlib.decompressobj(*args, **kwargs), _LIMIT.get()
        return inner if limit is None else _Decompressor(inner, limit)

    def __getattr__(self, name: str) -> Any:
        return getattr(zlib, name)


_ZLIB = _Zlib()


def _lzwdecode(data: bytes) -> bytes:
    from pdfminer.lzw import LZWDecoder, lzwdecode

    limit = _LIMIT.get()
    if limit is None:
        return lzwdecode(data)
    pieces, size = [], 0
    for piece in LZWDecoder(BytesIO(data)).run():
        size += len(piece)
        if size > limit:
            raise StreamTooLarge("LZWDecode")
        pieces.append(piece)
    return b"".join(pieces)


def _rldecode(data: bytes) -> bytes:
    from pdfminer.runlength import rldecode

    limit = _LIMIT.get()
    if limit is not None and _run_length_size(data, limit) > limit:
        raise StreamTooLarge("RunLengthDecode")
    return rldecode(data)


def _run_length_size(data: bytes, limit: int) -> int:
    """What RunLength data unpacks to, by its run headers alone; counting stops past ``limit``."""
    size, at, end = 0, 0, len(data)
    while at < end and size <= limit:
        length = data[at]
        if length == 128:  # end of data
            break
        if length < 128:  # the next length + 1 bytes as they are
            size, at = size + length + 1, at + length + 2
        else:  # the next byte, 257 - length times
            size, at = size + 257 - length, at + 2
    return size


def _install() -> None:
    from pdfminer import pdftypes

    if pdftypes.zlib is not _ZLIB:
        pdftypes.zlib = _ZLIB  # type: ignore[assignment]
        pdftypes.lzwdecode = _lzwdecode
        pdftypes.rldecode = _rldecode


_CHUNK = 1 << 20  # bytes a FlateDecode stream is counted in
# resources whose streams PDFium parses to read a page's text; images and shadings are not unpacked
_RESOURCE_KINDS = ("Font", "XObject", "Pattern")
_FONT_STREAMS = ("FontFile", "FontFile2", "FontFile3")


def check_pages(pages: Iterator[Any], limit: int) -> Iterator[Any]:
    """The pages (pdfminer's ``PDFPage``), each once every stream it draws with is known to unpack
    to ``limit`` bytes at most; raises ``StreamTooLarge`` at the first that does not. A stream
    several pages share is unpacked once."""
    seen: set[int] = set()
    for page in pages:
        for stream in page.contents:
            _check(stream, limit, seen)
        _resources(page.resources, limit, seen)
        yield page


def _resources(resources: object, limit: int, seen: set[int]) -> None:
    resources = _resolve(resources, seen, always=True)
    if not isinstance(resources, dict):
        return
    for kind in _RESOURCE_KINDS:
        group = _resolve(resources.get(kind), seen, always=True)
        if not isinstance(group, dict):
            continue
        for value in group.values():
            item = _resolve(value, seen)
            if isinstance(item, PDFStream):  # a form XObject or a tiling pattern: content and resources
                if kind == "XObject" and _name(item.get("Subtype")) != "Form":
                    continue
                _check(item, limit, seen)
                _resources(item.get("Resources"), limit, seen)
            elif isinstance(item, dict) and kind == "Font":
                _font(item, limit, seen)


def _font(font: dict[str, object], limit: int, seen: set[int]) -> None:
    for key in ("ToUnicode", "Encoding"):
        item = _resolve(font.get(key), seen)
        if isinstance(item, PDFStream):
            _check(item, limit, seen)
    descriptor = _resolve(font.get("FontDescriptor"), seen)
    if isinstance(descriptor, dict):
        for key in _FONT_STREAMS:
            item = _resolve(descriptor.get(key), seen)
            if isinstance(item, PDFStream):
                _check(item, limit, seen)
    procs = _resolve(font.get("CharProcs"), seen)
    if isinstance(procs, dict):  # a Type 3 font draws each glyph with a content stream
        for value in procs.values():
            item = _resolve(value, seen)
            if isinstance(item, PDFStream):
                _check(item, limit, seen)
        _resources(font.get("Resources"), limit, seen)
    descendants = _resolve(font.get("DescendantFonts"), seen, always=True)
    if isinstance(descendants, list):
        for value in descendants:
            item = _resolve(value, seen)
            if isinstance(item, dict):
                _font(item, limit, seen)


def _resolve(value: object, seen: set[int], always: bool = False) -> object:
    """The object a reference points to, or None when it was visited already (unless ``always``:
    small dictionaries such as a page's resources are walked again, their streams are not)."""
    depth = 0
    while isinstance(value, PDFObjRef) and depth < 32:
        if not always:
            if value.objid in seen:
                return None
            seen.add(value.objid)
        value = value.resolve()
        depth += 1
    return value


def _name(value: object) -> str:
    return str(getattr(value, "name", value))


def _check(stream: object, limit: int, seen: set[int]) -> None:
    stream = _resolve(stream, seen)
    if not isinstance(stream, PDFStream) or stream.rawdata is None:
        return  # visited, or already unpacked by pdfminer under the bound
    key = id(stream) if stream.objid is None else -stream.objid - 1  # direct streams by identity
    if key in seen:
        return
    seen.add(key)
    filters = stream.get_filters()
    if not filters:
        return  # as long as it is in the file
    if len(filters) == 1 and filters[0][0] in LITERALS_FLATE_DECODE:
        data = stream.rawdata
        if stream.decipher is not None and stream.objid is not None and stream.genno is not None:
            data = stream.decipher(stream.objid, stream.genno, data, stream.attrs)
        _count_flate(data, limit)
        return
    with bounded(limit):
        stream.get_data()  # pdfminer's own unpacking, bounded; the document is dropped after the check


def _count_flate(data: bytes, limit: int) -> None:
    """Raises ``StreamTooLarge`` if ``data`` inflates past ``limit`` bytes; keeps nothing."""
    inflate = zlib.decompressobj()
    size = 0
    try:
        size += len(inflate.decompress(data, _CHUNK))
        while not inflate.eof and size <= limit:
            tail = inflate.unconsumed_tail
            out = inflate.decompress(tail, _CHUNK)
            if not out and not tail:
                break  # cut short: the input is spent
            size += len(out)
    except zlib.error:
        return  # damaged: PDFium unpacks what it can, no more than a sound stream of this size
    if size > limit:
        raise StreamTooLarge("FlateDecode")
