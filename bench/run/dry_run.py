"""Looking before spending: chunk statistics per chunker and the candidate grid with token counts and cost.

Nothing here embeds text, except a semantic chunker, which cannot split without its model; it is
reported as such instead of being run. The dry run refuses what would stop the run: a goldset or
corpus changed since its lock, an API key not set, a service that accepts no connection; with
questions only, it estimates what the relevance judge will be asked and cost.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.console import Console
from rich.markup import escape

from bench.chunking.context import contextual
from bench.chunking.situate import MAX_TOKENS, load_prompt
from bench.chunking.table import ChunkTable
from bench.chunking.tokens import count_tokens, count_tokens_each
from bench.config import Candidate, Config
from bench.core.chat_use import ChatUse
from bench.embedders import paths
from bench.errors import BenchError, EnvironmentFault
from bench.evaluation import costs, scale
from bench.formatting import usd
from bench.inputs.corpus import Corpus
from bench.inputs.corpus_stats import corpus_languages
from bench.inputs.goldset import Goldset, load_goldset
from bench.inputs.goldset_stats import question_languages
from bench.inputs.lock import LockStatus, check_lock
from bench.inputs.questions import questions_only
from bench.judging import relevance_judge
from bench.llm import http_api
from bench.llm.asking import Asker, prompt_tokens
from bench.llm.client import estimate_tokens
from bench.llm.replies import ReplyLog
from bench.retrieval.rerankers import reranker_costs
from bench.retrieval.stores.hosts import store_problem
from bench.run import rewriting
from bench.run.contexts import REPLIES as CONTEXT_REPLIES
from bench.run.contexts import planned_requests, situated_chunkers
from bench.run.models import language_findings
from bench.run.options import RunOptions
from bench.run.progress import print_warnings, read_corpus, warn

if TYPE_CHECKING:
    from bench.llm.settings import ChatSettings

CONNECT_TIMEOUT_S = 3.0  # for each service's host to accept a connection


def tables_without_models(config: Config, corpus: Corpus) -> tuple[dict[str, ChunkTable], list[str]]:
    """Chunk with every chunker that needs no model; name the ones that do."""
    tables: dict[str, ChunkTable] = {}
    skipped = []
    for spec in config.chunkers:  # the plain ones first, whose tables the contextual ones add headers to
        if spec.model:
            skipped.append(spec.name)
        elif spec.situated:  # its contexts are written by a chat model only when the run asks it
            tables[spec.name] = tables[spec.plain]
        elif spec.context:
            tables[spec.name] = contextual(tables[spec.plain], corpus)
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
    monthly_embedding_usd: float | None = None  # at [scale]: re-indexing and queries, reranking included
    context_cost_usd: float = 0.0  # at most, a chat model writing the chunker's contexts ([context.NAME])

    @property
    def index_cost_usd(self) -> float | None:
        return _plus(costs.index_cost_usd(self.corpus_tokens, self.price_per_mtok), self.context_cost_usd)

    @property
    def run_cost_usd(self) -> float | None:
        """What a cold run would bill: the corpus and every question once, and the contexts."""
        if self.corpus_tokens is None:
            return None
        embedding = costs.run_cost_usd(self.corpus_tokens + self.question_tokens, self.price_per_mtok)
        return _plus(embedding, self.context_cost_usd)


def plan(
    config: Config,
    candidates: list[Candidate],
    tables: dict[str, ChunkTable],
    goldset: Goldset,
    documents: int | None = None,
    rewrite_per_1k: dict[str, float] | None = None,
    context_usd: Mapping[str, float] | None = None,
) -> list[PlannedCandidate]:
    """Token counts are cl100k tokens: the billing unit of OpenAI models, an estimate for others.
    ``documents``: the corpus's, for the monthly projection to ``[scale]``; ``rewrite_per_1k``: each
    [query.NAME]'s estimated price per 1,000 queries; ``context_usd``: per situated chunker, what
    writing its contexts costs at most (``context_estimates``)."""
    question_tokens = sum(count_tokens(q.text) for q in goldset.questions)
    corpus_tokens = {name: int(count_tokens_each(table.iter_texts()).sum()) for name, table in tables.items()}
    mean_question = question_tokens / len(goldset.questions) if goldset.questions else None
    factor = config.scale.factor(documents or 0)
    planned = []
    for cand in candidates:
        table = tables.get(cand.chunker)
        price = _price_per_mtok(config, cand)
        per_1k = _plus(costs.cost_per_1k_queries_usd(mean_question, price), _rerank_per_1k(config, cand))
        if cand.query:
            per_1k = _plus(per_1k, (rewrite_per_1k or {}).get(cand.query))
        context = (context_usd or {}).get(cand.chunker, 0.0)
        index_cost = _plus(costs.index_cost_usd(corpus_tokens.get(cand.chunker), price), context)
        planned.append(
            PlannedCandidate(
                candidate=cand,
                chunks=len(table) if table is not None else None,
                corpus_tokens=corpus_tokens.get(cand.chunker),
                question_tokens=question_tokens,
                price_per_mtok=price,
                monthly_embedding_usd=scale.monthly_embedding_usd(index_cost, per_1k, factor, config.scale),
                context_cost_usd=context,
            )
        )
    return planned


def _rerank_per_1k(config: Config, cand: Candidate) -> float | None:
    """A reranker's price per 1,000 queries where it is known before running: a price per search, or
    none for a local model; a price per token or per hour needs the run's measurements."""
    if not cand.reranker:
        return 0.0
    spec = config.reranker(cand.reranker)
    if spec.price_per_mtok is not None or spec.hourly_usd is not None:
        return None
    if spec.kind == "bi-encoder" and spec.model and config.price(spec.model).price_per_mtok != 0:
        return None  # its model's tokens: the passages it re-scores are counted only by the run
    return reranker_costs(spec)["rerank_cost_per_1k_queries_usd"]


def _plus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def _price_per_mtok(config: Config, cand: Candidate) -> float | None:
    """What a token costs the candidate: every model of a fusion reads the whole corpus, so their
    prices add up (unknown when any is). A reranker is priced per search, not here."""
    prices = [config.price(part.model).price_per_mtok for part in config.parts(cand)]
    return None if any(p is None for p in prices) else sum(p for p in prices if p is not None)


def dry_run(run: RunOptions | Config, console: Console | None = None, **changes: Any) -> list[PlannedCandidate]:
    """The grid with chunk and token counts and estimated cost, before anything is embedded, for the
    run ``run`` (options, or a Config with the options' defaults, changed by ``changes``). Files of
    the corpus left out are warned about on ``console`` (standard error when None).

    What would stop the run is a BenchError with one line per problem: the goldset or corpus
    changed since the lock (as ``bench run`` refuses it, unless ``allow_unlocked``), an API key
    not set, a service whose host accepts no connection (nothing is sent to it)."""
    options = RunOptions.of(run, **changes)
    config = options.load_config()
    root = paths.cache_root(config.cache_dir, config.cache_override)
    console = console or Console(stderr=True)
    corpus = read_corpus(
        config.corpus, paths.extracted_dir(root), console, options.strict, warn=False, limits=config.documents
    )
    goldset = load_goldset(config.goldset, corpus) if options.questions is None else questions_only(options.questions)
    print_warnings(console, corpus)
    candidates = config.candidates(options.only, options.skip)
    languages = language_findings(config, candidates, corpus_languages(corpus), question_languages(goldset))
    warn(console, languages["warnings"])  # a model that does not read the corpus: known before anything is embedded
    lock = lock_problem(goldset, corpus, options.allow_unlocked, console) if options.questions is None else None
    problems = [lock] if lock else []
    problems += service_problems(config, candidates)
    if options.judge is not None:
        problems += chat_problems(options.judge, "relevance judge", "--llm-base-url")
    rewrites = sorted({c.query for c in candidates if c.query})
    for name in rewrites:
        problems += _step_problems(config, config.rewrite(name), f"[query.{name}]")
    problems += context_problems(config, {c.chunker for c in candidates})
    if problems:
        raise BenchError("\n".join(problems))
    used = dict.fromkeys(part.index for c in candidates for part in config.parts(c) if part.index in config.index_specs)
    stores = [found for index in used if (found := store_problem(config.index(index)))]
    if stores:
        raise EnvironmentFault("\n".join(stores))
    tables, _ = tables_without_models(config, corpus)
    lines, context_usd = context_estimates(config, corpus, tables, {c.chunker for c in candidates}, root)
    for line in lines:
        console.print(line, markup=False, soft_wrap=True)
    if options.judge is not None:
        console.print(judge_estimate(options.judge, goldset, candidates, tables, config.k))
    questions = [q.text for q in goldset.questions]
    estimates = {name: rewriting.estimate(config, name, questions, root) for name in rewrites}
    for estimated in estimates.values():
        console.print(estimated.line(config.llm.max_cost), markup=False, soft_wrap=True)
    per_1k = {name: e.per_1k_queries for name, e in estimates.items()}
    return plan(
        config, candidates, tables, goldset, documents=len(corpus), rewrite_per_1k=per_1k, context_usd=context_usd
    )


def chat_problems(chat: ChatSettings, what: str, fix: str) -> list[str]:
    """What would stop a chat model's first request: its key not set (a loopback URL needs none), a host
    that accepts no connection. Nothing is sent."""
    try:
        client = chat.client(1)
    except BenchError as e:
        return [str(e)]
    why = http_api.unreachable(client.url, CONNECT_TIMEOUT_S)
    if why:
        return [f"{what}: cannot connect to {client.shown_url} ({why}); start the server or fix {fix}"]
    return []


def _step_problems(config: Config, use: ChatUse, what: str) -> list[str]:
    """What would stop a pipeline step that asks a chat model (``what``: its table) at its first request."""
    try:
        chat = config.chat(use, what)
    except BenchError as e:
        return [str(e)]
    return chat_problems(chat, what, "base_url in [llm]")


def context_problems(config: Config, chunkers: set[str]) -> list[str]:
    """What would stop the contexts of the situated chunkers a run uses at their first request: no
    endpoint, a key not set (a loopback URL needs none), a host that accepts no connection."""
    used = [spec for spec in config.contexts if situated_chunkers(config, spec, chunkers)]
    return [p for spec in used for p in _step_problems(config, spec, f"[context.{spec.name}]")]


def context_estimates(
    config: Config, corpus: Corpus, tables: dict[str, ChunkTable], chunkers: set[str], cache_root: Path
) -> tuple[list[str], dict[str, float]]:
    """For each [context.NAME] the run uses, a line: its chunks, the replies the cache holds, and the
    prompt and reply tokens and dollars of the rest, as if no prompt were read from a server's cache
    (an upper bound: a document's requests share their prefix). And per situated chunker, what its
    contexts cost at most, all of them, as the index cost counts them. Nothing is sent."""
    lines, whole = [], {}
    log = ReplyLog(cache_root / CONTEXT_REPLIES)
    for spec in config.contexts:
        used = situated_chunkers(config, spec, chunkers)
        if not used:
            continue
        chat = config.chat(spec, f"[context.{spec.name}]")
        asker = Asker(chat.client(MAX_TOKENS, json_mode=False), log, prices=chat.prices)
        keys: dict[str, list[str]] = {c.name: [] for c in used}
        tokens: dict[str, int] = {}  # every request's prompt tokens, by key
        dollars: dict[str, float] = {}  # and what it costs at most
        plain = [(c.name, tables[c.plain]) for c in used]
        for request in planned_requests(asker.client, load_prompt(spec.prompt_path), spec, plain, corpus, keys):
            tokens[request.key], dollars[request.key] = prompt_tokens(request), asker.estimate(request)
        for c in used:
            whole[c.name] = sum(dollars[k] for k in set(keys[c.name]))
        ask = [k for k in tokens if k not in log.entries]
        prompt, reply = sum(tokens[k] for k in ask), len(ask) * MAX_TOKENS
        cost = sum(dollars[k] for k in ask)
        budget = ""
        if chat.max_cost is not None:
            over = cost > chat.max_cost
            budget = f"; {'over' if over else 'within'} the budget ({usd(chat.max_cost)})"
            budget += ": the run would stop before indexing" if over else ""
        lines.append(
            f"[context.{spec.name}] {spec.model}: {sum(len(k) for k in keys.values()):,} chunks of "
            f"{', '.join(c.plain for c in used)}, {len(tokens) - len(ask):,} replies in the cache, {len(ask):,} to "
            f"ask: about {prompt:,} prompt and at most {reply:,} reply tokens, at most {usd(cost)} "
            f"(no prompt caching assumed: an upper bound){budget}"
        )
    return lines, whole


def judge_estimate(
    chat: ChatSettings, goldset: Goldset, candidates: list[Candidate], tables: dict[str, ChunkTable], k: int
) -> str:
    """At most how many passages the relevance judge will be asked about, their tokens and what they
    cost: every candidate's top k of every question, before pooling removes the repeats."""
    asks = len(goldset.questions) * len(candidates) * k
    question = sum(estimate_tokens(q.text) for q in goldset.questions) / max(1, len(goldset.questions))
    chunk = _mean_chunk_tokens(tables)
    rubric = relevance_judge.load_rubric()
    prompt = asks * (question + chunk + estimate_tokens(rubric.sections["system"] + rubric.sections["grade"]))
    reply = asks * relevance_judge.MAX_TOKENS
    cost = (prompt * chat.price_in + reply * chat.price_out) / 1e6
    budget = f"; --max-cost {usd(chat.max_cost)} stops before that" if chat.max_cost is not None else ""
    return (
        f"relevance judge {chat.model}: at most {asks:,} passages ({len(candidates)} candidates × "
        f"{len(goldset.questions)} questions × top {k}; pooling asks each repeat once), about {prompt:,.0f} "
        f"prompt and {reply:,} reply tokens, at most {usd(cost)}{budget}"
    )


def _mean_chunk_tokens(tables: dict[str, ChunkTable]) -> float:
    lengths = [float(np.mean(table.end - table.start)) for table in tables.values() if len(table.start)]
    return (sum(lengths) / len(lengths)) / 4 if lengths else 0.0  # characters to tokens as estimate_tokens counts


def lock_problem(goldset: Goldset, corpus: Corpus, allow_unlocked: bool, console: Console) -> str | None:
    """The lock as ``bench run`` checks it: the line that refuses the run, else None (a goldset
    without a lock, or one let through by ``allow_unlocked``, is warned about on ``console``)."""
    try:
        run_lock(goldset, corpus, allow_unlocked, console, "the run would go unlocked")
    except BenchError as e:
        return str(e)
    return None


def run_lock(goldset: Goldset, corpus: Corpus, allow_unlocked: bool, console: Console, unlocked: str) -> LockStatus:
    """The goldset's lock checked against the corpus: a BenchError when it no longer matches (unless
    ``allow_unlocked``, then a warning that begins with ``unlocked``), a warning when there is none."""
    lock = check_lock(goldset, corpus)
    if lock.problem and not allow_unlocked:
        raise BenchError(lock.problem)
    if not lock.locked and not lock.problem:
        console.print(
            f"[yellow]warning:[/] {escape(str(goldset.path))} is not locked; "
            f"lock the reviewed goldset with `bench goldset lock {escape(str(goldset.path))}`"
        )
    elif lock.problem:
        console.print(f"[yellow]warning:[/] {unlocked}: {escape(lock.problem)}")
    return lock


def service_problems(config: Config, candidates: list[Candidate], timeout_s: float = CONNECT_TIMEOUT_S) -> list[str]:
    """What would stop the run at its first request to a service, one line each: the API key of
    an API model or HTTP reranker not set (a loopback URL needs none), a host that accepts no TCP
    connection. Nothing is sent: no text is embedded or scored, nothing is billed."""
    from bench.embedders.openai_http import OpenAIEmbedder
    from bench.retrieval.rerankers import HttpReranker

    problems: list[str] = []
    endpoints: dict[str, tuple[str, str]] = {}  # url -> (what, how to fix it when nothing answers)
    for name in _models_used(config, candidates):
        spec = config.model(name)
        if not spec.remote:
            continue
        try:
            embedder = OpenAIEmbedder(spec)  # reads its URL and key from the environment; sends nothing
        except BenchError as e:
            problems.append(str(e))
            continue
        table = f"[model.{name}]"
        if not http_api.is_loopback(embedder.url) and not os.environ.get(embedder.api_key_env, "").strip():
            problems.append(
                f"model {name!r}: ${embedder.api_key_env} is not set, and {embedder.shown_url} needs an API key; "
                f"export the key in ${embedder.api_key_env} (api_key_env in {table} names the variable)"
            )
        endpoints.setdefault(
            embedder.url,
            (f"model {name!r}", f"start the server, or set ${embedder.base_url_env} (or base_url in {table})"),
        )
    for name in dict.fromkeys(c.reranker for c in candidates if c.reranker):
        reranker = config.reranker(name)
        if reranker.kind != "http" or not reranker.url:
            continue
        try:
            HttpReranker(reranker)  # refuses a missing key as the run would; sends nothing
        except BenchError as e:
            problems.append(str(e))
        endpoints.setdefault(
            reranker.url, (f"reranker {name!r}", f"start the service, or fix url in [reranker.{name}]")
        )
    for url, (what, fix) in endpoints.items():
        why = http_api.unreachable(url, timeout_s)
        if why:
            problems.append(f"{what}: cannot connect to {http_api.redact_url(url)} ({why}); {fix}")
    return problems


def _models_used(config: Config, candidates: list[Candidate]) -> list[str]:
    """Every model the candidates embed with: their first stages', bi-encoder rerankers' and
    semantic chunkers'."""
    names = [part.model for c in candidates for part in config.parts(c)]
    rerankers = [config.reranker(c.reranker) for c in candidates if c.reranker]
    names += [r.model for r in rerankers if r.kind == "bi-encoder" and r.model]
    chunkers = {c.chunker for c in candidates}
    names += [spec.model for spec in config.chunkers if spec.model and spec.name in chunkers]
    return list(dict.fromkeys(names))
