"""Operating measurements: latency percentiles, memory, and the machine and versions of a run."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import resource
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final

import numpy as np

from bench.version import __version__

# Percentiles use numpy's default (linear interpolation between closest ranks, "type 7").
PERCENTILE_METHOD: Final = "linear"


def latency_summary(prefix: str, seconds: list[float]) -> dict[str, float | None]:
    """``<prefix>_ms_p50`` / ``_p95`` / ``_p99`` / ``_mean`` from per-query wall times in seconds."""
    keys = [f"{prefix}_ms_{name}" for name in ("p50", "p95", "p99", "mean")]
    if not seconds:
        return dict.fromkeys(keys)
    ms = np.asarray(seconds) * 1000.0
    values = [*np.percentile(ms, [50, 95, 99], method=PERCENTILE_METHOD), ms.mean()]
    return {key: float(v) for key, v in zip(keys, values)}


def token_figures(chunk_tokens: np.ndarray, max_tokens: int | None) -> dict[str, int | float]:
    """Corpus tokens in the model's own tokenizer, and what truncation at ``max_tokens`` never embeds."""
    total = int(chunk_tokens.sum())
    if not max_tokens:
        return {"index_tokens": total, "truncated_chunks": 0, "truncated_token_share": 0.0}
    lost = np.maximum(chunk_tokens - max_tokens, 0)
    return {
        "index_tokens": total,
        "truncated_chunks": int((lost > 0).sum()),
        "truncated_token_share": float(lost.sum() / total) if total else 0.0,
    }


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (the kernel's high-water mark)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def rss_mb() -> float:
    """Resident memory of this process now."""
    import psutil

    return psutil.Process().memory_info().rss / 2**20


class Phases:
    """Wall time and memory of each step of a run, in the order they ran (manifest ``phases``)."""

    def __init__(self) -> None:
        self.rows: list[dict] = []

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - t0)

    def add(self, name: str, seconds: float, rss: float | None = None) -> None:
        """A step timed elsewhere; ``rss`` is the resident memory when it ended (default: now)."""
        self.rows.append(
            {
                "phase": name,
                "seconds": round(seconds, 3),
                "rss_mb": round(rss or rss_mb(), 1),
                "peak_rss_mb": round(peak_rss_mb(), 1),
            }
        )


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version(), "bench": __version__}
    for dist in ("torch", "faiss-cpu", "sentence-transformers", "bm25s", "numpy", "tiktoken", "onnxruntime"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    return out


def machine() -> dict:
    import psutil

    return {
        "platform": platform.platform(),
        "processor": platform.machine(),
        "cpus": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
    }


# --- timing that a busy machine cannot pass off as the model's speed ----------------------------------

# Above this share of its runnable time spent waiting for a CPU, a process was timed on a busy machine:
# its wall-clock figures say as much about the other work as about the model. An idle machine measures
# under 0.02; two busy processes on two cores push it past 0.3. $BENCH_BUSY_SHARE changes it (1 turns
# the check off, for a machine that is always shared and whose timings are wanted anyway).
BUSY_SHARE: Final = 0.10
# How single queries are timed; part of what a kept timing is stored under, so timings taken another
# way are never read as these.
TIMING_METHOD: Final = "one thread, median of up to 3 interleaved rounds, wall and CPU"


def busy_share() -> float:
    try:
        return float(os.environ.get("BENCH_BUSY_SHARE", BUSY_SHARE))
    except ValueError:
        return BUSY_SHARE


_ONE_THREAD: ContextVar[bool] = ContextVar("one_thread", default=False)


@contextmanager
def one_thread() -> Iterator[None]:
    """Models on one thread, as a service that answers each query on one core runs them: a query's CPU
    time is then its cost, which other work on the machine does not inflate (spinning worker threads
    do). PyTorch's threads are set here; an engine that fixes its threads when it starts (ONNX Runtime)
    asks :func:`one_thread_wanted`."""
    token = _ONE_THREAD.set(True)
    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch is not None else None
    if torch is not None:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if torch is not None:
            torch.set_num_threads(threads)
        _ONE_THREAD.reset(token)


def one_thread_wanted() -> bool:
    """Whether the caller is timing single queries on one thread (:func:`one_thread`)."""
    return _ONE_THREAD.get()


def cores() -> int:
    """The CPUs this process may run on (a container's share, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def _scheduler_ns() -> tuple[int, int] | None:
    """Nanoseconds the calling thread has run on a CPU and waited, runnable, for one
    (``/proc/thread-self/schedstat``); None where the kernel does not say. The thread that times the
    calls, not every thread of the process: a model's own worker threads run while it waits for them,
    asleep, and are no other work on the machine."""
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as f:
            run, wait, *_ = f.read().split()
        return int(run), int(wait)
    except (OSError, ValueError):  # no /proc, or a kernel without scheduler statistics
        return None


def _steal_ticks() -> tuple[int, int] | None:
    """The machine's CPU ticks, all and stolen by the hypervisor (``/proc/stat``)."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return (sum(fields), fields[7]) if len(fields) > 7 else None


class ContentionMeter:
    """How much of a span the machine's other work took from the calling thread: the share of its
    runnable time spent waiting for a CPU, and the hypervisor's stolen share of the machine's time."""

    def __init__(self) -> None:
        self._sched, self._steal = _scheduler_ns(), _steal_ticks()

    def share(self) -> float | None:
        """The larger of the two shares since the meter started; None where neither can be read."""
        shares = []
        sched, steal = _scheduler_ns(), _steal_ticks()
        if sched is not None and self._sched is not None:
            ran, waited = sched[0] - self._sched[0], sched[1] - self._sched[1]
            if ran > 0 and waited >= 0:
                shares.append(waited / (ran + waited))
        if steal is not None and self._steal is not None and steal[0] > self._steal[0]:
            shares.append((steal[1] - self._steal[1]) / (steal[0] - self._steal[0]))
        return max(shares) if shares else None


@dataclass(frozen=True)
class Timings:
    """Per-call seconds of one timed task, wall-clock and CPU (every thread of this process), and
    how contended the machine was while they were taken."""

    wall: list[float]
    cpu: list[float]
    contention: float | None = None
    retimed: bool = False  # the first timing was contended and this one was taken again

    @property
    def busy(self) -> bool:
        return self.contention is not None and self.contention > busy_share()


class TimingLog:
    """The timings a run took and how contended the machine was for each: the manifest's ``timing``."""

    def __init__(self) -> None:
        self.contention: dict[str, float | None] = {}
        self.busy: list[str] = []

    def add(self, what: str, timings: Timings) -> None:
        self.contention[what] = timings.contention
        if timings.busy:
            self.busy.append(what)

    def manifest(self) -> dict[str, object]:
        shares = [c for c in self.contention.values() if c is not None]
        return {
            "method": TIMING_METHOD,
            "cores": cores(),
            "busy_share": busy_share(),
            "contention": round(max(shares), 3) if shares else None,
            "busy": bool(self.busy),
            "busy_timings": list(self.busy),
        }


def time_on_one_thread(warm_up: Callable[[], object], calls: Sequence[Callable[[], object]]) -> Timings:
    """``calls`` timed (:func:`time_calls`) on one thread (:func:`one_thread`), after ``warm_up`` ran
    twice: before the threads are set, so that a model it loads first (a warm rerun loads none until
    then) is there to be set to one thread; and on one thread, so that an engine's one-thread session
    is made before the clock runs."""
    warm_up()
    with one_thread():
        warm_up()
        return time_calls(calls)


def time_calls(calls: Sequence[Callable[[], object]], rounds: int = 3) -> Timings:
    """Each call timed ``rounds`` times (one round when a round takes over ``ROUND_BUDGET`` seconds or its
    calls over ``SLOW_CALL`` each), the rounds interleaved (every call once, then again), each call's
    median kept: a burst of other work lands in one round and leaves the median alone. Retimed once after
    a pause when the machine was busy; the less contended of the two timings is kept."""
    first = _timed_rounds(calls, rounds)
    if not first.busy:
        return first
    time.sleep(RETIME_PAUSE)
    again = _timed_rounds(calls, rounds)
    best = again if (again.contention or 0.0) <= (first.contention or 0.0) else first
    return Timings(best.wall, best.cpu, best.contention, retimed=True)


# A round that took longer than this is not repeated: its calls are slow enough (a reranker, a large
# model) that a burst of other work lands in few of them, and rounds would add minutes to a run.
ROUND_BUDGET: Final = 5.0
# A call that takes longer than this (a reranking, a batch of passages) outlasts a burst of other work
# rather than falling within it: timing it again buys little.
SLOW_CALL: Final = 0.1
RETIME_PAUSE: Final = 1.0  # seconds before timing again: a burst of other work (a compile, a test) may pass


def _timed_rounds(calls: Sequence[Callable[[], object]], rounds: int) -> Timings:
    meter = ContentionMeter()
    wall = np.zeros((rounds, len(calls)))
    cpu = np.zeros((rounds, len(calls)))
    done = 0
    while done < rounds:
        started = time.perf_counter()
        for i, call in enumerate(calls):
            c0, t0 = time.process_time(), time.perf_counter()
            call()
            wall[done, i], cpu[done, i] = time.perf_counter() - t0, time.process_time() - c0
        done += 1
        took = time.perf_counter() - started
        if took > ROUND_BUDGET or took > SLOW_CALL * len(calls):
            break  # a slow model's single queries: one round is long enough for a burst to average out
    if not calls:
        return Timings([], [], meter.share())
    return Timings(np.median(wall[:done], axis=0).tolist(), np.median(cpu[:done], axis=0).tolist(), meter.share())
