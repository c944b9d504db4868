"""Looking before spending: chunk statistics per chunker and the candidate grid with token counts and cost.

Nothing here embeds text, except a semantic chunker, which cannot split without its model; it is
reported as such instead of being run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bench import costs
from bench.config import Candidate, Config
from bench.corpus import Corpus
from bench.goldset import Goldset
from bench.tokens import count_tokens, count_tokens_each
from bench.units import ChunkTable


@dataclass(frozen=True)
class ChunkStats:
    chunker: str
    kind: str
    chunks: int
    tokens: int
    chars: int
    token_sizes: dict[str, float]  # min, p50, p95, max, mean
    char_sizes: dict[str, float]


SIZE_SAMPLE = 200_000  # chunks whose tokens summary.json counts at most; beyond, an even sample


def _measure(table: ChunkTable, sample: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each chunk's size in cl100k tokens and in characters; with ``sample``, tokens of at most
    that many chunks evenly spread over the table (characters are always exact)."""
    chars = (table.end - table.start).astype(float)
    if sample is None or len(table) <= sample:
        return count_tokens_each(table.iter_texts()).astype(float), chars
    rows = np.unique(np.linspace(0, len(table) - 1, sample).astype(np.int64))
    return count_tokens_each(table.text(int(i)) for i in rows).astype(float), chars


def chunk_stats(name: str, kind: str, table: ChunkTable) -> ChunkStats:
    tokens, chars = _measure(table)
    return ChunkStats(name, kind, len(table), int(tokens.sum()), int(chars.sum()), _sizes(tokens), _sizes(chars))


def chunk_sizes(table: ChunkTable, bins: int = 30) -> dict:
    """What summary.json keeps of a chunking: counts, size quantiles and a token histogram.

    Past ``SIZE_SAMPLE`` chunks the token figures come from an even sample of that many
    (``tokens_sampled``; the total is the sample's mean times the chunk count): a distribution
    needs no millions of counts.
    """
    tokens, chars = _measure(table, SIZE_SAMPLE)
    counts, edges = np.histogram(tokens, bins=bins) if len(tokens) else (np.zeros(0), np.zeros(0))
    sampled = len(tokens) if len(tokens) < len(table) else None
    total = int(tokens.sum()) if sampled is None else round(float(tokens.mean()) * len(table))
    return {"chunks": len(table), "tokens": total, "tokens_sampled": sampled, "token_sizes": _sizes(tokens),
            "char_sizes": _sizes(chars),
            "token_histogram": {"edges": [round(float(e), 3) for e in edges], "counts": counts.astype(int).tolist()}}


def _sizes(values: np.ndarray) -> dict[str, float]:
    if not len(values):
        return {"min": 0, "p50": 0, "p95": 0, "max": 0, "mean": 0}
    p50, p95 = np.percentile(values, [50, 95])
    return {"min": float(values.min()), "p50": float(p50), "p95": float(p95), "max": float(values.max()),
            "mean": float(values.mean())}


def tables_without_models(config: Config, corpus: Corpus) -> tuple[dict[str, ChunkTable], list[str]]:
    """Chunk with every chunker that needs no model; name the ones that do."""
    tables, skipped = {}, []
    for spec in config.chunkers:
        if spec.model:
            skipped.append(spec.name)
        else:
            tables[spec.name] = ChunkTable.chunk_corpus(corpus, spec.build())
    return tables, skipped


@dataclass(frozen=True)
class PlannedCandidate:
    candidate: Candidate
    chunks: int | None
    corpus_tokens: int | None
    question_tokens: int
    price_per_mtok: float | None

    @property
    def index_cost_usd(self) -> float | None:
        return costs.index_cost_usd(self.corpus_tokens, self.price_per_mtok)

    @property
    def run_cost_usd(self) -> float | None:
        """What a cold run would bill: the corpus and every question once."""
        if self.corpus_tokens is None:
            return None
        return costs.run_cost_usd(self.corpus_tokens + self.question_tokens, self.price_per_mtok)


def plan(config: Config, candidates: list[Candidate], tables: dict[str, ChunkTable], goldset: Goldset
         ) -> list[PlannedCandidate]:
    """Token counts are cl100k tokens: the billing unit of OpenAI models, an estimate for others."""
    question_tokens = sum(count_tokens(q.text) for q in goldset.questions)
    corpus_tokens = {name: int(count_tokens_each(table.iter_texts()).sum()) for name, table in tables.items()}
    planned = []
    for cand in candidates:
        table = tables.get(cand.chunker)
        planned.append(PlannedCandidate(
            candidate=cand,
            chunks=len(table) if table is not None else None,
            corpus_tokens=corpus_tokens.get(cand.chunker),
            question_tokens=question_tokens,
            price_per_mtok=config.price(cand.model).price_per_mtok,
        ))
    return planned
