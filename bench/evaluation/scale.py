"""The team's scale: how large their corpus is, how many questions a month it answers, how often it
is indexed again, on how many replicas, and what storage and compute cost. Every monthly figure
of a candidate is projected from the run's measurements with these (``[scale]`` in bench.toml).

The projection is pure arithmetic on a candidate's stored operating figures (None in, None out, like
``costs``), so ``bench report`` recomputes from summary.json exactly what the run wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from bench.core.operating import Operating
from bench.core.sections import as_number
from bench.core.tables import read_table, setting
from bench.evaluation import costs, prices

PREFERENCES = ("cost", "latency", "quality")


@dataclass(frozen=True)
class Scale:
    """``documents`` None: the corpus as it is. ``storage_usd_per_gb_month`` and ``hourly_usd`` None:
    no price, so storage and local compute are reported as amounts (GB, hours), not money."""

    documents: int | None = setting(None, minimum=1)
    queries_per_month: int = setting(100_000, minimum=1)
    reindexes_per_month: float = setting(1.0, minimum=0)
    replicas: int = setting(1, minimum=1)
    storage_usd_per_gb_month: float | None = setting(None, minimum=0)
    # the machine that runs local models: embedding, search, reranking
    hourly_usd: float | None = setting(None, minimum=0)

    def factor(self, corpus_documents: int) -> float:
        """How many times larger the team's corpus is than the one this run indexed."""
        if self.documents is None or not corpus_documents:
            return 1.0
        return self.documents / corpus_documents

    @classmethod
    def from_manifest(cls, table: object) -> Scale:
        """The Scale a stored run was priced at (``manifest.config["scale"]``); the defaults for a run
        whose config had no ``[scale]``, or that predates it."""
        if not isinstance(table, Mapping):
            return cls()
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in table.items() if key in known})


def scale_from_config(table: object, where: str) -> Scale:
    """A Scale from ``[scale]`` (absent: the defaults), every value checked."""
    return read_table(Scale, table, f"{where}: [scale]", example="[scale] queries_per_month = 100000")


# --- a candidate at the team's scale: None in, None out ------------------------------------------

SECONDS_PER_HOUR = 3600
BINARY_FACTORY = "BFlat"  # a binary index: Hamming codes only, its rescoring reads a float copy
NO_RESCORE = "rescore=0"  # the query setting of a binary index searched by Hamming order alone

# Which parts of the monthly cost a figure adds up, in this order; storage and compute only when
# [scale] prices them.
EMBEDDING, STORAGE, COMPUTE = "embedding", "storage", "compute"

SCALE_KEYS = (
    "end_to_end_ms_p50", "end_to_end_ms_p95", "qps_single_thread", "cpu_seconds_per_1k_queries",
    "index_hours_at_scale", "storage_gb_at_scale", "monthly_embedding_usd", "monthly_storage_usd",
    "monthly_compute_usd", "monthly_cost_usd", "monthly_cost_includes",
)  # fmt: skip


def qps_single_thread(end_to_end_ms_mean: float | None) -> float | None:
    """Queries a second, one after another on one thread: ``1000 / end-to-end mean ms``."""
    if end_to_end_ms_mean is None or end_to_end_ms_mean <= 0:
        return None
    return 1000.0 / end_to_end_ms_mean


def seconds_per_1k_queries(ms_per_query: float | None) -> float | None:
    """Seconds of one thread for 1,000 queries: ``mean ms per query × 1000 / 1000``."""
    return None if ms_per_query is None else ms_per_query * 1000 / 1000


def corpus_embed_seconds(ops: Operating) -> float | None:
    """Seconds to embed this run's whole corpus: the run's ``corpus_embed_seconds``; for a run that
    predates it, ``embed_seconds × (chunks_embedded + chunks_from_cache) / chunks_embedded`` (what was
    embedded, extrapolated to what came from the cache), 0 for BM25, None when nothing was embedded."""
    indexing = ops.indexing
    if ops.has("corpus_embed_seconds"):
        return as_number(indexing.corpus_embed_seconds)
    if ops.storage.dims is None:
        return 0.0  # BM25 embeds nothing; its build is index_build_seconds
    embedded, cached, seconds = indexing.chunks_embedded, indexing.chunks_from_cache, indexing.embed_seconds
    if not embedded or seconds is None:
        return None
    return seconds * (embedded + (cached or 0)) / embedded


def index_build_machine_seconds(ops: Operating) -> float | None:
    """Seconds of the whole machine that building the index took: its CPU time (every thread) shared
    by the machine's cores, where the run measured it (other work on the machine inflates it far
    less than the wall time); the wall time for runs that predate it."""
    cpu, cores = as_number(ops.indexing.index_build_cpu_seconds), ops.latency.timing_cores
    if cpu is not None and cores:
        return cpu / cores
    return as_number(ops.indexing.index_build_seconds)


def index_hours_at_scale(embed_seconds: float | None, build_seconds: float | None, factor: float) -> float | None:
    """Hours to index the team's corpus: ``(embed_seconds + build_seconds) × factor / 3600``, linear in
    the corpus (an HNSW or IVF build grows a little faster)."""
    if embed_seconds is None or build_seconds is None:
        return None
    return (embed_seconds + build_seconds) * factor / SECONDS_PER_HOUR


def stored_bytes(ops: Operating, search: str = "") -> int | float | None:
    """What a replica keeps on disk: ``index_bytes``, plus ``vector_bytes`` when the index does not hold
    the vectors its search reads. A flat, HNSW or IVF index holds them (``index_bytes`` includes them),
    SQ8 and PQ search their codes alone, BM25 has none; a binary index rescores with a float copy
    (``vector_bytes``), unless searched with ``rescore=0``. A fusion counts the float copy when every
    dense part is binary."""
    storage = ops.storage
    index = as_number(storage.index_bytes)
    if index is None:
        return None
    factories = [f for f in str(storage.index_factory or "").split(" + ") if f]
    binary = bool(factories) and all(f == BINARY_FACTORY for f in factories)
    vectors = as_number(storage.vector_bytes)
    if binary and vectors is not None and NO_RESCORE not in search.split(","):
        return index + vectors
    return index


def storage_gb_at_scale(n_bytes: float | None, factor: float, replicas: int) -> float | None:
    """Storage of vectors and index on every replica: ``bytes × factor × replicas / 1e9``."""
    return None if n_bytes is None else n_bytes * factor * replicas / 1e9


def monthly_embedding_usd(
    index_cost: float | None, cost_per_1k_queries: float | None, factor: float, scale: Scale
) -> float | None:
    """Embedding bills a month: ``index_cost × factor × reindexes_per_month + cost_per_1k_queries ×
    queries_per_month / 1000``. ``cost_per_1k_queries`` includes a reranker's price."""
    reindex = 0.0 if scale.reindexes_per_month == 0 else _times(index_cost, factor * scale.reindexes_per_month)
    queries = _times(cost_per_1k_queries, scale.queries_per_month / 1000)
    return None if reindex is None or queries is None else reindex + queries


def monthly_storage_usd(gb: float | None, scale: Scale) -> float | None:
    """``storage_gb_at_scale × storage_usd_per_gb_month``; None without a price."""
    return None if scale.storage_usd_per_gb_month is None else _times(gb, scale.storage_usd_per_gb_month)


def monthly_compute_usd(
    query_seconds_per_1k: float | None, local_index_hours: float | None, scale: Scale
) -> float | None:
    """The machine that runs local models, by its measured busy time: ``(query_seconds_per_1k ×
    queries_per_month / 1000 / 3600 + local_index_hours × reindexes_per_month) × hourly_usd``; None
    without a price."""
    if scale.hourly_usd is None or query_seconds_per_1k is None:
        return None
    reindex = 0.0 if scale.reindexes_per_month == 0 else _times(local_index_hours, scale.reindexes_per_month)
    if reindex is None:
        return None
    hours = query_seconds_per_1k * scale.queries_per_month / 1000 / SECONDS_PER_HOUR + reindex
    return hours * scale.hourly_usd


def monthly_cost_usd(
    embedding: float | None, storage: float | None, compute: float | None, scale: Scale
) -> tuple[float | None, list[str]]:
    """The sum of the parts [scale] prices, and their names: embedding always, storage and compute
    when their price is set. None when a part that is included is unknown, never a partial sum."""
    parts = [(EMBEDDING, embedding)]
    if scale.storage_usd_per_gb_month is not None:
        parts.append((STORAGE, storage))
    if scale.hourly_usd is not None:
        parts.append((COMPUTE, compute))
    values = [v for _, v in parts]
    total = None if any(v is None for v in values) else sum(v for v in values if v is not None)
    return total, [name for name, _ in parts]


def runs_locally(price_source: object) -> bool:
    """Whether a step runs on the team's own machines at no price of its own: every model it uses is a
    ``local model`` (a fusion joins its parts' sources with ``; ``). An API, or a self-hosted model with
    its own ``hourly_usd``, is paid for by its price instead."""
    if not isinstance(price_source, str) or not price_source:
        return False
    return all(part == prices.LOCAL_SOURCE for part in price_source.split("; "))


def local_query_ms(ops: Operating) -> float | None:
    """Machine milliseconds per query of the steps that run locally: the search always, the question's
    embedding and the reranking when their model is local; None when a local step was not timed.

    A step's CPU time on one thread, shared by the machine's cores (a query served on one core leaves
    the others to other queries), where the run measured it: other work on the machine does not
    inflate it. Runs that predate it are priced by wall time, as they were."""
    steps: list[costs.Step] = ["search"]
    if runs_locally(ops.cost.price_source):
        steps.append("query_embed")
    if ops.latency.rerank_top is not None and ops.cost.rerank_price_source == prices.LOCAL_SOURCE:
        steps.append("rerank")
    cores = ops.latency.timing_cores
    if cores and as_number(ops.latency.cpu_ms("search")) is not None:
        cpu = [as_number(ops.latency.cpu_ms(step)) for step in steps]
        return sum(v or 0.0 for v in cpu) / cores
    values = [as_number(ops.latency.ms(step, "mean")) for step in steps]
    if values[0] is None:
        return None
    return sum(v or 0.0 for v in values)


def at_scale(ops: Operating, search: str, corpus_documents: int, scale: Scale) -> dict[str, float | list[str] | None]:
    """A candidate's figures at the team's scale (``SCALE_KEYS``), from its measured ones."""
    factor = scale.factor(corpus_documents)
    mean = costs.end_to_end_ms(ops, "mean")
    embed_s = corpus_embed_seconds(ops)
    build_s = index_build_machine_seconds(ops)
    local_embed_s = embed_s if runs_locally(ops.cost.price_source) else 0.0
    query_s = seconds_per_1k_queries(local_query_ms(ops))
    gb = storage_gb_at_scale(stored_bytes(ops, search), factor, scale.replicas)
    embedding = monthly_embedding_usd(
        as_number(ops.cost.index_cost_usd), as_number(ops.cost.cost_per_1k_queries_usd), factor, scale
    )
    storage = monthly_storage_usd(gb, scale)
    compute = monthly_compute_usd(query_s, index_hours_at_scale(local_embed_s, build_s, factor), scale)
    total, includes = monthly_cost_usd(embedding, storage, compute, scale)
    return {
        "end_to_end_ms_p50": costs.end_to_end_ms(ops, "p50"),
        "end_to_end_ms_p95": costs.end_to_end_ms(ops, "p95"),
        "qps_single_thread": qps_single_thread(mean),
        "cpu_seconds_per_1k_queries": query_s,
        "index_hours_at_scale": index_hours_at_scale(embed_s, build_s, factor),
        "storage_gb_at_scale": gb,
        "monthly_embedding_usd": embedding,
        "monthly_storage_usd": storage,
        "monthly_compute_usd": compute,
        "monthly_cost_usd": total,
        "monthly_cost_includes": includes,
    }


def _times(value: float | None, by: float) -> float | None:
    return None if value is None else value * by
