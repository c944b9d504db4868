"""Operating measurements: latency percentiles, memory, and the machine and versions of a run."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import resource
import sys

import numpy as np

# Percentiles use numpy's default (linear interpolation between closest ranks, "type 7").
PERCENTILE_METHOD = "linear"


def latency_summary(prefix: str, seconds: list[float]) -> dict[str, float | None]:
    """``<prefix>_ms_p50`` / ``_p95`` / ``_mean`` from per-query wall times in seconds."""
    if not seconds:
        return {f"{prefix}_ms_p50": None, f"{prefix}_ms_p95": None, f"{prefix}_ms_mean": None}
    ms = np.asarray(seconds) * 1000.0
    p50, p95 = np.percentile(ms, [50, 95], method=PERCENTILE_METHOD)
    return {f"{prefix}_ms_p50": float(p50), f"{prefix}_ms_p95": float(p95), f"{prefix}_ms_mean": float(ms.mean())}


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (the kernel's high-water mark)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in ("bench", "torch", "faiss-cpu", "sentence-transformers", "bm25s", "numpy", "tiktoken"):
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
