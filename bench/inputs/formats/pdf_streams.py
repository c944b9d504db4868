"""What pdfminer may unpack from one stream of a PDF: ``max_unpacked_mb``, as for an Office file's members.

pdfminer unpacks each stream whole, with no bound of its own, so half a megabyte of PDF can unpack to
a gigabyte in memory (FlateDecode packs a run of one byte ~1000×, LZW ~2500×, RunLength 64×). While
bench extracts a PDF (``bounded``), pdfminer's three unpackers stop a stream at the limit with
``StreamTooLarge``; anywhere else they are pdfminer's own, unchanged. They are swapped in pdfminer's
``pdftypes`` module, the one place pdfminer unpacks streams, once and for the whole process.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from io import BytesIO
from typing import Any

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
