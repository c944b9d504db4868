"""Loading a corpus: a folder of .md/.txt files, a JSONL file, or a BEIR folder.

Loading reads every document once, to check it and to learn its id, but keeps only where each
one is (a file, or a byte range of the JSONL file): texts are read again when they are needed,
so a corpus of millions of chunks never sits in memory as Python strings.
"""

from __future__ import annotations

import codecs
import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from bench.errors import BenchError
from bench.files import json_object, read_text
from bench.inputs.lazy import Lazy

TEXT_SUFFIXES = (".md", ".txt")
_RECENT = 8  # documents kept after reading: chunk texts are sliced from the same few in turn


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    text: str
    title: str = ""


class Corpus:
    """Documents in id order, read from disk on demand, with a fingerprint of their ids and texts."""

    def __init__(
        self,
        path: Path,
        ids: Sequence[str],
        read: Callable[[int], Document],
        empty: frozenset[str] = frozenset(),
        fingerprint: str | None = None,
    ) -> None:
        self.path = Path(path)
        self.ids = tuple(ids)
        self.empty = empty  # ids left out for having no text, so evidence naming one can say so
        self._read = read
        self._ordinal = {d: i for i, d in enumerate(self.ids)}
        self._recent: dict[int, Document] = {}
        if fingerprint is not None:
            self.__dict__["fingerprint"] = fingerprint

    @classmethod
    def from_documents(cls, path: Path, documents: Sequence[Document], empty: frozenset[str] = frozenset()) -> Corpus:
        """A corpus held in memory (documents in id order)."""
        documents = tuple(documents)
        return cls(path, [d.id for d in documents], documents.__getitem__, empty)

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, doc_id: str) -> bool:
        return doc_id in self._ordinal

    def get(self, doc_id: str) -> Document:
        return self.at(self._ordinal[doc_id])

    def at(self, ordinal: int) -> Document:
        """The document at ``ordinal`` in id order (recently read ones are kept)."""
        doc = self._recent.get(ordinal)
        if doc is None:
            doc = self._read(ordinal)
            if len(self._recent) >= _RECENT:
                self._recent.pop(next(iter(self._recent)))
            self._recent[ordinal] = doc
        return doc

    @property
    def documents(self) -> Lazy[Document]:
        """Every document in id order, read as it is reached."""
        return Lazy(len(self), self.at)

    @cached_property
    def fingerprint(self) -> str:
        """sha256 over (id, text) pairs: independent of file layout, changes when any text changes."""
        h = _Fingerprint()
        for d in self.documents:
            h.add(d)
        return h.hexdigest()


class _Fingerprint:
    def __init__(self) -> None:
        self.h = hashlib.sha256()

    def add(self, d: Document) -> None:
        self.h.update(d.id.encode())
        self.h.update(b"\0")
        self.h.update(d.text.encode())
        self.h.update(b"\0")

    def hexdigest(self) -> str:
        return self.h.hexdigest()


def load_corpus(path: str | Path) -> Corpus:
    """Load documents from a folder of .md/.txt files, a JSONL file, or a BEIR folder (corpus.jsonl)."""
    path = Path(path)
    if not path.exists():
        raise BenchError(f"{path}: corpus not found; give a folder of .md/.txt files or a .jsonl file")
    if path.is_dir() and (path / "corpus.jsonl").is_file():
        return _load_jsonl(path, path / "corpus.jsonl", beir=True)
    if path.is_dir():
        return _load_folder(path)
    if path.suffix.lower() in TEXT_SUFFIXES:  # read as JSONL it would only say "invalid JSON"
        raise BenchError(f"{path}: one document is not a corpus; give the folder that holds it, or a .jsonl file")
    return _load_jsonl(path, path, beir=False)


def _no_documents(path: Path) -> BenchError:
    return BenchError(f"{path}: the corpus has no documents; add .md/.txt files or JSONL lines")


def _load_folder(root: Path) -> Corpus:
    root_resolved = root.resolve()
    files: dict[str, Path] = {}
    empty = set()
    for file in sorted(root.rglob("*")):
        if file.suffix.lower() not in TEXT_SUFFIXES or not file.is_file():
            continue
        rel = file.relative_to(root).as_posix()
        if not file.resolve().is_relative_to(root_resolved):
            raise BenchError(f"{file}: links outside the corpus folder {root}; copy the file in instead")
        # Whitespace-only documents are left out: they have nothing to retrieve.
        if read_text(file).strip():
            files[rel] = file
        else:
            empty.add(rel)
    if not files:
        raise _no_documents(root)
    ids = sorted(files)
    paths = [files[i] for i in ids]
    return Corpus(root, ids, lambda i: Document(ids[i], read_text(paths[i])), frozenset(empty))


class _JsonlFile:
    """Where each document's line lies in a JSONL file, and how to read one back."""

    def __init__(self, file: Path, beir: bool) -> None:
        self.file, self.beir = file, beir
        self.offsets: np.ndarray = np.zeros(0, dtype=np.int64)
        self.lengths: np.ndarray = np.zeros(0, dtype=np.int64)

    def read(self, i: int) -> Document:
        with open(self.file, "rb") as f:
            f.seek(int(self.offsets[i]))
            line = f.read(int(self.lengths[i]))
        return _document(json.loads(line.decode("utf-8")), self.beir)


def _load_jsonl(corpus_path: Path, file: Path, beir: bool) -> Corpus:
    located: dict[str, tuple[int, int]] = {}
    empty = set()
    fingerprint: _Fingerprint | None = _Fingerprint()  # computed on the way when ids come sorted
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
        raise _no_documents(corpus_path)
    ids = sorted(located)
    reader = _JsonlFile(file, beir)
    reader.offsets = np.fromiter((located[i][0] for i in ids), dtype=np.int64, count=len(ids))
    reader.lengths = np.fromiter((located[i][1] for i in ids), dtype=np.int64, count=len(ids))
    return Corpus(
        corpus_path,
        ids,
        reader.read,
        frozenset(empty),
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
