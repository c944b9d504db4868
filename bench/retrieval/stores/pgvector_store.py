"""PostgreSQL + pgvector: the vectors in a table of bench's own schema, loaded by binary COPY, the
index (HNSW or IVFFlat, on the vectors, their halfvec or their binary quantisation) built after the
load, searched by cosine distance one query per round trip, as an application asks.

Every table lives in one schema named for the run (``bench_<pid>_<random>``), dropped when the run
ends: a team's own database is never touched outside it.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

import numpy as np

from bench.retrieval.stores.base import Hits, OneQueryPerCall, StoreBuild, StoreFault

if TYPE_CHECKING:
    import psycopg

    from bench.retrieval.faiss_index import IndexSpec

PGVECTOR = "pgvector"
COPY_ROWS = 10_000  # rows per COPY write batch
# pgvector's own advice: lists = rows / 1000 up to a million rows, sqrt(rows) beyond
AUTO_LISTS = "rows / 1000 (sqrt(rows) past a million), at least 1"
SEARCH_GUCS = {"ef_search": "hnsw.ef_search", "probes": "ivfflat.probes"}  # numbers
ITERATIVE_SCAN = "iterative_scan"  # a word, checked by the config reader: hnsw. or ivfflat. by kind
_OPS = {"none": ("vector", "vector_cosine_ops"), "halfvec": ("halfvec", "halfvec_cosine_ops")}


def auto_lists(rows: int) -> int:
    return max(1, rows // 1000 if rows <= 1_000_000 else round(math.sqrt(rows)))


def connect(dsn: str, where: str, vector: bool = True) -> psycopg.Connection:
    """A connection with pgvector's types registered; one line naming the server when it cannot."""
    try:
        import psycopg
        from pgvector.psycopg import register_vector
    except ImportError:
        raise StoreFault(
            f"{where}: the pgvector store needs psycopg and pgvector; pip install 'retrieval-shootout[pgvector]'"
        ) from None
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
    except psycopg.Error as e:
        raise server_fault(where, e, "could not connect") from None
    if not vector:
        return conn
    try:
        register_vector(conn)
    except psycopg.ProgrammingError:
        conn.close()
        raise StoreFault(
            f"{where}: the database has no pgvector extension; as its owner run CREATE EXTENSION vector "
            f"(bench never changes a database outside its own schema)"
        ) from None
    return conn


def server_version(conn: psycopg.Connection) -> str | None:
    """ "PostgreSQL 18.6, pgvector 0.8.6": the server's version and its vector extension's."""
    row = conn.execute(
        "SELECT current_setting('server_version'), extversion FROM pg_extension WHERE extname = 'vector'"
    ).fetchone()
    return f"PostgreSQL {row[0]}, pgvector {row[1]}" if row else None


def server_fault(where: str, error: Exception, doing: str) -> StoreFault:
    """A server that refused, died or ran out of room, as one line."""
    said = " ".join(str(error).split())[:240] or type(error).__name__
    fix = "check that the server is up and reachable"
    if "No space left" in said or "could not extend" in said:
        fix = "free disk space on the database server (or TMPDIR for the server bench starts)"
    return StoreFault(f"{where}: {doing} ({said}); {fix}")


class PgvectorStore(OneQueryPerCall):  # one query per round trip
    name = PGVECTOR
    in_process = False  # the server's memory is not this process's

    def __init__(
        self, spec: IndexSpec, dsn: str, schema: str, where: str, server_cpu: Callable[[], float | None] | None = None
    ) -> None:
        self.spec, self.dsn, self.schema, self.where = spec, dsn, schema, where
        self.kind = spec.factory
        build = dict(spec.build_params)
        self.quantization = str(build.pop("quantization", "none"))
        self.build_params: dict[str, int] = {k: int(v) for k, v in build.items()}  # type: ignore[call-overload]
        self.table_name = f"{spec.name.replace('-', '_')}_{id(self):x}"[:60]
        self.table = f'"{schema}"."{self.table_name}"'
        self._server_cpu = server_cpu  # () -> CPU seconds of the server's processes, when it is ours
        self.conn: psycopg.Connection | None = None
        self.rerank = 0

    def _guarded(self, doing: str) -> contextlib.AbstractContextManager[None]:
        return _faults(self.where, doing)

    def build(self, vectors: np.ndarray) -> StoreBuild:
        rows, dims = vectors.shape
        self.dims = dims
        self.conn = connect(self.dsn, self.where)
        with self._guarded("loading the vectors failed"):
            cur = self.conn.cursor()
            cur.execute("SET maintenance_work_mem = '1GB'")
            cur.execute(f"CREATE TABLE {self.table} (id int4 NOT NULL, embedding vector({dims}) NOT NULL)")
            with cur.copy(f"COPY {self.table} (id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
                copy.set_types(["int4", "vector"])
                for lo in range(0, rows, COPY_ROWS):
                    block = np.asarray(vectors[lo : lo + COPY_ROWS], dtype=np.float32)
                    for i, row in enumerate(block, lo):
                        copy.write_row((i, row))
        settings: dict[str, object] = {}
        if self.kind != "exact":
            with self._guarded("building the index failed"):
                settings = self._create_index(rows)
        with self._guarded("reading the table's size failed"):
            total, index = self.conn.execute(
                "SELECT pg_total_relation_size(%s::regclass), pg_indexes_size(%s::regclass)",
                (self.table, self.table),
            ).fetchone() or (None, None)
            version = server_version(self.conn)
        description = f"pgvector {self.kind}" + (f" ({self.quantization})" if self.quantization != "none" else "")
        if settings:
            description += " " + ", ".join(f"{k}={v}" for k, v in settings.items() if k != "quantization")
        return StoreBuild(
            description=description,
            bytes=total,
            index_bytes=index or None,
            version=version,
            settings=settings,
            store=PGVECTOR,
        )

    def _create_index(self, rows: int) -> dict[str, object]:
        """The index as the spec asks, and its build settings as PostgreSQL stores them (reloptions)."""
        assert self.conn is not None
        dims, name = self.dims, f'"{self.table_name}_idx"'
        if self.kind == "hnsw":
            options = {
                "m": self.build_params.get("m", 16),
                "ef_construction": self.build_params.get("ef_construction", 64),
            }
        else:
            options = {"lists": self.build_params.get("lists", auto_lists(rows))}
        with_ = ", ".join(f"{k} = {v}" for k, v in options.items())
        if self.quantization == "binary":
            target = f"(binary_quantize(embedding)::bit({dims})) bit_hamming_ops"
        else:
            cast, ops = _OPS[self.quantization]
            target = f"(embedding::{cast}({dims})) {ops}" if cast != "vector" else f"embedding {ops}"
        self.conn.execute(f"CREATE INDEX {name} ON {self.table} USING {self.kind} ({target}) WITH ({with_})")
        self.conn.execute(f"ANALYZE {self.table}")
        found = self.conn.execute(
            "SELECT c.reloptions FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = %s::regclass",
            (self.table,),
        ).fetchone()
        read_back = dict(option.split("=", 1) for option in (found[0] if found and found[0] else []))
        return {**read_back, "quantization": self.quantization}

    def configure(self, params: Mapping[str, object]) -> Mapping[str, object]:
        """Sets ``hnsw.ef_search`` / ``ivfflat.probes`` on the store's connection and reads them back."""
        assert self.conn is not None
        self.rerank = int(params.get("rerank", 0))  # type: ignore[call-overload]
        read: dict[str, object] = {}
        with self._guarded("setting the query parameters failed"):
            # a small table would be scanned in full: the index is what is measured
            self.conn.execute("SET enable_seqscan = " + ("on" if self.kind == "exact" else "off"))
            for key, value in params.items():
                if key in SEARCH_GUCS:
                    self.conn.execute(f"SET {SEARCH_GUCS[key]} = {int(value)}")  # type: ignore[call-overload]
                    row = self.conn.execute(f"SHOW {SEARCH_GUCS[key]}").fetchone()
                    read[key] = int(row[0]) if row else None
            if ITERATIVE_SCAN in params:
                setting = f"{self.kind}.{ITERATIVE_SCAN}"
                self.conn.execute(f"SET {setting} = {params[ITERATIVE_SCAN]}")
                row = self.conn.execute(f"SHOW {setting}").fetchone()
                read[ITERATIVE_SCAN] = row[0] if row else None
            if "rerank" in params:
                read["rerank"] = self.rerank
        return read

    def _sql(self, k: int) -> str:
        dims = self.dims
        if self.quantization == "binary":
            near = f"binary_quantize(embedding)::bit({dims}) <~> binary_quantize(%(q)s::vector)"
            if self.rerank:
                inner = f"SELECT id, embedding FROM {self.table} ORDER BY {near} LIMIT {max(self.rerank, k)}"
                return f"SELECT id, 1 - (embedding <=> %(q)s) FROM ({inner}) s ORDER BY embedding <=> %(q)s LIMIT {k}"
            return f"SELECT id, 1 - 2.0 * ({near}) / {dims} FROM {self.table} ORDER BY {near} LIMIT {k}"
        if self.quantization == "halfvec":
            near = f"embedding::halfvec({dims}) <=> %(q)s::halfvec({dims})"
        else:
            near = "embedding <=> %(q)s"
        return f"SELECT id, 1 - ({near}) FROM {self.table} ORDER BY {near} LIMIT {k}"

    def search(self, queries: np.ndarray, k: int) -> Hits:
        assert self.conn is not None
        sql, out = self._sql(k), []
        with self._guarded("a search failed"):
            cur = self.conn.cursor()
            for query in np.asarray(queries, dtype=np.float32):
                rows = cur.execute(sql, {"q": query}, prepare=True).fetchall()
                ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
                sims = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
                out.append((ids, sims))
        return out

    def server_cpu_seconds(self) -> float | None:
        return self._server_cpu() if self._server_cpu is not None else None

    def close(self) -> None:
        if self.conn is None:
            return
        with contextlib.suppress(Exception):  # a dead server's table goes with its data folder
            self.conn.execute(f"DROP TABLE IF EXISTS {self.table}")
        with contextlib.suppress(Exception):
            self.conn.close()
        self.conn = None


@contextlib.contextmanager
def _faults(where: str, doing: str) -> Iterator[None]:
    import psycopg

    try:
        yield
    except psycopg.Error as e:
        raise server_fault(where, e, doing) from None
