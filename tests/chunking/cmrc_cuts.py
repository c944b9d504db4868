"""How often chunk edges cut a Chinese word or a grapheme cluster, on the CMRC 2018 passages.

``python -m tests.chunking.cmrc_cuts`` prints, per chunker, the share of chunks with an edge inside a
word (jieba's words of the whole passage) and the edges inside a grapheme cluster, and how many
characters a chunk of each size holds. tests/chunking/test_cmrc_chunks.py holds the chunkers to it.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

from bench.chunking import make_chunker
from bench.chunking.tokens import count_tokens
from bench.text.scripts import grapheme_starts

CMRC = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "cmrc2018-zh"

CONFIGS: dict[str, dict] = {
    "tok256": {"kind": "tokens", "size": 256, "overlap": 32},
    "tok64": {"kind": "tokens", "size": 64},
    "rec256": {"kind": "recursive", "size": 256},
    "rec64": {"kind": "recursive", "size": 64},
    "md256": {"kind": "markdown", "size": 256},
    "sent3x64": {"kind": "sentences", "size": 64},
}


def passages(limit: int | None = None) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    with (CMRC / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            out.append((row["_id"], row["text"]))
            if limit is not None and len(out) >= limit:
                break
    return out


def inside_words(text: str) -> np.ndarray:
    """``mask[p]``: offset ``p`` lies strictly inside one of jieba's words of ``text``."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    mask = np.zeros(len(text) + 1, dtype=bool)
    for _, start, end in jieba.tokenize(text):
        mask[start + 1 : end] = True
    return mask


def inside_graphemes(text: str) -> np.ndarray:
    mask = np.ones(len(text) + 1, dtype=bool)
    mask[grapheme_starts(text)] = False
    mask[len(text)] = False
    return mask


def cuts(config: dict, docs: list[tuple[str, str]]) -> dict[str, float]:
    params = {k: v for k, v in config.items() if k != "kind"}
    chunker = make_chunker(config["kind"], **params)
    chunks = word_cut = grapheme_cut = tokens = chars = 0
    for doc_id, text in docs:
        words, graphemes = inside_words(text), inside_graphemes(text)
        for c in chunker.chunk(doc_id, text):
            chunks += 1
            word_cut += bool(words[c.start] or words[c.end])
            grapheme_cut += bool(graphemes[c.start] or graphemes[c.end])
            tokens += count_tokens(c.text)
            chars += len(c.text)
    return {
        "chunks": chunks,
        "cut_word": word_cut / chunks,
        "cut_grapheme": grapheme_cut / chunks,
        "chars_per_token": chars / tokens,
    }


def main() -> None:
    docs = passages()
    for name, config in CONFIGS.items():
        got = cuts(config, docs)
        print(
            f"{name:9} {got['chunks']:6,} chunks  {got['cut_word']:6.1%} cut a word  "
            f"{got['cut_grapheme']:6.2%} cut a grapheme cluster  {got['chars_per_token']:.3f} characters a token"
        )


if __name__ == "__main__":
    main()
