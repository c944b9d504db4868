"""Config loading, the candidate grid and the config hash."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.config import load_config
from bench.errors import BenchError
from tests.helpers import CONFIG, REPO


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bench.toml"
    path.write_text(text)
    return path


def test_grid_gives_lexical_models_their_own_index(tmp_path):
    cfg = load_config(_write(tmp_path, CONFIG))
    assert [c.id for c in cfg.candidates()] == [
        "hash/tok24/flat",
        "hash/rec24/flat",
        "bm25/tok24/inverted",
        "bm25/rec24/inverted",
    ]


def test_paths_are_relative_to_the_config_file(tmp_path):
    cfg = load_config(_write(tmp_path, CONFIG))
    assert cfg.corpus == tmp_path / "corpus" and cfg.goldset == tmp_path / "gold.jsonl"
    assert cfg.results == tmp_path / "results" and cfg.cache_dir == tmp_path / "cache"


def test_depth_defaults_to_max_of_k_and_20(tmp_path):
    cfg = load_config(_write(tmp_path, CONFIG.replace("depth = 6\n", "")))
    assert cfg.retrieval_depth == 20
    assert cfg.with_overrides(k=30).retrieval_depth == 30


def test_hash_is_stable_and_follows_settings_that_change_results(tmp_path):
    a = load_config(_write(tmp_path, CONFIG))
    b = load_config(_write(tmp_path, CONFIG))
    assert a.hash == b.hash and len(a.hash) == 6
    assert a.with_overrides(k=4).hash != a.hash
    assert load_config(_write(tmp_path, CONFIG.replace("overlap = 4", "overlap = 8"))).hash != a.hash
    # where results go does not change what they are
    assert load_config(_write(tmp_path, CONFIG.replace('results = "results"', 'results = "elsewhere"'))).hash == a.hash


def test_aliases_resolve_to_canonical_names(tmp_path):
    cfg = load_config(_write(tmp_path, CONFIG.replace('"hash", "bm25"', '"all-MiniLM-L6-v2"')))
    assert cfg.models == ("minilm",)


@pytest.mark.parametrize("k", [0, 51, -1])
def test_override_k_is_validated(tmp_path, k):
    cfg = load_config(_write(tmp_path, CONFIG))
    with pytest.raises(BenchError, match=f"bench.toml: k = {k} must be a whole number from 1 to 50"):
        cfg.with_overrides(k=k)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: c.replace("depth = 6", "depth = 2"), "depth = 2 must be an integer >= k"),
        (lambda c: c.replace("k = 3", "k = 2.5"), "k = 2.5 must be a whole number from 1 to 50"),
        (lambda c: c.replace("k = 3", "k = 3\nmin_overlap = 0"), "min_overlap"),
        (lambda c: c.replace('models = ["hash", "bm25"]', "models = []"), "non-empty list"),
        (lambda c: c.replace('models = ["hash", "bm25"]', 'models = ["hash", "hash"]'), "repeats a name"),
        (lambda c: c.replace('goldset = "gold.jsonl"\n', ""), "needs goldset = a path"),
        (lambda c: c.replace("k = 3", 'k = 3\nindexes = ["flt"]'), "did you mean 'flat'"),
        (lambda c: c.replace("size = 24\noverlap = 4", "size = 24\nstride = 4"), "stride"),
        (lambda c: c.replace("k = 3", "k = 3\nlatency_samples = 0"), "latency_samples = 0 must be a positive integer"),
        (lambda c: c.replace("k = 3", "k = 3\nlatency_samples = true"), "latency_samples = True must be"),
    ],
)
def test_bad_settings_say_what_to_fix(tmp_path, edit, message):
    with pytest.raises(BenchError, match=message):
        load_config(_write(tmp_path, edit(CONFIG)))


def test_the_bundled_configs_load():
    cfg = load_config(REPO / "bench.toml")
    assert cfg.corpus.is_dir() and cfg.goldset.is_file()
    # 3 models x 3 chunkers, MiniLM's binary codes per chunker, e5-small and int8 MiniLM on md256, the
    # hybrid per chunker (and by three weightings on md256), BM25 on md256 reranked, and the three
    # models on md256+ctx and rec256+ctx
    assert len(cfg.candidates()) == 9 + 3 + 1 + 1 + 3 + 3 + 1 + 6
    assert cfg.perturb == ("typos", "case", "punctuation")
    models = {c.model for c in cfg.candidates()}
    assert models == {"minilm", "static", "bm25", "e5-small", "minilm-int8", "minilm+bm25"}
    full = load_config(REPO / "bench-full.toml")
    # 3 dense models x 6 chunkers x (flat + hnsw at 2 efSearch + sq8) + bm25 x 6 chunkers
    assert len(full.candidates()) == 3 * 6 * 4 + 6


def test_index_query_settings_become_candidates_of_one_build(tmp_path):
    cfg = load_config(_write(tmp_path, CONFIG.replace("k = 3", 'k = 3\nindexes = ["flat", "hnsw"]')))
    ids = [c.id for c in cfg.candidates() if c.model == "hash" and c.chunker == "tok24"]
    assert ids == ["hash/tok24/flat", "hash/tok24/hnsw@efSearch=16", "hash/tok24/hnsw@efSearch=64"]


def test_exclude_only_and_skip_filter_by_glob(tmp_path):
    cfg = load_config(_write(tmp_path, CONFIG.replace("k = 3", 'k = 3\nexclude = ["bm25/rec24/*"]')))
    ids = {c.id for c in cfg.candidates()}
    assert "bm25/rec24/inverted" not in ids and len(ids) == 3
    assert {c.id for c in cfg.candidates(only=("hash/*",))} == {"hash/tok24/flat", "hash/rec24/flat"}
    assert {c.id for c in cfg.candidates(skip=("*/tok24/*",))} == {"hash/rec24/flat"}


def test_model_tables_define_new_models_and_adjust_builtins(tmp_path):
    extra = (
        CONFIG.replace('"hash", "bm25"', '"hash", "api"')
        + '\n[model.api]\nloader = "openai"\nsource = "text-embedding-3-small"\ndims = 1536\n'
        'price_per_mtok = 0.02\nbase_url_env = "MY_URL"\n'
        "\n[model.hash]\nprice_per_mtok = 0.5\n"
    )
    cfg = load_config(_write(tmp_path, extra))
    api = cfg.model("api")
    assert api.loader == "openai" and api.dims == 1536 and api.option("base_url_env") == "MY_URL"
    assert cfg.model("hash").price_per_mtok == 0.5 and cfg.model("hash").dims == 256
    assert cfg.resolved()["model_specs"]["api"]["price_per_mtok"] == 0.02


def test_user_index_tables(tmp_path):
    text = CONFIG.replace("k = 3", 'k = 3\nindexes = ["hnsw8"]') + (
        '\n[index.hnsw8]\nfactory = "HNSW8"\nbuild = {efConstruction = 40}\nsearch = [{efSearch = 32}]\n'
    )
    cfg = load_config(_write(tmp_path, text))
    assert [c.id for c in cfg.candidates(only=("hash/tok24/*",))] == ["hash/tok24/hnsw8@efSearch=32"]


def test_semantic_chunker_names_its_model(tmp_path):
    text = CONFIG + '\n[chunkers.sem]\nkind = "semantic"\nmodel = "hsah"\n'
    with pytest.raises(BenchError, match="did you mean 'hash'"):
        load_config(_write(tmp_path, text))
    cfg = load_config(_write(tmp_path, text.replace('model = "hsah"', 'model = "hash"')))
    assert cfg.chunker("sem").model == "hash" and "hash" in cfg.model_specs


def test_cache_dir_precedence(tmp_path, monkeypatch):
    from bench.embedders.paths import cache_root

    cfg = load_config(_write(tmp_path, CONFIG))
    monkeypatch.delenv("BENCH_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root(None) == tmp_path / "xdg" / "bench"
    assert cache_root(cfg.cache_dir) == tmp_path / "cache"
    monkeypatch.setenv("BENCH_CACHE_DIR", str(tmp_path / "env"))
    assert cache_root(cfg.cache_dir) == tmp_path / "env"
    assert cache_root(cfg.cache_dir, override=tmp_path / "cli") == tmp_path / "cli"


def test_the_declared_options_are_the_ones_scoring_and_the_recommendation_know():
    import typing

    from bench.config.tables import Settings
    from bench.evaluation.metrics import GAINS
    from bench.evaluation.scale import PREFERENCES

    hints = typing.get_type_hints(Settings)
    assert typing.get_args(hints["ndcg_gain"]) == GAINS
    assert typing.get_args(typing.get_args(hints["prefer"])[0]) == PREFERENCES


@pytest.mark.parametrize(
    "edit, message",
    [
        ("min_overlap = 0", r"bench.toml: min_overlap = 0 must be a number in \(0, 1\] \(0.5 is the default\)"),
        ('prefer = "cots"', "bench.toml: prefer = 'cots' must be one of 'cost', 'latency', 'quality' .*did you mean"),
        ('exclude = ["a/*", 3]', r"bench.toml: exclude = \['a/\*', 3\] must be a list of candidate-id patterns"),
        ("kk = 3", "bench.toml: unknown key 'kk'; did you mean 'k'"),
        ("\n[documents]\nmax_page = 5", r"bench.toml: \[documents\]: unknown key 'max_page'; did you mean 'max_pages'"),
        ("\n[documents]\nworkers = 0", r"bench.toml: \[documents\]: workers = 0 must be a positive integer"),
        ("\n[chunkers.x]\nsize = 8", r"bench.toml: \[chunkers.x\]: needs kind = a chunker kind"),
    ],
)
def test_errors_name_the_file_the_table_and_the_key(tmp_path, edit, message):
    with pytest.raises(BenchError, match=message):
        text = CONFIG + edit if edit.startswith("\n[") else CONFIG.replace("k = 3", f"k = 3\n{edit}")
        load_config(_write(tmp_path, text))


def test_overrides_are_checked_as_the_file_is(tmp_path):
    cfg = load_config(_write(tmp_path, CONFIG))
    with pytest.raises(BenchError, match=r"bench.toml: min_overlap = 2 must be a number in \(0, 1\]"):
        cfg.with_overrides(min_overlap=2)
    with pytest.raises(BenchError, match=r"depth = 6 must be an integer >= k \(10\)"):
        cfg.with_overrides(k=10)
    assert cfg.with_overrides(k=4).file.k == 4  # counts as written in the file (the hash)


def test_settings_hash_as_written(tmp_path):
    """A number keeps its type, ``exclude = []`` is no exclusion, and ``prefer`` and ``[scale]`` enter
    the hash only when the file writes them."""
    plain = load_config(_write(tmp_path, CONFIG))
    assert "prefer" not in plain.resolved() and "scale" not in plain.resolved()
    written = load_config(
        _write(tmp_path, CONFIG.replace("k = 3", 'k = 3\nmin_overlap = 1\nprefer = "cost"\nexclude = []'))
    )
    assert written.resolved()["min_overlap"] == 1 and isinstance(written.resolved()["min_overlap"], int)
    assert written.resolved()["prefer"] == "cost" and written.exclude == ()
    assert load_config(_write(tmp_path, CONFIG + "\n[scale]\n")).resolved()["scale"]["queries_per_month"] == 100_000


def test_candidates_sort_with_absent_parts_first():
    from bench.config import Candidate

    plain = Candidate("m", "c", "flat")
    tuned = Candidate("m", "c", "hnsw", "efSearch=16")
    reranked = Candidate("m", "c", "flat", reranker="r", top=20)
    assert plain.search is None and plain.reranker is None and plain.top is None
    assert sorted([reranked, tuned, plain]) == [plain, reranked, tuned]
    assert plain < Candidate("m", "c", "flat", "x") and reranked.first_stage == plain
    assert [c.id for c in (plain, tuned, reranked)] == ["m/c/flat", "m/c/hnsw@efSearch=16", "m/c/flat>r@20"]
