"""Operating figures of a priced run end to end: latency, storage, tokens, costs and the recommendation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import QUESTIONS, finished_runs, run_cli, write_project

PRICED = """\
corpus = "corpus"
goldset = "gold.jsonl"
results = "results"
cache_dir = "cache"
k = 3
depth = 6
models = ["hash", "bm25"]
indexes = ["flat", "sq8"]
prefer = "cost"

[scale]
documents = 400
queries_per_month = 50000
reindexes_per_month = 2
replicas = 3
storage_usd_per_gb_month = 0.5
hourly_usd = 1.2

[model.hash]
price_per_mtok = 2.5

[chunkers.tok24]
kind = "tokens"
size = 24
overlap = 4
"""


@pytest.fixture
def priced_run(tmp_path: Path) -> dict:
    config = write_project(tmp_path, config=PRICED)
    assert run_cli("run", str(config)).returncode == 0
    [run] = finished_runs(tmp_path / "results")
    return {
        "summary": json.loads((run / "summary.json").read_text()),
        "manifest": json.loads((run / "manifest.json").read_text()),
        "config": config,
    }


def test_every_ops_figure_is_present_and_consistent(priced_run):
    for cand in priced_run["summary"]["candidates"]:
        o = cand["ops"]
        for prefix in ("query_embed", "search"):
            p50, p95, p99 = (o[f"{prefix}_ms_{q}"] for q in ("p50", "p95", "p99"))
            assert 0 < p50 <= p95 <= p99, (cand["id"], prefix)
            assert o[f"{prefix}_ms_mean"] > 0
        assert o["latency_samples"] == len(QUESTIONS)
        assert o["n_chunks"] > 0 and o["peak_rss_mb"] > 0 and o["index_build_seconds"] >= 0
        if cand["model"] == "bm25":
            assert o["price_per_mtok"] == 0.0 and o["run_cost_usd"] == 0.0 and o["dims"] is None
            continue
        assert o["vector_bytes"] == o["n_chunks"] * o["dims"] * 4 == o["n_chunks"] * 256 * 4
        assert o["index_bytes"] > 0 and o["compression_ratio"] == pytest.approx(
            o["vector_bytes"] / o["index_bytes"], abs=1e-3
        )
        assert o["price_per_mtok"] == 2.5 and o["price_source"] == "config"
        assert o["index_tokens"] > 0 and o["question_tokens_mean"] > 0
        assert o["index_cost_usd"] == pytest.approx(o["index_tokens"] / 1e6 * 2.5)
        assert o["cost_per_1k_queries_usd"] == pytest.approx(o["question_tokens_mean"] * 1000 / 1e6 * 2.5)
        # a cold run bills the corpus and the questions once (the second index reuses the cache)
        assert o["run_cost_usd"] == pytest.approx(o["billed_tokens"] / 1e6 * 2.5)
        assert o["truncated_chunks"] == 0  # the hashing model reads any length
    flat, sq8 = (
        next(c for c in priced_run["summary"]["candidates"] if c["id"] == f"hash/tok24/{i}") for i in ("flat", "sq8")
    )
    assert flat["ops"]["billed_tokens"] > 0 and flat["ops"]["chunks_embedded"] > 0
    assert sq8["ops"]["billed_tokens"] == 0 and sq8["ops"]["run_cost_usd"] == 0  # all from the cache
    assert priced_run["manifest"]["prices"]["hash"]["price_per_mtok"] == 2.5
    assert priced_run["manifest"]["percentile_method"] == "linear"


def test_the_recommendation_picks_the_cheapest_of_those_tied_with_the_best(priced_run):
    rec = priced_run["summary"]["recommendation"]
    assert rec["metric"] == "mrr@3" and rec["margin"] == 0.02 and rec["prefer"] == "cost"
    candidates = {c["id"]: c for c in priced_run["summary"]["candidates"]}
    assert rec["best"] == priced_run["summary"]["candidates"][0]["id"]
    rows = {r["candidate"]: r for r in rec["comparisons"]}
    assert set(rows) == set(candidates) - {rec["best"]}
    # worse where the difference is significant, tied only where shown equivalent, else undecided
    for r in rows.values():
        status = "worse" if r["p_holm"] < 0.05 else "equivalent" if r["p_equivalence_holm"] < 0.05 else "undecided"
        assert r["status"] == status
    assert rec["tied"] == [cid for cid, r in rows.items() if r["status"] == "equivalent"]
    assert rec["undecided"] == [cid for cid, r in rows.items() if r["status"] == "undecided"]
    group = [rec["best"], *rec["tied"]]
    cheapest = min(candidates[cid]["ops"]["monthly_cost_usd"] for cid in group)
    assert rec["pick"] in group and candidates[rec["pick"]]["ops"]["monthly_cost_usd"] == cheapest
    n = len(QUESTIONS)
    assert rec["reason"] in rec["line"] and rec["pick"] in rec["reason"] and f"n = {n}" in rec["reason"]
    assert rec["n_questions"] == n


def test_monthly_figures_follow_the_scale_by_hand(priced_run):
    factor = 400 / priced_run["manifest"]["corpus"]["documents"]
    assert priced_run["manifest"]["config"]["scale"]["replicas"] == 3
    for cand in priced_run["summary"]["candidates"]:
        o = cand["ops"]
        assert o["monthly_cost_includes"] == ["embedding", "storage", "compute"]
        e2e = o["query_embed_ms_mean"] + o["search_ms_mean"]
        assert o["qps_single_thread"] == pytest.approx(1000 / e2e)
        assert o["end_to_end_ms_p95"] == pytest.approx(o["query_embed_ms_p95"] + o["search_ms_p95"])
        assert o["monthly_embedding_usd"] == pytest.approx(
            o["index_cost_usd"] * factor * 2 + o["cost_per_1k_queries_usd"] * 50
        )
        assert o["storage_gb_at_scale"] == pytest.approx(o["index_bytes"] * factor * 3 / 1e9)  # flat, SQ8, BM25
        assert o["monthly_storage_usd"] == pytest.approx(o["storage_gb_at_scale"] * 0.5)
        assert o["corpus_embed_seconds"] is not None  # the sq8 build came from the cache: the speed was kept
        # machine time: CPU time (a build's every thread, a query's one), shared by the machine's cores
        cores = o["timing_cores"]
        build_s = o["index_build_cpu_seconds"] / cores
        assert o["index_hours_at_scale"] == pytest.approx((o["corpus_embed_seconds"] + build_s) * factor / 3600)
        if cand["model"] == "bm25":  # runs here: tokenising the question counts as compute
            query_s = (o["query_embed_cpu_ms_mean"] + o["search_cpu_ms_mean"]) / cores
        else:  # priced per token: its embedding is paid by the price, the search runs here
            query_s = o["search_cpu_ms_mean"] / cores
        local_index_s = build_s
        assert o["cpu_seconds_per_1k_queries"] == pytest.approx(query_s)
        compute = (query_s * 50 / 3600 + local_index_s * factor / 3600 * 2) * 1.2
        assert o["monthly_compute_usd"] == pytest.approx(compute)
        assert o["monthly_cost_usd"] == pytest.approx(o["monthly_embedding_usd"] + o["monthly_storage_usd"] + compute)


def test_report_recomputes_the_figures_at_scale_and_the_recommendation(priced_run):
    from bench.evaluation.scale import SCALE_KEYS
    from bench.results.recompute import recompute

    stored, again, differences = recompute("latest", priced_run["config"].parent / "results")
    assert differences == []
    for old, new in zip(stored.summary.candidates, again.summary.candidates):
        assert {k: old.ops[k] for k in SCALE_KEYS} == {k: new.ops[k] for k in SCALE_KEYS}
    assert again.summary.recommendation == stored.summary.recommendation
    # a run written before these figures: recomputed from what it stored, and no difference reported
    folder = stored.path
    summary = json.loads((folder / "summary.json").read_text())
    for cand in summary["candidates"]:
        for key in (*SCALE_KEYS, "corpus_embed_seconds"):
            del cand["ops"][key]
    summary["recommendation"] = {
        k: summary["recommendation"][k] for k in ("metric", "margin", "cost_key", "pick", "line")
    }
    (folder / "summary.json").write_text(json.dumps(summary))
    _, old_again, differences = recompute("latest", priced_run["config"].parent / "results")
    assert differences == []
    assert all(c.ops["monthly_cost_usd"] is not None for c in old_again.summary.candidates)
    # recomputed by the rule it was written with: tied when not significantly worse
    legacy = [r["candidate"] for r in stored.summary.recommendation["comparisons"] if r["p_holm"] >= 0.05]
    assert old_again.summary.recommendation["tied"] == legacy


def test_a_rerun_bills_nothing(priced_run):
    assert run_cli("run", str(priced_run["config"])).returncode == 0
    runs = finished_runs(priced_run["config"].parent / "results")
    summary = json.loads((runs[-1] / "summary.json").read_text())
    for cand in summary["candidates"]:
        assert cand["ops"]["run_cost_usd"] == 0 and cand["ops"]["billed_tokens"] in (0, None)
        if cand["model"] == "hash":  # the figures for a full index stay what they were
            assert cand["ops"]["index_cost_usd"] > 0


def test_dry_run_prices_the_grid_before_spending(priced_run):
    result = run_cli("run", str(priced_run["config"]), "--dry-run")
    assert result.returncode == 0
    line = next(ln for ln in result.stdout.splitlines() if "hash/tok24/flat" in ln)
    assert "2.5" in line


def test_an_hourly_compute_price_costs_measured_seconds(tmp_path: Path):
    config = write_project(tmp_path, config=PRICED.replace("price_per_mtok = 2.5", "hourly_usd = 36.0"))
    assert run_cli("run", str(config), "--only", "hash/tok24/flat").returncode == 0
    [run] = finished_runs(tmp_path / "results")
    [cand] = json.loads((run / "summary.json").read_text())["candidates"]
    o = cand["ops"]
    assert o["cost_estimate"] is True and o["price_per_mtok"] is None
    # embed_seconds is stored rounded to 0.1 ms: within 0.00005 s / 3600 * 36 = 5e-7 $
    assert o["run_cost_usd"] == pytest.approx(o["embed_seconds"] / 3600 * 36.0, abs=1e-6)
    # indexing and queries are priced by machine time: CPU time on one thread over the machine's cores
    assert o["index_cost_usd"] == pytest.approx(o["corpus_embed_seconds"] / 3600 * 36.0, abs=1e-6)
    per_query_s = (o["query_embed_cpu_ms_mean"] + o["search_cpu_ms_mean"]) / o["timing_cores"] / 1000
    assert o["cost_per_1k_queries_usd"] == pytest.approx(per_query_s * 1000 / 3600 * 36.0)
