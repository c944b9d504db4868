"""The embedded stores (LanceDB, Chroma) on real engines against numpy's brute force: an exact scan
is exact, an index at generous settings finds nearly all of the true neighbours, similarities are
cosine whatever scale the engine reports distances on, every setting reaches the engine and is
reported back as it took it, and closing removes the store's folder."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from bench.errors import BenchError, EnvironmentFault
from bench.retrieval.faiss_index import IndexSpec

if TYPE_CHECKING:  # imported where used: they import nothing of their engines until asked
    from bench.retrieval.stores.chroma_store import ChromaStore
    from bench.retrieval.stores.lancedb_store import LanceStore

ROWS, DIMS, QUERIES, K = 1200, 32, 40, 10
NEAR_TIE = 1e-5


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Vectors, queries, and per query numpy's exact top (k + 1) ids and cosine similarities."""
    rng = np.random.default_rng(20240611)
    vectors, queries = _unit(rng.standard_normal((ROWS, DIMS))), _unit(rng.standard_normal((QUERIES, DIMS)))
    scores = queries.astype(np.float64) @ vectors.astype(np.float64).T
    order = np.argsort(-scores, axis=1, kind="stable")[:, : K + 1]
    return vectors, queries, order, np.take_along_axis(scores, order, axis=1)


def _recall(hits: list[tuple[np.ndarray, np.ndarray]], exact_ids: np.ndarray) -> float:
    return float(
        np.mean([len(set(ids[:K].tolist()) & set(e[:K].tolist())) / K for (ids, _), e in zip(hits, exact_ids)])
    )


def _similarity_errors(
    hits: list[tuple[np.ndarray, np.ndarray]], vectors: np.ndarray, queries: np.ndarray
) -> np.ndarray:
    """Per returned row, |reported similarity − numpy's cosine of the same pair|."""
    return np.concatenate(
        [np.abs(sims - vectors[ids].astype(np.float64) @ q.astype(np.float64)) for (ids, sims), q in zip(hits, queries)]
    )


def _spec(store: str, kind: str, **build: object) -> IndexSpec:
    return IndexSpec(name=f"{store}-{kind}", factory=kind, build_params=tuple(build.items()), store=store)


# LanceDB -----------------------------------------------------------------------------------------


def _lance(tmp_path: Path, kind: str, **build: object) -> LanceStore:
    from bench.retrieval.stores.lancedb_store import LanceStore

    return LanceStore(_spec("lancedb", kind, **build), tmp_path / "lance", "index 'test'")


def test_lancedb_exact_scan_is_numpy_brute_force(tmp_path: Path, data):
    pytest.importorskip("lancedb")
    vectors, queries, exact_ids, exact_scores = data
    store = _lance(tmp_path, "exact")
    built = store.build(vectors)
    assert store.configure({}) == {}
    hits = store.search(queries, K)
    for (ids, sims), e_ids, e_scores in zip(hits, exact_ids, exact_scores):
        assert ids.dtype == np.int64 and sims.dtype == np.float64 and len(ids) == K
        np.testing.assert_allclose(sims, e_scores[:K], atol=NEAR_TIE)  # the true top k, in order
        gaps = np.abs(np.diff(e_scores))  # to the next; the last one is to the (k + 1)-th
        for j in range(K):
            clear = gaps[j] > NEAR_TIE and (j == 0 or gaps[j - 1] > NEAR_TIE)
            if clear:
                assert ids[j] == e_ids[j]
    assert _similarity_errors(hits, vectors, queries).max() < NEAR_TIE
    assert built.bytes and built.bytes > ROWS * DIMS * 4  # the vectors themselves at least
    assert built.index_bytes is None and built.settings == {} and built.store == "lancedb"
    assert built.version and built.version.startswith("lancedb ")
    store.close()
    assert not store.folder.exists()


# kind, build settings, a generous query setting, recall floor, similarity tolerance at it
LANCE_INDEXES = [
    ("ivf_flat", {"num_partitions": 4}, {"nprobes": 4}, 0.99, NEAR_TIE),
    (
        "ivf_pq",
        {"num_partitions": 4, "num_sub_vectors": 16, "num_bits": 8},
        {"nprobes": 4, "refine_factor": 10},
        0.9,
        NEAR_TIE,
    ),
    ("ivf_hnsw_sq", {"num_partitions": 2, "m": 16, "ef_construction": 100}, {"nprobes": 2, "ef": 200}, 0.9, 0.03),
]


@pytest.mark.parametrize(
    ("kind", "build", "generous", "floor", "tolerance"), LANCE_INDEXES, ids=[k[0] for k in LANCE_INDEXES]
)
def test_lancedb_index_finds_the_neighbours_with_its_settings(
    tmp_path: Path, data, kind, build, generous, floor, tolerance
):
    pytest.importorskip("lancedb")
    vectors, queries, exact_ids, _ = data
    store = _lance(tmp_path, kind, **build)
    built = store.build(vectors)
    assert built.settings == {**build, "distance_type": "cosine"}  # as LanceDB reports them back
    assert all(f"{k}={v}" in built.description for k, v in build.items())
    assert store.table is not None
    (index,) = store.table.list_indices()
    assert built.index_bytes == index.size_bytes and 0 < built.index_bytes < (built.bytes or 0)

    assert store.configure(generous) == generous
    hits = store.search(queries, K)
    assert _recall(hits, exact_ids) >= floor
    assert _similarity_errors(hits, vectors, queries).max() < tolerance

    # a stingy setting reaches the engine: it finds fewer
    stingy = {"nprobes": 1} if kind != "ivf_hnsw_sq" else {"nprobes": 1, "ef": 10}
    assert store.configure(stingy) == stingy
    assert _recall(store.search(queries, K), exact_ids) < _recall(hits, exact_ids) - 0.05
    store.close()
    assert not store.folder.exists()


@pytest.mark.parametrize("kind", ["ivf_pq", "ivf_hnsw_sq"])
def test_lancedb_unrefined_quantised_distances_are_read_as_cosine(tmp_path: Path, data, kind):
    """Unrefined, LanceDB reports 2·(1 − cos) for these kinds: read as 1 − cos, similarities would be
    off by as much as they are far (tenths); read right, by the quantisation's error alone."""
    pytest.importorskip("lancedb")
    vectors, queries, _, _ = data
    build = {"num_sub_vectors": 16} if kind == "ivf_pq" else {}
    store = _lance(tmp_path, kind, **build)
    store.build(vectors)
    store.configure({"nprobes": 4})
    errors = _similarity_errors(store.search(queries, K), vectors, queries)
    assert errors.mean() < 0.03 and errors.max() < 0.15
    store.close()


def test_lancedb_reports_the_settings_it_chose_and_trained(tmp_path: Path, data):
    pytest.importorskip("lancedb")
    vectors = data[0]
    chosen = _lance(tmp_path / "a", "ivf_pq")
    settings = chosen.build(vectors).settings
    assert {"num_partitions", "num_sub_vectors", "num_bits"} <= set(settings)
    assert settings["num_bits"] == 8 and DIMS % int(settings["num_sub_vectors"]) == 0  # type: ignore[call-overload]
    chosen.close()
    # more PQ partitions than the rows fill (LanceDB wants 256 vectors in each): it trains fewer, and
    # the store says how many
    crowded = _lance(tmp_path / "b", "ivf_pq", num_partitions=64)
    built = crowded.build(vectors)
    partitions = built.settings["num_partitions"]
    assert isinstance(partitions, int) and 1 <= partitions < 64 and f"num_partitions={partitions}," in built.description
    crowded.close()


def test_lancedb_refuses_what_it_cannot_do_in_one_line(tmp_path: Path, data):
    pytest.importorskip("lancedb")
    with pytest.raises(BenchError, match=r"index 'test'.*ivf_pq.*256.*200"):
        _lance(tmp_path / "a", "ivf_pq").build(data[0][:200])
    with pytest.raises(BenchError, match="no build setting ef_search"):
        _lance(tmp_path / "b", "ivf_flat", ef_search=10)
    with pytest.raises(BenchError, match="no index kind 'hnsw'"):
        _lance(tmp_path / "c", "hnsw")
    flat = _lance(tmp_path / "d", "ivf_flat")
    with pytest.raises(BenchError, match="no query setting ef"):
        flat.configure({"ef": 10})


def test_lancedb_missing_is_an_environment_fault(tmp_path: Path, data, monkeypatch):
    monkeypatch.setitem(sys.modules, "lancedb", None)  # as if not installed
    with pytest.raises(EnvironmentFault, match=r"pip install 'retrieval-shootout\[lancedb\]'"):
        _lance(tmp_path, "exact").build(data[0])


# Chroma ------------------------------------------------------------------------------------------


def _chroma(tmp_path: Path, kind: str = "hnsw", **build: object) -> ChromaStore:
    from bench.retrieval.stores.chroma_store import ChromaStore

    return ChromaStore(_spec("chroma", kind, **build), tmp_path / "chroma", "index 'test'")


def test_chroma_hnsw_finds_the_neighbours_and_takes_ef_search(tmp_path: Path, data):
    pytest.importorskip("chromadb")
    vectors, queries, exact_ids, _ = data
    model_cache = Path.home() / ".cache" / "chroma"
    had_cache = model_cache.exists()
    store = _chroma(tmp_path, max_neighbors=8, ef_construction=50)
    built = store.build(vectors)
    assert built.settings == {"space": "cosine", "max_neighbors": 8, "ef_construction": 50}
    assert built.version and built.version.startswith("chroma ") and built.store == "chroma"
    # the whole graph is on disk (every vector in it), not the first part Chroma writes by default
    assert built.index_bytes and built.index_bytes > ROWS * DIMS * 4 and built.bytes and built.bytes > built.index_bytes

    assert store.configure({"ef_search": 200}) == {"ef_search": 200}
    generous = store.search(queries, K)
    assert _recall(generous, exact_ids) >= 0.95
    assert _similarity_errors(generous, vectors, queries).max() < NEAR_TIE
    assert all(ids.dtype == np.int64 and sims.dtype == np.float64 and len(ids) == K for ids, sims in generous)

    # the setting reaches the graph, not only the stored configuration: a small ef finds fewer
    assert store.configure({"ef_search": 10}) == {"ef_search": 10}
    assert _recall(store.search(queries, K), exact_ids) < _recall(generous, exact_ids) - 0.1
    store.close()
    assert not store.folder.exists()
    assert model_cache.exists() == had_cache  # no embedding model was fetched


def test_chroma_writes_the_whole_graph_below_its_default_sync_threshold(tmp_path: Path, data):
    pytest.importorskip("chromadb")
    rows = 600  # Chroma writes its graph to disk after 1000 vectors unless told otherwise
    store = _chroma(tmp_path)
    built = store.build(data[0][:rows])
    assert built.settings == {"space": "cosine", "max_neighbors": 16, "ef_construction": 100}  # the defaults
    assert built.index_bytes and built.index_bytes > rows * DIMS * 4
    store.close()


def test_chroma_refuses_what_it_cannot_do_in_one_line(tmp_path: Path):
    pytest.importorskip("chromadb")
    with pytest.raises(BenchError, match="no index kind 'ivf_flat'"):
        _chroma(tmp_path, "ivf_flat")
    with pytest.raises(BenchError, match="no build setting m"):
        _chroma(tmp_path, m=16)
    with pytest.raises(BenchError, match="no query setting nprobes"):
        _chroma(tmp_path).configure({"nprobes": 4})


def test_chroma_missing_is_an_environment_fault(tmp_path: Path, data, monkeypatch):
    monkeypatch.setitem(sys.modules, "chromadb", None)
    with pytest.raises(EnvironmentFault, match=r"pip install 'retrieval-shootout\[chroma\]'"):
        _chroma(tmp_path).build(data[0])
