"""Pipelines in the grid: fusions and reranked first stages, run end to end on the tiny project and
checked against rankings computed here by hand from their parts' own stored rankings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.config import Candidate, load_config
from bench.core.operating import OPERATING_KEYS
from bench.core.summary import CandidateResult
from bench.embedders import MODELS, PASSAGE, QUERY, load_embedder
from bench.evaluation.costs import end_to_end_ms
from bench.results import schema, store
from bench.results.recompute import recompute
from bench.run.stages import BuiltStages
from tests.helpers import CONFIG, QUESTIONS, finished_runs, run_cli, write_project
from tests.retrieval.test_rerankers import FakeRerankServer, score_for
from tests.retrieval.test_rerankers import tiny_cross_encoder as tiny_cross_encoder  # a fixture, shared

TOP = 3  # the reranker re-scores BM25's top 3; depth 6 leaves ranks 4-6 in BM25's order
PIPELINE_SETTINGS = 'fusions = ["hash+bm25"]\nrerankers = ["hash"]\n'
PIPELINE_TABLES = f"""
[fusion."hash+bm25"]
method = ["rrf", "convex"]
weights = [0.3]
depth = 6

[reranker.hash]
top = {TOP}
over = ["bm25/*"]
"""


def _config(extra_settings: str = PIPELINE_SETTINGS, tables: str = PIPELINE_TABLES) -> str:
    return CONFIG.replace("k = 3\n", "k = 3\n" + extra_settings) + tables


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, schema.StoredRun]:
    root = tmp_path_factory.mktemp("pipelines")
    path = write_project(root, _config())
    done = run_cli("run", str(path), "--no-report", cwd=root)
    assert done.returncode == 0, done.stderr
    (folder,) = finished_runs(root / "results")
    return path, schema.load_run(folder)


def _rankings(stored: schema.StoredRun, cid: str) -> dict[str, list[tuple[str, float | None]]]:
    return {r.question_id: [(e.id, e.score) for e in r.ranking] for r in stored.records if r.candidate == cid}


def test_grid_puts_each_pipeline_after_its_parts(tmp_path):
    config = load_config(write_project(tmp_path, _config()))
    ids = [c.id for c in config.candidates()]
    assert ids == [
        "hash/tok24/flat",
        "hash/rec24/flat",
        "bm25/tok24/inverted",
        "bm25/tok24/inverted>hash@3",
        "bm25/rec24/inverted",
        "bm25/rec24/inverted>hash@3",
        "hash+bm25/tok24/flat@rrf",
        "hash+bm25/tok24/flat@convex0.3",
        "hash+bm25/rec24/flat@rrf",
        "hash+bm25/rec24/flat@convex0.3",
    ]
    fused = Candidate("hash+bm25", "tok24", "flat", "rrf")
    assert [p.id for p in config.parts(fused)] == ["hash/tok24/flat", "bm25/tok24/inverted"]
    assert config.fusion_settings(fused) == {"method": "rrf", "k": 60}
    assert config.fusion_settings(Candidate("hash+bm25", "tok24", "flat", "convex0.3")) == {
        "method": "convex",
        "weights": (0.3, 0.7),
    }
    only = [c.id for c in config.candidates(only=("bm25/rec24/inverted>*",))]
    assert only == ["bm25/rec24/inverted>hash@3"]


def test_a_dense_model_does_not_rerank_its_own_exact_results(tmp_path):
    tables = "\n[reranker.hash]\ntop = 4\n"
    config = load_config(write_project(tmp_path, _config('rerankers = ["hash"]\n', tables)))
    reranked = [c.id for c in config.candidates() if c.reranker]
    assert reranked == ["bm25/tok24/inverted>hash@4", "bm25/rec24/inverted>hash@4"]


def test_built_first_stages_are_released_once_no_later_candidate_needs_them(tmp_path):
    config = load_config(write_project(tmp_path, _config()))
    grid = config.candidates()
    built = BuiltStages(config, grid)
    keys = {c.key for c in grid if not c.fused}
    closed: list[tuple[str, str, str]] = []

    class Stage:  # what a store holds outside the process is given back when its stage is released
        def __init__(self, key: tuple[str, str, str]) -> None:
            self.key = key

        def close(self) -> None:
            closed.append(self.key)

    for key in keys:
        built.add(key, Stage(key), object())  # type: ignore[arg-type]
    position = {c.id: i for i, c in enumerate(grid)}
    built.release_after(position["bm25/rec24/inverted>hash@3"])
    # hash/* and bm25/* of both chunkers are still parts of the fusions that follow
    assert all(key in built for key in keys) and not closed
    built.release_after(position["hash+bm25/tok24/flat@convex0.3"])
    assert ("hash", "tok24", "flat") not in built and ("hash", "rec24", "flat") in built
    assert ("hash", "tok24", "flat") in closed and ("hash", "rec24", "flat") not in closed
    built.release_after(len(grid) - 1)
    assert not any(key in built for key in keys)
    assert sorted(closed) == sorted(keys)


def _rrf_by_hand(lists: list[list[tuple[str, float | None]]], k: int = 60) -> list[tuple[str, float]]:
    fused: dict[str, float] = {}
    for ranking in lists:
        for rank, (unit, _) in enumerate(ranking, start=1):
            fused[unit] = fused.get(unit, 0.0) + 1 / (k + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


def _convex_by_hand(lists: list[list[tuple[str, float | None]]], weights: list[float]) -> list[tuple[str, float]]:
    fused: dict[str, float] = {}
    for ranking, w in zip(lists, weights):
        scores = [s for _, s in ranking]
        lo, hi = min(scores), max(scores)
        for unit, score in ranking:
            fused[unit] = fused.get(unit, 0.0) + w * (score - lo) / max(hi - lo, 1e-9)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


def _same(got: list[tuple[str, float | None]], want: list[tuple[str, float]], tol: float = 1e-12) -> None:
    assert [u for u, _ in got] == [u for u, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=tol)


@pytest.mark.parametrize("chunker", ["tok24", "rec24"])
def test_fusions_rank_as_fused_by_hand_from_their_parts(run, chunker):
    _, stored = run
    dense = _rankings(stored, f"hash/{chunker}/flat")
    lexical = _rankings(stored, f"bm25/{chunker}/inverted")
    rrf = _rankings(stored, f"hash+bm25/{chunker}/flat@rrf")
    convex = _rankings(stored, f"hash+bm25/{chunker}/flat@convex0.3")
    for qid in dense:  # the fusion's depth is the run's (6): its parts' lists are the stored ones
        _same(rrf[qid], _rrf_by_hand([dense[qid], lexical[qid]])[:6])
        _same(convex[qid], _convex_by_hand([dense[qid], lexical[qid]], [0.3, 0.7])[:6])


def test_reranked_bm25_is_its_top_reordered_by_the_rerankers_scores(run):
    _, stored = run
    texts = {(t.doc_id, t.start, t.end): t.text for t in stored.texts}
    embedder = load_embedder(MODELS.get("hash"))
    first = {r.question_id: r for r in stored.records if r.candidate == "bm25/tok24/inverted"}
    reranked = [r for r in stored.records if r.candidate == "bm25/tok24/inverted>hash@3"]
    assert len(reranked) == len(QUESTIONS)
    tails = 0
    for rec in reranked:
        base = first[rec.question_id].ranking
        query = embedder.embed([rec.question], QUERY)[0]
        head = base[:TOP]
        vectors = embedder.embed([texts[(e.doc_id, e.start, e.end)] for e in head], PASSAGE)
        by_hand = sorted(zip([e.id for e in head], (vectors @ query).tolist()), key=lambda x: (-x[1], x[0]))
        got = [(e.id, e.score) for e in rec.ranking]
        _same(got[:TOP], by_hand, tol=1e-6)  # float32 vectors, summed in another order
        assert [(e.id, e.score) for e in rec.ranking[TOP:]] == [(e.id, None) for e in base[TOP:]]
        tails += len(base) > TOP
        for e in rec.expected:  # expected units are scored by the reranker, retrieved or not
            vector = embedder.embed([texts[(e.doc_id, e.start, e.end)]], PASSAGE)[0]
            assert e.score == pytest.approx(float(vector @ query), abs=1e-6)
    assert tails, "the fixture must leave results past the reranked top"


def test_pipeline_figures_follow_from_their_parts(run):
    _, stored = run
    cands = {c.id: c for c in stored.summary.candidates}
    dense, lexical = cands["hash/tok24/flat"], cands["bm25/tok24/inverted"]
    fused, reranked = cands["hash+bm25/tok24/flat@rrf"], cands["bm25/tok24/inverted>hash@3"]
    assert fused.ops["index_bytes"] == dense.ops["index_bytes"] + lexical.ops["index_bytes"]
    assert fused.ops["vector_bytes"] == dense.ops["vector_bytes"] and fused.ops["dims"] == dense.ops["dims"]
    assert fused.ops["cost_per_1k_queries_usd"] == 0.0 and fused.ops["rerank_ms_p50"] is None
    assert fused.pipeline == {
        "kind": "fusion",
        "parts": ["hash/tok24/flat", "bm25/tok24/inverted"],
        "fusion": {"method": "rrf", "k": 60, "depth": 6, "models": ["hash", "bm25"]},
    }
    assert not fused.lexical and reranked.lexical
    assert reranked.pipeline == {
        "kind": "lexical",
        "parts": ["bm25/tok24/inverted"],
        "reranker": {"name": "hash", "kind": "bi-encoder", "top": TOP, "model": "hash"},
        "first_stage": "bm25/tok24/inverted",
    }
    ops = reranked.ops
    assert ops["rerank_top"] == TOP and ops["rerank_ms_p50"] > 0 and ops["rerank_ms_p95"] >= ops["rerank_ms_p50"]
    assert ops["rerank_cost_per_1k_queries_usd"] == 0.0 and ops["rerank_price_source"] == "local model"
    assert ops["index_bytes"] == lexical.ops["index_bytes"] and ops["vector_bytes"] is None
    total = (ops["query_embed_ms_p95"] or 0) + ops["search_ms_p95"] + ops["rerank_ms_p95"]
    assert end_to_end_ms(reranked, "p95") == pytest.approx(total)
    assert dense.pipeline == {"kind": "dense", "parts": ["hash/tok24/flat"]}
    for c in stored.summary.candidates:
        assert set(OPERATING_KEYS) <= set(c.ops), c.id


def test_old_runs_without_pipelines_still_load(run, tmp_path):
    _, stored = run
    old = stored.summary.candidates[0].to_dict()
    del old["pipeline"]
    assert CandidateResult.from_dict(old).pipeline == {}


def test_recompute_agrees_with_a_run_that_has_pipelines(run):
    from bench.evaluation.scale import SCALE_KEYS

    _, stored = run
    _, again, differences = recompute(str(stored.path), stored.path.parent)
    assert differences == []
    for old, new in zip(stored.summary.candidates, again.summary.candidates):  # fusions and reranked too
        assert {k: old.ops[k] for k in SCALE_KEYS} == {k: new.ops[k] for k in SCALE_KEYS}, old.id
        assert old.ops["monthly_cost_includes"] == ["embedding"]  # no [scale] prices: embedding alone
    assert again.summary.recommendation == stored.summary.recommendation


def test_dry_run_lists_pipelines(tmp_path):
    path = write_project(tmp_path, _config())
    done = run_cli("run", str(path), "--dry-run")
    assert done.returncode == 0, done.stderr
    for cid in ("hash+bm25/tok24/flat@convex0.3", "bm25/rec24/inverted>hash@3"):
        assert cid in done.stdout


@pytest.mark.parametrize(
    ("settings", "tables", "message"),
    [
        ('fusions = ["hash+nope"]\n', "", "unknown model 'nope'"),
        ('fusions = ["hash"]\n', "", 'joined by "+"'),
        ("", '\n[fusion."hash+bm25"]\nmethod = "rrf"\n', "not listed in fusions"),
        ('fusions = ["hash+bm25"]\n', '\n[fusion."hash+bm25"]\nmethod = "mean"\n', 'must be "rrf", "convex"'),
        (
            'fusions = ["hash+bm25"]\n',
            '\n[fusion."hash+bm25"]\nmethod = "convex"\nweights = [1.5]\n',
            "weights >= 0 summing to 1",
        ),
        ('fusions = ["hash+bm25"]\n', '\n[fusion."hash+bm25"]\ndepht = 50\n', "did you mean 'depth'"),
        ('rerankers = ["bm25"]\n', "", "lexical"),
        ('rerankers = ["hash"]\n', "\n[reranker.hash]\ntop = 0\n", "top"),
        ("", '\n[model."a+b"]\nloader = "hashing"\n', "may not contain '+'"),
    ],
)
def test_bad_pipeline_settings_are_one_line(tmp_path, settings, tables, message):
    path = write_project(tmp_path, _config(settings, tables))
    done = run_cli("run", str(path), "--dry-run")
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_fusion_ranks_identically_on_a_warm_rerun(run):
    path, stored = run
    done = run_cli("run", str(path), "--no-report", "--only", "hash+bm25/*", cwd=path.parent)
    assert done.returncode == 0, done.stderr
    newest = max(finished_runs(path.parent / "results"), key=lambda p: p.name)
    again = schema.load_run(newest)
    for cid in ("hash+bm25/tok24/flat@rrf", "hash+bm25/rec24/flat@convex0.3"):
        assert _rankings(again, cid) == _rankings(stored, cid)
    assert np.all([c.ops["chunks_embedded"] == 0 for c in again.summary.candidates])


def test_store_layout_names_pipelines_by_id(run):
    _, stored = run
    summary = store.load_json(stored.path / store.SUMMARY)
    assert {c["id"] for c in summary["candidates"]} >= {"bm25/tok24/inverted>hash@3", "hash+bm25/rec24/flat@rrf"}


# --- rerankers that are not bench models: a cross-encoder folder and an HTTP /rerank service ---------------


def _reranked_run(tmp_path: Path, table: str) -> schema.StoredRun:
    config = _config('models = ["bm25"]\nrerankers = ["ce"]\n', f"\n[reranker.ce]\ntop = {TOP}\n{table}")
    path = write_project(tmp_path, config.replace('models = ["hash", "bm25"]\n', ""))
    done = run_cli("run", str(path), "--no-report", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (folder,) = finished_runs(tmp_path / "results")
    return schema.load_run(folder)


def _check_top_reordered(stored: schema.StoredRun, cid: str, scorer) -> None:
    texts = {(t.doc_id, t.start, t.end): t.text for t in stored.texts}
    first = {r.question_id: r for r in stored.records if r.candidate == cid.split(">")[0]}
    for rec in (r for r in stored.records if r.candidate == cid):
        head = first[rec.question_id].ranking[:TOP]
        scores = scorer(rec.question, [texts[(e.doc_id, e.start, e.end)] for e in head])
        by_hand = sorted(zip([e.id for e in head], scores), key=lambda x: (-x[1], x[0]))
        _same([(e.id, e.score) for e in rec.ranking[:TOP]], by_hand, tol=1e-5)


def test_a_cross_encoder_from_a_folder_reranks_in_a_run(tmp_path, tiny_cross_encoder):
    import torch
    from sentence_transformers import CrossEncoder

    folder, _ = tiny_cross_encoder
    stored = _reranked_run(tmp_path, f'kind = "cross-encoder"\nsource = "{folder}"\n')
    model = CrossEncoder(str(folder), device="cpu", activation_fn=torch.nn.Identity())
    _check_top_reordered(
        stored,
        "bm25/tok24/inverted>ce@3",
        lambda q, texts: model.predict([(q, t) for t in texts], convert_to_numpy=True).tolist(),
    )
    ops = stored.summary.candidate("bm25/tok24/inverted>ce@3").ops
    assert ops["rerank_cost_per_1k_queries_usd"] == 0.0 and ops["rerank_ms_p50"] > 0


def test_an_http_reranker_is_called_priced_and_billed_in_a_run(tmp_path):
    with FakeRerankServer() as server:
        stored = _reranked_run(
            tmp_path,
            f'kind = "http"\nurl = "{server.url}"\napi_model = "rerank-test"\nprice_per_1k_searches = 2.0\n',
        )
        calls = len(server.received)
    cid = "bm25/tok24/inverted>ce@3"
    _check_top_reordered(stored, cid, lambda q, texts: [score_for(t) for t in texts])
    ops = stored.summary.candidate(cid).ops
    assert ops["rerank_cost_per_1k_queries_usd"] == 2.0 and ops["cost_per_1k_queries_usd"] == 2.0  # BM25 is free
    # every call the service answered is billed: both chunkers' quality passes, expected units and latency
    total = sum(c.ops["rerank_run_cost_usd"] for c in stored.summary.candidates if c.pipeline.get("reranker"))
    assert total == pytest.approx(calls * 2.0 / 1000)
    assert all(r["body"]["model"] == "rerank-test" for r in server.received)


def test_a_relative_cross_encoder_folder_is_read_from_the_configs_folder(tmp_path):
    tables = '\n[reranker.ce]\nkind = "cross-encoder"\nsource = "models/ce"\n'
    config = load_config(write_project(tmp_path, _config('rerankers = ["ce"]\n', tables)))
    assert config.reranker("ce").source == str(tmp_path / "models" / "ce")
