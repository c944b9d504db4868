"""Interrupted runs never cost a user their results, and results never depend on the cache.

Real `bench run` processes are stopped part-way through embedding by SIGINT (Ctrl-C), SIGTERM and
SIGKILL. The corpus is the tiny project of tests/helpers.py plus generated documents: ~3,400 chunks that
the hashing model embeds in batches of 8, each batch committed to the cache, which takes a second
or more. The test waits until the cache holds rows, so the signal lands while embedding is under
way whatever the machine's load. Uninterrupted runs and reruns go through run_shootout in this
process, which is what the command line calls, without paying its start-up each time.
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from bench.chunking.table import ChunkTable
from bench.config import load_config
from bench.embedders import PASSAGE, load_embedder, paths
from bench.embedders.cache import EmbeddingCache, text_key
from bench.errors import BenchError
from bench.inputs.corpus import load_corpus
from bench.results import store
from bench.results.history import list_runs
from bench.results.recompute import recompute
from bench.run.shootout import run_shootout
from tests.helpers import CONFIG, DOCS, QUESTIONS, REPO, write_project

GENERATED = 150  # documents added to the tiny corpus
DUPLICATE_EVERY = 10  # every 10th generated document repeats the one before: exact score ties
# One chunker, with overlap; many small batches, each committed on its own.
BIG_CONFIG = CONFIG.split("\n[chunkers.rec24]")[0].replace("k = 3\n", "k = 3\nbatch_size = 8\n")
INTERRUPTED_LINE = "bench: interrupted; nothing half-written was kept"
DENSE, LEXICAL = "hash/tok24/flat", "bm25/tok24/inverted"
TIMEOUT_S = 120


# --- helpers ---------------------------------------------------------------------------------------------


def _big_project(root: Path) -> Path:
    """The tiny project plus generated documents, the same text every time."""
    config = write_project(root, BIG_CONFIG)
    rng = random.Random(20240601)
    # The corpus's own words compete with the evidence; made-up words fill the rest.
    words = sorted(set(re.findall(r"[a-z]+", " ".join(DOCS.values()).lower()))) + [f"term{i}" for i in range(400)]
    text = ""
    for i in range(GENERATED):
        if i % DUPLICATE_EVERY != DUPLICATE_EVERY - 1:
            text = "\n\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(20, 60))) + "." for _ in range(6))
        path = root / "corpus" / "gen" / f"doc{i:04d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    return config


def _start(config: Path, *args: str) -> subprocess.Popen:
    """`bench run` as run_cli starts it, but not waited for."""
    env = {key: value for key, value in os.environ.items() if key != "BENCH_CACHE_DIR"}
    env["PYTHONPATH"] = str(REPO)
    # A shell or CI runner may start the tests with SIGINT ignored, which the child would inherit;
    # a handled signal is reset to its default by exec, so Ctrl-C reaches bench as at a terminal.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "bench", "run", str(config), "--no-report", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, previous)


def _cached_rows(cache: Path) -> int:
    """Vectors committed to the embedding cache, read without disturbing the writer."""
    total = 0
    for db in (cache / "embeddings").glob("*.sqlite"):
        try:
            with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as con:
                total += con.execute("SELECT count(*) FROM vectors").fetchone()[0]
        except sqlite3.OperationalError:  # the file is being set up
            pass
    return total


def _stop_mid_embedding(config: Path, sig: signal.Signals) -> tuple[int, str, int, float]:
    """Start a run, send ``sig`` once embedding has committed its first batches; return the exit
    code, stderr, the vectors cached by then and the seconds from start to signal."""
    cache = config.parent / "cache"
    t0 = time.monotonic()
    proc = _start(config)
    try:
        while _cached_rows(cache) == 0:
            if proc.poll() is not None:
                pytest.fail(
                    f"the run ended (exit {proc.returncode}) before embedding began; stderr: {proc.stderr.read()}"
                )
            if time.monotonic() - t0 > TIMEOUT_S:
                pytest.fail("no vector was cached in time")
            time.sleep(0.01)
        landed = time.monotonic() - t0
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, stderr, _cached_rows(cache), landed


def _load(run: Path) -> tuple[dict, list[dict]]:
    summary = json.loads((run / store.SUMMARY).read_text())
    rows = [json.loads(line) for line in (run / store.PER_QUESTION).read_text().splitlines()]
    return summary, rows


def _results(run: Path) -> tuple[dict, list[dict]]:
    """Everything a run concluded (rankings with ids, scores and grades, metrics, ranks, which candidates
    tie with the best), without its operational figures (timings, cache hits), which rightly differ run
    to run, and so without the pick among the tied, which a preference for cost or latency makes."""
    summary, rows = _load(run)
    tested = {k: summary["recommendation"][k] for k in ("metric", "best", "tied", "n_questions", "comparisons")}
    summary = {
        **summary,
        "candidates": [{k: v for k, v in c.items() if k != "ops"} for c in summary["candidates"]],
        "recommendation": tested,
    }
    return summary, rows


def _ops(run: Path) -> dict[str, dict]:
    summary, _ = _load(run)
    return {c["id"]: c["ops"] for c in summary["candidates"]}


def _assert_resumed(run: Path, reference: Path, cached_at_stop: int) -> None:
    """The rerun embedded only what the stopped run had not cached, and concluded exactly as the
    uninterrupted run did."""
    ops, reference_ops = _ops(run)[DENSE], _ops(reference)[DENSE]
    assert ops["chunks_from_cache"] > 0
    queries_cached = ops["questions_from_cache"]  # the questions too, if the stopped run got that far
    assert reference_ops["chunks_embedded"] - ops["chunks_embedded"] == cached_at_stop - queries_cached
    assert _results(run) == _results(reference)


def _run_here(config: Path, results: Path, use_cache: bool = True) -> Path:
    """An uninterrupted run in this process (the command line's run_shootout, without its start-up
    cost), into ``results``, with the project's own cache whatever $BENCH_CACHE_DIR says."""
    cfg = load_config(config)
    cfg = cfg.with_overrides(results=results, cache_override=cfg.cache_dir)
    return run_shootout(cfg, Console(file=io.StringIO()), use_cache=use_cache, reports=False).path


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """An uninterrupted run of the big project with a cold cache."""
    config = _big_project(tmp_path_factory.mktemp("reference"))
    return _run_here(config, config.parent / "results")


# --- Ctrl-C and SIGTERM ----------------------------------------------------------------------------------


def test_ctrl_c_mid_embedding_keeps_nothing_and_the_rerun_resumes_to_identical_results(tmp_path: Path, reference: Path):
    config = _big_project(tmp_path)
    code, stderr, cached, _ = _stop_mid_embedding(config, signal.SIGINT)
    assert code == 130
    assert stderr.strip().splitlines()[-1] == INTERRUPTED_LINE
    assert stderr.count("interrupted") == 1 and "Traceback" not in stderr
    assert list((tmp_path / "results").iterdir()) == []  # no run folder, no staging folder
    assert 0 < cached < _ops(reference)[DENSE]["chunks_embedded"]  # stopped while embedding

    run = _run_here(config, tmp_path / "results")
    assert list((tmp_path / "results").iterdir()) == [run]
    _assert_resumed(run, reference, cached)


def test_sigterm_is_treated_like_ctrl_c(tmp_path: Path, reference: Path):
    config = _big_project(tmp_path)
    code, stderr, cached, _ = _stop_mid_embedding(config, signal.SIGTERM)
    assert code == 130
    assert stderr.strip().splitlines()[-1] == INTERRUPTED_LINE and "Traceback" not in stderr
    assert list((tmp_path / "results").iterdir()) == []
    assert 0 < cached < _ops(reference)[DENSE]["chunks_embedded"]


# --- SIGKILL ---------------------------------------------------------------------------------------------


def _cached_passages(config: Path) -> dict[str, np.ndarray]:
    """The chunks that the cache holds a vector for, read through bench's cache. Texts are embedded
    shortest first, so any of the corpus's chunks may be among the first batches committed."""
    cfg = load_config(config)
    corpus = load_corpus(cfg.corpus)
    texts = {c.text for spec in cfg.chunkers for c in ChunkTable.chunk_corpus(corpus, spec.build()).chunks}
    embedder = load_embedder(cfg.model("hash"))
    cache = EmbeddingCache(paths.embeddings_dir(cfg.cache_dir))
    with closing(cache._connect(embedder.spec.cache_key)) as db:  # opens as the next run would
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    found = cache.lookup(embedder.spec.cache_key, embedder.dims, [text_key(PASSAGE, t) for t in texts])
    by_key = {text_key(PASSAGE, t): t for t in texts}
    return {by_key[key]: vector for key, vector in found.items()}


def test_sigkill_leaves_nothing_that_passes_for_a_run_and_the_rerun_cleans_up_and_resumes(
    tmp_path: Path, reference: Path
):
    config = _big_project(tmp_path)
    results = tmp_path / "results"
    code, _, cached, _ = _stop_mid_embedding(config, signal.SIGKILL)
    assert code == -signal.SIGKILL
    [staging] = results.iterdir()
    assert store.is_staging(staging) and (staging / store.WRITER).is_file()

    # The cache survived the kill mid-transaction: it opens, whole, and the vectors it holds are right.
    passages = _cached_passages(config)
    assert passages
    embedder = load_embedder(load_config(config).model("hash"))
    texts = sorted(passages)
    assert np.array_equal(np.stack([passages[t] for t in texts]), embedder.embed(texts, PASSAGE))

    # Worst case: killed after the last file was written, just before the rename.
    for name in (store.SUMMARY, store.PER_QUESTION, store.MANIFEST, store.TEXTS):
        shutil.copy(reference / name, staging / name)
    with pytest.raises(BenchError, match="no finished runs"):
        store.find_run("latest", results)
    with pytest.raises(BenchError, match="unfinished run"):
        store.find_run(staging, results)
    assert list(list_runs(results)) == []
    with pytest.raises(BenchError, match="no finished runs"):  # what `bench report latest` calls first
        recompute("latest", results)

    run = _run_here(config, results)
    assert list(results.iterdir()) == [run]  # the abandoned staging folder is gone
    assert store.find_run("latest", results) == run and not (run / store.WRITER).exists()
    _assert_resumed(run, reference, cached)


def test_a_run_removes_only_staging_folders_whose_writer_is_gone(tmp_path: Path):
    results = tmp_path / "results"
    results.mkdir()
    dead = results / ".20240101T000000Z-dead.partial"  # its writer was killed: the lock file, unlocked
    dead.mkdir()
    (dead / store.WRITER).write_text("999999\n")
    old = results / ".20240101T000000Z-old.partial"  # left by a bench that wrote no lock file, long ago
    old.mkdir()
    os.utime(old, (time.time() - 3 * 86400,) * 2)
    fresh = results / ".20240101T000000Z-fresh.partial"  # being set up by another run this instant
    fresh.mkdir()
    with store.run_folder(results, "live") as live:  # a concurrent run, still writing
        assert (live / store.WRITER).read_text() == f"{os.getpid()}\n"
        with store.run_folder(results, "next") as staging:
            assert not dead.exists() and not old.exists()
            assert fresh.is_dir() and live.is_dir() and staging.is_dir()
            (staging / "data").write_text("x")
        (live / "data").write_text("y")
    assert (results / "live" / "data").read_text() == "y" and (results / "next" / "data").read_text() == "x"
    assert not (results / "live" / store.WRITER).exists() and not live.exists()


def test_a_run_refuses_a_run_id_another_live_run_is_writing(tmp_path: Path):
    results = tmp_path / "results"
    with store.run_folder(results, "same") as live:
        with pytest.raises(BenchError, match="another run is writing"), store.run_folder(results, "same"):
            pass
        assert live.is_dir() and (live / store.WRITER).is_file()


# --- determinism -----------------------------------------------------------------------------------------


def test_cold_warm_and_uncached_runs_conclude_identically(tmp_path: Path, reference: Path):
    """The reference run had a cold cache; a warm rerun and a --no-cache run must rank every question
    the same, scores and ties included (the corpus repeats documents, so ties are many)."""
    config = reference.parent.parent / "bench.toml"
    warm_run = _run_here(config, tmp_path / "warm")
    uncached_run = _run_here(config, tmp_path / "uncached", use_cache=False)
    cold, warm, uncached = (_ops(run)[DENSE] for run in (reference, warm_run, uncached_run))
    assert cold["chunks_embedded"] > 0 and cold["chunks_from_cache"] == 0  # the three paths
    assert warm["chunks_embedded"] == 0 and warm["chunks_from_cache"] == warm["n_chunks"]
    assert uncached["chunks_from_cache"] == 0
    assert _results(warm_run) == _results(reference)
    assert _results(uncached_run) == _results(reference)
    _, rows = _load(reference)
    assert [r["candidate"] for r in rows] == [DENSE] * len(QUESTIONS) + [LEXICAL] * len(QUESTIONS)
    tied = [
        (a["id"], b["id"]) for r in rows for a, b in zip(r["ranking"], r["ranking"][1:]) if a["score"] == b["score"]
    ]
    assert tied and all(a < b for a, b in tied)  # there were ties, broken by unit id
