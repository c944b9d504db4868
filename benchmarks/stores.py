"""Loading and searching 100,000 vectors in each store, side by side in one run.

    .venv/bin/python benchmarks/stores.py                    # 100,000 × 384, 200 queries
    .venv/bin/python benchmarks/stores.py --rows 20000       # a quick check

The vectors are unit-length, 384 dimensions (MiniLM's width), drawn around 2,000 random unit centres
(noise of norm 0.6) with a fixed seed so that neighbourhoods exist as they do among real chunk embeddings; the queries
are drawn the same way and are none of the vectors. Each store loads the same float32 matrix through
the same code a run uses (bench.retrieval.stores), builds its index after the load, and answers the
queries one at a time as an application would (a round trip to the server for pgvector). Printed per
store: load + build seconds, bytes on disk (and the ANN index's share), single-query latency p50/p95
in milliseconds, and recall@10 against the exact top 10 (numpy). Stores whose package is missing are
skipped with a note. Every server and folder is removed at the end, as after a run.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from bench.formatting import size
from bench.retrieval.faiss_index import INDEXES, IndexSpec
from bench.retrieval.stores.hosts import StoreHosts, store_problem


@dataclass(frozen=True)
class Case:
    label: str
    spec: IndexSpec
    search: dict


def cases() -> list[Case]:
    def store(label: str, name: str, kind: str, build: dict, search: dict) -> Case:
        return Case(label, IndexSpec(label, kind, tuple(build.items()), store=name, exact=kind == "exact"), search)

    return [
        Case("faiss flat", INDEXES.get("flat"), {}),
        Case("faiss HNSW32 efSearch=64", INDEXES.get("hnsw"), {"efSearch": 64}),
        store("pgvector exact", "pgvector", "exact", {}, {}),
        store("pgvector hnsw ef_search=40", "pgvector", "hnsw", {"m": 16, "ef_construction": 64}, {"ef_search": 40}),
        store("pgvector hnsw halfvec", "pgvector", "hnsw", {"m": 16, "ef_construction": 64, "quantization": "halfvec"},
              {"ef_search": 40}),
        store("pgvector ivfflat probes=10", "pgvector", "ivfflat", {}, {"probes": 10}),
        store("lancedb exact", "lancedb", "exact", {}, {}),
        store("lancedb ivf_pq nprobes=20 refine=5", "lancedb", "ivf_pq", {}, {"nprobes": 20, "refine_factor": 5}),
        store("lancedb ivf_hnsw_sq ef=100", "lancedb", "ivf_hnsw_sq", {}, {"nprobes": 20, "ef": 100}),
        store("chroma hnsw ef_search=100", "chroma", "hnsw", {}, {"ef_search": 100}),
    ]  # fmt: skip


def clustered(rows: int, dims: int, rng: np.random.Generator, centres: np.ndarray) -> np.ndarray:
    out = np.empty((rows, dims), dtype=np.float32)
    for lo in range(0, rows, 50_000):
        n = min(50_000, rows - lo)
        noise = rng.standard_normal((n, dims)).astype(np.float32) * (0.6 / np.sqrt(dims))
        part = centres[rng.integers(0, len(centres), n)] + noise
        out[lo : lo + n] = part / np.linalg.norm(part, axis=1, keepdims=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dims", type=int, default=384)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((2000, args.dims)).astype(np.float32) / np.sqrt(args.dims)
    vectors = clustered(args.rows, args.dims, rng, centres)
    queries = clustered(args.queries, args.dims, rng, centres)
    exact = np.argsort(-(queries @ vectors.T), axis=1)[:, :10]
    print(f"{args.rows:,} vectors × {args.dims}, {args.queries} queries, one at a time\n")
    header = (
        f"{'store':38} {'load+build s':>12} {'on disk':>10} {'index':>10} {'p50 ms':>8} {'p95 ms':>8} {'recall@10':>9}"
    )
    print(header)
    print("-" * len(header))
    with StoreHosts() as hosts:
        for case in cases():
            problem = store_problem(case.spec)
            if problem:
                print(f"{case.label:38} skipped: {problem}")
                continue
            store = hosts.make(case.spec)
            t0 = time.perf_counter()
            built = store.build(vectors)
            seconds = time.perf_counter() - t0
            store.configure(case.search)
            latencies, found = [], []
            with store.one_query_at_a_time():
                store.search(queries[:1], 10)  # warm-up
                for q in queries:
                    t = time.perf_counter()
                    [(ids, _)] = store.search(q[None, :], 10)
                    latencies.append(time.perf_counter() - t)
                    found.append(ids[:10])
            recall = np.mean([len(set(f.tolist()) & set(e.tolist())) / 10 for f, e in zip(found, exact)])
            p50, p95 = np.percentile(np.asarray(latencies) * 1000, [50, 95])
            index = size(built.index_bytes) if built.index_bytes else "-"
            print(
                f"{case.label:38} {seconds:12.1f} {size(built.bytes) if built.bytes else '-':>10} {index:>10} "
                f"{p50:8.2f} {p95:8.2f} {recall:9.3f}",
                flush=True,
            )
            store.close()


if __name__ == "__main__":
    main()
