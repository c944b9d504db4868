"""The client of an OpenAI-compatible ``POST {base_url}/chat/completions`` (standard library only),
with what a reply holds: its text, its usage (or an estimate of it), a refusal, the JSON in it.

It asks for a JSON reply (``response_format={"type": "json_object"}``) and, when a server answers
400 naming ``response_format``, asks once more without it and remembers. A 429, a 5xx, a timeout or
a connection error is retried with exponential backoff (full jitter) or after the server's
``Retry-After``. Redirects are refused (urllib would re-send the key). The key is read from the
environment variable the user names and lives in a ``Secret``: no repr, log or message shows it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import urllib.parse
from dataclasses import dataclass

from bench.errors import BenchError
from bench.llm.http_api import (
    EndpointCounters,
    Exhausted,
    JsonEndpoint,
    Rejected,
    Secret,
    backoff,
    is_loopback,
    redact_url,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False  # the server sent no usage: counted by estimate_tokens
    cached_prompt_tokens: int = 0  # of prompt_tokens, those the server read from its prompt cache

    def to_dict(self) -> dict[str, int | bool]:
        out: dict[str, int | bool] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "estimated": self.estimated,
        }
        if self.cached_prompt_tokens:
            out["cached_prompt_tokens"] = self.cached_prompt_tokens
        return out

    @classmethod
    def from_dict(cls, d: object) -> Usage:
        if not isinstance(d, dict):
            return cls(estimated=True)
        return cls(
            int(d.get("prompt_tokens", 0)), int(d.get("completion_tokens", 0)), bool(d.get("estimated", False)),
            int(d.get("cached_prompt_tokens", 0)),
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Reply:
    text: str
    usage: Usage
    refusal: str = ""  # what a model that declined said instead (OpenAI's ``message.refusal``)


def estimate_tokens(text: str) -> int:
    """Tokens of a text as an estimate that needs no tokenizer of the model: four ASCII characters
    a token, and a token for every other character. Chinese, Japanese, Korean, Thai and Hindi take
    0.9 to 1.2 tokens a character in cl100k (1.21 over CMRC 2018's passages), Arabic 0.8, Russian
    0.5: an estimate that keeps a budget is rather high than low."""
    if text.isascii():
        return (len(text) + 3) // 4
    other = len(text) - len(text.encode("ascii", "ignore"))
    return (len(text) - other + 3) // 4 + other


def _cached(usage: dict[str, object]) -> int:
    """Prompt tokens read from the server's prompt cache (OpenAI's ``prompt_tokens_details.cached_tokens``)."""
    details = usage.get("prompt_tokens_details")
    try:
        return int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    except (TypeError, ValueError):
        return 0


def json_in_reply(text: str) -> object | None:
    """The JSON a model replied with: the whole reply, a code fence's content, or the outermost
    ``{...}`` among words around it; None when there is none."""
    candidates = [text.strip(), *re.findall(r"```(?:json|JSON)?\s*(.*?)```", text, re.S)]
    first, last = text.find("{"), text.rfind("}")
    if 0 <= first < last:
        candidates.append(text[first : last + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None


class ChatClient(EndpointCounters):
    """Sends chat completions to one model; safe to call from several threads."""

    backoff_base: float = 0.5
    backoff_cap: float = 16.0
    retry_after_cap: float = 60.0  # a server's Retry-After is honoured up to this many seconds

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout_s: float = 120.0,
        max_attempts: int = 6,
        json_mode: bool = True,
    ) -> None:
        base = (base_url or "").strip()
        parts = urllib.parse.urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise BenchError(
                f"chat model base URL {redact_url(base)!r} is not an http(s) URL; "
                "give one like http://127.0.0.1:8000/v1 (--llm-base-url or $BENCH_LLM_BASE_URL)"
            )
        if max_attempts < 1:
            raise BenchError(f"max_attempts = {max_attempts} must be at least 1")
        self.base_url = base.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.shown_url = redact_url(self.url)
        self.model = model
        self.api_key_env = api_key_env
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout_s = float(timeout_s)
        self.max_attempts = max_attempts
        self.json_mode = json_mode
        self._key = Secret(os.environ.get(api_key_env, "").strip())
        if not self._key and not is_loopback(base):
            raise BenchError(f"${api_key_env} is not set: export the API key for {redact_url(self.base_url)} in it")
        self._endpoint = JsonEndpoint(self.url, self._key, "bench-draft/0.1", self.timeout_s)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        key = "set" if self._key else "unset"
        return f"ChatClient(model={self.model!r}, url={self.shown_url!r}, key=${self.api_key_env} {key})"

    def request_key(self, messages: list[dict[str, str]]) -> str:
        """A hash of everything that decides the reply (not the URL or key: the same model elsewhere
        answers the same)."""
        sent = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        return hashlib.sha256(json.dumps(sent, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    # -- one completion ---------------------------------------------------------------------------
    def complete(self, messages: list[dict[str, str]], abort: threading.Event | None = None) -> Reply:
        """The model's reply to ``messages``; BenchError (one line) when it cannot be had. Setting
        ``abort`` (another call failed, or Ctrl-C) ends the waits between retries."""
        try:
            body = self._endpoint.post(
                lambda: self._send_json(messages),
                attempts=self.max_attempts,
                delay=lambda attempt, failure: backoff(
                    attempt, failure, self.backoff_base, self.backoff_cap, self.retry_after_cap
                ),
                abort=abort,
                on_retry=lambda attempt, what, delay: log.info(
                    "%s: %s; retry %d in %.2fs", self.shown_url, what, attempt + 1, delay
                ),
            )
        except Exhausted as exhausted:
            hint = (
                "the server is rate-limiting: lower --concurrency"
                if exhausted.rate_limited
                else f"check that the server at {redact_url(self.base_url)} is up and serves model {self.model!r}"
            )
            raise BenchError(f"{self.shown_url} {exhausted}; {hint}") from None
        return self._parse(body, messages)

    def _send_json(self, messages: list[dict[str, str]]) -> bytes:
        """One attempt; a 400 naming response_format turns JSON mode off for good and asks again at once."""
        json_mode = self.json_mode
        try:
            return self._endpoint.send(self._payload(messages, json_mode))
        except Rejected as rejected:
            if not (json_mode and "response_format" in rejected.what.lower()):
                raise BenchError(f"{self.shown_url} answered {rejected.what}; {self._hint(rejected.status)}") from None
            with self._lock:
                self.json_mode = False
            log.info("%s rejects response_format; asking without it", self.shown_url)
            try:
                return self._endpoint.send(self._payload(messages, False))
            except Rejected as again:
                raise BenchError(f"{self.shown_url} answered {again.what}; {self._hint(again.status)}") from None

    def _payload(self, messages: list[dict[str, str]], json_mode: bool) -> bytes:
        body: dict[str, object] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        return json.dumps(body).encode("utf-8")

    def _hint(self, status: int) -> str:
        if status in (401, 403):
            if not self._key:
                return f"${self.api_key_env} is not set: export the API key in it (--llm-api-key-env names another)"
            return f"check the key in ${self.api_key_env} (and that it may use model {self.model!r})"
        if 300 <= status <= 399:
            return "the server redirects, which is not followed (the key would go along): give the final address"
        if status == 404:
            return (
                f"check the base URL {redact_url(self.base_url)} (it usually ends in /v1) and the model {self.model!r}"
            )
        return f"check the model name {self.model!r} and that the server speaks the chat completions API"

    # -- the reply --------------------------------------------------------------------------------
    def _parse(self, body: bytes, messages: list[dict[str, str]]) -> Reply:
        try:
            obj = json.loads(body)
            message = obj["choices"][0]["message"]
            content, refusal = message.get("content") or "", message.get("refusal") or ""
        except (ValueError, UnicodeDecodeError, KeyError, IndexError, TypeError, AttributeError):
            shown = self._endpoint.scrub(body[:80].decode("utf-8", "replace"))
            raise BenchError(
                f"malformed response from {self.shown_url} ({shown!r}); is this an OpenAI-compatible "
                "/chat/completions endpoint?"
            ) from None
        usage = obj.get("usage")
        try:
            prompt, completion = int(usage["prompt_tokens"]), int(usage["completion_tokens"])
            return Reply(str(content), Usage(prompt, completion, cached_prompt_tokens=_cached(usage)), str(refusal))
        except (KeyError, TypeError, ValueError):
            sent = sum(estimate_tokens(m.get("content", "")) for m in messages)
            return Reply(str(content), Usage(sent, estimate_tokens(str(content)), estimated=True), str(refusal))
