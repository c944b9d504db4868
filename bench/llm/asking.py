"""Many chat requests sent at once within a budget, each reply logged as it arrives and read in the
order the requests were planned, so that what a caller keeps does not depend on which reply came
back first.

A request found in the reply log is not sent again and counts as spent: a rerun of the same command
resumes where a crash or an interrupt left it, and keeps to the same budget. A request whose
estimate (its prompt's tokens by ``estimate_tokens``, plus the client's ``max_tokens`` of reply)
would take the cost past ``max_cost`` is not sent, nor is any after it; while calls are in flight it
waits for them first, since they may cost less than their estimates.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from bench.errors import BenchError
from bench.formatting import usd
from bench.llm.client import ChatClient, estimate_tokens
from bench.llm.http_api import Aborted
from bench.llm.replies import Prices, ReplyLog, Row, Tally

if TYPE_CHECKING:
    from rich.status import Status

# Why a stream of requests ended: its reader had enough, the budget allows no more, or all were asked.
Ended = Literal["enough", "budget", "all asked"]


@dataclass(frozen=True)
class Request:
    key: str  # ChatClient.request_key of the messages: finds the reply in the log
    messages: list[dict[str, str]]
    about: Mapping[str, object]  # what the log records beside the reply (question id, what was asked)


@dataclass
class Asker:
    """Sends requests to one model, at most ``concurrency`` at once, replies from the log first."""

    client: ChatClient
    log: ReplyLog
    concurrency: int = 4
    max_cost: float | None = None
    prices: Prices = field(default_factory=Prices)
    status: Status | None = None  # where progress is shown
    tally: Tally = field(default_factory=Tally)

    def ask(self, requests: Iterable[Request], label: str) -> dict[str, Row]:
        """The log row of every request answered, by key (a request asked twice is sent once). Those
        the budget leaves out are missing, save what the log already holds for them."""
        todo = list({r.key: r for r in requests}.values())
        out: dict[str, Row] = {}

        def read(request: Request, row: Row) -> bool:
            out[request.key] = row
            if self.status is not None:
                self.status.update(f"{label}: {len(out)} of {len(todo)} replies, {usd(self.tally.cost)} spent")
            return False

        if self.in_order(todo, read) == "budget":
            for r in todo:
                if r.key in out:
                    continue
                if r.key in self.log.entries:
                    out[r.key] = self.log.entries[r.key]
                    self.tally.add(out[r.key], self.prices, sent=False)
                else:
                    self.tally.skipped += 1
        return out

    def in_order(  # noqa: C901 - not yet split into steps
        self,
        requests: Iterable[Request],
        read: Callable[[Request, Row], bool],
        room: Callable[[int], bool] = lambda pending: True,
    ) -> Ended:
        """Give ``read`` each request's log row in the order planned, until it says it has enough
        (returns True). A call is sent only while ``room(requests pending)`` says another could still
        be needed. Replies already on their way when the reader has enough are paid for: they are
        logged and counted. A failure stops the other calls' retries and is raised."""
        planned = iter(requests)
        abort = threading.Event()
        pending: deque[tuple[Request, Future[Row] | Row, float]] = deque()
        reserved, held = 0.0, None  # held: a request waiting for the calls in flight to bill
        ended_by: Ended | None = None
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="bench-chat")

        def send(r: Request) -> Row:
            reply = self.client.complete(r.messages, abort)
            return self.log.add(r.key, reply, model=self.client.model, **r.about)

        try:
            while True:
                while ended_by is None and len(pending) < self.concurrency and room(len(pending)):
                    request, held = held or next(planned, None), None
                    if request is None:
                        ended_by = "all asked"
                    elif request.key in self.log.entries:
                        pending.append((request, self.log.entries[request.key], 0.0))
                    else:
                        estimate = self.estimate(request)
                        if self.max_cost is not None and self.tally.cost + reserved + estimate > self.max_cost:
                            if reserved:  # the calls in flight may cost less than their estimates
                                held = request
                                break
                            ended_by = "budget"
                        else:
                            reserved += estimate
                            pending.append((request, pool.submit(send, request), estimate))
                if not pending:
                    return ended_by or "all asked"
                request, answer, estimate = pending.popleft()
                if isinstance(answer, Future):
                    row = answer.result()
                    reserved -= estimate
                    self.tally.add(row, self.prices, sent=True)
                else:
                    row = answer
                    self.tally.add(row, self.prices, sent=False)
                if read(request, row):
                    break
            for _, answer, _ in pending:  # replies already on their way are paid for: log and count them
                if isinstance(answer, Future) and not answer.cancel():
                    try:
                        self.tally.add(answer.result(), self.prices, sent=True)
                    except (BenchError, Aborted):
                        pass
            return "enough"
        except BaseException:
            abort.set()  # the other calls stop retrying: this step fails anyway (what came back is logged)
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        finally:
            pool.shutdown(wait=True)

    def estimate(self, request: Request) -> float:
        """What a request would cost at most: its prompt's estimated tokens and max_tokens of reply."""
        prompt = sum(estimate_tokens(m["content"]) for m in request.messages)
        return (prompt * self.prices.input + (self.client.max_tokens or 0) * self.prices.output) / 1e6
