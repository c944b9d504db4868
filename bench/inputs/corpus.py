"""Loading a corpus: a folder of documents (markdown, text, PDF, Word, HTML, slides …), a JSONL
file, or a BEIR folder.

Loading reads every document once, to check it and to learn its id, but keeps only where each
one is (a file, an extracted text in the cache, or a byte range of the JSONL file): texts are read
again when they are needed, so a corpus of millions of chunks never sits in memory as Python strings.
"""

from __future__ import annotations

import codecs
import hashlib
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from bench.errors import BenchError
from bench.files import json_object, loads_strict
from bench.inputs.formats import LIMITS, Limits, for_suffix, suffixes
from bench.inputs.lazy import Lazy

TEXT_SUFFIXES = (".md", ".txt")
_RECENT = 8  # documents kept after reading: chunk texts are sliced from the same few in turn
_NAMED = 5  # files named in a warning before "and N more"
# Kinds of LeftOut: the first three are files of a folder, which --strict refuses; the last is a
# JSONL record with no text (BEIR sets carry some on purpose).
UNSUPPORTED, UNREADABLE, NO_TEXT, EMPTY_RECORD = "unsupported", "unreadable", "no text", "empty record"


@dataclass(frozen=True, slots=True)
class Document:
    """A document's id and text; ``pages`` holds the offset where each page (or slide) starts."""

    id: str
    text: str
    title: str = ""
    pages: tuple[int, ...] = ()
    page_label: str = ""  # how its pages read: "p.", "slide", "sheet"; "" when it has none

    def page_range(self, start: int, end: int) -> tuple[int, int] | None:
        """The first and last page (1-based) the span ``start..end`` lies on; None without pages."""
        if not self.pages:
            return None
        return bisect_right(self.pages, start), bisect_right(self.pages, max(start, end - 1))


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A file (or JSONL record) that is not a document of the corpus, and why, in words a user can act on."""

    path: str  # the id it would have had: the path relative to the corpus folder
    reason: str
    kind: str  # UNSUPPORTED, UNREADABLE, NO_TEXT or EMPTY_RECORD


def pages_label(label: str, pages: tuple[int, int] | None) -> str:
    """``"p. 4–5"``, ``"slide 2"``; ``""`` without pages."""
    if pages is None or not label:
        return ""
    first, last = pages
    return f"{label} {first}" if first == last else f"{label} {first}–{last}"


class Corpus:
    """Documents in id order, read from disk on demand, with a fingerprint of their ids and texts."""

    def __init__(
        self,
        path: Path,
        ids: Sequence[str],
        read: Callable[[int], Document],
        left_out: Sequence[LeftOut] = (),
        fingerprint: str | None = None,
        notes: Mapping[str, tuple[str, ...]] | None = None,
        formats: Mapping[str, str] | None = None,
        provenance: Mapping[str, str] | None = None,
    ) -> None:
        self.path = Path(path)
        self.ids = tuple(ids)
        # files and records that are not documents, so evidence naming one can say why
        self.left_out = tuple(left_out)
        self.notes = dict(notes or {})  # what a user should know of a document ("read as Windows-1252")
        self.formats = dict(formats or {})  # document id -> the format that read it (folders only)
        # document id -> extractor, version and sha256 of the source bytes, for extracted documents:
        # the fingerprint covers them, so a new extractor version or new bytes change it
        self.provenance = dict(provenance or {})
        self._read = read
        self._ordinal = {d: i for i, d in enumerate(self.ids)}
        self._recent: dict[int, Document] = {}
        if fingerprint is not None:
            self.__dict__["fingerprint"] = fingerprint

    @classmethod
    def from_documents(cls, path: Path, documents: Sequence[Document], left_out: Sequence[LeftOut] = ()) -> Corpus:
        """A corpus held in memory (documents in id order)."""
        documents = tuple(documents)
        return cls(path, [d.id for d in documents], documents.__getitem__, left_out)

    @cached_property
    def _left_out_by_path(self) -> dict[str, LeftOut]:
        return {x.path: x for x in self.left_out}

    def why_left_out(self, doc_id: str) -> LeftOut | None:
        """Why ``doc_id`` is not a document of the corpus, when it was a file or record left out."""
        return self._left_out_by_path.get(doc_id)

    def warnings(self) -> list[str]:
        """One line per kind of file left out (naming the first few) and per note, for every command
        that reads the corpus: nothing is skipped in silence. JSONL records with no text are not
        files and are not warned about."""
        lines = []
        unsupported = [x for x in self.left_out if x.kind == UNSUPPORTED]
        if unsupported:
            by_suffix = Counter(Path(x.path).suffix.lower() or "(no suffix)" for x in unsupported)
            kinds = ", ".join(f"{n} {s}" for s, n in by_suffix.most_common())
            lines.append(
                f"{self.path}: left out {_files(len(unsupported))} of a format bench does not read ({kinds}): "
                f"{_named(x.path for x in unsupported)}; convert them to one it reads "
                f"({', '.join(suffixes())}) or move them out of the folder"
            )
        for kind, what in ((UNREADABLE, "that cannot be read"), (NO_TEXT, "with no text")):
            files = [x for x in self.left_out if x.kind == kind]
            if files:
                named = _with_reasons(files, "{path}: {reason}")
                lines.append(f"{self.path}: left out {_files(len(files))} {what}: {named}")
        for doc_id, notes in sorted(self.notes.items())[:_NAMED]:
            lines.extend(f"{self.path}/{doc_id}: {note}" for note in notes if doc_id in self)
        return lines

    def check_strict(self) -> None:
        """``--strict``: any file of the folder left out is an error, not a warning."""
        files = [x for x in self.left_out if x.kind != EMPTY_RECORD]
        if files:
            named = _with_reasons(files, "{path} ({reason})")
            raise BenchError(
                f"{self.path}: {_files(len(files))} left out of the corpus (--strict): {named}; "
                "fix or remove them, or run without --strict"
            )

    def left_out_manifest(self) -> dict:
        """What the manifest records of the files left out (kinds counted, every file listed)."""
        return {
            "left_out": [{"path": x.path, "kind": x.kind, "reason": x.reason} for x in self.left_out],
            "formats": dict(Counter(self.formats.values())),
        }

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
        """sha256 over (id, text) pairs, and for extracted documents their source bytes and extractor
        version: independent of file layout, changes when any text, source or extractor changes."""
        h = _Fingerprint()
        for d in self.documents:
            h.add(d, self.provenance.get(d.id, ""))
        return h.hexdigest()


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


def _with_reasons(files: Sequence[LeftOut], form: str) -> str:
    """The first few files with their reasons, and how many more."""
    named = "; ".join(form.format(path=x.path, reason=x.reason) for x in files[:_NAMED])
    return named + (f"; and {len(files) - _NAMED} more" if len(files) > _NAMED else "")


def _named(paths: Iterable[str]) -> str:
    paths = list(paths)
    more = f" and {len(paths) - _NAMED} more" if len(paths) > _NAMED else ""
    return ", ".join(paths[:_NAMED]) + more


class _Fingerprint:
    def __init__(self) -> None:
        self.h = hashlib.sha256()

    def add(self, d: Document, provenance: str = "") -> None:
        self.h.update(d.id.encode())
        self.h.update(b"\0")
        self.h.update(d.text.encode())
        self.h.update(b"\0")
        if provenance:  # text files keep the fingerprint they always had
            self.h.update(provenance.encode())
            self.h.update(b"\0")

    def hexdigest(self) -> str:
        return self.h.hexdigest()


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
    from bench.inputs.extraction_cache import ExtractionCache
    from bench.inputs.folder import load_folder

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


def no_documents(path: Path, left_out: Sequence[LeftOut] = ()) -> BenchError:
    """The error for a corpus with no document, saying what was left out and why."""
    if left_out:
        named = "; ".join(f"{x.path}: {x.reason}" for x in left_out[:_NAMED])
        return BenchError(f"{path}: the corpus has no documents; every file was left out ({named})")
    return BenchError(f"{path}: the corpus has no documents; add documents (markdown, PDF, Word …) or JSONL lines")


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
        return _document(loads_strict(line.decode("utf-8")), self.beir)


def _load_jsonl(corpus_path: Path, file: Path, beir: bool) -> Corpus:
    located: dict[str, tuple[int, int]] = {}
    empty: set[str] = set()
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
