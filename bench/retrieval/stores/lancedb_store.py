"""LanceDB, embedded in this process: the vectors in one Lance table of a folder the store owns,
written in blocks, an IVF index (flat, PQ or HNSW with scalar quantisation) built over them, and
one query per call, as an application asks.

LanceDB reports ``_distance`` on two scales for the same cosine metric: the exact cosine distance
(1 − cos) for a flat scan, IVF_FLAT and any refined search (it recomputes them from the stored
vectors), but for unrefined IVF_PQ and IVF_HNSW_SQ the squared L2 distance of the normalised
vectors, 2·(1 − cos). Similarities are converted per case so that every kind reports cosine.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bench.errors import BenchError
from bench.retrieval.stores.base import Hits, OneQueryPerCall, StoreBuild, StoreFault, folder_bytes
from bench.retrieval.stores.tables import STORES

if TYPE_CHECKING:
    import pyarrow as pa
    from lancedb.query import LanceVectorQueryBuilder
    from lancedb.table import LanceTable

    from bench.retrieval.faiss_index import IndexSpec

LANCEDB = "lancedb"
KINDS = STORES[LANCEDB]  # each kind's build and query settings, as the config reader checks them
TABLE = "vectors"
BLOCK_ROWS = 65_536  # rows converted from a (memory-mapped) array per write
SQUARED_L2 = ("ivf_pq", "ivf_hnsw_sq")  # unrefined _distance is 2·(1 − cos) for these


def _lancedb() -> Any:
    try:
        import lancedb
    except ImportError:
        raise StoreFault(
            "the lancedb store needs the lancedb package; pip install 'retrieval-shootout[lancedb]'"
        ) from None
    return lancedb


class LanceStore(OneQueryPerCall):
    name = LANCEDB

    def __init__(self, spec: IndexSpec, folder: Path, where: str) -> None:
        self.spec, self.folder, self.where = spec, Path(folder), where
        self.kind = spec.factory
        if self.kind not in KINDS:
            raise BenchError(f"{where}: LanceDB has no index kind {self.kind!r}; use one of {', '.join(KINDS)}")
        kind = KINDS[self.kind]
        self.build_params = dict(spec.build_params)
        unknown = sorted(set(self.build_params) - set(kind.build))
        if unknown:
            raise BenchError(
                f"{where}: LanceDB {self.kind} takes no build setting {', '.join(unknown)}; "
                f"it takes {', '.join(kind.build) or 'none'}"
            )
        self.table: LanceTable | None = None
        self.search_params: dict[str, int] = {}

    def build(self, vectors: np.ndarray) -> StoreBuild:
        lancedb = _lancedb()
        import pyarrow as pa

        rows, dims = vectors.shape
        num_bits = int(self.build_params.get("num_bits", 8))  # type: ignore[call-overload]
        if self.kind == "ivf_pq" and rows < 2**num_bits:
            raise BenchError(
                f"{self.where}: LanceDB ivf_pq trains {2**num_bits} codes per sub-vector from the vectors, but "
                f"there are {rows}; for a corpus this small use kind 'ivf_flat' or 'exact' (or a smaller num_bits)"
            )
        schema = pa.schema([pa.field("id", pa.int32()), pa.field("vector", pa.list_(pa.float32(), dims))])

        def blocks() -> Iterator[pa.RecordBatch]:
            for lo in range(0, rows, BLOCK_ROWS):
                block = np.ascontiguousarray(vectors[lo : lo + BLOCK_ROWS], dtype=np.float32)
                ids = pa.array(np.arange(lo, lo + len(block), dtype=np.int32))
                flat = pa.FixedSizeListArray.from_arrays(pa.array(block.reshape(-1)), dims)
                yield pa.record_batch([ids, flat], schema=schema)

        db = lancedb.connect(self.folder)
        # one write of all blocks: one transaction, not a table version per block
        self.table = db.create_table(TABLE, data=pa.RecordBatchReader.from_batches(schema, blocks()))
        settings: dict[str, object] = {}
        if self.kind != "exact":
            settings = self._create_index()
        index_dir = self.folder / f"{TABLE}.lance" / "_indices"
        description = f"lancedb {self.kind}"
        if settings:
            description += " " + ", ".join(f"{k}={v}" for k, v in settings.items() if k != "distance_type")
        return StoreBuild(
            description=description,
            bytes=folder_bytes(self.folder),
            index_bytes=folder_bytes(index_dir) if index_dir.is_dir() else None,
            version=f"lancedb {lancedb.__version__}",
            settings=settings,
            store=LANCEDB,
        )

    def _create_index(self) -> dict[str, object]:
        """The index as the spec asks (LanceDB's choice where a setting is absent), and its settings as
        LanceDB reports them back."""
        from lancedb.index import IvfFlat, IvfHnswSq, IvfPq

        assert self.table is not None
        make = {"ivf_flat": IvfFlat, "ivf_pq": IvfPq, "ivf_hnsw_sq": IvfHnswSq}[self.kind]
        asked = {k: int(v) for k, v in self.build_params.items()}  # type: ignore[call-overload]
        try:
            self.table.create_index("vector", config=make(distance_type="cosine", **asked))
        except (ValueError, RuntimeError) as e:
            said = " ".join(str(e).split())[:240]
            raise BenchError(
                f"{self.where}: LanceDB could not build the {self.kind} index ({said}); change its build_params"
            ) from None
        (index,) = self.table.list_indices()
        stats = self.table.index_stats(index.name)
        details: dict[str, Any] = index.index_details or {}
        compression, hnsw = details.get("compression") or {}, details.get("hnsw") or {}
        read: dict[str, object] = {"distance_type": stats.distance_type if stats else None}
        partitions = self._partitions()
        if partitions is not None:
            read["num_partitions"] = partitions
        if self.kind == "ivf_pq":
            read["num_sub_vectors"] = compression.get("num_sub_vectors")
            read["num_bits"] = compression.get("num_bits")
        elif self.kind == "ivf_hnsw_sq":
            read["m"] = hnsw.get("max_connections")
            read["ef_construction"] = hnsw.get("construction_ef")
        return read

    def _partitions(self) -> int | None:
        """IVF partitions as trained: LanceDB trains fewer than asked when partitions would hold under
        256 vectors, and reports the count only in a query's plan (partitions ranked)."""
        assert self.table is not None
        probe = np.zeros(self.table.schema.field("vector").type.list_size, dtype=np.float32)
        probe[0] = 1.0
        query = self.table.search(probe, "vector", query_type="vector").distance_type("cosine").nprobes(1)
        plan = query.select(["id", "_distance"]).limit(1).analyze_plan()
        found = re.search(r"partitions_ranked=(\d+)", plan)
        return int(found.group(1)) if found else None

    def configure(self, params: Mapping[str, object]) -> Mapping[str, object]:
        """The query setting for later searches (replacing the last one), as LanceDB's query carries it."""
        allowed = KINDS[self.kind].search
        unknown = sorted(set(params) - set(allowed))
        if unknown:
            raise BenchError(
                f"{self.where}: LanceDB {self.kind} takes no query setting {', '.join(unknown)}; "
                f"it takes {', '.join(allowed) or 'none'}"
            )
        self.search_params = {k: int(v) for k, v in params.items()}  # type: ignore[call-overload]
        if self.table is None:
            return dict(self.search_params)
        probe = self.table.schema.field("vector").type.list_size
        sent = self._query(np.zeros(probe, dtype=np.float32), 1).to_query_object()
        read: dict[str, object] = {}
        if "nprobes" in params:
            read["nprobes"] = sent.minimum_nprobes
        if "refine_factor" in params:
            read["refine_factor"] = sent.refine_factor
        if "ef" in params:
            read["ef"] = sent.ef
        return read

    def _query(self, vector: np.ndarray, k: int) -> LanceVectorQueryBuilder:
        assert self.table is not None
        query = self.table.search(vector, "vector", query_type="vector").distance_type("cosine")
        if self.kind == "exact":
            query = query.bypass_vector_index()
        p = self.search_params
        if "nprobes" in p:
            query = query.nprobes(p["nprobes"])
        if p.get("refine_factor"):
            query = query.refine_factor(p["refine_factor"])
        if "ef" in p:
            query = query.ef(p["ef"])
        return query.select(["id", "_distance"]).limit(k)

    def search(self, queries: np.ndarray, k: int) -> Hits:
        refined = bool(self.search_params.get("refine_factor"))
        scale = 0.5 if self.kind in SQUARED_L2 and not refined else 1.0
        out = []
        for query in np.asarray(queries, dtype=np.float32):
            found: pa.Table = self._query(query, k).to_arrow()
            ids = found.column("id").to_numpy().astype(np.int64)
            distances = found.column("_distance").to_numpy().astype(np.float64)
            out.append((ids, 1.0 - scale * distances))
        return out

    def close(self) -> None:
        self.table = None
        shutil.rmtree(self.folder, ignore_errors=True)
