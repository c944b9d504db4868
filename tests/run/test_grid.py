"""The candidate grid through the real command line: dry runs, filters, index query settings, the
embedding cache, latency figures, `bench chunk`, [model.NAME] tables and every chunker kind.

Everything runs on the tiny project of tests/helpers.py with the hashing model and BM25 (seconds).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bench.chunking import make_chunker
from bench.chunking.table import ChunkTable
from bench.chunking.tokens import count_tokens
from bench.config import load_config
from bench.inputs.corpus import load_corpus
from tests.helpers import (
    CONFIG,
    DOCS,
    QUESTIONS,
    finished_runs,
    next_second,
    run_cli,
    write_project,
)

DEPTH = 6
RECALL = f"recall_vs_exact@{DEPTH}"
N_QUESTIONS = len(QUESTIONS)
BASE_IDS = {"hash/tok24/flat", "hash/rec24/flat", "bm25/tok24/inverted", "bm25/rec24/inverted"}
INDEXES = 'indexes = ["flat", "hnsw", "sq8"]\n'
HASH64 = '\n[model.h64]\nloader = "hashing"\ndims = 64\n'
SEMANTIC = '\n[chunkers.sem]\nkind = "semantic"\nmodel = "hash"\nsize = 24\nmin_tokens = 8\n'
MARKDOWN_SENTENCES = (
    '\n[chunkers.md]\nkind = "markdown"\nsize = 24\n\n[chunkers.sent]\nkind = "sentences"\nsentences = 2\noverlap = 1\n'
)


# --- helpers ---------------------------------------------------------------------------------------------


def _with_indexes(config: str = CONFIG) -> str:
    assert "k = 3\n" in config
    return config.replace("k = 3\n", "k = 3\n" + INDEXES)


def _project(tmp_path: Path, config: str = CONFIG) -> Path:
    return write_project(tmp_path, config)


def _run(config: Path, *args: str):
    result = run_cli("run", str(config), *args)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result


def _latest(config: Path) -> tuple[dict, list[dict]]:
    run = finished_runs(config.parent / "results")[-1]
    summary = json.loads((run / "summary.json").read_text())
    rows = [json.loads(line) for line in (run / "per_question.jsonl").read_text().splitlines()]
    return summary, rows


def _by_id(summary: dict) -> dict[str, dict]:
    return {c["id"]: c for c in summary["candidates"]}


def _table_rows(stdout: str) -> dict[str, list[str]]:
    """Body rows of a rich table printed to a pipe: first cell -> every cell."""
    rows = {}
    for line in stdout.splitlines():
        if line.startswith("│"):
            cells = [cell.strip() for cell in line.strip().strip("│").split("│")]
            rows[cells[0]] = cells
    return rows


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _chunk_table(config: Path, chunker: str) -> ChunkTable:
    cfg = load_config(config)
    return ChunkTable.chunk_corpus(load_corpus(cfg.corpus), cfg.chunker(chunker).build())


def _one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("bench: error:")]
    assert len(errors) == 1, stderr
    return errors[0]


# --- 1. dry run -------------------------------------------------------------------------------------------


def test_dry_run_shows_every_candidate_with_chunk_and_token_counts_and_writes_nothing(tmp_path: Path):
    config = _project(tmp_path, _with_indexes())
    before = _snapshot(tmp_path)
    result = run_cli("run", str(config), "--dry-run")
    assert result.returncode == 0, result.stderr
    rows = _table_rows(result.stdout)
    expected = {
        f"hash/{ch}/{ix}" for ch in ("tok24", "rec24") for ix in ("flat", "hnsw@efSearch=16", "hnsw@efSearch=64", "sq8")
    }
    expected |= {"bm25/tok24/inverted", "bm25/rec24/inverted"}
    assert set(rows) - {"candidate"} == expected

    question_tokens = sum(count_tokens(q[1]) for q in QUESTIONS)
    for chunker in ("tok24", "rec24"):
        table = _chunk_table(config, chunker)
        tokens = sum(count_tokens(t) for t in table.texts)
        for cand_id, cells in rows.items():
            if f"/{chunker}/" in cand_id:
                assert cells[1:4] == [f"{len(table):,}", f"{tokens:,}", f"{question_tokens:,}"], cand_id

    assert _snapshot(tmp_path) == before  # nothing written anywhere in the project
    assert not (tmp_path / "results").exists()
    assert not (tmp_path / "cache").exists()


def test_dry_run_does_not_run_a_semantic_chunker_or_touch_the_cache(tmp_path: Path):
    """A semantic chunker needs its model to split: the dry run shows it without chunks instead."""
    config = _project(tmp_path, CONFIG + SEMANTIC)
    result = run_cli("run", str(config), "--dry-run")
    assert result.returncode == 0, result.stderr
    rows = _table_rows(result.stdout)
    assert rows["hash/sem/flat"][1] == "—" and rows["bm25/sem/inverted"][1] == "—"
    assert rows["hash/tok24/flat"][1] == f"{len(_chunk_table(config, 'tok24')):,}"
    assert not (tmp_path / "cache").exists() and not (tmp_path / "results").exists()


# --- 2. filters -------------------------------------------------------------------------------------------


def test_only_runs_just_the_matching_candidates(tmp_path: Path):
    config = _project(tmp_path)
    _run(config, "--only", "hash/*")
    summary, rows = _latest(config)
    assert set(_by_id(summary)) == {"hash/tok24/flat", "hash/rec24/flat"}
    assert {r["candidate"] for r in rows} == {"hash/tok24/flat", "hash/rec24/flat"}


def test_skip_drops_the_matching_candidates(tmp_path: Path):
    config = _project(tmp_path)
    _run(config, "--skip", "*/rec24/*")
    summary, _ = _latest(config)
    assert set(_by_id(summary)) == {"hash/tok24/flat", "bm25/tok24/inverted"}


def test_exclude_in_the_config_drops_candidates_and_combines_with_only(tmp_path: Path):
    config = _project(tmp_path, CONFIG.replace("k = 3\n", 'k = 3\nexclude = ["bm25/rec24/*", "hash/tok24/*"]\n'))
    _run(config)
    summary, _ = _latest(config)
    assert set(_by_id(summary)) == {"hash/rec24/flat", "bm25/tok24/inverted"}
    dry = run_cli("run", str(config), "--dry-run", "--only", "bm25/*")
    assert dry.returncode == 0, dry.stderr
    assert set(_table_rows(dry.stdout)) - {"candidate"} == {"bm25/tok24/inverted"}


@pytest.mark.parametrize(
    "args",
    [
        ("--only", "nothing/*"),
        ("--only", "hash/*", "--skip", "hash/*"),
        ("--dry-run", "--skip", "*"),
    ],
)
def test_a_filter_that_leaves_nothing_is_exit_2_with_one_line(tmp_path: Path, args):
    config = _project(tmp_path, CONFIG.replace("k = 3\n", 'k = 3\nexclude = ["bm25/*"]\n'))
    result = run_cli("run", str(config), *args)
    assert result.returncode == 2
    assert "no candidate is left" in _one_error_line(result.stderr)
    assert not (tmp_path / "results").exists() and not (tmp_path / "cache").exists()


# --- 3. indexes and their query settings ------------------------------------------------------------------


def test_hnsw_query_settings_sq8_compression_and_recall_against_exact(tmp_path: Path):
    config = _project(tmp_path, _with_indexes())
    _run(config)
    summary, rows = _latest(config)
    cands = _by_id(summary)
    assert len(cands) == 10
    assert {r["candidate"] for r in rows} == set(cands)

    for chunker in ("tok24", "rec24"):
        lo, hi = cands[f"hash/{chunker}/hnsw@efSearch=16"], cands[f"hash/{chunker}/hnsw@efSearch=64"]
        assert (lo["index"], lo["search"]) == ("hnsw", "efSearch=16")
        assert (hi["index"], hi["search"]) == ("hnsw", "efSearch=64")
        for c in (lo, hi):
            assert c["ops"]["index_factory"] == "HNSW32"
            assert 0.0 <= c["ops"][RECALL] <= 1.0
        # one build serves both query settings: the build figures are that one build's
        for key in ("index_bytes", "index_build_seconds", "embed_seconds", "chunks_embedded", "n_chunks"):
            assert lo["ops"][key] == hi["ops"][key], key

        flat = cands[f"hash/{chunker}/flat"]
        assert flat["search"] == "" and flat["ops"]["index_factory"] == "Flat"
        assert flat["ops"][RECALL] is None  # exact: nothing to compare against

        sq8 = cands[f"hash/{chunker}/sq8"]["ops"]
        assert sq8["index_factory"] == "SQ8" and 0.0 <= sq8[RECALL] <= 1.0
        assert sq8["vector_bytes"] == sq8["n_chunks"] * 256 * 4
        # compression_ratio is raw float32 bytes over the serialized index, as rounded in the summary
        assert sq8["compression_ratio"] == round(sq8["vector_bytes"] / sq8["index_bytes"], 3)
        assert sq8["compression_ratio"] > 1
        assert sq8["index_bytes"] < sq8["vector_bytes"]
        # a flat index stores every float plus a header; an HNSW graph adds its links
        assert flat["ops"]["compression_ratio"] == round(flat["ops"]["vector_bytes"] / flat["ops"]["index_bytes"], 3)
        assert (
            flat["ops"]["compression_ratio"] < 1 and lo["ops"]["compression_ratio"] < flat["ops"]["compression_ratio"]
        )

    for cand_id in ("bm25/tok24/inverted", "bm25/rec24/inverted"):
        ops = cands[cand_id]["ops"]
        assert ops["index_factory"] is None and ops[RECALL] is None and ops["compression_ratio"] is None


def test_one_index_build_serves_every_query_setting(tmp_path: Path, monkeypatch):
    """In process: HNSW is built once per chunker and its efSearch is set on that same index."""
    from rich.console import Console

    from bench.retrieval.faiss_index import IndexSpec
    from bench.run.shootout import run_shootout

    config = _project(tmp_path, _with_indexes())
    builds, settings = [], []
    build_resolved, configure = IndexSpec.build_resolved, IndexSpec.configure

    def spy_build(self, vectors):
        index, factory = build_resolved(self, vectors)
        builds.append((self.name, id(index)))
        return index, factory

    def spy_configure(self, index, params):
        configure(self, index, params)
        ef = index.hnsw.efSearch if hasattr(index, "hnsw") else None
        settings.append((self.name, id(index), dict(params), ef))

    monkeypatch.setattr(IndexSpec, "build_resolved", spy_build)
    monkeypatch.setattr(IndexSpec, "configure", spy_configure)
    outcome = run_shootout(load_config(config), Console(file=io.StringIO()), use_cache=False)

    assert sorted(name for name, _ in builds) == ["flat", "flat", "hnsw", "hnsw", "sq8", "sq8"]
    hnsw = [s for s in settings if s[0] == "hnsw"]
    assert [(params, ef) for _, _, params, ef in hnsw] == [({"efSearch": 16}, 16), ({"efSearch": 64}, 64)] * 2
    hnsw_builds = [index_id for name, index_id in builds if name == "hnsw"]
    assert [index_id for _, index_id, _, _ in hnsw] == [hnsw_builds[0]] * 2 + [hnsw_builds[1]] * 2
    assert len(outcome.summary.candidates) == 10


# --- 4. the embedding cache -------------------------------------------------------------------------------


def _dense(summary: dict) -> list[dict]:
    dense = [c for c in summary["candidates"] if c["model"] == "hash"]
    assert dense
    return dense


def test_first_run_embeds_each_text_once_and_a_second_run_embeds_nothing(tmp_path: Path):
    config = _project(tmp_path)
    _run(config)
    first, _ = _latest(config)
    for c in _dense(first):
        ops = c["ops"]
        assert ops["chunks_embedded"] + ops["chunks_from_cache"] == ops["n_chunks"]
        assert ops["questions_embedded"] + ops["questions_from_cache"] == N_QUESTIONS
    # the questions are embedded by the first dense candidate only
    assert sum(c["ops"]["questions_embedded"] for c in _dense(first)) == N_QUESTIONS
    assert list((tmp_path / "cache" / "embeddings").glob("*.sqlite"))

    _run(config)
    second, _ = _latest(config)
    for c in _dense(second):
        ops = c["ops"]
        assert ops["chunks_embedded"] == 0 and ops["chunks_from_cache"] == ops["n_chunks"]
        assert ops["questions_embedded"] == 0 and ops["questions_from_cache"] == N_QUESTIONS
    for c in second["candidates"]:
        if c["model"] == "bm25":  # nothing to embed or cache for a lexical model
            assert c["ops"]["chunks_embedded"] == 0 and c["ops"]["questions_embedded"] is None


def test_changing_only_k_embeds_nothing(tmp_path: Path):
    config = _project(tmp_path)
    _run(config)
    next_second()  # the run with k = 2 is the latest
    _run(config, "--k", "2")
    summary, _ = _latest(config)
    assert summary["k"] == 2 and "mrr@2" in summary["candidates"][0]["quality"]
    for c in _dense(summary):
        assert c["ops"]["chunks_embedded"] == 0 and c["ops"]["chunks_from_cache"] == c["ops"]["n_chunks"]
        assert c["ops"]["questions_embedded"] == 0 and c["ops"]["questions_from_cache"] == N_QUESTIONS


def test_cache_dir_option_puts_the_cache_there(tmp_path: Path):
    config = _project(tmp_path / "project")
    elsewhere = tmp_path / "elsewhere"
    _run(config, "--cache-dir", str(elsewhere))
    assert [p.suffix for p in (elsewhere / "embeddings").iterdir() if p.suffix == ".sqlite"] == [".sqlite"]
    assert not (tmp_path / "project" / "cache").exists()

    _run(config, "--cache-dir", str(elsewhere))  # the same folder: everything comes from it
    summary, _ = _latest(config)
    assert all(c["ops"]["chunks_embedded"] == 0 and c["ops"]["questions_embedded"] == 0 for c in _dense(summary))

    _run(config)  # the config's own cache_dir is a different, empty cache
    summary, _ = _latest(config)
    assert sum(c["ops"]["chunks_embedded"] for c in _dense(summary)) > 0
    assert list((tmp_path / "project" / "cache" / "embeddings").glob("*.sqlite"))


def test_no_cache_embeds_everything_and_writes_no_cache(tmp_path: Path):
    config = _project(tmp_path)
    _run(config, "--no-cache")
    assert not (tmp_path / "cache").exists()
    summary, _ = _latest(config)
    for c in _dense(summary):
        ops = c["ops"]
        assert ops["chunks_embedded"] == ops["n_chunks"] and ops["chunks_from_cache"] == 0
        assert ops["questions_embedded"] == N_QUESTIONS and ops["questions_from_cache"] == 0

    _run(config)  # fill the cache, then --no-cache neither reads nor writes it
    cache = _snapshot(tmp_path / "cache")
    _run(config, "--no-cache")
    summary, _ = _latest(config)
    assert all(c["ops"]["chunks_embedded"] == c["ops"]["n_chunks"] for c in _dense(summary))
    assert _snapshot(tmp_path / "cache") == cache


# --- 5. latency -------------------------------------------------------------------------------------------


def test_latency_percentiles_are_ordered_and_query_encoding_is_measured_once_per_model(tmp_path: Path):
    config = _project(tmp_path, _with_indexes())
    _run(config)
    summary, _ = _latest(config)
    per_model: dict[str, set] = {}
    for c in summary["candidates"]:
        ops = c["ops"]
        for prefix in ("query_embed", "search"):
            p50, p95 = ops[f"{prefix}_ms_p50"], ops[f"{prefix}_ms_p95"]
            assert isinstance(p50, float) and isinstance(p95, float), (c["id"], prefix)
            assert 0 <= p50 <= p95, (c["id"], prefix)
        assert ops["latency_samples"] == N_QUESTIONS
        per_model.setdefault(c["model"], set()).add(
            (ops["query_embed_ms_p50"], ops["query_embed_ms_p95"], ops["query_embed_ms_mean"])
        )
    assert set(per_model) == {"hash", "bm25"}
    assert all(len(figures) == 1 for figures in per_model.values()), per_model
    # search is timed per candidate, against its own index
    assert len({c["ops"]["search_ms_p50"] for c in summary["candidates"]}) > 1


# --- 6. bench chunk ---------------------------------------------------------------------------------------


def test_chunk_command_counts_match_the_run_and_it_writes_nothing(tmp_path: Path):
    config = _project(tmp_path)
    before = _snapshot(tmp_path)
    result = run_cli("chunk", str(config))
    assert result.returncode == 0, result.stderr
    assert _snapshot(tmp_path) == before
    assert not (tmp_path / "results").exists() and not (tmp_path / "cache").exists()
    rows = _table_rows(result.stdout)
    assert rows["tok24"][1] == "tokens" and rows["rec24"][1] == "recursive"

    _run(config)
    summary, _ = _latest(config)
    for c in summary["candidates"]:
        assert rows[c["chunker"]][2] == f"{c['ops']['n_chunks']:,}", c["id"]
    for chunker in ("tok24", "rec24"):
        table = _chunk_table(config, chunker)
        assert rows[chunker][2] == f"{len(table):,}"
        assert rows[chunker][3] == f"{sum(count_tokens(t) for t in table.texts):,}"


# --- 7. [model.NAME] tables -------------------------------------------------------------------------------


def test_a_model_table_adds_a_hashing_model_with_other_dims(tmp_path: Path):
    config = _project(tmp_path, CONFIG.replace('models = ["hash", "bm25"]', 'models = ["hash", "h64"]') + HASH64)
    _run(config)
    summary, _ = _latest(config)
    cands = _by_id(summary)
    assert set(cands) == {"hash/tok24/flat", "hash/rec24/flat", "h64/tok24/flat", "h64/rec24/flat"}
    for cand_id, c in cands.items():
        dims = 64 if cand_id.startswith("h64/") else 256
        ops = c["ops"]
        assert ops["dims"] == dims
        assert ops["vector_bytes"] == ops["n_chunks"] * dims * 4
        assert ops["index_bytes"] >= ops["vector_bytes"]
    assert cands["h64/tok24/flat"]["ops"]["chunks_embedded"] == cands["h64/tok24/flat"]["ops"]["n_chunks"]


def test_a_model_table_with_an_unknown_loader_is_exit_2_naming_the_table(tmp_path: Path):
    config = _project(tmp_path, CONFIG + '\n[model.weird]\nloader = "magic"\n')
    for args in ((), ("--dry-run",)):
        result = run_cli("run", str(config), *args)
        assert result.returncode == 2
        line = _one_error_line(result.stderr)
        assert "[model.weird]" in line and "'magic'" in line and "hashing" in line
    assert not (tmp_path / "results").exists()


def test_a_model_table_with_the_bm25_loader_is_lexical(tmp_path: Path):
    """A second BM25 model from a table ranks with its own inverted index, like the built-in one."""
    config = _project(
        tmp_path,
        CONFIG.replace('models = ["hash", "bm25"]', 'models = ["hash", "mybm25"]')
        + '\n[model.mybm25]\nloader = "bm25"\n',
    )
    _run(config)
    summary, _ = _latest(config)
    assert set(_by_id(summary)) == {
        "hash/tok24/flat",
        "hash/rec24/flat",
        "mybm25/tok24/inverted",
        "mybm25/rec24/inverted",
    }


def test_a_dense_loader_cannot_be_marked_lexical(tmp_path: Path):
    """Else the hashing model would silently be run as BM25 under its own name."""
    config = _project(tmp_path, CONFIG + "\n[model.hash]\nlexical = true\n")
    result = run_cli("run", str(config), "--dry-run")
    assert result.returncode == 2
    line = _one_error_line(result.stderr)
    assert "[model.hash]" in line and "lexical" in line


def test_a_semantic_chunker_cannot_use_a_lexical_model(tmp_path: Path):
    config = _project(tmp_path, CONFIG + SEMANTIC.replace('model = "hash"', 'model = "bm25"'))
    result = run_cli("run", str(config))
    assert result.returncode == 2
    line = _one_error_line(result.stderr)
    assert "[chunkers.sem]" in line and "bm25" in line
    assert not (tmp_path / "results").exists()


# --- 8-9. every chunker kind end to end -------------------------------------------------------------------


def _assert_valid_spans(rows: list[dict], chunker: str, table: ChunkTable) -> None:
    spans = {c.id: (c.doc_id, c.start, c.end) for c in table.chunks}
    seen = 0
    for r in rows:
        if f"/{chunker}/" not in r["candidate"]:
            continue
        for e in r["ranking"] + r["expected"]:
            text = DOCS[e["doc_id"]]
            assert 0 <= e["start"] < e["end"] <= len(text)
            assert text[e["start"] : e["end"]].strip() == text[e["start"] : e["end"]]  # stripped, non-empty
            assert spans[e["id"]] == (e["doc_id"], e["start"], e["end"])  # this chunker's chunk
            seen += 1
    assert seen


def test_a_semantic_chunker_using_the_hash_model_runs_end_to_end(tmp_path: Path):
    config = _project(tmp_path, CONFIG + SEMANTIC)
    _run(config)
    summary, rows = _latest(config)
    cands = _by_id(summary)
    assert {"hash/sem/flat", "bm25/sem/inverted"} <= set(cands)

    corpus = load_corpus(tmp_path / "corpus")
    from bench.embedders import MODELS, load_embedder

    embedder = load_embedder(MODELS.get("hash"))
    chunker = make_chunker(
        "semantic", embed=lambda texts: embedder.embed(list(texts), "passage"), size=24, min_tokens=8
    )
    table = ChunkTable.chunk_corpus(corpus, chunker)
    assert cands["hash/sem/flat"]["ops"]["n_chunks"] == cands["bm25/sem/inverted"]["ops"]["n_chunks"] == len(table)
    assert all(count_tokens(t) <= 24 for t in table.texts)
    _assert_valid_spans(rows, "sem", table)


def test_semantic_size_below_the_default_min_tokens_is_exit_2(tmp_path: Path):
    """min_tokens defaults to 32, so size = 24 alone is refused with a one-line explanation."""
    config = _project(tmp_path, CONFIG + SEMANTIC.replace("min_tokens = 8\n", ""))
    result = run_cli("run", str(config))
    assert result.returncode == 2
    line = _one_error_line(result.stderr)
    assert "[chunkers.sem]" in line and "min_tokens" in line


def test_markdown_and_sentences_chunkers_run_end_to_end(tmp_path: Path):
    config = _project(tmp_path, CONFIG + MARKDOWN_SENTENCES)
    _run(config, "--only", "*/md/*", "--only", "*/sent/*")
    summary, rows = _latest(config)
    cands = _by_id(summary)
    assert set(cands) == {"hash/md/flat", "hash/sent/flat", "bm25/md/inverted", "bm25/sent/inverted"}
    for chunker in ("md", "sent"):
        table = _chunk_table(config, chunker)
        assert cands[f"hash/{chunker}/flat"]["ops"]["n_chunks"] == len(table)
        _assert_valid_spans(rows, chunker, table)
    # markdown chunks know their heading; sentence windows of 2 with overlap 1 overlap each other
    assert any(c.heading for c in _chunk_table(config, "md").chunks)
    sent = _chunk_table(config, "sent")
    assert any(a.doc_id == b.doc_id and b.start < a.end for a, b in zip(sent.chunks, sent.chunks[1:]))
