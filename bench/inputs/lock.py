"""Locking a reviewed goldset to its corpus: ``<goldset stem>.lock.json`` beside the goldset.

The lock holds the sha256 of the goldset file and the corpus fingerprint. A run refuses a
goldset or corpus that changed since it was locked (unless told to allow it), so numbers from
different days answer the same questions about the same documents.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench import files
from bench.errors import BenchError
from bench.inputs.corpus import Corpus
from bench.inputs.goldset import Goldset
from bench.version import __version__


def lock_path(goldset_path: Path) -> Path:
    return goldset_path.with_name(f"{goldset_path.stem}.lock.json")


@dataclass(frozen=True)
class LockStatus:
    """``locked``: a lock exists and both fingerprints match it; ``problem``: why not, when a lock exists."""

    locked: bool
    path: Path
    problem: str | None = None

    def as_manifest(self) -> dict:
        return {
            "locked": self.locked,
            "lock_file": str(self.path) if self.path.exists() else None,
            "problem": self.problem,
        }


def write_lock(goldset: Goldset, corpus: Corpus) -> Path:
    path = lock_path(goldset.path)
    files.write_json(
        path,
        {
            "goldset": {
                "file": goldset.path.name,
                "sha256": goldset.fingerprint,
                "questions": len(goldset.questions),
                "unit": goldset.unit,
            },
            "corpus": {
                "path": _relative(corpus.path, path.parent),
                "sha256": corpus.fingerprint,
                "documents": len(corpus),
            },
            "locked_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "bench_version": __version__,
        },
    )
    return path


def check_lock(goldset: Goldset, corpus: Corpus) -> LockStatus:
    path = lock_path(goldset.path)
    if not path.is_file():
        return LockStatus(False, path)
    lock = files.read_json(path, f"delete it and run `bench goldset lock {goldset.path}`")
    try:
        gold_sha, corpus_sha = lock["goldset"]["sha256"], lock["corpus"]["sha256"]
    except (KeyError, TypeError):
        raise BenchError(f"{path}: not a goldset lock; delete it and run `bench goldset lock {goldset.path}`") from None
    relock = f"review the change, then re-lock with `bench goldset lock {goldset.path}`, or pass --allow-unlocked"
    if gold_sha != goldset.fingerprint:
        return LockStatus(
            False, path, f"{goldset.path}: the goldset changed since it was locked ({path.name}); {relock}"
        )
    if corpus_sha != corpus.fingerprint:
        return LockStatus(
            False, path, f"{corpus.path}: the corpus changed since the goldset was locked ({path.name}); {relock}"
        )
    return LockStatus(True, path)


def _relative(target: Path, base: Path) -> str:
    """The corpus path as seen from the lock file's folder (informational; the sha256 is what counts)."""
    return Path(os.path.relpath(Path(target).resolve(), base.resolve())).as_posix()


def corpus_for(goldset_path: Path) -> Path:
    """The corpus a goldset belongs to, when not given: its lock's record, else ``corpora/<stem>``."""
    lock = lock_path(goldset_path)
    if lock.is_file():
        recorded = (
            files.read_json(lock, f"delete it and run `bench goldset lock {goldset_path}`")
            .get("corpus", {})
            .get("path")
        )
        if recorded and (lock.parent / recorded).exists():
            return lock.parent / recorded
    root = goldset_path.resolve().parent.parent / "corpora"
    for candidate in (root / goldset_path.stem, root / f"{goldset_path.stem}.jsonl"):
        if candidate.exists():
            return candidate
    raise BenchError(f"{goldset_path}: cannot tell which corpus it belongs to; pass --corpus PATH")
