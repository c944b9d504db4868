"""What bench sees of a corpus: documents, pages and characters per format, and what it left out."""

from __future__ import annotations

from collections import defaultdict

from bench.inputs.corpus import NO_TEXT, Corpus
from bench.text.languages import LanguageMix, detect_mix, spread

LANGUAGE_SAMPLE = 300  # documents read to tell a corpus's languages, spread over it


def corpus_languages(corpus: Corpus, sample: int = LANGUAGE_SAMPLE) -> LanguageMix:
    """The corpus's languages by characters, from at most ``sample`` documents spread over it."""
    return detect_mix([corpus.at(i).text for i in spread(len(corpus), sample)], sample)


def corpus_stats(corpus: Corpus) -> dict:
    """Figures for ``bench corpus stats``: every document is read (extracted text comes from the cache)."""
    per_format: dict[str, dict[str, int]] = defaultdict(lambda: {"documents": 0, "pages": 0, "characters": 0})
    for d in corpus.documents:
        row = per_format[corpus.formats.get(d.id, "jsonl")]
        row["documents"] += 1
        row["pages"] += len(d.pages)
        row["characters"] += len(d.text)
    return {
        "corpus": str(corpus.path),
        "documents": len(corpus),
        "formats": dict(sorted(per_format.items())),
        "left_out": [{"path": x.path, "kind": x.kind, "reason": x.reason} for x in corpus.left_out],
        "no_text": sorted(x.path for x in corpus.left_out if x.kind == NO_TEXT),
        "notes": {doc: list(notes) for doc, notes in sorted(corpus.notes.items()) if doc in corpus},
        "languages": corpus_languages(corpus).to_json(),
    }
