"""``[index.NAME]`` tables naming another store than FAISS: what each store's kinds take, one clear
line for anything else, ids by query setting, and a dsn that never reaches the hash or the manifest."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.config import Config, load_config
from bench.errors import BenchError
from tests.helpers import CONFIG

HEAD = CONFIG.replace('models = ["hash", "bm25"]', 'models = ["hash"]\nindexes = ["flat", "store"]')


def _load(tmp_path: Path, table: str) -> Config:
    path = tmp_path / "bench.toml"
    path.write_text(HEAD + "\n[index.store]\n" + table)
    return load_config(path)


def test_a_pgvector_table_gives_one_candidate_per_query_setting(tmp_path: Path) -> None:
    table = 'store = "pgvector"\nkind = "hnsw"\nm = 16\nsearch = [{ef_search = 40}, {ef_search = 200}]\n'
    config = _load(tmp_path, table)
    ids = [c.id for c in config.candidates()]
    assert "hash/tok24/store@ef_search=40" in ids and "hash/tok24/store@ef_search=200" in ids
    spec = config.index("store")
    assert (spec.store, spec.factory, dict(spec.build_params), spec.exact) == ("pgvector", "hnsw", {"m": 16}, False)
    assert config.resolved()["indexes"]["store"]["store"] == "pgvector"


def test_an_exact_store_is_exact_and_a_faiss_config_hashes_as_before(tmp_path: Path) -> None:
    assert _load(tmp_path, 'store = "lancedb"\nkind = "exact"\n').index("store").exact
    plain = tmp_path / "plain.toml"
    plain.write_text(CONFIG)
    assert "store" not in load_config(plain).resolved()["indexes"]["flat"]  # a field at its default is left out


def test_a_dsn_stays_out_of_the_hash_and_the_manifest(tmp_path: Path) -> None:
    table = 'store = "pgvector"\nkind = "exact"\ndsn = "postgresql://bench:hunter2@db.example/prod"\n'
    config = _load(tmp_path, table)
    assert config.index("store").dsn.endswith("/prod")
    assert "hunter2" not in str(config.resolved())
    other = _load(tmp_path, table.replace("hunter2", "other"))
    assert other.hash == config.hash


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('store = "qdrant"\nkind = "hnsw"\n', "store = 'qdrant' is unknown"),
        ('store = "pgvector"\n', "needs kind = one of 'exact', 'hnsw', 'ivfflat'"),
        ('store = "pgvector"\nkind = "hnws"\n', "did you mean 'hnsw'"),
        ('store = "pgvector"\nkind = "hnsw"\nlists = 10\n', "'lists' does not apply to a pgvector hnsw index"),
        ('store = "pgvector"\nkind = "hnsw"\nsearch = [{probes = 4}]\n', "search[0] parameter 'probes' does not apply"),
        ('store = "pgvector"\nkind = "hnsw"\nm = 0\n', "m"),
        ('store = "pgvector"\nkind = "ivfflat"\nquantization = "pq"\n', "quantization = 'pq' does not apply"),
        ('store = "lancedb"\nkind = "ivf_pq"\ndsn = "x"\n', 'dsn applies to store = "pgvector" only'),
        ('store = "chroma"\nkind = "hnsw"\nsearch = [{ef_search = 10}, {ef_search = 10}]\n', "lists one setting twice"),
        ('store = "chroma"\nkind = "hnsw"\nsearch = [{}]\n', "non-empty tables"),
        ('store = "pgvector"\nkind = "hnsw"\nsearch = [{rerank = 40}]\n', 'rerank applies to quantization = "binary"'),
        (
            'store = "pgvector"\nkind = "ivfflat"\nsearch = [{iterative_scan = "strict_order"}]\n',
            "use 'off' or 'relaxed_order'",
        ),
    ],
)
def test_a_wrong_store_table_is_one_line_naming_the_fix(tmp_path: Path, table: str, said: str) -> None:
    with pytest.raises(BenchError) as caught:
        _load(tmp_path, table)
    message = str(caught.value)
    assert said in message and "\n" not in message and "index 'store'" in message
