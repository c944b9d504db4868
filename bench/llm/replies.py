"""What was paid for: the reply log, which lets a rerun find the replies it already has, and the tally
of calls, tokens and money."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

from bench.formatting import usd
from bench.llm.client import Reply, Usage

# A row of the reply log: the request key, what the caller recorded beside it, the reply and its usage.
Row = dict[str, object]


class ReplyLog:
    """Replies by request key, in a JSONL file appended (line by line) as each arrives: a rerun finds
    what was already paid for."""

    def __init__(self, path: Path) -> None:
        self.path, self._lock = Path(path), threading.Lock()
        self.entries: dict[str, Row] = {}
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                    self.entries[row["key"]] = row
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut short by a crash: that request is simply sent again

    def add(self, key: str, reply: Reply, **about: object) -> Row:
        row: Row = {"key": key, **about, "reply": reply.text, "usage": reply.usage.to_dict()}
        if reply.refusal:
            row["refusal"] = reply.refusal
        line = json.dumps(row, ensure_ascii=False) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line)
            self.entries[key] = row
        return row


def reply_text(row: Row) -> str:
    """The reply a log row holds ("" for none)."""
    return str(row.get("reply") or "")


@dataclass(frozen=True)
class Prices:
    """USD per million tokens, of the prompt and of the reply; prompt tokens read from the server's
    prompt cache at ``cached_input`` (None: at ``input``)."""

    input: float = 0.0
    output: float = 0.0
    cached_input: float | None = None

    def cost(self, usage: Usage) -> float:
        cached = usage.cached_prompt_tokens if self.cached_input is not None else 0
        fresh = usage.prompt_tokens - cached
        return (fresh * self.input + cached * (self.cached_input or 0.0) + usage.completion_tokens * self.output) / 1e6


@dataclass
class Tally:
    """Requests and what they cost; replies from the log count as spent, so a resumed run keeps to
    the same budget and reports what the whole file cost."""

    sent: int = 0
    cached: int = 0
    skipped: int = 0  # not sent: the budget would not allow it
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    estimated: bool = False
    cost: float = 0.0
    cost_sent: float = 0.0

    def add(self, row: Row, prices: Prices, sent: bool) -> None:
        """Count a log row's usage: a reply just sent, or one found in the log."""
        usage = Usage.from_dict(row.get("usage"))
        cost = prices.cost(usage)
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.cached_prompt_tokens += usage.cached_prompt_tokens
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

    def tokens(self) -> dict[str, int | bool]:
        return {"prompt": self.prompt_tokens, "completion": self.completion_tokens, "estimated": self.estimated}

    def to_meta(self, prices: Prices, max_cost: float | None) -> dict[str, object]:
        return {
            "calls": {"sent": self.sent, "from_cache": self.cached, "not_sent_budget": self.skipped},
            "tokens": self.tokens(),
            "price_per_million": {"input": prices.input, "output": prices.output},
            "cost_usd": round(self.cost, 6),
            "max_cost_usd": max_cost,
        }
