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
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
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

    def in_order(
        self,
        requests: Iterable[Request],
        read: Callable[[Request, Row], bool],
        room: Callable[[int], bool] = lambda pending: True,
    ) -> Ended:
        """Give ``read`` each request's log row in the order planned, until it says it has enough
        (returns True). A call is sent only while ``room(requests pending)`` says another could still
        be needed. Replies already on their way when the reader has enough are paid for: they are
        logged and counted. A failure stops the other calls' retries and is raised."""
        calls = _Calls(self, iter(requests))
        try:
            while True:
                calls.fill(room)
                if not calls.pending:
                    return calls.ended_by or "all asked"
                if read(*calls.next_row()):
                    break
            calls.pay_for_rest()
            return "enough"
        except BaseException:
            calls.abort.set()  # the other calls stop retrying: this step fails anyway (what came back is logged)
            calls.pool.shutdown(wait=True, cancel_futures=True)
            raise
        finally:
            calls.pool.shutdown(wait=True)

    def estimate(self, request: Request) -> float:
        """What a request would cost at most: its prompt's estimated tokens and max_tokens of reply."""
        return (prompt_tokens(request) * self.prices.input + (self.client.max_tokens or 0) * self.prices.output) / 1e6


def prompt_tokens(request: Request) -> int:
    """A request's prompt tokens by ``estimate_tokens``: what a budget and a dry run count before sending."""
    return sum(estimate_tokens(m["content"]) for m in request.messages)


class _Calls:
    """One ``Asker.in_order``'s requests on their way, in the order planned: each a reply from the log,
    or a call in flight with its estimate, which the budget holds reserved until the call has billed."""

    def __init__(self, asker: Asker, planned: Iterator[Request]) -> None:
        self.asker = asker
        self.planned = planned
        self.abort = threading.Event()
        self.pending: deque[tuple[Request, Future[Row] | Row, float]] = deque()
        self.reserved = 0.0
        self.held: Request | None = None  # a request waiting for the calls in flight to bill
        self.ended_by: Ended | None = None
        self.pool = ThreadPoolExecutor(max_workers=asker.concurrency, thread_name_prefix="bench-chat")

    def fill(self, room: Callable[[int], bool]) -> None:
        """Takes planned requests while fewer than ``concurrency`` are pending and ``room`` allows one
        more: each found in the log, else sent if the budget allows it. A request over the budget waits
        (held) for the calls in flight, else ends the stream."""
        asker = self.asker
        while self.ended_by is None and len(self.pending) < asker.concurrency and room(len(self.pending)):
            request, self.held = self.held or next(self.planned, None), None
            if request is None:
                self.ended_by = "all asked"
            elif request.key in asker.log.entries:
                self.pending.append((request, asker.log.entries[request.key], 0.0))
            else:
                estimate = asker.estimate(request)
                if asker.max_cost is not None and asker.tally.cost + self.reserved + estimate > asker.max_cost:
                    if self.reserved:  # the calls in flight may cost less than their estimates
                        self.held = request
                        return
                    self.ended_by = "budget"
                else:
                    self.reserved += estimate
                    self.pending.append((request, self.pool.submit(self._send, request), estimate))

    def _send(self, request: Request) -> Row:
        asker = self.asker
        started = time.perf_counter()
        reply = asker.client.complete(request.messages, self.abort)
        seconds = round(time.perf_counter() - started, 4)  # the call as the caller waited for it, retries included
        return asker.log.add(request.key, reply, model=asker.client.model, seconds=seconds, **request.about)

    def next_row(self) -> tuple[Request, Row]:
        """The first pending request and its row (a call's once it is back), counted in the tally."""
        request, answer, estimate = self.pending.popleft()
        if isinstance(answer, Future):
            row = answer.result()
            self.reserved -= estimate
            self.asker.tally.add(row, self.asker.prices, sent=True)
        else:
            row = answer
            self.asker.tally.add(row, self.asker.prices, sent=False)
        return request, row

    def pay_for_rest(self) -> None:
        """Replies already on their way when the reader has enough are paid for: logs and counts them."""
        for _, answer, _ in self.pending:
            if isinstance(answer, Future) and not answer.cancel():
                try:
                    self.asker.tally.add(answer.result(), self.asker.prices, sent=True)
                except (BenchError, Aborted):
                    pass
