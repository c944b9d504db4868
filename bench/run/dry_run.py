"""Looking before spending: chunk statistics per chunker and the candidate grid with token counts and cost.

Nothing here embeds text, except a semantic chunker, which cannot split without its model; it is
reported as such instead of being run.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console

from bench.chunking.table import ChunkTable
from bench.chunking.tokens import count_tokens, count_tokens_each
from bench.config import Candidate, Config
from bench.embedders import paths
from bench.evaluation import costs
from bench.inputs.corpus import Corpus
from bench.inputs.goldset import Goldset, load_goldset
from bench.report.corpus_view import print_warnings, read_corpus


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


def plan(
    config: Config, candidates: list[Candidate], tables: dict[str, ChunkTable], goldset: Goldset
) -> list[PlannedCandidate]:
    """Token counts are cl100k tokens: the billing unit of OpenAI models, an estimate for others."""
    question_tokens = sum(count_tokens(q.text) for q in goldset.questions)
    corpus_tokens = {name: int(count_tokens_each(table.iter_texts()).sum()) for name, table in tables.items()}
    planned = []
    for cand in candidates:
        table = tables.get(cand.chunker)
        planned.append(
            PlannedCandidate(
                candidate=cand,
                chunks=len(table) if table is not None else None,
                corpus_tokens=corpus_tokens.get(cand.chunker),
                question_tokens=question_tokens,
                price_per_mtok=_price_per_mtok(config, cand),
            )
        )
    return planned


def _price_per_mtok(config: Config, cand: Candidate) -> float | None:
    """What a token costs the candidate: every model of a fusion reads the whole corpus, so their
    prices add up (unknown when any is). A reranker is priced per search, not here."""
    prices = [config.price(part.model).price_per_mtok for part in config.parts(cand)]
    return None if any(p is None for p in prices) else sum(p for p in prices if p is not None)


def dry_run(
    config: Config,
    only: tuple[str, ...] = (),
    skip: tuple[str, ...] = (),
    console: Console | None = None,
    strict: bool = False,
) -> list:
    """The grid with chunk and token counts and estimated cost, before anything is embedded.
    Files of the corpus left out are warned about on ``console`` (standard error when None)."""
    root = paths.cache_root(config.cache_dir, config.cache_override)
    console = console or Console(stderr=True)
    corpus = read_corpus(config.corpus, paths.extracted_dir(root), console, strict, warn=False)
    goldset = load_goldset(config.goldset, corpus)
    print_warnings(console, corpus)
    candidates = config.candidates(only, skip)
    tables, _ = tables_without_models(config, corpus)
    return plan(config, candidates, tables, goldset)
