"""Where bench keeps what it can reuse between runs: embeddings, prepared models, extracted text."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "BENCH_CACHE_DIR"


def cache_root(configured: Path | None = None, override: Path | None = None) -> Path:
    """``--cache-dir``, else ``$BENCH_CACHE_DIR``, else the config's ``cache_dir``, else the user cache."""
    if override is not None:
        return override
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    if configured is not None:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "bench"


def embeddings_dir(root: Path) -> Path:
    return root / "embeddings"


def models_dir(root: Path) -> Path:
    return root / "models"


def extracted_dir(root: Path) -> Path:
    """Text extracted from PDFs, Word files, slides and web pages, by source bytes and extractor."""
    return root / "extracted"


def judge_dir(root: Path) -> Path:
    """A relevance judge's replies, by what was sent and to which model: any run asking again sends nothing."""
    return root / "judge"


def rewrites_dir(root: Path) -> Path:
    """Questions rewritten by chat models ([query.NAME]), by what was sent and to which model."""
    return root / "rewrites"
