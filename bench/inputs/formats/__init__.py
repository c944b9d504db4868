"""Document formats: how each kind of file in a corpus folder becomes text bench can chunk.

An extractor turns a file's bytes into markdown-like text (headings as ``#`` lines, lists as
``-`` items, tables as ``|`` rows) so that the markdown and recursive chunkers see the document's
structure, plus the offset where each page (or slide) starts. Extractors are registered by file
suffix in ``EXTRACTORS``; a file whose suffix no extractor claims is skipped, and said so.

An extractor raises ``Unreadable`` with a one-line reason a user can act on (a corrupt, encrypted
or mislabelled file). A file that reads but holds no text (a scanned PDF) returns empty text and a
note saying why, so the corpus can leave it out with that reason. A file over one of the ``Limits``
(a zip bomb, a PDF of too many pages) is Unreadable too, its reason naming the setting to raise.
"""

from __future__ import annotations

from bench.inputs.formats import epub, html, office, pdf, text
from bench.inputs.formats.base import Extracted, Extractor, Unreadable, looks_like, mislabelled
from bench.inputs.formats.limits import LIMITS, Limits, time_limit
from bench.registry import Registry

__all__ = [
    "EXTRACTORS",
    "LIMITS",
    "Extracted",
    "Extractor",
    "Limits",
    "Unreadable",
    "for_suffix",
    "looks_like",
    "mislabelled",
    "suffixes",
    "time_limit",
]

# Each format's module builds its Extractor; the libraries it needs load on first extraction.
EXTRACTORS: Registry[Extractor] = Registry("document format")
for _module in (text, pdf, html, office, epub):
    for _extractor in _module.EXTRACTORS:
        EXTRACTORS.register(_extractor.name, _extractor)
_BY_SUFFIX = {s: EXTRACTORS[name] for name in EXTRACTORS for s in EXTRACTORS[name].suffixes}


def for_suffix(suffix: str) -> Extractor | None:
    """The extractor for a file suffix (``.PDF`` is ``.pdf``), or None when no format claims it."""
    return _BY_SUFFIX.get(suffix.lower())


def suffixes() -> tuple[str, ...]:
    """Every suffix a corpus folder reads, sorted."""
    return tuple(sorted(_BY_SUFFIX))
