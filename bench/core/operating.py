"""A candidate's operating figures as typed sections: what it costs, how fast it answers, what it
stores and how its index was built, measured by the run and projected to the team's scale.

summary.json keeps them as one flat object (``"ops"``); :class:`Operating` reads that object into
its sections and writes it back key for key, in the order it was read. A figure that does not apply
is ``None`` (BM25 has no vectors, a local model no price); a key the run did not write (a run that
predates it) stays absent, which :meth:`Operating.has` tells apart; a key no section knows
(``recall_vs_exact@<depth>``, a newer version's figure) is kept in ``extra``. Readers use the
sections' attributes; the mapping view by summary.json's keys is for what writes or compares files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from bench.core.sections import JsonObject

Step = Literal["rewrite", "query_embed", "search", "rerank"]
Stat = Literal["mean", "p50", "p95", "p99"]


@dataclass(frozen=True, kw_only=True)
class Cost:
    """Prices, what this run cost, and the monthly bill at the team's scale."""

    price_per_mtok: float | None = None
    price_source: str | None = None  # "local model", a price table's name; a fusion joins its parts' with "; "
    price_date: str | None = None
    cost_estimate: bool | None = None  # the price is a compute estimate, not a bill
    index_cost_usd: float | None = None
    cost_per_1k_queries_usd: float | None = None  # includes a reranker's price
    billed_tokens: int | None = None
    run_cost_usd: float | None = None
    rerank_price_source: str | None = None
    rerank_cost_per_1k_queries_usd: float | None = None
    rerank_run_cost_usd: float | None = None
    monthly_embedding_usd: float | None = None
    monthly_storage_usd: float | None = None
    monthly_compute_usd: float | None = None
    monthly_cost_usd: float | None = None
    monthly_cost_includes: list[str] | None = None  # the parts [scale] prices: embedding, storage, compute
    # a question rewritten by a chat model ([query.NAME]) before it is searched: included in cost_per_1k_queries_usd
    rewrite_model: str | None = None
    rewrite_price_source: str | None = None
    rewrite_cost_per_1k_queries_usd: float | None = None
    rewrite_tokens_per_query: float | None = None  # prompt and reply
    rewrites_failed: int | None = None  # replies that gave no rewrite: those questions were searched as asked
    # contexts a chat model wrote for the chunker's chunks ([context.NAME]): the whole corpus's, each
    # request priced at its usage as billed when sent; context_cost_usd is part of index_cost_usd
    context_model: str | None = None
    context_cost_usd: float | None = None
    context_calls_sent: int | None = None  # by this run; the others were found in the reply log
    context_calls_cached: int | None = None
    context_tokens_in: int | None = None
    context_tokens_cached: int | None = None  # of context_tokens_in, read from the server's prompt cache
    context_tokens_out: int | None = None
    contexts_failed: int | None = None  # chunks indexed without a context (an empty reply, a refusal)


@dataclass(frozen=True, kw_only=True)
class Latency:
    """Milliseconds per query by step, measured one query at a time, and what follows from them."""

    query_embed_ms_mean: float | None = None
    query_embed_ms_p50: float | None = None
    query_embed_ms_p95: float | None = None
    query_embed_ms_p99: float | None = None
    query_embed_measured: str | None = None  # when the timings reused from an earlier run were taken
    query_embed_from_cache: bool | None = None
    search_ms_mean: float | None = None
    search_ms_p50: float | None = None
    search_ms_p95: float | None = None
    search_ms_p99: float | None = None
    latency_samples: int | None = None
    rerank_top: int | None = None  # how many of the first stage's units the reranker re-scores
    rerank_ms_mean: float | None = None
    rerank_ms_p50: float | None = None
    rerank_ms_p95: float | None = None
    rerank_ms_p99: float | None = None
    # the chat call that rewrites a question ([query.NAME]), as measured against its endpoint when sent
    rewrite_ms_mean: float | None = None
    rewrite_ms_p50: float | None = None
    rewrite_ms_p95: float | None = None
    rewrite_ms_p99: float | None = None
    rewrite_calls_timed: int | None = None
    rewrite_endpoint: str | None = None  # "a server on this machine": not a provider's latency
    end_to_end_ms_p50: float | None = None
    end_to_end_ms_p95: float | None = None
    qps_single_thread: float | None = None
    cpu_seconds_per_1k_queries: float | None = None
    # CPU milliseconds per query of each step, on one thread: what a busy machine does not inflate
    query_embed_cpu_ms_mean: float | None = None
    search_cpu_ms_mean: float | None = None
    rerank_cpu_ms_mean: float | None = None
    timing_cores: int | None = None  # the cores of the machine timed: a query's CPU time is a share of it
    timing_contention: float | None = None  # the most contended timing: share of runnable time spent waiting
    timing_busy: bool | None = None  # a timing was taken on a busy machine (and not kept for later runs)

    def cpu_ms(self, step: Step) -> float | None:
        """One step's mean CPU milliseconds per query (None in runs that predate them; a rewrite runs
        on its endpoint, not here)."""
        return None if step == "rewrite" else getattr(self, f"{step}_cpu_ms_mean")

    def ms(self, step: Step, stat: Stat) -> float | None:
        """One step's milliseconds at one statistic (``search``, ``p95``)."""
        return getattr(self, f"{step}_ms_{stat}")

    def end_to_end_ms(self, stat: Stat) -> float | None:
        """The stored end-to-end latency (p50 and p95 are stored; None for the others)."""
        return {"p50": self.end_to_end_ms_p50, "p95": self.end_to_end_ms_p95}.get(stat)


@dataclass(frozen=True, kw_only=True)
class Storage:
    """What the index holds and takes, here and on every replica at the team's scale."""

    dims: int | None = None
    vector_bytes: int | None = None
    index_bytes: int | None = None
    index_factory: str | None = None  # FAISS factory strings; a fusion joins its parts' with " + "
    store: str | None = None  # the vector store searched: "faiss", "pgvector", "lancedb", "chroma"
    store_version: str | None = None
    store_settings: str | None = None  # build and query settings as the store reports them back
    store_index_bytes: int | None = None  # the store's ANN index alone (index_bytes: all it keeps on disk)
    compression_ratio: float | None = None
    index_memory_mb: float | None = None
    peak_rss_mb: float | None = None
    storage_gb_at_scale: float | None = None


@dataclass(frozen=True, kw_only=True)
class Indexing:
    """Building the index: chunks and tokens, embedding speed and cache, build time, at scale."""

    n_chunks: int | None = None
    embed_seconds: float | None = None
    chunks_per_second: float | None = None
    chunks_embedded: int | None = None
    chunks_from_cache: int | None = None
    questions_embedded: int | None = None
    questions_from_cache: int | None = None
    index_build_seconds: float | None = None
    index_build_cpu_seconds: float | None = None  # every thread's: what the build costs, whatever else ran
    index_tokens: int | None = None
    truncated_chunks: int | None = None
    truncated_token_share: float | None = None
    question_tokens_mean: float | None = None
    tokens_per_second: float | None = None
    corpus_embed_seconds: float | None = None  # the whole corpus, cached chunks included
    corpus_speed_from_cache: bool | None = None  # its speed per token was timed by an earlier run
    corpus_speed_measured: str | None = None  # when that earlier timing was taken
    index_hours_at_scale: float | None = None
    lexical_tokenizer: str | None = None  # which language, segmenter and stopwords BM25 indexed with


_SECTIONS: dict[str, type] = {"cost": Cost, "latency": Latency, "storage": Storage, "indexing": Indexing}
_SECTION_OF = {f.name: name for name, cls in _SECTIONS.items() for f in dataclasses.fields(cls)}
# Every figure a candidate carries, null where it does not apply; ``recall_vs_exact@<depth>`` joins them.
OPERATING_KEYS = tuple(_SECTION_OF)

# One operating figure as summary.json's ``ops`` stores it, and a run's figures by those keys while
# it assembles them, before they are read into :class:`Operating`.
Figure: TypeAlias = float | int | str | bool | list[str] | None
Figures: TypeAlias = dict[str, Figure]


def recall_vs_exact_key(depth: int) -> str:
    return f"recall_vs_exact@{depth}"


@dataclass(frozen=True, kw_only=True)
class Operating(Mapping[str, Any]):
    """The operating figures of one candidate, by section (see the module's account)."""

    cost: Cost = field(default_factory=Cost)
    latency: Latency = field(default_factory=Latency)
    storage: Storage = field(default_factory=Storage)
    indexing: Indexing = field(default_factory=Indexing)
    extra: JsonObject = field(default_factory=dict)
    # summary.json's keys in its order, so that a run read and written again is the same file
    keys_stored: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Operating:
        parts: dict[str, JsonObject] = {name: {} for name in _SECTIONS}
        extra = {}
        for key, value in d.items():
            section = _SECTION_OF.get(key)
            if section is None:
                extra[key] = value
            else:
                parts[section][key] = value
        sections = {name: _SECTIONS[name](**values) for name, values in parts.items()}
        return cls(**sections, extra=extra, keys_stored=tuple(d))

    def to_dict(self) -> JsonObject:
        return {key: self[key] for key in self.keys_stored}

    def merged(self, figures: Mapping[str, Any]) -> Operating:
        """These figures with ``figures`` set (the projection to the team's scale); a key already
        stored keeps its place, a new one comes last."""
        return Operating.from_dict({**self.to_dict(), **figures})

    def has(self, key: str) -> bool:
        """Whether the run wrote this figure (even as null): runs that predate a figure lack it."""
        return key in self.keys_stored

    def recall_vs_exact(self, depth: int) -> float | None:
        """The share of exact search's top ``depth`` that the index found."""
        return self.extra.get(recall_vs_exact_key(depth))

    def __getitem__(self, key: str) -> Any:
        if key not in self.keys_stored:
            raise KeyError(key)
        section = _SECTION_OF.get(key)
        return self.extra[key] if section is None else getattr(getattr(self, section), key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys_stored)

    def __len__(self) -> int:
        return len(self.keys_stored)
