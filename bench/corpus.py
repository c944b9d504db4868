"""Loading a corpus: a folder of .md/.txt files, a JSONL file, or a BEIR folder."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from bench.errors import BenchError
from bench.textfiles import json_object, numbered_lines, read_text

TEXT_SUFFIXES = (".md", ".txt")


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    text: str
    title: str = ""


@dataclass(frozen=True)
class Corpus:
    """Documents in id order, with a fingerprint of their ids and texts."""

    path: Path
    documents: tuple[Document, ...]
    empty: frozenset[str] = frozenset()  # ids left out for having no text, so evidence naming one can say so

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {d.id: d for d in self.documents})

    def __len__(self) -> int:
        return len(self.documents)

    def __contains__(self, doc_id: str) -> bool:
        return doc_id in self._by_id

    def get(self, doc_id: str) -> Document:
        return self._by_id[doc_id]

    @property
    def fingerprint(self) -> str:
        """sha256 over (id, text) pairs: independent of file layout, changes when any text changes."""
        h = hashlib.sha256()
        for d in self.documents:
            h.update(d.id.encode())
            h.update(b"\0")
            h.update(d.text.encode())
            h.update(b"\0")
        return h.hexdigest()


def load_corpus(path: str | Path) -> Corpus:
    """Load documents from a folder of .md/.txt files, a JSONL file, or a BEIR folder (corpus.jsonl)."""
    path = Path(path)
    if not path.exists():
        raise BenchError(f"{path}: corpus not found; give a folder of .md/.txt files or a .jsonl file")
    if path.is_dir() and (path / "corpus.jsonl").is_file():
        docs = _load_jsonl(path / "corpus.jsonl", beir=True)
    elif path.is_dir():
        docs = _load_folder(path)
    elif path.suffix.lower() in TEXT_SUFFIXES:  # read as JSONL it would only say "invalid JSON"
        raise BenchError(f"{path}: one document is not a corpus; give the folder that holds it, or a .jsonl file")
    else:
        docs = _load_jsonl(path, beir=False)
    # Whitespace-only documents are left out: they have nothing to retrieve (BEIR sets carry some).
    empty = frozenset(d.id for d in docs if not d.text.strip())
    docs = [d for d in docs if d.id not in empty]
    if not docs:
        raise BenchError(f"{path}: the corpus has no documents; add .md/.txt files or JSONL lines")
    docs.sort(key=lambda d: d.id)
    return Corpus(path=path, documents=tuple(docs), empty=empty)


def _load_folder(root: Path) -> list[Document]:
    root_resolved = root.resolve()
    docs = []
    for file in sorted(root.rglob("*")):
        if file.suffix.lower() not in TEXT_SUFFIXES or not file.is_file():
            continue
        rel = file.relative_to(root).as_posix()
        if not file.resolve().is_relative_to(root_resolved):
            raise BenchError(f"{file}: links outside the corpus folder {root}; copy the file in instead")
        docs.append(Document(id=rel, text=read_text(file)))
    return docs


def _load_jsonl(file: Path, beir: bool) -> list[Document]:
    docs: dict[str, Document] = {}
    for lineno, line in numbered_lines(read_text(file)):
        where = f"{file}:{lineno}"
        row = json_object(line, where, '"id" and "text"')
        doc_id = row.get("_id" if beir else "id", row.get("id"))
        body = row.get("text")
        if not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool) or str(doc_id) == "":
            raise BenchError(f"{where}: missing or empty \"id\"; give every document a unique string id")
        if not isinstance(body, str):
            raise BenchError(f"{where}: \"text\" is missing or not a string; give every document its text as a string")
        doc_id = str(doc_id)
        if doc_id in docs:
            raise BenchError(f"{where}: duplicate document id {doc_id!r}; ids must be unique")
        title = row.get("title") or ""
        if not isinstance(title, str):
            raise BenchError(f"{where}: \"title\" must be a string; give the title as text or leave it out")
        if beir:
            # BEIR convention: the indexed text is the title and the body.
            body = f"{title} {body}".strip()
        docs[doc_id] = Document(id=doc_id, text=body.replace("\r\n", "\n"), title=title)
    return list(docs.values())
