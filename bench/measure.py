"""Operating measurements: latency percentiles, memory, and the machine and versions of a run."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import resource
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
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
    for dist in ("torch", "faiss-cpu", "sentence-transformers", "bm25s", "numpy", "tiktoken"):
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
