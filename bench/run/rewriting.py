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
from bench.llm.asking import Request, prompt_tokens
from bench.llm.client import ChatClient, Usage
from bench.llm.http_api import is_loopback, redact_url
from bench.llm.prompts import Template
from bench.llm.replies import Prices, Tally
from bench.retrieval.rewrites import MAX_TOKENS, Rewrite, RewriteSpec, read_reply, searched_texts

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
        return is_loopback(self.base_url)

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
            "rewrites_failed": self.failed,
        }

    @property
    def failed(self) -> int:
        """Replies that gave no rewrite: those questions are searched as asked."""
        return sum(r.problem is not None for r in self.by_question.values())

    def searched(self, records: list[Retrieved]) -> list[Retrieved]:
        """Each question's record with what was searched for it (``extra.searched``), for the inspector."""
        return [
            dataclasses.replace(r, extra={**r.extra, "searched": list(searched_texts(self.by_question, r.question))})
            for r in records
        ]

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
            "failed": self.failed,
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
    chat = config.chat(spec, f"[query.{spec.name}]", spent)
    client = chat.client(MAX_TOKENS[spec.kind])
    asker = chat.asker(client, _replies(cache_root))
    template = spec.template()
    requests = _requests(spec, template, client, questions)
    with console.status(
        escape(f"rewriting {len(questions)} questions with {spec.model} ([query.{spec.name}])")
    ) as status:
        asker.status = status
        rows = asker.ask(requests, f"[query.{spec.name}]")
    missing = sum(r.key not in rows for r in requests)
    if missing:
        raise BenchError(
            f"[query.{spec.name}]: the budget ({usd(config.llm.max_cost or 0.0)}) allowed "
            f"{len(questions) - missing} of {len(questions)} rewrites ({usd(asker.tally.cost)} spent); raise "
            "--max-cost or [llm] max_cost (what was paid for is kept, and a rerun resumes), or leave these "
            f"candidates out with --skip '*~{spec.name}'"
        )
    by_question = {q: read_reply(spec, q, rows[r.key]) for q, r in zip(questions, requests)}
    done = Rewritten(spec, by_question, asker.tally, chat.prices, chat.base_url, template.describe())
    if done.failed:
        first = next(r.problem for r in by_question.values() if r.problem)
        console.print(
            "[yellow]warning:[/] "
            + escape(
                f"[query.{spec.name}]: {done.failed} of {len(questions)} replies gave no rewrite ({first}); "
                "those questions are searched as asked"
            )
        )
    console.print(escape(f"[query.{spec.name}] {spec.model}: {asker.tally.summary()}"))
    return done


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
    tokens by ``estimate_tokens`` and their price at the table's prices (``Asker.estimate``)."""
    spec = config.rewrite(name)
    chat = config.chat(spec, f"[query.{name}]")
    asker = chat.asker(chat.client(MAX_TOKENS[spec.kind]), _replies(cache_root))
    asked = _requests(spec, spec.template(), asker.client, list(dict.fromkeys(questions)))
    todo = [r for r in asked if r.key not in asker.log.entries]
    every = [asker.estimate(r) for r in asked]
    return RewriteEstimate(
        name, spec.model, len(asked), len(todo), sum(map(prompt_tokens, todo)), len(todo) * MAX_TOKENS[spec.kind],
        sum(map(asker.estimate, todo)), float(np.mean(every)) * 1000 if every else 0.0,
    )  # fmt: skip


def _requests(spec: RewriteSpec, template: Template, client: ChatClient, questions: list[str]) -> list[Request]:
    """One request per question, keyed by what is sent and to which model (the reply log's key)."""
    out = []
    for question in questions:
        messages = spec.messages(template, question)
        about = {"query": spec.name, "kind": spec.kind, "prompt": template.version}
        out.append(Request(client.request_key(messages), messages, about))
    return out


def _replies(cache_root: Path) -> Path:
    """The reply log every [query.NAME] with this cache folder shares."""
    return paths.rewrites_dir(cache_root) / "replies.jsonl"
