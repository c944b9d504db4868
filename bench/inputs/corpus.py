"""Loading a corpus: a folder of documents (markdown, text, PDF, Word, HTML, slides …), a JSONL
file, or a BEIR folder.

Loading reads every document once, to check it and to learn its id, but keeps only where each
one is (a file, an extracted text in the cache, or a byte range of the JSONL file): texts are read
again when they are needed, so a corpus of millions of chunks never sits in memory as Python strings.
The documents and the corpus they make are ``bench.inputs.documents``'s; their names are kept here
too, where every reader of a corpus imports them.
"""

from __future__ import annotations

import codecs
import os
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from bench.errors import BenchError
from bench.files import json_object, loads_strict
from bench.inputs.documents import (
    EMPTY_RECORD,
    NO_TEXT,
    TEXT_SUFFIXES,
    UNREADABLE,
    UNSUPPORTED,
    Corpus,
    Document,
    Fingerprint,
    LeftOut,
    no_documents,
    pages_label,
)
from bench.inputs.extraction_cache import ExtractionCache
from bench.inputs.folder import load_folder
from bench.inputs.formats import LIMITS, Limits, for_suffix

__all__ = [
    "EMPTY_RECORD",
    "NO_TEXT",
    "TEXT_SUFFIXES",
    "UNREADABLE",
    "UNSUPPORTED",
    "Corpus",
    "Document",
    "LeftOut",
    "load_corpus",
    "no_documents",
    "pages_label",
]


def load_corpus(
    path: str | Path,
    cache: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    limits: Limits = LIMITS,
) -> Corpus:
    """Load documents from a folder of documents, a JSONL file, or a BEIR folder (corpus.jsonl).

    ``cache`` is the folder where text extracted from PDFs, Word files and the like is kept between
    runs (in memory only when None); ``progress(done, total)`` follows a folder's files; a folder's
    document beyond ``limits`` is left out, with the reason.
    """
    path = Path(path)
    if not path.exists():
        raise BenchError(f"{path}: corpus not found; give a folder of documents or a .jsonl file")
    if path.is_dir() and (path / "corpus.jsonl").is_file():
        return _load_jsonl(path, path / "corpus.jsonl", beir=True)
    if path.is_dir():
        return load_folder(path, ExtractionCache(cache), progress, limits)
    if path.suffix.lower() != ".jsonl" and for_suffix(path.suffix) is not None:
        # read as JSONL it would only say "invalid JSON"
        raise BenchError(f"{path}: one document is not a corpus; give the folder that holds it, or a .jsonl file")
    return _load_jsonl(path, path, beir=False)


class _JsonlFile:
    """Where each document's line lies in a JSONL file, and how to read one back.

    The file is opened at the first read and kept open while the corpus lives: chunk texts read in
    any order (an embedding cache sends them by length) read a document per chunk, and opening the
    file each time cost a third of a read. Reads take their offset (``pread``), so threads and
    forked workers may share the descriptor."""

    def __init__(self, file: Path, beir: bool) -> None:
        self.file, self.beir = file, beir
        self.offsets: np.ndarray = np.zeros(0, dtype=np.int64)
        self.lengths: np.ndarray = np.zeros(0, dtype=np.int64)
        self._fd: int | None = None

    def read(self, i: int) -> Document:
        line = os.pread(self._opened(), int(self.lengths[i]), int(self.offsets[i]))
        return _document(loads_strict(line.decode("utf-8")), self.beir)

    def _opened(self) -> int:
        if self._fd is None:
            self._fd = fd = os.open(self.file, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            weakref.finalize(self, os.close, fd)
        return self._fd

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_fd": None}  # a descriptor means nothing in another process


def _load_jsonl(corpus_path: Path, file: Path, beir: bool) -> Corpus:
    located: dict[str, tuple[int, int]] = {}
    empty: set[str] = set()
    fingerprint: Fingerprint | None = Fingerprint()  # computed on the way when ids come sorted
    last_id: str | None = None
    for lineno, offset, line in _lines(file):
        where = f"{file}:{lineno}"
        row = json_object(line, where, '"id" and "text"')
        doc = _checked(row, where, beir)
        if doc.id in located or doc.id in empty:
            raise BenchError(f"{where}: duplicate document id {doc.id!r}; ids must be unique")
        if not doc.text.strip():  # whitespace-only documents have nothing to retrieve (BEIR sets carry some)
            empty.add(doc.id)
            continue
        located[doc.id] = (offset, len(line.encode("utf-8")))
        if fingerprint is not None and (last_id is None or doc.id > last_id):
            fingerprint.add(doc)
            last_id = doc.id
        else:
            fingerprint = None
    if not located:
        raise no_documents(corpus_path)
    ids = sorted(located)
    reader = _JsonlFile(file, beir)
    reader.offsets = np.fromiter((located[i][0] for i in ids), dtype=np.int64, count=len(ids))
    reader.lengths = np.fromiter((located[i][1] for i in ids), dtype=np.int64, count=len(ids))
    return Corpus(
        corpus_path,
        ids,
        reader.read,
        [LeftOut(d, "no text in it", EMPTY_RECORD) for d in sorted(empty)],
        fingerprint=fingerprint.hexdigest() if fingerprint is not None else None,
    )


def _lines(file: Path) -> Iterator[tuple[int, int, str]]:
    """(line number, byte offset, text) of each non-blank line, read one at a time; bytes that are
    not UTF-8 or a NUL byte are a BenchError naming file:line."""
    try:
        f = open(file, "rb")  # noqa: SIM115 (closed by the with below, after the error check)
    except OSError as e:
        raise BenchError(f"{file}: cannot read it ({e.strerror}); check that it is a readable file") from None
    with f:
        offset = 0
        for lineno, raw in enumerate(f, start=1):
            start = offset
            offset += len(raw)
            if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
                raw, start = raw[len(codecs.BOM_UTF8) :], start + len(codecs.BOM_UTF8)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise BenchError(
                    f"{file}:{lineno}: not UTF-8 text (byte {start + e.start}); convert it to UTF-8"
                ) from None
            nul = raw.find(b"\0")
            if nul >= 0:
                raise BenchError(
                    f"{file}:{lineno}: a NUL byte (byte {start + nul}), so a binary file, not text; "
                    "remove the file or save it as UTF-8 text"
                )
            line = line.rstrip("\n").rstrip("\r")
            if line.strip():
                yield lineno, start, line


def _checked(row: dict, where: str, beir: bool) -> Document:
    doc_id = row.get("_id" if beir else "id", row.get("id"))
    body = row.get("text")
    if not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool) or str(doc_id) == "":
        raise BenchError(f'{where}: missing or empty "id"; give every document a unique string id')
    if not isinstance(body, str):
        raise BenchError(f'{where}: "text" is missing or not a string; give every document its text as a string')
    title = row.get("title") or ""
    if not isinstance(title, str):
        raise BenchError(f'{where}: "title" must be a string; give the title as text or leave it out')
    return _document(row, beir)


def _document(row: dict, beir: bool) -> Document:
    doc_id = str(row.get("_id" if beir else "id", row.get("id")))
    title = row.get("title") or ""
    body = row["text"]
    if beir:
        body = f"{title} {body}".strip()  # BEIR convention: the indexed text is the title and the body
    return Document(id=doc_id, text=body.replace("\r\n", "\n"), title=title)
