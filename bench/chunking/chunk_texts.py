"""Chunk texts kept on disk while a chunk table lives: each document's text once, UTF-8, in an
unnamed temporary file, and each chunk's byte range in it.

A table of millions of chunks holds no texts in memory; reading one back from its document means
reading and parsing the whole document again. Readers that take chunks out of order (an embedding
cache sends them by length) did that once per chunk. From this file a chunk is one ``pread`` of
its own bytes, and a run of chunks one read of the bytes they span.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from array import array
from collections.abc import Iterator, Sequence

import numpy as np

# Lone surrogates (which a JSON corpus may hold) round-trip through the file unchanged.
_ERRORS = "surrogatepass"
_BLOCK = 1 << 22  # bytes read at a time when chunks are read in order


class ChunkTexts:
    """Add documents with their chunks' character spans in table order (``add``), then ``close_writing``;
    then ``text(i)`` and ``run(lo, hi)`` give chunk texts exactly as sliced from the documents."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 (closed with the table, by the finalizer)
        weakref.finalize(self, self._file.close)
        self._size = 0
        self._first, self._last = array("q"), array("q")
        self.first = self.last = np.zeros(0, dtype=np.int64)

    def add(self, text: str, starts: Sequence[int], ends: Sequence[int]) -> None:
        """One document's text and the character spans of its chunks."""
        data = text.encode("utf-8", _ERRORS)
        base = self._size
        if len(data) == len(text):  # one byte per character
            self._first.extend(base + s for s in starts)
            self._last.extend(base + e for e in ends)
        else:
            at = _byte_offsets(text, sorted({*starts, *ends}))
            self._first.extend(base + at[s] for s in starts)
            self._last.extend(base + at[e] for e in ends)
        self._file.write(data)
        self._size += len(data)

    def close_writing(self) -> None:
        self._file.flush()
        self.first = np.frombuffer(self._first, dtype=np.int64)
        self.last = np.frombuffer(self._last, dtype=np.int64)

    def text(self, i: int) -> str:
        first = int(self.first[i])
        return _read(self._file.fileno(), first, int(self.last[i]) - first).decode("utf-8", _ERRORS)

    def run(self, lo: int, hi: int) -> Iterator[str]:
        """Texts of chunks ``lo`` to ``hi`` (exclusive), reading the bytes they span a block at a time."""
        fd, first, last = self._file.fileno(), self.first, self.last
        i = lo
        while i < hi:
            # Chunks start in file order; a block ends where the chunks it holds end (overlaps included).
            stop = min(hi, int(np.searchsorted(first, first[i] + _BLOCK, side="left")))
            stop = max(stop, i + 1)
            begin, end = int(first[i]), int(last[i:stop].max())
            data = _read(fd, begin, end - begin)
            for s, e in zip(first[i:stop].tolist(), last[i:stop].tolist()):
                yield data[s - begin : e - begin].decode("utf-8", _ERRORS)
            i = stop


def _byte_offsets(text: str, points: list[int]) -> dict[int, int]:
    """Byte offset in ``text``'s UTF-8 of each character offset in ``points`` (ascending)."""
    out, pos, at = {}, 0, 0
    for p in points:
        at += len(text[pos:p].encode("utf-8", _ERRORS))
        out[p], pos = at, p
    return out


def _read(fd: int, offset: int, size: int) -> bytes:
    data = os.pread(fd, size, offset)
    while len(data) < size:  # a regular file gives all it holds; this only guards a short read
        more = os.pread(fd, size - len(data), offset + len(data))
        if not more:
            raise OSError(f"chunk texts: {size - len(data)} bytes missing at {offset + len(data)}")
        data += more
    return data
