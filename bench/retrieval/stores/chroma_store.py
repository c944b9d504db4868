"""Chroma, embedded in this process (PersistentClient): one collection with an HNSW index on cosine
distance, in a folder the store owns, loaded in batches of the client's own size and searched one
query per call, as an application asks.

Only embeddings go in and out: no documents nor query texts, so Chroma never needs (nor downloads)
an embedding model. Its telemetry is off.
"""

from __future__ import annotations

import contextlib
import shutil
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bench.errors import BenchError
from bench.retrieval.stores.base import Hits, OneQueryPerCall, StoreBuild, StoreFault, folder_bytes
from bench.retrieval.stores.tables import STORES

if TYPE_CHECKING:
    from chromadb.api.client import Client
    from chromadb.api.collection_configuration import CreateHNSWConfiguration
    from chromadb.api.models.Collection import Collection

    from bench.retrieval.faiss_index import IndexSpec

CHROMA = "chroma"
COLLECTION = "vectors"
HNSW = STORES[CHROMA]["hnsw"]  # its build and query settings, as the config reader checks them
BUILD_SETTINGS = ("space", "max_neighbors", "ef_construction")


def _chromadb() -> Any:
    try:
        import chromadb
    except ImportError:
        raise StoreFault(
            "the chroma store needs the chromadb package; pip install 'retrieval-shootout[chroma]'"
        ) from None
    return chromadb


@contextlib.contextmanager
def _no_embedding_function() -> Iterator[None]:
    """Chroma warns of a collection without an embedding function as legacy; this one has none by design."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "legacy embedding function config", DeprecationWarning)
        yield


class ChromaStore(OneQueryPerCall):
    name = CHROMA

    def __init__(self, spec: IndexSpec, folder: Path, where: str) -> None:
        self.spec, self.folder, self.where = spec, Path(folder), where
        if spec.factory != "hnsw":
            raise BenchError(f"{where}: Chroma has no index kind {spec.factory!r}; use 'hnsw'")
        build = dict(spec.build_params)
        unknown = sorted(set(build) - set(HNSW.build))
        if unknown:
            raise BenchError(
                f"{where}: Chroma hnsw takes no build setting {', '.join(unknown)}; it takes {', '.join(HNSW.build)}"
            )
        self.max_neighbors = int(build.get("max_neighbors", 16))  # type: ignore[call-overload]
        self.ef_construction = int(build.get("ef_construction", 100))  # type: ignore[call-overload]
        self.client: Client | None = None
        self.collection: Collection | None = None
        self.rows = self.dims = 0

    def _connect(self) -> None:
        chromadb = _chromadb()
        from chromadb.config import Settings

        self.client = chromadb.PersistentClient(path=str(self.folder), settings=Settings(anonymized_telemetry=False))

    def build(self, vectors: np.ndarray) -> StoreBuild:
        chromadb = _chromadb()
        rows, dims = vectors.shape
        self.rows, self.dims = rows, dims
        self.folder.mkdir(parents=True)
        self._connect()
        assert self.client is not None
        # Chroma 1.x applies every add straight to the in-memory HNSW graph (no brute-force buffer:
        # the collection configuration has no batch_size), so every search is the graph's.
        # sync_threshold says after how many vectors the graph is written to disk: at its default
        # (1000) a smaller collection is never written and a larger one is rewritten after every
        # batch. At the row count it is written once, whole, when the last batch is in.
        hnsw: CreateHNSWConfiguration = {
            "space": "cosine",
            "max_neighbors": self.max_neighbors,
            "ef_construction": self.ef_construction,
            "sync_threshold": max(rows, 1),
        }
        self.collection = self.client.create_collection(
            COLLECTION, embedding_function=None, configuration={"hnsw": hnsw}
        )
        batch = self.client.get_max_batch_size()
        for lo in range(0, rows, batch):
            block = np.ascontiguousarray(vectors[lo : lo + batch], dtype=np.float32)
            self.collection.add(ids=[str(i) for i in range(lo, lo + len(block))], embeddings=block)
        config = self._hnsw_config()
        settings = {k: config.get(k) for k in BUILD_SETTINGS}
        return StoreBuild(
            description=f"chroma hnsw max_neighbors={settings['max_neighbors']}, "
            f"ef_construction={settings['ef_construction']}",
            bytes=folder_bytes(self.folder),
            # the HNSW segment's folder; chroma.sqlite3 beside it holds ids and the write log
            index_bytes=sum(folder_bytes(p) for p in self.folder.iterdir() if p.is_dir()) or None,
            version=f"chroma {chromadb.__version__}",
            settings=settings,
            store=CHROMA,
        )

    def _hnsw_config(self) -> dict[str, Any]:
        assert self.client is not None
        with _no_embedding_function():
            stored = self.client.get_collection(COLLECTION, embedding_function=None).configuration
        return dict(stored.get("hnsw") or {})

    def configure(self, params: Mapping[str, object]) -> Mapping[str, object]:
        """Sets ``ef_search`` (other settings stay) and reads it back from the reopened collection."""
        unknown = sorted(set(params) - set(HNSW.search))
        if unknown:
            raise BenchError(
                f"{self.where}: Chroma hnsw takes no query setting {', '.join(unknown)}; it takes ef_search"
            )
        if "ef_search" not in params:
            return {}
        assert self.client is not None and self.collection is not None
        ef = int(params["ef_search"])  # type: ignore[call-overload]
        with _no_embedding_function():
            self.collection.modify(configuration={"hnsw": {"ef_search": ef}})
        # Chroma stores the new ef_search but the graph it has loaded keeps searching with the old
        # one: only a graph loaded anew from disk takes it. Closing the client (the last one on this
        # folder) unloads it; the next one loads it with the setting.
        self.client.close()
        self._connect()
        assert self.client is not None
        self.collection = self.client.get_collection(COLLECTION, embedding_function=None)
        # one query loads the graph, so that the first timed query does not
        probe = np.zeros((1, self.dims), dtype=np.float32)
        probe[0, 0] = 1.0
        self.collection.query(query_embeddings=probe, n_results=1, include=["distances"])
        return {"ef_search": self._hnsw_config().get("ef_search")}

    def search(self, queries: np.ndarray, k: int) -> Hits:
        assert self.collection is not None
        n = min(k, self.rows)
        out = []
        for query in np.asarray(queries, dtype=np.float32):
            found = self.collection.query(query_embeddings=query[None, :], n_results=n, include=["distances"])
            ids = np.fromiter((int(i) for i in found["ids"][0]), dtype=np.int64)
            distances = np.asarray((found["distances"] or [[]])[0], dtype=np.float64)
            out.append((ids, 1.0 - distances))
        return out

    def close(self) -> None:
        if self.client is not None:
            with contextlib.suppress(Exception):  # the folder goes below, whatever Chroma says
                self.client.delete_collection(COLLECTION)
            with contextlib.suppress(Exception):
                self.client.close()
        self.client = self.collection = None
        shutil.rmtree(self.folder, ignore_errors=True)
