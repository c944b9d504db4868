"""Pipeline steps that ask a chat model — chunks situated in their document ([context.NAME]) and
questions rewritten before retrieval ([query.NAME]) — as bench.toml declares them: the endpoint they
share ([llm]) and what each step names (its model, its prices, its prompt file).

Prices are USD per million tokens, kept as written (an integer stays one, so a config's hash stays
what it was); prompt tokens a server reads from its prompt cache are priced at ``price_cached_in``
where it is given.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.core.tables import setting

BASE_URL_ENV = "BENCH_LLM_BASE_URL"  # where the endpoint is read from when [llm] gives no base_url


@dataclass(frozen=True)
class ChatEndpoint:
    """``[llm]``: the OpenAI-compatible chat endpoint every step that asks a model uses, the
    environment variable holding its key, how many calls go at once and the run's budget for them."""

    base_url: str | None = setting(
        None, blank=False, what="an http(s) URL", note=f'e.g. "http://127.0.0.1:8000/v1" (else ${BASE_URL_ENV})'
    )
    api_key_env: str = setting("OPENAI_API_KEY", blank=False, what="the name of an environment variable")
    concurrency: int = setting(4, minimum=1, note="(calls in flight at once)")
    max_cost: int | float | None = setting(None, minimum=0, what="USD", note="(no call that would pass it is sent)")
    timeout_s: int | float = setting(120, above=0, what="seconds")
    max_attempts: int = setting(6, minimum=1)


@dataclass(frozen=True)
class ChatUse:
    """What a step that asks a chat model names: the model, its prices and, optionally, a prompt file
    of its own (relative to the config's folder) instead of the shipped one."""

    model: str = setting(blank=False, what="the chat model's name", note='e.g. model = "gpt-4o-mini"')
    price_in: int | float = setting(0, minimum=0, what="USD per million prompt tokens")
    price_out: int | float = setting(0, minimum=0, what="USD per million reply tokens")
    price_cached_in: int | float | None = setting(None, minimum=0, what="USD per million cached prompt tokens")
    prompt: str | None = setting(None, blank=False, what="a path to a prompt file")
