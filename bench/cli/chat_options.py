"""The chat model's options, declared once for every command that asks one (`goldset draft`, `answers
generate`, `answers judge`): its address, name, key, prices, budget, and how many calls go at once.
A command is given them as one ``chat: ChatOptions`` and turns them into ``ChatSettings``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from bench.errors import BenchError

if TYPE_CHECKING:
    from bench.llm.settings import ChatSettings

_BASE_URL_EXAMPLE = "(e.g. http://127.0.0.1:8000/v1) or $BENCH_LLM_BASE_URL"
STOP_BEFORE = "Stop before a call that would take the cost past this."
SEND_NO_CALL = "Send no call that would take the cost past this."


@dataclass(frozen=True)
class ChatOptions:
    """The chat options as given; ``settings`` checks that the model can be found."""

    base_url: str | None
    model: str | None
    model_flag: str
    api_key_env: str
    max_cost: float | None
    price_in: float
    price_out: float
    concurrency: int

    def settings(self, needed_by: str | None = None) -> ChatSettings:
        """The settings to ask the model with; ``needed_by`` names the option that asks for a model
        (``--generate``) where the model is optional, for the message when it is missing."""
        from bench.llm.settings import ChatSettings

        who = f"{needed_by} needs" if needed_by else "give the chat model's"
        if not self.model:
            raise BenchError(f"{who} {self.model_flag} (the chat model's name, as its server knows it)")
        if not self.base_url:
            raise BenchError(f"{who} --llm-base-url {_BASE_URL_EXAMPLE}")
        chat = ChatSettings(
            self.base_url, self.model, api_key_env=self.api_key_env, concurrency=self.concurrency,
            max_cost=self.max_cost, price_in=self.price_in, price_out=self.price_out,
        )  # fmt: skip
        chat.check()
        return chat


def chat_options(
    model_flag: str, model_help: str, *, required: bool = True, max_cost_help: str = SEND_NO_CALL
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The chat options, passed to the command as one ``chat: ChatOptions``. ``required``: the model
    must be named (else the command asks for it only where it needs one)."""
    options = [
        click.option(
            "--llm-base-url",
            envvar="BENCH_LLM_BASE_URL",
            help="The chat model's OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 "
            "(default: $BENCH_LLM_BASE_URL).",
        ),
        click.option(model_flag, "llm_model", required=required, help=model_help),
        click.option(
            "--llm-api-key-env",
            default="OPENAI_API_KEY",
            show_default=True,
            help="Environment variable holding the API key (optional for a server on this machine).",
        ),
        click.option("--max-cost", type=float, metavar="USD", help=max_cost_help),
        click.option("--price-in", type=float, default=0.0, show_default=True, help="USD per million prompt tokens."),
        click.option("--price-out", type=float, default=0.0, show_default=True, help="USD per million reply tokens."),
        click.option("--concurrency", type=int, default=4, show_default=True, help="Calls in flight at once."),
    ]

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def command(**params: Any) -> Any:
            chat = ChatOptions(
                base_url=params.pop("llm_base_url"), model=params.pop("llm_model"), model_flag=model_flag,
                api_key_env=params.pop("llm_api_key_env"), max_cost=params.pop("max_cost"),
                price_in=params.pop("price_in"), price_out=params.pop("price_out"),
                concurrency=params.pop("concurrency"),
            )  # fmt: skip
            return f(chat=chat, **params)

        for option in reversed(options):
            command = option(command)
        return command

    return decorate
