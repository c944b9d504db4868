"""How big a chunking's chunks are, in cl100k tokens and characters: for `bench chunk` and summary.json."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bench.chunking.table import ChunkTable
from bench.chunking.tokens import count_tokens_each


@dataclass(frozen=True)
class ChunkStats:
    chunker: str
    kind: str
    chunks: int
    tokens: int
    chars: int
    token_sizes: dict[str, float]  # min, p50, p95, max, mean
    char_sizes: dict[str, float]
    # characters a token holds: ~4 in English, ~0.85 in Chinese (a 256-token chunk is ~220 characters)
    chars_per_token: float = 0.0


SIZE_SAMPLE = 200_000  # chunks whose tokens summary.json counts at most; beyond, an even sample


def _measure(table: ChunkTable, sample: int | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """Each chunk's size in cl100k tokens and in characters, and the characters a token holds;
    with ``sample``, tokens of at most that many chunks evenly spread over the table (characters
    are always exact; characters per token are those of the measured chunks)."""
    chars = (table.end - table.start).astype(float)
    if sample is None or len(table) <= sample:
        tokens = count_tokens_each(table.iter_texts()).astype(float)
        return tokens, chars, _ratio(chars.sum(), tokens.sum())
    rows = np.unique(np.linspace(0, len(table) - 1, sample).astype(np.int64))
    tokens = count_tokens_each(table.text(int(i)) for i in rows).astype(float)
    return tokens, chars, _ratio(chars[rows].sum(), tokens.sum())


def _ratio(chars: float, tokens: float) -> float:
    return round(float(chars / tokens), 4) if tokens else 0.0


def chunk_stats(name: str, kind: str, table: ChunkTable) -> ChunkStats:
    tokens, chars, per_token = _measure(table)
    return ChunkStats(
        name, kind, len(table), int(tokens.sum()), int(chars.sum()), _sizes(tokens), _sizes(chars), per_token
    )


def chunk_sizes(table: ChunkTable, bins: int = 30) -> dict:
    """What summary.json keeps of a chunking: counts, size quantiles and a token histogram, and
    the characters: ``chars`` in all, ``chars_per_token`` (about 4 in English, under 1 in Chinese,
    so a 256-token chunk of Chinese holds about 220 characters).

    Past ``SIZE_SAMPLE`` chunks the token figures come from an even sample of that many
    (``tokens_sampled``; the total is the sample's mean times the chunk count): a distribution
    needs no millions of counts.
    """
    tokens, chars, per_token = _measure(table, SIZE_SAMPLE)
    counts, edges = np.histogram(tokens, bins=bins) if len(tokens) else (np.zeros(0), np.zeros(0))
    sampled = len(tokens) if len(tokens) < len(table) else None
    total = int(tokens.sum()) if sampled is None else round(float(tokens.mean()) * len(table))
    return {
        "chunks": len(table),
        "tokens": total,
        "tokens_sampled": sampled,
        "token_sizes": _sizes(tokens),
        "char_sizes": _sizes(chars),
        "chars": int(chars.sum()),
        "chars_per_token": per_token,
        "token_histogram": {"edges": [round(float(e), 3) for e in edges], "counts": counts.astype(int).tolist()},
    }


def _sizes(values: np.ndarray) -> dict[str, float]:
    if not len(values):
        return {"min": 0, "p50": 0, "p95": 0, "max": 0, "mean": 0}
    p50, p95 = np.percentile(values, [50, 95])
    return {
        "min": float(values.min()),
        "p50": float(p50),
        "p95": float(p95),
        "max": float(values.max()),
        "mean": float(values.mean()),
    }
