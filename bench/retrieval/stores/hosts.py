"""What a run's vector stores need beyond themselves, made once per run and undone at its end: a
folder for the embedded stores (LanceDB, Chroma), the PostgreSQL server bench starts, bench's
schema in each database, and the guard that undoes all of it however the run ends."""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from bench.errors import BenchError
from bench.retrieval.stores.base import FAISS, StoreFault, VectorStore
from bench.retrieval.stores.faiss_store import FaissStore
from bench.retrieval.stores.guard_client import Guard

if TYPE_CHECKING:
    from bench.retrieval.faiss_index import IndexSpec
    from bench.retrieval.stores.postgres_server import PostgresServer

ENV_PREFIX = "env:"


def resolve_dsn(dsn: str, where: str) -> str:
    """``env:NAME`` is the environment variable's value: how a password stays out of bench.toml."""
    if not dsn.startswith(ENV_PREFIX):
        return dsn
    name = dsn.removeprefix(ENV_PREFIX)
    value = os.environ.get(name)
    if not value:
        raise BenchError(f"{where}: dsn = {dsn!r} but ${name} is not set; export {name}=postgresql://…")
    return value


def shown_dsn(dsn: str) -> str:
    """A connection string with its password left out, as the manifest and messages show it."""
    try:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        parts = {k: v for k, v in conninfo_to_dict(dsn).items() if k != "password"}
        return make_conninfo("", **{k: str(v) for k, v in parts.items()})
    except Exception:
        return "(unreadable connection string)"


class StoreHosts:
    """Made lazily: a run of FAISS indexes alone starts nothing."""

    def __init__(self) -> None:
        self._guard: Guard | None = None
        self._root: Path | None = None
        self._server: PostgresServer | None = None
        self._server_failed: StoreFault | None = None  # said once; its later candidates are left out with it
        self._schemas: dict[str, str] = {}  # dsn -> bench's schema there
        self._made = 0
        self.servers: dict[str, dict[str, object]] = {}  # the manifest's "stores": what each store ran on

    def __enter__(self) -> StoreHosts:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    @property
    def guard(self) -> Guard:
        if self._guard is None:
            self._guard = Guard()
        return self._guard

    def _folder(self, name: str) -> Path:
        """A new folder for one store's files, under the run's own temporary folder."""
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix="bench-stores-"))
            self.guard.remove(self._root)
            if os.geteuid() == 0:
                self._root.chmod(0o711)  # a server run as another user passes through to its own folder
        self._made += 1
        return self._root / f"{name}-{self._made}"

    def make(self, spec: IndexSpec) -> VectorStore:
        """The store an index spec names, with what it needs made or started."""
        where = f"index {spec.name!r}"
        if spec.store == FAISS:
            return FaissStore(spec)
        if spec.store == "pgvector":
            from bench.retrieval.stores.pgvector_store import PgvectorStore

            dsn, cpu = self._postgres(spec, where)
            return PgvectorStore(spec, dsn, self._schema(dsn, where), f"{where} ({self._shown(dsn)})", cpu)
        if spec.store == "lancedb":
            from bench.retrieval.stores.lancedb_store import LanceStore

            self.servers.setdefault("lancedb", {"where": "embedded, in this process"})
            return LanceStore(spec, self._folder(spec.name), where)
        if spec.store == "chroma":
            from bench.retrieval.stores.chroma_store import ChromaStore

            self.servers.setdefault("chroma", {"where": "embedded PersistentClient, in this process"})
            return ChromaStore(spec, self._folder(spec.name), where)
        raise BenchError(f"{where}: store = {spec.store!r} is unknown")

    def _entry(self, dsn: str) -> dict[str, object]:
        """The manifest's entry for a PostgreSQL server: "pgvector" for the one bench started, else
        by its connection string without password."""
        ours = self._server is not None and dsn == self._server.dsn
        return self.servers.setdefault("pgvector" if ours else f"pgvector {shown_dsn(dsn)}", {})

    def _shown(self, dsn: str) -> str:
        server = self._server
        if server is not None and dsn == server.dsn:
            return f"PostgreSQL started by bench on 127.0.0.1:{server.port}"
        return shown_dsn(dsn)

    def _postgres(self, spec: IndexSpec, where: str) -> tuple[str, Callable[[], float | None] | None]:
        """The server to use: the spec's own ``dsn``, else one bench starts (once per run)."""
        if spec.dsn:
            dsn = resolve_dsn(spec.dsn, where)
            self._entry(dsn).update({"where": shown_dsn(dsn), "started_by_bench": False})
            return dsn, None
        if self._server_failed is not None:
            raise self._server_failed  # tried once: every later candidate on it is left out with the same line
        if self._server is None:
            from bench.retrieval.stores.pgvector_store import connect
            from bench.retrieval.stores.postgres_server import PostgresServer

            try:
                self._server = server = PostgresServer(self._folder("postgres"), self.guard)
                conn = connect(server.dsn, where, vector=False)
                try:
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")  # its own database: bench may
                finally:
                    conn.close()
            except StoreFault as fault:
                self._server, self._server_failed = None, fault
                raise
            self._entry(server.dsn).update(
                {
                    "where": f"127.0.0.1:{server.port}",
                    "started_by_bench": True,
                    "start_seconds": round(server.start_seconds, 3),
                    "settings": dict(server.settings),
                }
            )
        return self._server.dsn, self._server.cpu_seconds

    def _schema(self, dsn: str, where: str) -> str:
        """bench's own schema in the database of ``dsn``: made once, dropped by the guard at the end."""
        if dsn not in self._schemas:
            from bench.retrieval.stores.pgvector_store import connect, server_version

            schema = f"bench_{os.getpid()}_{secrets.token_hex(3)}"
            self.guard.drop_schema(dsn, schema)  # known to the guard before it exists
            conn = connect(dsn, f"{where} ({self._shown(dsn)})")
            try:
                conn.execute(f'CREATE SCHEMA "{schema}"')
                version = server_version(conn)
            finally:
                conn.close()
            self._entry(dsn).update({"schema": schema, "version": version})
            self._schemas[dsn] = schema
        return self._schemas[dsn]

    def close(self) -> None:
        """Every schema dropped, the server stopped, the folders removed: the guard does it, and this
        waits for it (up to ``guard_client.CLOSE_SECONDS``)."""
        if self._guard is not None:
            self._guard.close()
            self._guard = None


def store_problem(spec: IndexSpec) -> str | None:
    """What would stop a store before it loads anything, checked without writing: its package is
    installed; a ``dsn`` server accepts a connection and has the pgvector extension. None when the
    store would start."""
    where = f"index {spec.name!r}"
    try:
        if spec.store == "pgvector":
            from bench.retrieval.stores.pgvector_store import connect

            if not spec.dsn:
                from bench.retrieval.stores.postgres_server import binaries

                binaries()
                return None
            dsn = resolve_dsn(spec.dsn, where)
            conn = connect(dsn, f"{where} ({shown_dsn(dsn)})")
            conn.close()
        elif spec.store in ("lancedb", "chroma"):
            import importlib

            importlib.import_module("lancedb" if spec.store == "lancedb" else "chromadb")
    except ImportError:
        return f"{where}: the {spec.store} store is not installed; pip install 'retrieval-shootout[{spec.store}]'"
    except BenchError as e:
        return str(e)
    return None
