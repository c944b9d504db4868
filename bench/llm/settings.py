"""The chat model to ask and how: one value that the drafter, the answer layer and any later use of a
chat model take, and the client and asker made from it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.errors import BenchError
from bench.llm.asking import Asker
from bench.llm.client import ChatClient
from bench.llm.http_api import redact_url
from bench.llm.replies import Prices, ReplyLog


@dataclass(frozen=True)
class ChatSettings:
    """Where the model is, its key (the name of the environment variable that holds it), how it is
    asked (temperature, reply length, timeout, attempts), how many calls go at once, the budget and
    the prices (USD per million tokens)."""

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 4
    max_cost: float | None = None
    price_in: float = 0.0
    price_out: float = 0.0
    price_cached_in: float | None = None  # prompt tokens read from the server's prompt cache
    temperature: float = 0.0
    max_tokens: int | None = None  # None: what the use needs (an answer is longer than a verdict)
    max_attempts: int = 6
    timeout_s: float = 120.0

    @property
    def prices(self) -> Prices:
        return Prices(self.price_in, self.price_out, self.price_cached_in)

    def check(self) -> None:
        if self.concurrency < 1:
            raise BenchError(f"--concurrency {self.concurrency} must be at least 1")
        if self.max_cost is not None and self.max_cost < 0:
            raise BenchError(f"--max-cost {self.max_cost:g} must not be negative")

    def client(self, max_tokens: int, json_mode: bool = True) -> ChatClient:
        """The client, with ``max_tokens`` of reply unless these settings give their own."""
        return ChatClient(
            self.base_url, self.model, api_key_env=self.api_key_env, temperature=self.temperature,
            max_tokens=max_tokens if self.max_tokens is None else self.max_tokens, timeout_s=self.timeout_s,
            max_attempts=self.max_attempts, json_mode=json_mode,
        )  # fmt: skip

    def asker(self, client: ChatClient, log: Path) -> Asker:
        """An asker within these settings' budget, its replies logged in ``log``."""
        return Asker(client, ReplyLog(log), self.concurrency, self.max_cost, self.prices)

    def describe(self, client: ChatClient) -> dict[str, object]:
        """What a file's meta records of the model asked (never the key)."""
        return {
            "model": self.model, "base_url": redact_url(client.base_url), "temperature": self.temperature,
            "max_tokens": client.max_tokens,
        }  # fmt: skip
