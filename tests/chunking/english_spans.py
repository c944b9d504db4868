"""The chunk spans every chunker gives the bundled English corpus, recorded once so that work on
other scripts can prove English chunks unchanged (tests/chunking/test_english_spans.py).

Run ``python -m tests.chunking.english_spans`` to record them again: only after a change to English
chunking that is meant, since the recording is what the test holds the chunkers to.
"""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from pathlib import Path

import numpy as np

from bench.chunking import make_chunker

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpora" / "northwind"
FIXTURE = Path(__file__).with_name("english_spans.json")
# Wikipedia articles, English with accents, dashes, Greek, IPA and a few Chinese names (read when present)
SQUAD = ROOT.parent / "shared" / "datasets" / "squad-articles" / "corpora"
SQUAD_FIXTURE = Path(__file__).with_name("squad_spans.json")

# bench.toml's chunkers, the other kinds at their defaults, and small sizes that reach every
# fallback (sentence, word and token-window levels of the recursive splitter).
CONFIGS: dict[str, dict] = {
    "tok256": {"kind": "tokens", "size": 256, "overlap": 32},
    "rec256": {"kind": "recursive", "size": 256},
    "md256": {"kind": "markdown", "size": 256},
    "sent3": {"kind": "sentences"},
    "sent4x48": {"kind": "sentences", "sentences": 4, "overlap": 1, "size": 48},
    "sem256": {"kind": "semantic", "size": 256, "min_tokens": 16},
    "tok16": {"kind": "tokens", "size": 16, "overlap": 4},
    "tok7": {"kind": "tokens", "size": 7},
    "rec24": {"kind": "recursive", "size": 24, "overlap": 6},
    "rec3": {"kind": "recursive", "size": 3},
    "md40": {"kind": "markdown", "size": 40, "overlap": 8},
    "sem32": {"kind": "semantic", "size": 32, "breakpoint_percentile": 70, "min_tokens": 8},
}


def hashed_embed(texts: list[str]) -> np.ndarray:
    """A fixed stand-in for a model: hashed bag of words in 16 dimensions, L2-normalised."""
    out = np.zeros((len(texts), 16))
    for i, t in enumerate(texts):
        for w in re.findall(r"\w+", t.lower()):
            out[i, zlib.crc32(w.encode("utf-8")) % 16] += 1
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


def spans(config: dict, documents: list[tuple[str, str]]) -> dict[str, str]:
    """Each document's chunk spans as ``"<chunks>:<sha256 of the spans, 16 hex digits>"``: a few
    bytes per document, and any moved boundary changes it."""
    params = {k: v for k, v in config.items() if k != "kind"}
    chunker = make_chunker(config["kind"], embed=hashed_embed, **params)
    out: dict[str, str] = {}
    for doc_id, text in documents:
        flat = [x for c in chunker.chunk(doc_id, text) for x in (c.start, c.end)]
        out[doc_id] = f"{len(flat) // 2}:{hashlib.sha256(json.dumps(flat).encode()).hexdigest()[:16]}"
    return out


def documents(corpus: Path = CORPUS) -> list[tuple[str, str]]:
    from bench.inputs.corpus import load_corpus

    return [(d.id, d.text) for d in load_corpus(corpus).documents]


def corpus_digest(docs: list[tuple[str, str]]) -> str:
    return hashlib.sha256(json.dumps(docs, ensure_ascii=True).encode()).hexdigest()


def record(corpus: Path, fixture: Path) -> None:
    docs = documents(corpus)
    spans_of = {name: spans(config, docs) for name, config in CONFIGS.items()}
    data = {"corpus_sha256": corpus_digest(docs), "configs": CONFIGS, "spans": spans_of}
    fixture.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {fixture} ({fixture.stat().st_size:,} bytes)")


def main() -> None:
    record(CORPUS, FIXTURE)
    if SQUAD.is_dir():
        record(SQUAD, SQUAD_FIXTURE)


if __name__ == "__main__":
    main()
