"""The questions rewritten by each ``[query.NAME]`` a candidate of the run uses, before any candidate
is asked: every question once per model and prompt, however many candidates search its rewrite.

Replies are kept in the cache folder (``rewrites/replies.jsonl``) by a hash of what was sent and to
which model, so a rerun, or another run with the same questions, sends nothing. The budget ([llm]
max_cost) stops before a call that would pass it; a run whose rewrites the budget cut short stops
before any candidate is asked (what was paid for is kept, and a rerun resumes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.markup import escape

from bench import measure
from bench.config import Config
from bench.core.operating import Figures
from bench.core.records import Retrieved
from bench.core.sections import JsonObject
from bench.embedders import paths
from bench.errors import BenchError
from bench.formatting import usd
from bench.llm.asking import Request
from bench.llm.client import Usage, estimate_tokens
from bench.llm.http_api import LOOPBACK, redact_url
from bench.llm.replies import Prices, ReplyLog, Tally
from bench.retrieval.rewrites import MAX_TOKENS, Rewrite, RewriteSpec, read_reply

LOCAL_ENDPOINT = "a server on this machine"  # latency measured against it is not a provider's


@dataclass(frozen=True)
class Rewritten:
    """One ``[query.NAME]``'s rewrites of the run's questions, by question text, and what they cost."""

    spec: RewriteSpec
    by_question: dict[str, Rewrite]
    tally: Tally
    prices: Prices
    base_url: str
    prompt: JsonObject  # the prompt file's name, version and sha256

    @property
    def local(self) -> bool:
        from urllib.parse import urlsplit

        return (urlsplit(self.base_url).hostname or "") in LOOPBACK

    def figures(self) -> Figures:
        """What rewriting adds to a query: the chat call's latency as measured when each was sent, and
        its price per 1,000 queries from the tokens each question's call used."""
        rewrites = list(self.by_question.values())
        seconds = [r.seconds for r in rewrites if r.seconds is not None]
        costs = [
            self.prices.cost(Usage(r.prompt_tokens, r.completion_tokens, cached_prompt_tokens=r.cached_prompt_tokens))
            for r in rewrites
        ]
        return {
            **measure.latency_summary("rewrite", seconds),
            "rewrite_calls_timed": len(seconds),
            "rewrite_endpoint": LOCAL_ENDPOINT if self.local else redact_url(self.base_url),
            "rewrite_model": self.spec.model,
            "rewrite_price_source": "[query." + self.spec.name + "]",
            "rewrite_cost_per_1k_queries_usd": float(np.mean(costs)) * 1000 if costs else None,
            "rewrite_tokens_per_query": (
                float(np.mean([r.prompt_tokens + r.completion_tokens for r in rewrites])) if rewrites else None
            ),
            "rewrites_failed": sum(r.problem is not None for r in rewrites),
        }

    def searched(self, records: list[Retrieved]) -> list[Retrieved]:
        """Each question's record with what was searched for it (``extra.searched``), for the inspector."""
        return [dataclasses.replace(r, extra={**r.extra, "searched": list(self.texts(r.question))}) for r in records]

    def texts(self, question: str) -> tuple[str, ...]:
        rewrite = self.by_question.get(question)
        return rewrite.texts if rewrite is not None else (question,)

    def describe(self) -> JsonObject:
        """What the manifest records of it (never the key)."""
        return {
            "kind": self.spec.kind,
            "model": self.spec.model,
            "base_url": redact_url(self.base_url),
            "endpoint": LOCAL_ENDPOINT if self.local else "remote",
            "prompt": self.prompt,
            **({"n": self.spec.n} if self.spec.kind == "multi" else {}),
            **self.tally.to_meta(self.prices, None),
            "cost_sent_usd": round(self.tally.cost_sent, 6),
            "failed": sum(r.problem is not None for r in self.by_question.values()),
        }


def rewrite_questions(
    config: Config, names: Sequence[str], questions: Sequence[str], cache_root: Path, console: Console, spent: float
) -> dict[str, Rewritten]:
    """Every question rewritten by each of ``names`` ([query.NAME] tables), within what ``spent`` (the
    run's other chat calls, those found in the reply log included) leaves of the run's budget."""
    out: dict[str, Rewritten] = {}
    for name in names:
        spec = config.rewrite(name)
        out[name] = _rewrite(config, spec, list(dict.fromkeys(questions)), cache_root, console, spent)
        spent += out[name].tally.cost
    return out


def _rewrite(
    config: Config, spec: RewriteSpec, questions: list[str], cache_root: Path, console: Console, spent: float
) -> Rewritten:
    chat = config.chat(spec, f"[query.{spec.name}]")
    budget = None if chat.max_cost is None else max(chat.max_cost - spent, 0.0)
    client = chat.client(MAX_TOKENS[spec.kind])
    asker = chat.asker(client, paths.rewrites_dir(cache_root) / "replies.jsonl")
    asker.max_cost = budget
    template = spec.template()
    requests = []
    for question in questions:
        messages = spec.messages(template, question)
        about = {"query": spec.name, "kind": spec.kind, "prompt": template.version}
        requests.append(Request(client.request_key(messages), messages, about))
    with console.status(
        escape(f"rewriting {len(questions)} questions with {spec.model} ([query.{spec.name}])")
    ) as status:
        asker.status = status
        rows = asker.ask(requests, f"[query.{spec.name}]")
    missing = sum(r.key not in rows for r in requests)
    if missing:
        raise BenchError(
            f"[query.{spec.name}]: the budget ({usd(chat.max_cost or 0.0)}) allowed {len(questions) - missing} of "
            f"{len(questions)} rewrites ({usd(asker.tally.cost)} spent); raise --max-cost or [llm] max_cost (what "
            "was paid for is kept, and a rerun resumes), or leave these candidates out with --skip "
            f"'*~{spec.name}'"
        )
    by_question = {q: read_reply(spec, q, rows[r.key]) for q, r in zip(questions, requests)}
    failed = sum(r.problem is not None for r in by_question.values())
    if failed:
        first = next(r.problem for r in by_question.values() if r.problem)
        console.print(
            "[yellow]warning:[/] "
            + escape(
                f"[query.{spec.name}]: {failed} of {len(questions)} replies gave no rewrite ({first}); "
                "those questions are searched as asked"
            )
        )
    console.print(escape(f"[query.{spec.name}] {spec.model}: {asker.tally.summary()}"))
    return Rewritten(spec, by_question, asker.tally, chat.prices, chat.base_url, template.describe())


def with_rewrite(figures: Figures, rewritten: Rewritten) -> Figures:
    """A candidate's figures with its questions' rewriting: the chat call's latency and its price,
    added to the cost per 1,000 queries (unknown stays unknown)."""
    own = rewritten.figures()
    base, extra = figures.get("cost_per_1k_queries_usd"), own["rewrite_cost_per_1k_queries_usd"]
    total = base + extra if isinstance(base, int | float) and isinstance(extra, int | float) else None
    return {**figures, **own, "cost_per_1k_queries_usd": total}


@dataclass(frozen=True)
class RewriteEstimate:
    """What rewriting the run's questions would ask and cost, before anything is sent: an upper bound
    (every reply as long as ``max_tokens``; no prompt cache)."""

    name: str
    model: str
    questions: int
    calls: int  # not in the reply log yet
    prompt_tokens: int
    reply_tokens: int
    cost: float  # of the calls still to make
    per_1k_queries: float  # every question asked once, cache or not

    def line(self, max_cost: float | None) -> str:
        budget = ""
        if max_cost is not None:
            over = self.cost > max_cost
            budget = f"; {'over' if over else 'within'} the budget ({usd(max_cost)})"
            budget += ": the run would stop before asking" if over else ""
        return (
            f"[query.{self.name}] {self.model}: {self.questions} questions, {self.calls} calls "
            f"({self.questions - self.calls} in the cache), about {self.prompt_tokens:,} prompt and at most "
            f"{self.reply_tokens:,} reply tokens, at most {usd(self.cost)} (at most {usd(self.per_1k_queries)} "
            f"per 1,000 queries){budget}"
        )


def estimate(config: Config, name: str, questions: Sequence[str], cache_root: Path) -> RewriteEstimate:
    """The calls rewriting ``questions`` by [query.NAME] would send (those the reply log lacks), their
    tokens by ``estimate_tokens`` and their price at the table's prices."""
    spec = config.rewrite(name)
    chat = config.chat(spec, f"[query.{name}]")
    client = chat.client(MAX_TOKENS[spec.kind])
    log = ReplyLog(paths.rewrites_dir(cache_root) / "replies.jsonl")
    template = spec.template()
    asked = [spec.messages(template, q) for q in dict.fromkeys(questions)]
    prompts = [sum(estimate_tokens(m["content"]) for m in messages) for messages in asked]
    todo = [p for p, m in zip(prompts, asked) if client.request_key(m) not in log.entries]
    reply = MAX_TOKENS[spec.kind]

    def price(prompt: float, n: int) -> float:
        return (prompt * chat.price_in + n * reply * chat.price_out) / 1e6

    mean = float(np.mean(prompts)) if prompts else 0.0
    return RewriteEstimate(
        name, spec.model, len(asked), len(todo), sum(todo), len(todo) * reply, price(sum(todo), len(todo)),
        price(mean, 1) * 1000,
    )  # fmt: skip
