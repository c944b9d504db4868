"""What a candidate costs to run, in money and in time: cost arithmetic from tokens, seconds and a
price (``bench.evaluation.prices`` says which price applies), and query latency end to end.

Unknown is ``None`` and stays ``None`` through every function here: an unknown price is never
reported as $0. All money is USD; "Mtok" is one million input tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

from bench.core.operating import Operating, Stat, Step
from bench.core.sections import as_number
from bench.core.summary import CandidateResult
from bench.evaluation.prices import Price

TOKENS_PER_MTOK = 1_000_000
SECONDS_PER_HOUR = 3600


# --- arithmetic: None in, None out ----------------------------------------------------------------


def index_cost_usd(index_tokens: int | float | None, price_per_mtok: float | None) -> float | None:
    """Embedding the whole corpus once: ``index_tokens / 1e6 * price_per_mtok``."""
    if index_tokens is None or price_per_mtok is None:
        return None
    return index_tokens / TOKENS_PER_MTOK * price_per_mtok


def cost_per_1k_queries_usd(mean_tokens_per_question: float | None, price_per_mtok: float | None) -> float | None:
    """Embedding 1,000 queries of the goldset's mean length: ``mean * 1000 / 1e6 * price_per_mtok``."""
    if mean_tokens_per_question is None or price_per_mtok is None:
        return None
    return mean_tokens_per_question * 1000 / TOKENS_PER_MTOK * price_per_mtok


def run_cost_usd(billed_tokens: int | float | None, price_per_mtok: float | None) -> float | None:
    """What this run was billed: ``billed_tokens / 1e6 * price_per_mtok``.

    ``billed_tokens`` counts only tokens actually sent this run; texts served from the embedding
    cache cost nothing, so a warm rerun costs $0.
    """
    if billed_tokens is None or price_per_mtok is None:
        return None
    return billed_tokens / TOKENS_PER_MTOK * price_per_mtok


def compute_cost_usd(seconds: float | None, hourly_usd: float | None) -> float | None:
    """Machine time for a self-hosted model: ``seconds / 3600 * hourly_usd`` (an estimate)."""
    if seconds is None or hourly_usd is None:
        return None
    return seconds / SECONDS_PER_HOUR * hourly_usd


# --- what a query costs in time ------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """What one candidate consumed in a run, for its price to apply to."""

    n_chunks: int
    index_tokens: int | None  # the corpus in the model's own tokens; None when no model reads it
    question_tokens_mean: float | None
    chunks_embedded: int  # texts sent to the model in this run: cache hits are free
    questions_embedded: int
    embed_seconds: float
    reported_tokens: int | None  # what an API said it billed for this run's calls, when it says
    query_ms_mean: float | None  # one query: embedding plus search, measured
    corpus_embed_seconds: float | None = None  # embedding the whole corpus (measured, kept or sampled)


class RunCosts(TypedDict):
    """A candidate's money figures, by their keys in summary.json's ``ops``."""

    price_per_mtok: float | None
    price_source: str
    price_date: str | None
    cost_estimate: bool
    index_cost_usd: float | None
    cost_per_1k_queries_usd: float | None
    billed_tokens: int | None
    run_cost_usd: float | None


def candidate_costs(price: Price, usage: Usage, hourly: float | None) -> RunCosts:
    """Money, from tokens and the price: indexing, per 1k queries, and what this run billed.

    Billed tokens count only texts sent to the model in this run; an API's reported usage is used
    when it gives one, else the model's own tokenizer. An hourly compute price (``estimate``)
    makes cost follow measured seconds instead.
    """
    p = price.price_per_mtok
    billed = None
    if usage.index_tokens is not None and usage.n_chunks:
        per_chunk = usage.index_tokens / usage.n_chunks
        per_question = usage.question_tokens_mean or 0.0
        billed = round(per_chunk * usage.chunks_embedded + per_question * usage.questions_embedded)
    if usage.reported_tokens is not None:
        billed = usage.reported_tokens
    figures: RunCosts = {
        "price_per_mtok": p,
        "price_source": price.source,
        "price_date": price.date,
        "cost_estimate": price.estimate,
        "index_cost_usd": index_cost_usd(usage.index_tokens, p),
        "cost_per_1k_queries_usd": cost_per_1k_queries_usd(usage.question_tokens_mean, p),
        "billed_tokens": billed,
        "run_cost_usd": run_cost_usd(billed, p) if billed is not None else (0.0 if p == 0 else None),
    }
    if p == 0:  # free whatever the token counts (BM25 has none)
        figures["index_cost_usd"] = figures["cost_per_1k_queries_usd"] = figures["run_cost_usd"] = 0.0
    if price.estimate:
        seconds = usage.embed_seconds
        per_chunk_s = seconds / usage.chunks_embedded if usage.chunks_embedded else None
        whole = usage.corpus_embed_seconds
        if whole is None and per_chunk_s:
            whole = per_chunk_s * usage.n_chunks
        figures["index_cost_usd"] = compute_cost_usd(whole, hourly)
        figures["run_cost_usd"] = compute_cost_usd(seconds, hourly)
        if usage.query_ms_mean is not None:
            # 1,000 queries at the mean measured milliseconds each take that many seconds
            figures["cost_per_1k_queries_usd"] = compute_cost_usd(usage.query_ms_mean, hourly)
    return figures


QUERY_STEPS: tuple[Step, ...] = ("rewrite", "query_embed", "search", "rerank")  # what one query goes through, in order


def latency_ms(candidate: CandidateResult, stat: Stat = "p95") -> float | None:
    """End-to-end query latency in ms as a run reports it: its own stored figure (p50, p95) where it
    has a number, else the steps' added up (:func:`end_to_end_ms`)."""
    stored = as_number(candidate.ops.latency.end_to_end_ms(stat))
    return stored if stored is not None else end_to_end_ms(candidate, stat)


def end_to_end_ms(candidate: CandidateResult | Operating, stat: Stat = "p95") -> float | None:
    """Query latency end to end: rewriting the question, embedding it, searching the index and reranking, in ms;
    ``stat`` one of p50, p95, p99, mean (for a percentile, the sum of each step's: a bound on the whole's).
    ``candidate`` is a candidate or its operating figures.

    A step that does not apply (BM25 embeds nothing, most pipelines do not rerank) counts as 0; None
    when none was timed.
    """
    latency = (candidate if isinstance(candidate, Operating) else candidate.ops).latency
    parts = [latency.ms(step, stat) for step in QUERY_STEPS]
    return None if all(p is None for p in parts) else sum(p or 0.0 for p in parts)


def end_to_end_p95_ms(candidate: CandidateResult) -> float | None:
    return end_to_end_ms(candidate, "p95")


# --- the best-scoring candidate -------------------------------------------------------------------


def best_candidate(candidates: Sequence[CandidateResult], metric: str) -> CandidateResult | None:
    """The highest ``quality[metric]`` (ties: lowest id); None when no candidate has a score."""
    scored = [(s, c) for c in candidates if (s := _score(c, metric)) is not None]
    if not scored:
        return None
    return min(scored, key=lambda sc: (-sc[0], sc[1].id))[1]


def _score(candidate: CandidateResult, metric: str) -> float | None:
    return as_number(candidate.quality.get(metric))
