"""The results layout (DESIGN §6): atomic writes, run ids, and loading old runs.

A run is written into ``results/.<run_id>.partial/`` and renamed to ``results/<run_id>/``
only when every file is complete, so a run that dies never leaves a folder that looks whole.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from bench.errors import BenchError

MANIFEST, SUMMARY, PER_QUESTION = "manifest.json", "summary.json", "per_question.jsonl"
TEXTS = "texts.jsonl"  # the text of every unit a ranking or an expected list names, once each


_UMASK = os.umask(0)
os.umask(_UMASK)


def new_run_id(results: Path, config_hash: str, now: datetime | None = None) -> str:
    """``<UTC time>-<config hash>``; a second run in the same second gets ``-2``, ``-3`` …"""
    now = now or datetime.now(timezone.utc)
    base = f"{now.strftime('%Y%m%dT%H%M%SZ')}-{config_hash}"
    run_id, n = base, 1
    while (results / run_id).exists() or (results / f".{run_id}.partial").exists():
        n += 1
        run_id = f"{base}-{n}"
    return run_id


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write to a temporary file beside ``path``, fsync, then rename over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # as an ordinary file would be, not mkstemp's owner-only
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, obj) -> None:
    write_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows))


@contextmanager
def run_folder(results: Path, run_id: str):
    """Yield a staging folder; on success it becomes ``results/<run_id>``, on failure it is removed."""
    try:
        results.mkdir(parents=True, exist_ok=True)
        probe = results / f".{run_id}.write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise BenchError(f"{results}: cannot write results there ({e.strerror}); pass --results DIR") from None
    final = results / run_id
    if final.exists():
        raise BenchError(f"{final}: a run with this id already exists; wait a second and rerun")
    staging = results / f".{run_id}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        yield staging
        os.replace(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def referenced_texts(records: Iterable[dict], corpus) -> list[dict]:
    """One row per distinct (doc_id, start, end) that the records name, with its text, so reports
    show what was retrieved without the corpus."""
    spans = {(e["doc_id"], e["start"], e["end"]) for r in records for e in (*r["ranking"], *r["expected"])}
    return [{"doc_id": doc_id, "start": start, "end": end, "text": corpus.get(doc_id).text[start:end]}
            for doc_id, start, end in sorted(spans)]


def find_run(ref: str | Path, results: Path = Path("results")) -> Path:
    """A run folder from a path, a run id, or ``latest``."""
    ref = str(ref)
    candidates = [Path(ref), results / ref]
    if ref == "latest":
        runs = sorted(p for p in results.glob("*") if (p / SUMMARY).is_file()) if results.is_dir() else []
        if not runs:
            raise BenchError(f"{results}: no finished runs yet; run `bench run` first")
        candidates = [runs[-1]]
    for path in candidates:
        if (path / SUMMARY).is_file() and (path / PER_QUESTION).is_file():
            return path
    raise BenchError(f"{ref}: not a finished run (no {SUMMARY} and {PER_QUESTION}); give results/<run_id>")


def load_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise BenchError(f"{path}: unreadable ({e}); the run folder is damaged") from None


def load_jsonl(path: Path) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise BenchError(f"{path}:{lineno}: unreadable ({e.msg}); the run folder is damaged") from None
    return rows
