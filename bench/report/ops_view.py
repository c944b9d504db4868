"""A candidate's operating figures as every report states them: one end-to-end latency (query
embedding + search, + reranking when the pipeline reranks, + the chat call when it rewrites questions)
with its parts, queries per second on one thread, monthly cost at the configured scale, and the scale
itself in one line.

Runs that predate a figure get it derived from what they stored (end-to-end latency from its
parts, queries per second from the mean end-to-end latency); a figure that cannot be derived
(monthly cost without a [scale]) reads as missing, never as zero.
"""

from __future__ import annotations

from typing import Any

from bench.core.operating import Stat, Step
from bench.core.sections import as_number
from bench.core.summary import CandidateResult, Manifest, RunSummary
from bench.evaluation.costs import latency_ms
from bench.formatting import ms, size, usd

MISSING = "–"
STEPS: tuple[tuple[Step, str], ...] = (
    ("rewrite", "rewrite"), ("query_embed", "embed"), ("search", "search"), ("rerank", "rerank"),
)  # fmt: skip
SCALE_HINT = "monthly cost: set [scale] in bench.toml (documents, queries_per_month, replicas, prices)"


def latency(c: CandidateResult, stat: Stat = "p95") -> float | None:
    """End-to-end query latency in ms at ``stat`` (p50, p95, p99, mean)."""
    return latency_ms(c, stat)


def latency_parts(c: CandidateResult, stat: Stat = "p95") -> list[tuple[str, float]]:
    """(step, ms) of each step that applies: rewrite, embed, search, rerank."""
    return [(label, v) for step, label in STEPS if (v := as_number(c.ops.latency.ms(step, stat))) is not None]


def latency_text(c: CandidateResult, stat: Stat = "p95") -> str:
    """``841.3 (embed 0.0 + search 1.0 + rerank 840.3)``; the total alone when it has one part."""
    total = latency(c, stat)
    if total is None:
        return MISSING
    parts = latency_parts(c, stat)
    if len(parts) < 2:
        return ms(total)
    return f"{ms(total)} ({' + '.join(f'{label} {ms(v)}' for label, v in parts)})"


def qps(c: CandidateResult) -> float | None:
    """Queries a second answered one after another on one thread: stored, else 1000 / mean latency."""
    stored = as_number(c.ops.latency.qps_single_thread)
    if stored is not None:
        return stored
    mean = latency(c, "mean")
    return 1000.0 / mean if mean else None


def qps_text(c: CandidateResult) -> str:
    value = qps(c)
    if value is None:
        return MISSING
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}" if value >= 1 else f"{value:.2f}"


def monthly(c: CandidateResult) -> float | None:
    return as_number(c.ops.cost.monthly_cost_usd)


def priced(summary: RunSummary) -> bool:
    """Whether this run's candidates carry a monthly cost."""
    return any(monthly(c) is not None for c in summary.candidates)


def monthly_text(c: CandidateResult) -> str:
    return usd(monthly(c), MISSING)


def usd_text(value: object) -> str:
    return usd(as_number(value), MISSING)


def cost_per_1k_text(c: CandidateResult) -> str:
    return usd(c.ops.cost.cost_per_1k_queries_usd, MISSING)


def index_text(c: CandidateResult) -> str:
    """The index as built here, and at the configured scale when the run projects it."""
    here = size(as_number(c.ops.storage.index_bytes), MISSING)
    scaled = as_number(c.ops.storage.storage_gb_at_scale)
    if scaled is None or size(scaled * 1e9) == here:
        return here
    return f"{here} here, {size(scaled * 1e9)} at scale"


def includes(summary: RunSummary) -> list[str]:
    """What the monthly cost adds up, as the run says (the first candidate that says)."""
    for c in summary.candidates:
        parts = c.ops.cost.monthly_cost_includes
        if isinstance(parts, list) and parts:
            return [str(p) for p in parts]
    return []


def scale_line(summary: RunSummary, manifest: Manifest) -> str:
    """The scale the monthly figures are priced at, in one sentence; the hint to set it when the run
    has no monthly figures."""
    if not priced(summary):
        return SCALE_HINT
    from bench.evaluation.scale import Scale  # the defaults a run without [scale] was priced at

    configured = (manifest.config or {}).get("scale")
    stored = (summary.recommendation or {}).get("scale")
    table = stored if isinstance(stored, dict) else configured if isinstance(configured, dict) else {}
    default = Scale()

    def get(key: str) -> Any:  # Any: a [scale] value as stored, or the default of its field
        value = table.get(key, getattr(default, key))
        return getattr(default, key) if value is None and key not in ("documents", *UNPRICED) else value

    docs, here = get("documents"), (manifest.corpus or {}).get("documents")
    corpus = f"{docs:,} documents" if docs else "this corpus"
    if here:
        corpus += f" (this run: {here:,})" if docs else f" ({here:,} documents)"
    parts = [
        corpus,
        f"{get('queries_per_month'):,} queries a month",
        _plural(get("reindexes_per_month"), "re-index", "re-indexes") + " a month",
        _plural(get("replicas"), "replica", "replicas"),
    ]
    prices = {key: get(key) for key in UNPRICED}
    if prices["storage_usd_per_gb_month"] is not None:
        parts.append(f"storage {usd(prices['storage_usd_per_gb_month'])} per GB-month")
    if prices["hourly_usd"] is not None:
        parts.append(f"compute {usd(prices['hourly_usd'])} an hour")
    line = "Priced at " + ", ".join(parts)
    if not isinstance(configured, dict):
        line += " (the defaults: set [scale] in bench.toml)"
    added = includes(summary)
    if added:
        line += f". Monthly cost = {' + '.join(added)}"
    unpriced = [UNPRICED[key] for key, value in prices.items() if value is None]
    if unpriced:
        keys = " and ".join(key for key, value in prices.items() if value is None)
        line += f"; {' and '.join(unpriced)} not priced (set {keys} in [scale])"
    return line + "."


UNPRICED = {"storage_usd_per_gb_month": "storage", "hourly_usd": "local compute"}


def _plural(n: object, one: str, many: str) -> str:
    text = f"{n:g}" if isinstance(n, (int, float)) else str(n)
    return f"{text} {one if n == 1 else many}"


def timing_notes(summary: RunSummary) -> list[str]:
    """What the reader should know of how latency was timed: on a busy machine (its wall times higher
    than an idle one's; money is priced from CPU time, which the load inflates far less), or kept from
    an earlier run."""
    notes = []
    busy = [c for c in summary.candidates if c.ops.latency.timing_busy]
    if busy:
        share = max((as_number(c.ops.latency.timing_contention) or 0.0 for c in busy), default=0.0)
        notes.append(
            f"latency timed on a busy machine ({share:.0%} of the run's timed work waited for a CPU) for "
            f"{_plural(len(busy), 'candidate', 'candidates')}: its p50/p95 are higher than an idle machine's "
            "and were not kept for later runs; cost is priced from CPU time, which the load inflates far less; "
            "run again on an idle machine for latency to quote"
        )
    kept = {
        "query latency": {
            c.model: c.ops.latency.query_embed_measured
            for c in summary.candidates
            if c.ops.latency.query_embed_from_cache
        },
        "corpus embedding speed (indexing time and its compute cost)": {
            c.model: c.ops.indexing.corpus_speed_measured
            for c in summary.candidates
            if c.ops.indexing.corpus_speed_from_cache
        },
    }
    for what, models in kept.items():
        if models:
            when = ", ".join(f"{model} at {measured}" for model, measured in sorted(models.items()))
            notes.append(f"{what} timed earlier on this machine ({when}); --remeasure times it again")
    return notes
