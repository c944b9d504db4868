"""Extracted text kept between runs, by the source file's bytes and the extractor that read them.

A PDF is parsed once: later loads find its text under ``<cache>/extracted/<sha256 of the
bytes>.<extractor>-<version>.json``, so a rerun extracts nothing and sees the very same text. A new
extractor version (a library upgrade) is a new key, so the text is extracted again rather than
mixed with an older extraction. An entry that cannot be read back (cut short, edited) is extracted
again and rewritten. Limits are no part of the key: they refuse a document, never change its text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench.files import write_json
from bench.inputs.formats import LIMITS, Extracted, Extractor, Limits, time_limit

_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]")


class ExtractionCache:
    """Extracted texts on disk under ``folder``; with ``folder=None``, held in memory for this process."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._memory: dict[str, Extracted] = {}
        self.extracted = 0  # files this process had to extract (cache misses)

    def key(self, extractor: Extractor, source_sha256: str) -> str:
        return _UNSAFE.sub("_", f"{source_sha256}.{extractor.name}-{extractor.version}")

    def get(self, key: str) -> Extracted | None:
        found = self._memory.get(key)
        if found is not None or self.folder is None:
            return found
        try:
            row = json.loads((self.folder / f"{key}.json").read_text(encoding="utf-8"))
            return Extracted(str(row["text"]), tuple(int(p) for p in row["pages"]), tuple(map(str, row["notes"])))
        except (OSError, ValueError, KeyError, TypeError):  # absent, cut short or edited: extract again
            return None

    def put(self, key: str, extracted: Extracted) -> None:
        """Keep ``extracted``; where the folder cannot be written, keep it in memory instead."""
        self.extracted += 1
        if self.folder is not None:
            row = {"text": extracted.text, "pages": list(extracted.pages), "notes": list(extracted.notes)}
            try:
                write_json(self.folder / f"{key}.json", row)
                return
            except OSError:
                pass
        self._memory[key] = extracted

    def extract(self, extractor: Extractor, data: bytes, source_sha256: str, limits: Limits = LIMITS) -> Extracted:
        """The file's text: from the cache, else extracted now within ``limits`` (``Unreadable``, a
        document over them included, propagates) and kept."""
        if not extractor.cached:
            return extract_within(extractor, data, limits)
        key = self.key(extractor, source_sha256)
        found = self.get(key)
        if found is None:
            found = extract_within(extractor, data, limits)
            self.put(key, found)
        return found


def extract_within(extractor: Extractor, data: bytes, limits: Limits) -> Extracted:
    """``extractor``'s text of ``data``, or ``Unreadable`` when it is over ``limits`` (time included)."""
    limits.check_size(len(data))
    with time_limit(limits):
        return extractor.extract(data, limits)
