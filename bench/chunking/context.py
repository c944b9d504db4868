"""Contextual chunks without a model: each chunk is embedded and indexed with a header — its
document's title, the headings above it and, in documents with pages, its pages — while the unit
(what is judged, stored and shown) stays the chunk's own span.

A chunk cut from the middle of "## Refunds" under "# Travel policy" says "within 30 days"; its
header says which policy and which section. ``md256+ctx`` cuts exactly the chunks ``md256`` cuts
(same ids, same spans, same relevance), so the two compare the header and nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import islice

import numpy as np

from bench.chunking.table import ChunkTable
from bench.inputs.corpus import Corpus, pages_label
from bench.text.scripts import collapse_spaces, shorten

HEADERS = "ctx"  # the context of a header-only contextual chunker: md256+ctx
CONTEXT_SUFFIX = "+" + HEADERS
SEPARATOR = " › "  # between the title and each heading of the path
# A heading longer than this (a paragraph a PDF's layout made a heading) is cut: the header names the
# section, it does not repeat it (columns: a Chinese character counts two).
MAX_HEADING_WIDTH = 80
# A markdown heading line (the text every extractor writes): its level and its words.
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)
# A file name that names nothing: a content hash or a UUID, as saved web pages and exports are often named.
_NAMELESS = re.compile(r"[0-9a-f]{16,}|[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}", re.I)


def name(doc_id: str) -> str:
    """What a document without a title is headed by: its id (``hr/vacation.md``), but nothing for a file
    named by a hash or a UUID, which would be tokens without meaning (its headings say what it is)."""
    stem = doc_id.rsplit("/", 1)[-1].split(".", 1)[0]
    return "" if _NAMELESS.fullmatch(stem) else doc_id


def header(title: str, path: list[str], pages: str) -> str:
    """The line indexed above a chunk: ``Travel policy › Refunds (p. 4)``."""
    parts = [shorten(collapse_spaces(p), MAX_HEADING_WIDTH) for p in [title, *(h for h in path if h != title)]]
    line = SEPARATOR.join(p for p in parts if p)
    return f"{line} ({pages})" if pages else line


def heading_paths(text: str, starts: np.ndarray) -> list[list[str]]:
    """For each start offset (ascending), the path of markdown headings that begin before it."""
    headings = [(m.start(), len(m.group(1)), m.group(2).strip()) for m in _HEADING.finditer(text)]
    out, path, h = [], [""] * 6, 0
    for start in starts.tolist():
        while h < len(headings) and headings[h][0] < start:
            _, level, words = headings[h]
            path[level - 1] = words
            path[level:] = [""] * (6 - level)
            h += 1
        out.append([p for p in path if p])
    return out


class ContextualTable(ChunkTable):
    """A chunk table whose texts (what is embedded, indexed and counted) carry a prefix — a header,
    or a context a chat model wrote (``bench.chunking.situate``); its arrays (ids, documents, spans)
    are the plain table's."""

    def __init__(self, plain: ChunkTable, headers: list[str], header_of: np.ndarray) -> None:
        super().__init__(
            plain.doc_ids, plain.doc, plain.start, plain.end, plain.ids, plain._document_text, plain.headings
        )
        self.plain = plain
        self.headers = headers  # each distinct prefix once ("": none)
        self.header_of = header_of  # int32 per chunk: its prefix's position in ``headers``

    def text(self, i: int) -> str:
        return self._with_header(i, self.plain.text(i))

    def iter_texts(self, lo: int = 0, hi: int | None = None) -> Iterator[str]:
        hi = len(self) if hi is None else hi
        for i, text in zip(range(lo, hi), self.plain.iter_texts(lo, hi)):
            yield self._with_header(i, text)

    def _with_header(self, i: int, text: str) -> str:
        head = self.headers[int(self.header_of[i])]
        return f"{head}\n\n{text}" if head else text


def contextual(plain: ChunkTable, corpus: Corpus) -> ContextualTable:
    """``plain``'s chunks with their headers: each document read once, each distinct header kept once."""
    headers: dict[str, int] = {}
    header_of = np.zeros(len(plain), dtype=np.int32)
    for d, doc_id in enumerate(plain.doc_ids):
        rows = plain.chunks_of(d)
        if not len(rows):
            continue
        doc = corpus.get(doc_id)
        title = doc.title or name(doc_id)
        starts = plain.start[rows.start : rows.stop]
        paths = heading_paths(doc.text, starts)
        for i, path in zip(rows, islice(paths, len(rows))):
            pages = pages_label(doc.page_label, doc.page_range(int(plain.start[i]), int(plain.end[i])))
            line = header(title, path, pages)
            header_of[i] = headers.setdefault(line, len(headers))
    return ContextualTable(plain, list(headers), header_of)
