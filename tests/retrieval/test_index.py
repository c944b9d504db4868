"""FAISS index specs: builtins against brute force, query settings without rebuilds, sizes, user tables."""

from __future__ import annotations

import numpy as np
import pytest

from bench.errors import BenchError
from bench.retrieval.exact_search import exact_top, recall_against_exact
from bench.retrieval.faiss_index import (
    INDEXES,
    IndexSpec,
    auto_nlist,
    auto_pq_m,
    auto_pq_nbits,
    compression_ratio,
    index_bytes,
    index_spec_from_table,
)

N, DIMS, N_QUERIES, K = 2000, 64, 200, 10
BUILTINS = ["flat", "hnsw", "ivf", "ivfpq", "sq8"]


def _unit(rows: int, dims: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((rows, dims)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def data():
    vectors, queries = _unit(N, DIMS, 0), _unit(N_QUERIES, DIMS, 1)
    return vectors, queries, exact_top(vectors, queries, K)


@pytest.fixture(scope="module")
def built(data):
    vectors = data[0]
    return {name: INDEXES.get(name).build_resolved(vectors) for name in BUILTINS}


def _search(index, queries, k=K):
    scores, ids = index.search(np.ascontiguousarray(queries), k)
    return scores, ids


@pytest.mark.parametrize("name", BUILTINS)
def test_every_builtin_searches_with_the_right_shapes(built, data, name):
    index, factory = built[name]
    spec = INDEXES.get(name)
    assert factory == spec.resolve_factory(N, DIMS) and "{" not in factory
    assert index.ntotal == N and index.is_trained
    for _, params in spec.variants():
        spec.configure(index, params)
        scores, ids = _search(index, data[1])
        assert scores.shape == ids.shape == (N_QUERIES, K) and ids.dtype == np.int64
        assert ids.min() >= 0 and ids.max() < N


def test_build_returns_just_the_index_for_the_retriever(data):
    index = INDEXES.get("flat").build(data[0])
    assert index.ntotal == N and INDEXES.get("flat").exact


def test_flat_equals_brute_force(built, data):
    vectors, queries, exact = data
    scores, ids = _search(built["flat"][0], queries)
    assert np.array_equal(ids, exact)
    brute = np.take_along_axis(queries @ vectors.T, exact, axis=1)
    assert np.allclose(scores, brute, atol=1e-5)
    assert recall_against_exact(ids, exact) == 1.0


def test_hnsw_recall_rises_with_ef_search(built, data):
    index, factory = built["hnsw"]
    spec = INDEXES.get("hnsw")
    assert factory == "HNSW32" and index.hnsw.efConstruction == 80
    recalls = {}
    for label, params in spec.variants():
        spec.configure(index, params)
        recalls[label] = recall_against_exact(_search(index, data[1])[1], data[2])
    assert list(recalls) == ["efSearch=16", "efSearch=64"]
    assert recalls["efSearch=64"] >= 0.95
    assert recalls["efSearch=16"] <= recalls["efSearch=64"]


def test_ivf_probing_every_list_is_exact(built, data):
    index, factory = built["ivf"]
    nlist = auto_nlist(N)
    assert factory == f"IVF{nlist},Flat"
    spec = INDEXES.get("ivf")
    spec.configure(index, {"nprobe": nlist})
    assert recall_against_exact(_search(index, data[1])[1], data[2]) == 1.0


def test_one_index_searched_at_two_settings_without_rebuilding(built, data):
    index, _ = built["ivf"]
    spec = INDEXES.get("ivf")
    assert [label for label, _ in spec.variants()] == ["nprobe=1", "nprobe=8"]
    results = {}
    for label, params in spec.variants():
        spec.configure(index, params)
        assert index.nprobe == params["nprobe"]
        results[label] = _search(index, data[1])[1]
    assert index.ntotal == N  # same index, nothing re-added
    assert not np.array_equal(results["nprobe=1"], results["nprobe=8"])
    r1, r8 = (recall_against_exact(results[k], data[2]) for k in ("nprobe=1", "nprobe=8"))
    assert r1 < r8 <= 1.0


@pytest.mark.parametrize("name", ["ivfpq", "sq8"])
def test_compressed_indexes_are_smaller_than_the_vectors(built, data, name):
    index, _ = built[name]
    raw = N * DIMS * 4
    assert index_bytes(index) < raw
    assert compression_ratio(index, N, DIMS) > 1
    assert compression_ratio(index_bytes(index), N, DIMS) == compression_ratio(index, N, DIMS)
    spec = INDEXES.get(name)
    spec.configure(index, spec.variants()[-1][1])
    assert recall_against_exact(_search(index, data[1])[1], data[2]) > 0.2  # approximate, not random


def test_flat_is_not_compressed(built):
    assert compression_ratio(built["flat"][0], N, DIMS) == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize("n", [50, 220])
def test_tiny_corpora_build_for_every_builtin(n):
    vectors, queries = _unit(n, 384, n), _unit(5, 384, 99)
    exact = exact_top(vectors, queries, 10)
    for name in BUILTINS:
        spec = INDEXES.get(name)
        index, factory = spec.build_resolved(vectors)
        assert index.ntotal == n, name
        for _, params in spec.variants():
            spec.configure(index, params)
            _, ids = _search(index, queries)
            assert ids.shape == (5, 10)
        if name in ("flat", "ivf"):  # nlist is tiny here, nprobe=8 probes every list
            assert recall_against_exact(ids, exact) == 1.0, factory


def test_resolved_factories_for_small_and_large_corpora():
    resolved = {name: INDEXES.get(name).resolve_factory(220, 384) for name in BUILTINS}
    assert resolved == {"flat": "Flat", "hnsw": "HNSW32", "ivf": "IVF5,Flat", "ivfpq": "IVF5,PQ48x7np", "sq8": "SQ8"}
    big = {name: INDEXES.get(name).resolve_factory(1_000_000, 384) for name in ("ivf", "ivfpq")}
    assert big == {"ivf": "IVF4000,Flat", "ivfpq": "IVF4000,PQ48x8np"}


def test_auto_numbers():
    assert [auto_nlist(n) for n in (0, 1, 38, 39, 2000, 10**6)] == [1, 1, 1, 1, 51, 4000]
    assert [auto_pq_m(d) for d in (64, 384, 768, 1024, 100, 7)] == [8, 48, 64, 64, 10, 1]
    assert [auto_pq_nbits(n) for n in (1, 2, 50, 220, 256, 10**6)] == [1, 1, 5, 7, 8, 8]
    for n in (2, 50, 220, 5000):
        assert 2 ** auto_pq_nbits(n) <= n and auto_nlist(n) <= max(1, n)


def test_variants_without_search_params_is_one_default_setting():
    assert INDEXES.get("flat").variants() == [("", {})]
    assert INDEXES.get("sq8").variants() == [("", {})]
    assert INDEXES.get("hnsw").variants() == [("efSearch=16", {"efSearch": 16}), ("efSearch=64", {"efSearch": 64})]


def test_a_pinned_number_too_big_for_the_corpus_is_a_bench_error():
    spec = IndexSpec("big", "IVF{nlist},Flat", build_params={"nlist": 500})
    assert spec.resolve_factory(220, 384) == "IVF500,Flat"
    with pytest.raises(BenchError, match=r"index 'big'.*IVF500,Flat.*220 vectors"):
        spec.build(_unit(220, 384, 3))


def test_configure_rejects_a_parameter_the_index_lacks(built):
    with pytest.raises(BenchError, match=r"nprobe.*efSearch"):
        INDEXES.get("hnsw").configure(built["hnsw"][0], {"nprobe": 4})


# --- user-defined indexes ------------------------------------------------------------------------------

EXAMPLE = {"factory": "HNSW64", "build": {"efConstruction": 200}, "search": [{"efSearch": 32}, {"efSearch": 128}]}


def test_user_table_example_parses_and_builds():
    spec = index_spec_from_table("hnsw64", EXAMPLE)
    assert spec == IndexSpec(
        "hnsw64", "HNSW64", (("efConstruction", 200),), ({"efSearch": 32}, {"efSearch": 128}), exact=False
    )
    assert [label for label, _ in spec.variants()] == ["efSearch=32", "efSearch=128"]
    index, factory = spec.build_resolved(_unit(300, 32, 5))
    assert factory == "HNSW64" and index.hnsw.efConstruction == 200
    spec.configure(index, {"efSearch": 128})
    assert index.hnsw.efSearch == 128


def test_user_tables_with_templates_and_flat():
    ivf = index_spec_from_table(
        "ivf_big",
        {"factory": "IVF{nlist},Flat", "build": {"nlist": 4}, "search": [{"nprobe": 2}], "description": "pinned"},
    )
    assert ivf.resolve_factory(1000, 64) == "IVF4,Flat" and ivf.description == "pinned"
    assert index_spec_from_table("exact", {"factory": "Flat"}).exact
    auto = index_spec_from_table("pq", {"factory": "IVF{nlist},PQ{m}x{nbits}np", "search": {"nprobe": 4}})
    assert auto.search_params == ({"nprobe": 4},) and auto.resolve_factory(220, 384) == "IVF5,PQ48x7np"


@pytest.mark.parametrize(
    "table, message",
    [
        ({**EXAMPLE, "serach": []}, r"index 'bad': unknown key 'serach'; did you mean 'search'\?"),
        ({"build": {}}, r"index 'bad': needs factory"),
        ({"factory": "HNSWx"}, r"index 'bad': faiss cannot parse factory 'HNSWx'"),
        ({"factory": "HNSW32", "search": [16, 64]}, r"search\[0\] is 16, not a table"),
        ({"factory": "HNSW32", "search": "efSearch=16"}, r"search must be a list of tables"),
        (
            {"factory": "HNSW32", "search": [{"nprobe": 4}]},
            r"'nprobe' does not apply to 'HNSW32'.*known for it: efSearch",
        ),
        ({"factory": "HNSW32", "search": [{"efsearch": 4}]}, r"did you mean 'efSearch'\?"),
        ({"factory": "HNSW32", "build": {"efConstrution": 4}}, r"build parameter 'efConstrution'.*did you mean"),
        ({"factory": "IVF{nlist},Flat", "build": {"efConstruction": 4}}, r"efConstruction only applies to an HNSW"),
        ({"factory": "IVF1024,Flat", "build": {"nlist": 4}}, r"nlist is part of the factory string"),
        ({"factory": "IVF{nlsit},Flat"}, r"placeholder \{nlsit\} is unknown; did you mean 'nlist'\?"),
        ({"factory": "IVF{nlist,Flat"}, r"unbalanced braces"),
        ({"factory": "SQ8", "search": [{"nprobe": 1}]}, r"known for it: none"),
        ({"factory": "IVF{nlist},Flat", "search": [{"nprobe": 0}]}, r"nprobe = 0 must be a positive integer"),
        ({"factory": "IVF{nlist},Flat", "search": [{"nprobe": True}]}, r"must be a number"),
        ({"factory": "IVF{nlist},Flat", "search": [{}]}, r"search\[0\] is empty"),
        (
            {"factory": "IVF{nlist}_HNSW32,Flat", "search": [{"nprobe": 1}, {"quantizer_efSearch": 8}]},
            r"every search entry must set the same parameters",
        ),
        ("HNSW32", r"must be a table"),
    ],
)
def test_bad_user_tables_are_bench_errors(table, message):
    with pytest.raises(BenchError, match=message) as info:
        index_spec_from_table("bad", table)
    assert "\n" not in str(info.value)


def test_user_index_names_cannot_contain_a_slash():
    with pytest.raises(BenchError, match="without '/'"):
        index_spec_from_table("a/b", EXAMPLE)


# --- the exact reference and recall --------------------------------------------------------------------


def test_exact_top_breaks_ties_by_lower_id():
    vectors = np.array([[1, 0], [0, 1], [1, 0], [0.6, 0.8], [1, 0]], dtype=np.float32)
    queries = np.array([[1, 0], [0, 1]], dtype=np.float32)
    assert exact_top(vectors, queries, 2).tolist() == [[0, 2], [1, 3]]
    assert exact_top(vectors, queries, 4).tolist() == [[0, 2, 4, 3], [1, 3, 0, 2]]
    assert exact_top(vectors, queries, 99).shape == (2, 5)


def test_exact_top_batches_agree_with_one_batch(data):
    vectors, queries, exact = data
    assert np.array_equal(exact_top(vectors, queries, K, batch=7), exact)


def test_recall_against_exact_by_hand():
    exact = np.array([[1, 2, 3, 4], [5, 6, 7, 8]])
    approx = np.array([[4, 9, 1, -1], [5, 6, 7, 8]])
    assert recall_against_exact(approx, exact) == pytest.approx((2 / 4 + 4 / 4) / 2)
    # -1 in the exact row is ignored, ragged rows are fine, an empty exact row counts as found
    assert recall_against_exact([[1], [3, 2], []], [[1, -1], [2, 5, 6], [-1]]) == pytest.approx((1 + 1 / 3 + 1) / 3)
    assert np.isnan(recall_against_exact([], []))
    with pytest.raises(ValueError):
        recall_against_exact([[1]], [[1], [2]])
