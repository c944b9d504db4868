"""A corpus's documents: ``Document``, the files and records left out (``LeftOut``) and the
``Corpus`` that reads its documents back on demand and fingerprints them.

Both ways of loading a corpus build these (``corpus`` for JSONL files, ``folder`` for a folder of
documents), so they live below both.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from bench.errors import BenchError
from bench.inputs.formats import suffixes
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
        h = Fingerprint()
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


class Fingerprint:
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


def no_documents(path: Path, left_out: Sequence[LeftOut] = ()) -> BenchError:
    """The error for a corpus with no document, saying what was left out and why."""
    if left_out:
        named = "; ".join(f"{x.path}: {x.reason}" for x in left_out[:_NAMED])
        return BenchError(f"{path}: the corpus has no documents; every file was left out ({named})")
    return BenchError(f"{path}: the corpus has no documents; add documents (markdown, PDF, Word …) or JSONL lines")
