"""What padding costs: the same chunk texts embedded by the same model in corpus order and sorted by length.

    .venv/bin/python benchmarks/padding.py [CONFIG] [--model minilm] [--batch 64] [--repeats 3]

A model pads every text of a batch to the batch's longest, so batches that mix a one-line section
with a 256-token one spend most of their time on padding. `bench` embeds the texts that miss the
cache in batches sorted by length (`EmbeddingCache.embed`). For each chunker of the config, this
embeds its chunks both ways in this process, in batches of the same size, through the bare model
(no cache), and prints the best of ``--repeats`` for each, their ratio, and how far the vectors of
the two orders differ (they may differ in the last bits only: the same texts, other batch mates).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from bench.chunking.table import ChunkTable
from bench.config import load_config
from bench.embedders import PASSAGE, load_embedder
from bench.inputs.corpus import load_corpus

REPO = Path(__file__).resolve().parent.parent


def embed_in_batches(embedder, texts: list[str], order: np.ndarray, batch: int) -> tuple[float, np.ndarray]:
    """Seconds to embed ``texts`` in ``order``, ``batch`` at a time, and the vectors in the texts' own order."""
    out = np.zeros((len(texts), embedder.dims), dtype=np.float32)
    t0 = time.perf_counter()
    for lo in range(0, len(order), batch):
        rows = order[lo : lo + batch]
        out[rows] = embedder.embed([texts[i] for i in rows], PASSAGE)
    return time.perf_counter() - t0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", type=Path, default=REPO / "bench.toml")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    cfg = load_config(args.config)
    corpus = load_corpus(cfg.corpus)
    embedder = load_embedder(cfg.model(args.model))
    embedder.embed(["warm up"], PASSAGE)
    print(f"{args.model}, batches of {args.batch}, best of {args.repeats}")
    print(f"{'chunker':<10} {'chunks':>7} {'corpus order s':>15} {'length-sorted s':>16} {'ratio':>6} {'max |Δ|':>9}")
    totals = [0.0, 0.0]
    for spec in cfg.chunkers:
        texts = list(ChunkTable.chunk_corpus(corpus, spec.build()).texts)
        corpus_order = np.arange(len(texts))
        by_length = np.argsort([len(t) for t in texts], kind="stable")
        best = [float("inf"), float("inf")]
        vectors: list[np.ndarray] = [np.empty(0), np.empty(0)]
        for _ in range(args.repeats):
            for i, order in enumerate((corpus_order, by_length)):
                seconds, vectors[i] = embed_in_batches(embedder, texts, order, args.batch)
                best[i] = min(best[i], seconds)
        totals = [totals[0] + best[0], totals[1] + best[1]]
        diff = float(np.abs(vectors[0] - vectors[1]).max())
        print(
            f"{spec.name:<10} {len(texts):>7} {best[0]:>15.2f} {best[1]:>16.2f} {best[0] / best[1]:>5.2f}× {diff:>9.1e}"
        )
    print(f"{'all':<10} {'':>7} {totals[0]:>15.2f} {totals[1]:>16.2f} {totals[0] / totals[1]:>5.2f}×")


if __name__ == "__main__":
    main()
