"""Compressed vectors: binary codes (Hamming, rescored), int8 scalar quantisation and Matryoshka
truncation; their sizes by arithmetic, their rankings against numpy, their recall against the
full float exact search, their config tables, and a run through the command line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench.config import load_config
from bench.embedders import MODELS
from bench.embedders.no_cache import NoCache
from bench.errors import BenchError
from bench.retrieval.compressed import binary_index, hamming_top, rescore, sign_bits, truncate
from bench.retrieval.exact_search import exact_top, recall_against_exact
from bench.retrieval.faiss_index import INDEXES, compression_ratio, index_bytes
from bench.retrieval.index_kinds import index_spec_from_config
from bench.retrieval.retrievers import DenseRetriever
from tests.helpers import CONFIG, finished_runs, run_cli, write_project
from tests.retrieval.test_retrievers import _table

# What FAISS writes besides the vectors (its serialisation format), in bytes.
BINARY_HEADER = 33  # IndexBinaryFlat: d, code size, ntotal, metric …
FLAT_HEADER = 45
SQ8_HEADER = 81  # plus 8 bytes per dimension: the trained minimum and range, as float32


def _unit(a: np.ndarray) -> np.ndarray:
    return (a / np.linalg.norm(a, axis=1, keepdims=True)).astype(np.float32)


def _low_rank(rows: int, seed: int, latent: int = 8, dims: int = 256) -> np.ndarray:
    """Unit vectors with structure, as embeddings have (random unit vectors are all about equally far apart)."""
    rng = np.random.default_rng(seed)
    basis = np.random.default_rng(99).standard_normal((latent, dims))
    return _unit(rng.standard_normal((rows, latent)) @ basis)


# --- storage -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("n, dims", [(1000, 384), (7, 64), (300, 100)])
def test_binary_index_stores_one_bit_per_dimension(n, dims):
    vectors = _unit(np.random.default_rng(0).standard_normal((n, dims)))
    spec = index_spec_from_config("bin", {"kind": "binary"})
    index, factory = spec.build_resolved(vectors)
    code = -(-dims // 8)  # 100 dims: 13 bytes, the last 4 bits zero
    assert factory == "BFlat" and index.ntotal == n
    assert index_bytes(index) == n * code + BINARY_HEADER
    assert compression_ratio(index, n, dims) == pytest.approx(n * dims * 4 / (n * code + BINARY_HEADER))


@pytest.mark.parametrize("n, dims", [(1000, 384), (300, 64)])
def test_sq8_stores_one_byte_per_dimension(n, dims):
    vectors = _unit(np.random.default_rng(0).standard_normal((n, dims)))
    index = INDEXES.get("sq8").build(vectors)
    assert index_bytes(index) == n * dims + 8 * dims + SQ8_HEADER
    assert index_bytes(INDEXES.get("flat").build(vectors)) == n * dims * 4 + FLAT_HEADER
    assert compression_ratio(index, n, dims) == pytest.approx(4, rel=0.05 if n >= 1000 else 0.2)


def test_sq8_reports_recall_against_float_exact_search():
    retriever = DenseRetriever(MODELS.get("hash"), INDEXES.get("sq8"), NoCache())
    build = retriever.build(_table())
    n = len(retriever.vectors)
    assert build.dims == 256 and build.index_bytes == n * 256 + 8 * 256 + SQ8_HEADER
    queries = retriever.encode(["database backups", "monday rotation"])
    recall = retriever.recall_against_exact(queries, 3)
    assert recall is not None and 0.0 <= recall <= 1.0


def test_the_query_settings_of_one_build_share_one_exact_scan(monkeypatch):
    import bench.retrieval.retrievers

    scans = []

    def counted(*args, **kwargs):
        scans.append(args[2])
        return exact_top(*args, **kwargs)

    monkeypatch.setattr(bench.retrieval.retrievers, "exact_top", counted)
    retriever = DenseRetriever(MODELS.get("hash"), INDEXES.get("hnsw"), NoCache())
    retriever.build(_table())
    queries = retriever.encode(["database backups", "monday rotation"])
    recalls = []
    for params in INDEXES.get("hnsw").search_params:
        retriever.set_search(params)
        recalls.append(retriever.recall_against_exact(queries, 3))
    assert scans == [3]  # one scan for both efSearch settings
    retriever.recall_against_exact(queries, 2)
    retriever.recall_against_exact(queries[:1], 2)
    assert scans == [3, 2, 2]  # other depths or questions scan again
    expected = recall_against_exact(
        [u for u, _ in retriever.search(queries, 3)],
        exact_top(retriever.vectors, queries, 3),
        retriever.vectors,
        queries,
    )
    assert recalls[-1] == expected


# --- Hamming search ------------------------------------------------------------------------------------


def _reference_hamming(codes: np.ndarray, query: np.ndarray, n: int, tie_order: np.ndarray):
    distances = np.unpackbits(codes ^ query, axis=1).sum(axis=1)  # popcount of XOR
    order = sorted(range(len(codes)), key=lambda i: (distances[i], tie_order[i]))[:n]
    return np.array(order), distances[order]


@pytest.mark.parametrize("n", [1, 5, 37, 200, 500])
def test_hamming_search_agrees_with_popcount_of_xor_ties_by_unit_id(n):
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((400, 12)).astype(np.float32)  # 12 bits: hundreds of ties per distance
    queries = rng.standard_normal((20, 12)).astype(np.float32)
    tie_order = rng.permutation(400)
    index = binary_index(vectors)
    codes, query_codes = sign_bits(vectors), sign_bits(queries)
    for (ids, distances), query in zip(hamming_top(index, query_codes, n, tie_order), query_codes):
        want_ids, want_distances = _reference_hamming(codes, query, n, tie_order)
        assert ids.tolist() == want_ids.tolist() and distances.tolist() == want_distances.tolist()


def test_binary_retriever_scores_match_its_rankings_and_ties_go_by_unit_id():
    table = _table()
    for params in ({"rescore": 0}, {"rescore": 3}):
        retriever = DenseRetriever(MODELS.get("hash"), index_spec_from_config("bin", {"kind": "binary"}), NoCache())
        build = retriever.build(table)
        assert build.dims == 256 and build.index_bytes == len(table) * 32 + BINARY_HEADER
        retriever.set_search(params)
        queries = retriever.encode(["database backups", "monday rotation", "zzz unrelated"])
        for qi, (units, scores) in enumerate(retriever.search(queries, 5)):
            assert np.allclose(retriever.score(queries, qi, units), scores)
            keys = [(-s, table.tie_order[u]) for u, s in zip(units, scores)]
            assert keys == sorted(keys)
        [(units, scores), *_] = retriever.search(queries, 5)
        ids = [table.chunks[u].id for u in units]  # the two identical chunks tie, a.md first
        assert ids[:2] == ["a.md#0000", "b.md#0000"] and scores[0] == scores[1]


def test_rescoring_recovers_recall_against_the_float_index():
    vectors, queries = _low_rank(2000, 0), _low_rank(100, 1)
    tie_order = np.arange(len(vectors))
    exact = exact_top(vectors, queries, 10)
    index = binary_index(vectors)
    hamming = [ids for ids, _ in hamming_top(index, sign_bits(queries), 10, tie_order)]
    shortlists = hamming_top(index, sign_bits(queries), 100, tie_order)
    rescored = [rescore(vectors, q, ids, 10, tie_order)[0] for q, (ids, _) in zip(queries, shortlists)]
    alone, with_rescore = recall_against_exact(hamming, exact), recall_against_exact(rescored, exact)
    assert alone < 0.9 and with_rescore >= alone and with_rescore >= 0.99


def test_rescore_of_everything_is_the_flat_ranking():
    vectors = _unit(np.random.default_rng(3).standard_normal((50, 32)))
    query = vectors[7] + 0.1
    ids, scores = rescore(vectors, query, np.arange(50)[::-1], 10, np.arange(50))
    assert ids.tolist() == np.argsort(-(vectors @ query), kind="stable")[:10].tolist()
    assert np.allclose(scores, (vectors @ query)[ids])


# --- Matryoshka truncation ------------------------------------------------------------------------------


def test_truncation_keeps_the_first_components_renormalised():
    x = np.random.default_rng(0).standard_normal((30, 64)).astype(np.float32)
    x[3] = 0  # stays zero rather than becoming NaN
    out = truncate(x, 16)
    first = x[:, :16]
    norms = np.linalg.norm(first, axis=1, keepdims=True)
    expected = np.divide(first, norms, out=np.zeros_like(first), where=norms > 0)
    assert out.shape == (30, 16) and np.allclose(out, expected, atol=1e-7)
    assert np.allclose(np.linalg.norm(np.delete(out, 3, axis=0), axis=1), 1) and not out[3].any()


class _Fixed:
    """An embedder that returns given vectors: text i is row i of PASSAGES, question j row j of QUESTIONS."""

    def __init__(self, passages: np.ndarray, questions: dict[str, np.ndarray]) -> None:
        self.passages, self.questions = passages, questions
        self.spec = MODELS.get("hash")
        self.dims = passages.shape[1]

    def embed(self, texts, role):
        return np.stack([self.questions[t] if t in self.questions else self.passages[int(t[1:])] for t in texts])

    def count_tokens(self, texts):
        return np.ones(len(texts), dtype=np.int64)


def test_truncated_recall_is_measured_against_full_float_exact_search():
    r = 1 / np.sqrt(2)
    passages = np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0.6, 0.8, 0, 0], [0.1, -np.sqrt(0.99), 0, 0]], dtype=np.float32)
    questions = {"q0": np.array([r, 0, r, 0], np.float32), "q1": np.array([0, 1, 0, 0], np.float32)}
    table = _table({"p.md": ["p0", "p1", "p2", "p3"]})
    results = {}
    for name, table_spec in {"flat": {"kind": "flat"}, "flat2": {"kind": "flat", "dims": 2}}.items():
        spec = index_spec_from_config(name, table_spec)
        retriever = DenseRetriever(MODELS.get("hash"), spec, NoCache(), embedder=_Fixed(passages, questions))
        build = retriever.build(table)
        queries = retriever.encode(["q0", "q1"])
        results[name] = (build, retriever.search(queries, 2), retriever.recall_against_exact(queries, 2))
    assert results["flat"][2] is None  # exact
    build, rankings, recall = results["flat2"]
    assert build.dims == 2 and build.index_bytes == 4 * 2 * 4 + FLAT_HEADER
    # full exact top-2: q0 → {0, 1} (both 0.707); q1 → {2, 0} (0.8, then 0 tied with p1, lower id)
    # truncated to 2: q0 → [1, 0] ranks p0 (1.0), p2 (0.6); p1 is [0, 0] → 1/2. q1 → p2, p0 → 2/2
    assert [units.tolist() for units, _ in rankings] == [[0, 2], [2, 0]]
    assert recall == pytest.approx((1 / 2 + 2 / 2) / 2)


def test_truncation_works_with_quantised_kinds():
    table = _table()
    for kind, size in (("sq8", len(table) * 64 + 8 * 64 + SQ8_HEADER), ("binary", len(table) * 8 + BINARY_HEADER)):
        spec = index_spec_from_config(kind, {"kind": kind, "dims": 64})
        retriever = DenseRetriever(MODELS.get("hash"), spec, NoCache())
        build = retriever.build(table)
        assert build.dims == 64 and build.index_bytes == size
        norms = np.linalg.norm(retriever.indexed, axis=1)  # hashing leaves some texts no component in the first 64
        assert np.all(np.isclose(norms, 1, atol=1e-6) | (norms == 0)) and np.isclose(norms, 1).any()
        queries = retriever.encode(["database backups"])
        assert 0.0 <= retriever.recall_against_exact(queries, 3) <= 1.0


def test_dims_beyond_the_model_is_an_error_at_build():
    spec = index_spec_from_config("wide", {"kind": "flat", "dims": 512})
    with pytest.raises(BenchError, match="dims = 512 is more than model 'hash''s 256"):
        DenseRetriever(MODELS.get("hash"), spec, NoCache()).build(_table())


# --- config ------------------------------------------------------------------------------------------


def _config(indexes: list[str], tables: str, models: str = '["hash"]') -> str:
    return (
        CONFIG.replace('models = ["hash", "bm25"]', f"models = {models}\nindexes = {json.dumps(indexes)}")
        + "\n"
        + tables
    )


TABLES = (
    '[index.bin]\nkind = "binary"\nrescore = [0, 20]\n\n'
    '[index.flat128]\nkind = "flat"\ndims = 128\n\n'
    '[index.sq8x64]\nkind = "sq8"\ndims = 64\n'
)


def test_tables_become_readable_candidates_and_keep_old_hashes(tmp_path):
    cfg = load_config(write_project(tmp_path, _config(["flat", "bin", "flat128", "sq8x64"], TABLES)))
    assert [c.id for c in cfg.candidates(only=("hash/tok24/*",))] == [
        "hash/tok24/flat",
        "hash/tok24/bin@rescore=0",
        "hash/tok24/bin@rescore=20",
        "hash/tok24/flat128",
        "hash/tok24/sq8x64",
    ]
    assert cfg.index("flat128").dims == 128 and cfg.index("flat128").exact and cfg.index("bin").binary
    assert "dims" not in cfg.resolved()["indexes"]["flat"]  # unset, the new fields leave the hash alone
    assert cfg.resolved()["indexes"]["flat128"]["dims"] == 128


@pytest.mark.parametrize(
    "table, message",
    [
        ('kind = "flat"\ndims = 0', "dims = 0 must be a positive integer"),
        ('kind = "flat"\ndims = 1.5', "dims = 1.5 must be a positive integer"),
        ('kind = "flat"\ndims = true', "dims = True must be a positive integer"),
        ('kind = "flat"\ndims = 512', "dims = 512 is more than model 'minilm''s 384"),
        ('kind = "binary"\nrescore = -1', "rescore = -1 must be a whole number >= 0"),
        ('kind = "binary"\nrescore = [10, 10]', "repeats a number"),
        ('kind = "binary"\nrescore = "many"', "rescore = 'many' must be"),
        ('kind = "flat"\nrescore = 100', 'rescore applies to kind = "binary" only'),
        ('kind = "binray"', "did you mean 'binary'"),
        ('kind = "binary"\nsearch = [{nprobe = 2}]', "'search' does not apply to kind = 'binary'"),
        ('kind = "flat"\nfactory = "Flat"', "give kind or factory, not both"),
        ("dims = 64", 'needs kind = "binary"'),
    ],
)
def test_bad_compression_settings_say_what_to_fix_in_one_line(tmp_path, table, message):
    config = write_project(tmp_path, _config(["x"], f"[index.x]\n{table}\n", models='["minilm"]'))
    with pytest.raises(BenchError, match=message):
        load_config(config)
    result = run_cli("run", str(config))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert message.split("'")[0] in line


# --- end to end ------------------------------------------------------------------------------------------


def test_binary_and_truncated_indexes_through_the_command_line(tmp_path):
    config = write_project(tmp_path, _config(["flat", "bin", "flat128", "sq8x64"], TABLES))
    result = run_cli("run", str(config))
    assert result.returncode == 0, result.stderr
    [run] = finished_runs(tmp_path / "results")
    summary = json.loads((run / "summary.json").read_text())
    ops = {c["id"]: c["ops"] for c in summary["candidates"]}
    rows = [json.loads(line) for line in (run / "per_question.jsonl").read_text().splitlines()]
    ranking = {(r["candidate"], r["question_id"]): [e["id"] for e in r["ranking"]] for r in rows}
    for chunker in ("tok24", "rec24"):
        n = ops[f"hash/{chunker}/flat"]["n_chunks"]
        assert n < 20  # so rescoring 20 rescored every chunk
        flat, hamming, rescored = (ops[f"hash/{chunker}/{i}"] for i in ("flat", "bin@rescore=0", "bin@rescore=20"))
        flat128, sq8x64 = ops[f"hash/{chunker}/flat128"], ops[f"hash/{chunker}/sq8x64"]
        assert flat["index_bytes"] == n * 256 * 4 + FLAT_HEADER and flat["recall_vs_exact@6"] is None
        for binary in (hamming, rescored):
            assert binary["dims"] == 256 and binary["vector_bytes"] == n * 256 * 4  # the float copy
            assert binary["index_bytes"] == n * 32 + BINARY_HEADER and binary["index_factory"] == "BFlat"
            assert binary["compression_ratio"] == round(n * 1024 / (n * 32 + BINARY_HEADER), 3)
        assert rescored["recall_vs_exact@6"] == 1.0 and 0 <= hamming["recall_vs_exact@6"] <= 1
        assert flat128["dims"] == 128 and flat128["index_bytes"] == n * 128 * 4 + FLAT_HEADER
        assert sq8x64["dims"] == 64 and sq8x64["index_bytes"] == n * 64 + 8 * 64 + SQ8_HEADER
        assert 0 <= flat128["recall_vs_exact@6"] <= 1 and 0 <= sq8x64["recall_vs_exact@6"] <= 1
        for qid in {r["question_id"] for r in rows}:  # rescoring every chunk is the flat ranking
            assert ranking[(f"hash/{chunker}/bin@rescore=20", qid)] == ranking[(f"hash/{chunker}/flat", qid)]
    report = run_cli("report", str(run))
    assert report.returncode == 0, report.stderr
    assert "recomputed" in report.stdout and "hash/tok24/bin@rescore=20" in report.stdout
