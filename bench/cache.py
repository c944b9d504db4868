"""Embedding cache: a vector is keyed by model (name, loader, source, revision), role and sha256(text).

One SQLite file per model, which also keeps each text's token count in that model's tokenizer
and the model's query-latency samples on this machine, so a run answered from the cache never
loads the model at all. Each batch is committed as soon as it is embedded, so an interrupted
run loses at most the batch in flight (batches an API already answered are kept), and a
chunking sweep embeds only texts it has not seen. An entry whose stored checksum or width does not match is treated as missing.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.embedders import Embedder
from bench.engines import Engine, LocalEngine
from bench.errors import PartialEmbeddingError

_LOOKUP_BATCH = 500
_TOKENS = "tokens"  # token counts do not depend on the role a text is embedded in
_BUSY_SECONDS = 120


def _when_unlocked(statement) -> None:
    """Run a statement SQLite refuses at once while another connection holds the file (switching
    the journal mode does not wait on the busy timeout), retrying until the timeout."""
    deadline = time.monotonic() + _BUSY_SECONDS
    pause = 0.01
    while True:
        try:
            statement()
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.5)


@dataclass
class EmbedStats:
    """``cached``: rows served from the cache; ``embedded``: distinct texts sent to the model."""

    cached: int = 0
    embedded: int = 0


def text_key(role: str, text: str) -> bytes:
    return hashlib.sha256(role.encode() + b"\0" + text.encode()).digest()


def _checksum(blob: bytes) -> bytes:
    return hashlib.blake2b(blob, digest_size=8).digest()


class EmbeddingCache:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _connect(self, model_key: str) -> sqlite3.Connection:
        self.root.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256(model_key.encode()).hexdigest()[:20]
        # Two runs may share a cache: WAL lets readers and a writer overlap, and a writer waits
        # for the other's batch to commit instead of failing.
        db = sqlite3.connect(self.root / f"{name}.sqlite", timeout=_BUSY_SECONDS)
        _when_unlocked(lambda: db.execute("PRAGMA journal_mode=WAL"))
        db.execute("BEGIN IMMEDIATE")  # set-up is one writer's transaction: no two meta rows
        db.execute("CREATE TABLE IF NOT EXISTS meta (model_key TEXT NOT NULL)")
        db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, dims INTEGER, vec BLOB, checksum BLOB)")
        db.execute("CREATE TABLE IF NOT EXISTS tokens (key BLOB PRIMARY KEY, n INTEGER NOT NULL)")
        db.execute("CREATE TABLE IF NOT EXISTS latency (key BLOB PRIMARY KEY, measured TEXT, seconds BLOB)")
        stored = db.execute("SELECT model_key FROM meta").fetchone()
        if stored is None:
            db.execute("INSERT INTO meta VALUES (?)", (model_key,))
        elif stored[0] != model_key:  # a hash collision of file names: never trust foreign vectors
            for table in ("vectors", "tokens", "latency"):
                db.execute(f"DELETE FROM {table}")
            db.execute("UPDATE meta SET model_key = ?", (model_key,))
        db.commit()
        return db

    def embed(
        self,
        embedder: Embedder,
        texts: list[str],
        role: str,
        batch_size: int = 64,
        progress: Callable[[int], None] | None = None,
        engine: Engine | None = None,
    ) -> tuple[np.ndarray, EmbedStats]:
        """Vectors for ``texts`` (rows in order), embedding only those not cached yet, on ``engine``
        (this process by default)."""
        dims = embedder.dims
        out = np.zeros((len(texts), dims), dtype=np.float32)
        keys = [text_key(role, t) for t in texts]
        stats = EmbedStats()
        with self._connect(embedder.spec.cache_key) as db:
            found = self._lookup(db, keys, dims)
            missing: dict[bytes, list[int]] = {}
            for i, key in enumerate(keys):
                if key in found:
                    out[i] = found[key]
                else:
                    missing.setdefault(key, []).append(i)
            stats.cached = len(texts) - sum(len(rows) for rows in missing.values())
            if progress and stats.cached:
                progress(stats.cached)
            todo = list(missing)
            keys_of = [todo[lo: lo + batch_size] for lo in range(0, len(todo), batch_size)]
            batches = _Batches(keys_of, missing, texts)
            done = (engine or LocalEngine()).embed_batches(embedder, batches, role)
            while True:
                try:
                    i, vectors = next(done)
                except StopIteration:
                    break
                except PartialEmbeddingError as partial:  # keep what the API already answered (and billed)
                    batch = keys_of[batches.last]  # the batch the engine was embedding
                    self._store(db, [batch[j] for j in partial.positions.tolist()], partial.vectors, dims)
                    raise
                batch = keys_of[i]
                self._store(db, batch, vectors, dims)
                for key, vec in zip(batch, vectors):
                    out[missing[key]] = vec
                stats.embedded += len(batch)
                if progress:
                    progress(sum(len(missing[k]) for k in batch))
        db.close()
        return out, stats

    def count_tokens(self, embedder: Embedder, texts: list[str]) -> np.ndarray:
        """Tokens per text in the model's tokenizer, counting only texts not counted before."""
        keys = [text_key(_TOKENS, t) for t in texts]
        with self._connect(embedder.spec.cache_key) as db:
            found: dict[bytes, int] = {}
            unique = list(dict.fromkeys(keys))
            for lo in range(0, len(unique), _LOOKUP_BATCH):
                part = unique[lo: lo + _LOOKUP_BATCH]
                marks = ",".join("?" * len(part))
                found.update(db.execute(f"SELECT key, n FROM tokens WHERE key IN ({marks})", part))
            todo = {key: text for key, text in zip(keys, texts) if key not in found}
            if todo:
                counts = embedder.count_tokens(list(todo.values()))
                rows = [(key, int(n)) for key, n in zip(todo, counts)]
                db.executemany("INSERT OR REPLACE INTO tokens VALUES (?, ?)", rows)
                db.commit()
                found.update(rows)
        db.close()
        return np.array([found[key] for key in keys], dtype=np.int64)

    def latency(self, model_key: str, key: bytes) -> tuple[list[float], str] | None:
        """Latency samples (seconds) stored under ``key``, and when they were measured."""
        with self._connect(model_key) as db:
            row = db.execute("SELECT seconds, measured FROM latency WHERE key = ?", (key,)).fetchone()
        db.close()
        if row is None or len(row[0]) % 8:
            return None
        return np.frombuffer(row[0], dtype=np.float64).tolist(), row[1]

    def store_latency(self, model_key: str, key: bytes, seconds: list[float], measured: str) -> None:
        with self._connect(model_key) as db:
            db.execute("INSERT OR REPLACE INTO latency VALUES (?, ?, ?)",
                       (key, measured, np.asarray(seconds, dtype=np.float64).tobytes()))
            db.commit()
        db.close()

    @staticmethod
    def _store(db: sqlite3.Connection, keys: list[bytes], vectors: np.ndarray, dims: int) -> None:
        rows = []
        for key, vec in zip(keys, vectors):
            blob = np.ascontiguousarray(vec, dtype=np.float32).tobytes()
            rows.append((key, dims, blob, _checksum(blob)))
        db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
        db.commit()

    @staticmethod
    def _lookup(db: sqlite3.Connection, keys: list[bytes], dims: int) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        for lo in range(0, len(unique), _LOOKUP_BATCH):
            part = unique[lo: lo + _LOOKUP_BATCH]
            marks = ",".join("?" * len(part))
            for key, width, blob, checksum in db.execute(
                f"SELECT key, dims, vec, checksum FROM vectors WHERE key IN ({marks})", part
            ):
                if width == dims and len(blob) == 4 * dims and _checksum(blob) == checksum:
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found


class _Batches(Sequence):
    """The texts of each batch, read when an engine asks for it (``last`` is the latest asked for)."""

    def __init__(self, keys_of: list[list[bytes]], rows: dict[bytes, list[int]], texts) -> None:
        self.keys_of, self.rows, self.texts, self.last = keys_of, rows, texts, 0

    def __len__(self) -> int:
        return len(self.keys_of)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        self.last = i
        return [self.texts[self.rows[k][0]] for k in self.keys_of[i]]


class NoCache(EmbeddingCache):
    """Embeds everything every time (``--no-cache``)."""

    def __init__(self) -> None:
        super().__init__(Path())

    def embed(self, embedder, texts, role, batch_size=64, progress=None, engine=None):
        out = np.zeros((len(texts), embedder.dims), dtype=np.float32)
        batches = [list(texts[lo: lo + batch_size]) for lo in range(0, len(texts), batch_size)]
        for i, vectors in (engine or LocalEngine()).embed_batches(embedder, batches, role):
            out[i * batch_size: i * batch_size + len(vectors)] = vectors
            if progress:
                progress(len(vectors))
        return out, EmbedStats(embedded=len(texts))

    def count_tokens(self, embedder, texts):
        return np.asarray(embedder.count_tokens(list(texts)), dtype=np.int64)

    def latency(self, model_key, key):
        return None

    def store_latency(self, model_key, key, seconds, measured):
        """Nothing is kept."""
