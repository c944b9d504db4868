"""What generating and judging answers share: prompt files with a version and sections, and the
sending of many chat requests at once within a budget, each reply kept in a log as it arrives.

A prompt file is markdown: a ``version: NAME`` line before its first section, then ``## section``
headings, each followed by the text sent for it with ``{placeholders}`` filled in. Text before the
first section is for the people who read the file and is never sent.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import files
from bench.drafting.chat import ChatClient, ReplyLog, Usage, estimate_tokens, redact_url
from bench.errors import BenchError
from bench.formatting import usd

_PLACEHOLDER = re.compile(r"\{(question|answer|contexts|claim)\}")


@dataclass(frozen=True)
class Template:
    name: str
    version: str
    sha256: str  # of the whole file's text: any edit, even to the notes, makes another template
    text: str
    sections: dict[str, str]

    def messages(self, user: str, **values: str) -> list[dict[str, str]]:
        """The system section and the ``user`` section, placeholders filled in one pass (so a context
        that happens to contain ``{claim}`` stays as it is)."""
        body = _PLACEHOLDER.sub(lambda m: values[m.group(1)], self.sections[user])
        return [{"role": "system", "content": self.sections["system"]}, {"role": "user", "content": body}]

    def describe(self, with_text: bool = False) -> dict[str, str]:
        out = {"name": self.name, "version": self.version, "sha256": self.sha256}
        return {**out, "text": self.text} if with_text else out


def load_template(path: Path, needs: dict[str, tuple[str, ...]]) -> Template:
    """Read a prompt file; ``needs`` maps each section it must have to the placeholders it is given,
    all of which it must use (and no others: a section is sent only what it names)."""
    text = files.read_text(path)
    version = re.search(r"^version:\s*(\S+)\s*$", text.split("\n## ", 1)[0], re.M)
    if version is None:
        raise BenchError(f"{path}: no 'version: NAME' line before the first '## ' section; add one")
    sections: dict[str, str] = {}
    for block in re.split(r"^## ", text, flags=re.M)[1:]:
        title, _, body = block.partition("\n")
        sections[title.strip().lower()] = body.strip()
    for section, placeholders in needs.items():
        if not sections.get(section):
            raise BenchError(f"{path}: no '## {section}' section (or it is empty); it needs one")
        used = set(_PLACEHOLDER.findall(sections[section]))
        missing = [p for p in placeholders if p not in used]
        if missing:
            shown = ", ".join("{" + p + "}" for p in missing)
            raise BenchError(f"{path}: section '## {section}' lacks {shown}; put it where the text goes")
        if used - set(placeholders):
            shown = ", ".join("{" + p + "}" for p in sorted(used - set(placeholders)))
            raise BenchError(f"{path}: section '## {section}' uses {shown}, which it is not given; take it out")
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Template(path.name, version.group(1), sha, text, sections)


def numbered(contexts: Sequence[str]) -> str:
    """Contexts as the models see them: numbered in the order given, nothing else about them."""
    if not contexts:
        return "(no contexts were given)"
    return "\n\n".join(f"[{i}]\n{text.strip()}" for i, text in enumerate(contexts, 1))


def replies_path(out: Path) -> Path:
    return out.with_name(out.name + ".replies.jsonl")


@dataclass(frozen=True)
class Request:
    key: str
    messages: list[dict[str, str]]
    about: dict[str, Any]  # what the log records beside the reply (question id, what was asked)


@dataclass
class Tally:
    """Requests and what they cost; replies from the log count as spent, so a resumed run keeps to
    the same budget and reports what the whole file cost."""

    sent: int = 0
    cached: int = 0
    skipped: int = 0  # not sent: the budget would not allow it
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    cost: float = 0.0
    cost_sent: float = 0.0

    def add(self, usage: Usage, prices: tuple[float, float], sent: bool) -> None:
        cost = (usage.prompt_tokens * prices[0] + usage.completion_tokens * prices[1]) / 1e6
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.estimated = self.estimated or usage.estimated
        self.cost += cost
        if sent:
            self.sent, self.cost_sent = self.sent + 1, self.cost_sent + cost
        else:
            self.cached += 1

    def summary(self) -> str:
        approx = " (estimated)" if self.estimated else ""
        this_run = f" ({usd(self.cost_sent)} this run)" if self.cached and self.sent else ""
        return (
            f"calls: {self.sent} sent, {self.cached} from cache; tokens: {self.prompt_tokens:,} in, "
            f"{self.completion_tokens:,} out{approx}; cost {usd(self.cost)}{this_run}"
        )

    def to_meta(self, prices: tuple[float, float], max_cost: float | None) -> dict[str, Any]:
        return {
            "calls": {"sent": self.sent, "from_cache": self.cached, "not_sent_budget": self.skipped},
            "tokens": {"prompt": self.prompt_tokens, "completion": self.completion_tokens, "estimated": self.estimated},
            "price_per_million": {"input": prices[0], "output": prices[1]},
            "cost_usd": round(self.cost, 6),
            "max_cost_usd": max_cost,
        }


@dataclass
class Asker:
    """Sends requests to one model, at most ``concurrency`` at once, replies from the log first."""

    client: ChatClient
    log: ReplyLog
    concurrency: int = 4
    max_cost: float | None = None
    prices: tuple[float, float] = (0.0, 0.0)
    status: Any = None  # a rich Status to show progress on, or None
    tally: Tally = field(default_factory=Tally)

    def ask(self, requests: Iterable[Request], label: str) -> dict[str, dict]:
        """The log row of every request answered, by key. A request whose estimate (its prompt's tokens
        by ``estimate_tokens``, plus max_tokens of reply) would take the cost past ``max_cost`` is not
        sent, nor is any after it; those keys are missing. A failure stops the others' retries and is raised."""
        todo = list({r.key: r for r in requests}.values())
        out: dict[str, dict] = {}
        abort, inflight, reserved, stopped = threading.Event(), dict[Future, float](), 0.0, False
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="bench-answers")

        def send(r: Request) -> dict:
            return self.log.add(r.key, self.client.complete(r.messages, abort), model=self.client.model, **r.about)

        def collect() -> None:
            nonlocal reserved
            done, _ = wait(inflight, return_when=FIRST_COMPLETED)
            for future in done:
                reserved -= inflight.pop(future)
                row = future.result()
                out[row["key"]] = row
                self.tally.add(Usage.from_dict(row.get("usage")), self.prices, sent=True)
            self._show(label, len(out), len(todo))

        def over(estimate: float) -> bool:
            return self.max_cost is not None and self.tally.cost + reserved + estimate > self.max_cost

        try:
            for r in todo:
                if r.key in self.log.entries:
                    out[r.key] = self.log.entries[r.key]
                    self.tally.add(Usage.from_dict(out[r.key].get("usage")), self.prices, sent=False)
                    continue
                estimate = self._estimate(r)
                while inflight and (len(inflight) >= self.concurrency or over(estimate)):
                    collect()  # the calls in flight may cost less than their estimates
                if stopped or over(estimate):
                    stopped = True
                    self.tally.skipped += 1
                    continue
                reserved += estimate
                inflight[pool.submit(send, r)] = estimate
            while inflight:
                collect()
            return out
        except BaseException:
            abort.set()  # this step fails anyway; what came back is in the log for the rerun
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        finally:
            pool.shutdown(wait=True)

    def _estimate(self, r: Request) -> float:
        prompt = sum(estimate_tokens(m["content"]) for m in r.messages)
        return (prompt * self.prices[0] + (self.client.max_tokens or 0) * self.prices[1]) / 1e6

    def _show(self, label: str, done: int, total: int) -> None:
        if self.status is not None:
            self.status.update(f"{label}: {done} of {total} replies, {usd(self.tally.cost)} spent")


@dataclass(frozen=True)
class ChatSettings:
    """The chat model to ask and how: where it is, its key, its prices (USD per million tokens), the
    budget, and how many calls go at once."""

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 4
    max_cost: float | None = None
    price_in: float = 0.0
    price_out: float = 0.0
    temperature: float = 0.0
    max_tokens: int | None = None  # None: what the use needs (an answer is longer than a verdict)
    max_attempts: int = 6
    timeout_s: float = 120.0

    @property
    def prices(self) -> tuple[float, float]:
        return self.price_in, self.price_out

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

    def asker(self, client: ChatClient, out: Path) -> Asker:
        """An asker within these settings' budget, its replies logged beside ``out``."""
        return Asker(client, ReplyLog(replies_path(out)), self.concurrency, self.max_cost, self.prices)

    def describe(self, client: ChatClient) -> dict[str, Any]:
        """What the meta records of the model asked (never the key)."""
        return {
            "model": self.model, "base_url": redact_url(client.base_url), "temperature": self.temperature,
            "max_tokens": client.max_tokens,
        }  # fmt: skip
