"""A corpus folder: every file of a known format becomes a document whose id is its path.

Files are read in path order. A file no format claims, one that cannot be read (corrupt, encrypted,
a link leaving the folder) and one with no text (a scan, an empty file) are left out with the
reason, so the run can say what it did not see; so is one over the ``Limits`` on a document (a
zip bomb, a PDF of a million pages), refused before it can take the run's memory or time. Hidden
files and folders (``.git``, ``.DS_Store``)
are not documents and are passed over. Extracted text comes from the extraction cache when the
file's bytes and the extractor's version are those it was cached under.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.errors import BenchError
from bench.inputs.documents import NO_TEXT, UNREADABLE, UNSUPPORTED, Corpus, Document, LeftOut, no_documents
from bench.inputs.extraction_cache import ExtractionCache
from bench.inputs.extraction_workers import Extractions
from bench.inputs.formats import LIMITS, Extracted, Extractor, Limits, Unreadable, for_suffix


@dataclass(frozen=True, slots=True)
class _Source:
    file: Path
    extractor: Extractor
    sha256: str


def load_folder(
    root: Path,
    cache: ExtractionCache,
    progress: Callable[[int, int], None] | None = None,
    limits: Limits = LIMITS,
) -> Corpus:
    """Every document of ``root`` within ``limits``; ``progress(done, total)`` is called after each file.

    Documents the cache lacks are extracted in ``limits.workers`` processes (one per core by
    default); this process alone writes the cache, and the corpus is the same as extracted here.
    """
    reading = _Reading(root, sorted(f for f in _walk(root)), cache, progress)
    with Extractions(limits) as extractions:
        for i in range(len(reading.files)):
            reading.start(i, limits, extractions)
        for j, result in extractions.finish():
            reading.on_extracted(j, result)
    return reading.corpus(limits)


class _Reading:
    """The files of one folder as they are read, each settled in path order as a source with text or
    as left out; files waiting for extraction stay as their ``_Source`` until their text comes back."""

    def __init__(
        self, root: Path, files: list[Path], cache: ExtractionCache, progress: Callable[[int, int], None] | None
    ) -> None:
        self.root = root
        self.root_resolved = root.resolve()
        self.files = files
        self.cache = cache
        self.progress = progress
        self.read: list[_Source | LeftOut | None] = [None] * len(files)  # by file, in path order
        self.notes: dict[int, tuple[str, ...]] = {}
        self.done = 0
        self.twins: dict[str, list[int]] = {}  # cache key in extraction -> later files of the same bytes and format

    def start(self, i: int, limits: Limits, extractions: Extractions) -> None:
        """Settles file ``i`` from its own bytes or the cache, else sends it to extraction (once per
        distinct bytes and format) and settles whatever extractions have come back meanwhile."""
        file = self.files[i]
        rel = file.relative_to(self.root).as_posix()
        try:
            source, data = _open(file, self.root_resolved, limits)
            found = None if source.extractor.cached else _text(source, data, self.cache, limits)
            if found is None:
                found = self.cache.get(self.cache.key(source.extractor, source.sha256))
        except _LeftOut as e:
            self.settle(i, LeftOut(rel, str(e), e.kind))
            return
        if found is not None:
            self.settle(i, source, found)
            return
        self.read[i] = source  # until its text comes back
        key = self.cache.key(source.extractor, source.sha256)
        if key in self.twins:  # a copy of a file in extraction: extracted once, as it is in one process
            self.twins[key].append(i)
            return
        self.twins[key] = []
        for j, result in extractions.submit(i, file, source.extractor.name, source.sha256, data):
            self.on_extracted(j, result)

    def settle(self, i: int, found: _Source | LeftOut, extracted: Extracted | None = None) -> None:
        if extracted is not None and extracted.notes:
            self.notes[i] = extracted.notes
        if extracted is not None and not extracted.text.strip():  # nothing to retrieve
            assert isinstance(found, _Source)
            reason = extracted.notes[0] if extracted.notes else "no text in it"
            found = LeftOut(found.file.relative_to(self.root).as_posix(), reason, NO_TEXT)
        self.read[i] = found
        self.done += 1
        if self.progress:
            self.progress(self.done, len(self.files))

    def on_extracted(self, i: int, result: Extracted | str) -> None:
        """Settles file ``i`` and its twins with their extracted text, or as unreadable (``result`` the reason)."""
        first = self.read[i]
        assert isinstance(first, _Source)
        key = self.cache.key(first.extractor, first.sha256)
        if not isinstance(result, str):
            self.cache.put(key, result)
        for j in (i, *self.twins.pop(key)):
            source = self.read[j]
            assert isinstance(source, _Source)
            if isinstance(result, str):
                self.settle(j, LeftOut(source.file.relative_to(self.root).as_posix(), result, UNREADABLE))
            else:
                self.settle(j, source, result)

    def corpus(self, limits: Limits) -> Corpus:
        """The documents read, by id; their text is read again (from the cache or the file) when asked for."""
        root, cache = self.root, self.cache
        sources = {x.file.relative_to(root).as_posix(): x for x in self.read if isinstance(x, _Source)}
        left_out = [x for x in self.read if isinstance(x, LeftOut)]
        if not sources:
            raise no_documents(root, left_out)
        ids = sorted(sources)

        def document(i: int) -> Document:
            source = sources[ids[i]]
            extracted = _reread(source, cache, limits)
            return Document(ids[i], extracted.text, pages=extracted.pages, page_label=source.extractor.page_label)

        return Corpus(
            root,
            ids,
            document,
            left_out=tuple(left_out),
            notes={self.files[i].relative_to(root).as_posix(): n for i, n in sorted(self.notes.items())},
            formats={i: sources[i].extractor.name for i in ids},
            provenance={
                i: f"{sources[i].extractor.name}-{sources[i].extractor.version}:{sources[i].sha256}"
                for i in ids
                if sources[i].extractor.cached
            },
        )


def _walk(root: Path) -> Iterator[Path]:
    """Every non-hidden path under ``root`` that is not a folder (links included, followed or not)."""
    for folder, subfolders, names in os.walk(root, followlinks=False):
        subfolders[:] = [s for s in subfolders if not s.startswith(".")]
        for name in names:
            if not name.startswith("."):
                yield Path(folder) / name
        for s in subfolders:  # a link to a folder is not walked into: say it was left out
            if (Path(folder) / s).is_symlink():
                yield Path(folder) / s


class _LeftOut(Exception):
    def __init__(self, reason: str, kind: str) -> None:
        super().__init__(reason)
        self.kind = kind


def _open(file: Path, root: Path, limits: Limits) -> tuple[_Source, bytes]:
    """The file's format, bytes and their sha256, or ``_LeftOut`` when it cannot be a document."""
    extractor = for_suffix(file.suffix)
    if extractor is None:
        raise _LeftOut(f"no format reads {file.suffix or 'files without a suffix'}", UNSUPPORTED)
    if file.is_symlink() and not file.resolve().is_relative_to(root):
        raise _LeftOut(f"a link to {file.resolve()}, outside the corpus folder; copy the file in instead", UNREADABLE)
    if not file.is_file():
        raise _LeftOut("not a regular file (a folder link, a broken link or a device); remove it", UNREADABLE)
    try:
        limits.check_size(file.stat().st_size)  # before reading: a file of gigabytes is never in memory
        data = file.read_bytes()
    except OSError as e:
        raise _LeftOut(f"cannot read it ({e.strerror}); check its permissions", UNREADABLE) from None
    except Unreadable as e:
        raise _LeftOut(str(e), UNREADABLE) from None
    if not data.strip():
        raise _LeftOut("an empty file; add its text or remove it", NO_TEXT)
    return _Source(file, extractor, hashlib.sha256(data).hexdigest()), data


def _text(source: _Source, data: bytes, cache: ExtractionCache, limits: Limits) -> Extracted:
    """A plain text file's text, read here: as fast as reading a cache entry, so never sent to a worker."""
    try:
        return cache.extract(source.extractor, data, source.sha256, limits)
    except Unreadable as e:
        raise _LeftOut(str(e), UNREADABLE) from None


def _reread(source: _Source, cache: ExtractionCache, limits: Limits) -> Extracted:
    """A document's text after loading: plain text from its file, extracted text from the cache (or
    extracted again, when the cache entry went away)."""
    if source.extractor.cached:
        found = cache.get(cache.key(source.extractor, source.sha256))
        if found is not None:
            return found
    changed = BenchError(f"{source.file}: changed or went away while bench was reading the corpus; run again")
    try:
        data = source.file.read_bytes()
        if source.extractor.cached and hashlib.sha256(data).hexdigest() != source.sha256:
            raise changed
        return cache.extract(source.extractor, data, source.sha256, limits)
    except (OSError, Unreadable):
        raise changed from None
