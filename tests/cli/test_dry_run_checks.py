"""`bench run --dry-run` refuses what would stop the real run, one line per problem and exit code 2,
and embeds nothing: a goldset edited after its lock (the same line as `bench run`), an API key not
set, a service whose host accepts no connection."""

from __future__ import annotations

from pathlib import Path

from tests.fake_embedding_server import FakeEmbeddingServer
from tests.helpers import CONFIG, free_port, run_cli, write_project

UNSET_KEY = "BENCH_TEST_KEY_NOBODY_SETS"
UNSET_RERANK_KEY = "BENCH_TEST_RERANK_KEY_NOBODY_SETS"
NO_BASE_URL = "BENCH_TEST_BASE_URL_NOBODY_SETS"  # so that $OPENAI_BASE_URL cannot point elsewhere


def _api_project(root: Path, base_url: str, reranker_url: str | None = None) -> Path:
    """The tiny project with an API model at ``base_url`` (and an HTTP reranker at ``reranker_url``)."""
    config = CONFIG.replace('models = ["hash", "bm25"]', 'models = ["api", "bm25"]')
    config += (
        f'\n[model.api]\nloader = "openai"\nsource = "test-embed"\ndims = 8\nbase_url = "{base_url}"\n'
        f'base_url_env = "{NO_BASE_URL}"\napi_key_env = "{UNSET_KEY}"\n'
    )
    if reranker_url:
        config = config.replace("depth = 6\n", 'depth = 6\nrerankers = ["svc"]\n')
        config += (
            f'\n[reranker.svc]\nkind = "http"\nurl = "{reranker_url}"\napi_model = "rerank-test"\n'
            f'api_key_env = "{UNSET_RERANK_KEY}"\ntop = [3]\n'
        )
    return write_project(root, config)


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("bench: error: ")]


def test_a_goldset_edited_after_its_lock_is_refused_with_the_line_bench_run_gives(tmp_path: Path):
    write_project(tmp_path)
    assert run_cli("goldset", "lock", "gold.jsonl", "--corpus", "corpus", cwd=tmp_path).returncode == 0
    gold = tmp_path / "gold.jsonl"
    gold.write_text(gold.read_text().replace("How many vacation days", "How many holiday days"))
    real = run_cli("run", cwd=tmp_path)
    dry = run_cli("run", "--dry-run", cwd=tmp_path)
    assert real.returncode == dry.returncode == 2, dry.stderr
    [line] = _errors(real.stderr)
    assert "the goldset changed since it was locked" in line and "--allow-unlocked" in line
    assert _errors(dry.stderr) == [line] and dry.stdout == ""
    assert not (tmp_path / "results").exists() and not (tmp_path / "cache" / "embeddings").exists()

    allowed = run_cli("run", "--dry-run", "--allow-unlocked", cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    assert "hash/tok24/flat" in allowed.stdout and "the goldset changed since it was locked" in allowed.stderr


def test_an_api_key_not_set_is_named_for_the_model_and_the_http_reranker(tmp_path: Path, monkeypatch):
    monkeypatch.delenv(UNSET_KEY, raising=False)
    monkeypatch.delenv(UNSET_RERANK_KEY, raising=False)
    port = free_port()
    # 127.0.0.2 is no loopback name bench lets go without a key; nothing listens there
    _api_project(tmp_path, f"http://127.0.0.2:{port}/v1", reranker_url=f"http://127.0.0.2:{port}/rerank")
    dry = run_cli("run", "--dry-run", cwd=tmp_path)
    assert dry.returncode == 2 and dry.stdout == "", dry.stderr
    errors = _errors(dry.stderr)
    assert len(errors) == 4 == len([ln for ln in dry.stderr.splitlines() if "warning" not in ln])  # one line each
    assert any(f"${UNSET_KEY} is not set" in e and "model 'api'" in e for e in errors), errors
    assert any(f"set ${UNSET_RERANK_KEY}" in e and "reranker 'svc'" in e for e in errors), errors
    assert "Traceback" not in dry.stderr

    monkeypatch.setenv(UNSET_KEY, "sk-test")
    monkeypatch.setenv(UNSET_RERANK_KEY, "rk-test")
    keyed = run_cli("run", "--dry-run", cwd=tmp_path)
    assert keyed.returncode == 2
    assert len(_errors(keyed.stderr)) == 2, keyed.stderr  # only the two connections left
    assert not any("is not set" in e or "to the API key" in e for e in _errors(keyed.stderr)), keyed.stderr
    assert "sk-test" not in keyed.stderr and "rk-test" not in keyed.stderr


def test_an_endpoint_nothing_listens_on_is_named_by_its_url(tmp_path: Path):
    url = f"http://127.0.0.1:{free_port()}/v1"  # loopback: no key needed
    _api_project(tmp_path, url)
    dry = run_cli("run", "--dry-run", cwd=tmp_path)
    assert dry.returncode == 2 and dry.stdout == "", dry.stderr
    [line] = _errors(dry.stderr)
    assert f"model 'api': cannot connect to {url}/embeddings (connection refused)" in line
    assert f"${NO_BASE_URL}" in line  # how to point it elsewhere


def test_a_reachable_server_passes_and_receives_no_embedding_request(tmp_path: Path):
    with FakeEmbeddingServer() as server:
        _api_project(tmp_path, f"http://127.0.0.1:{server.port}/v1")
        dry = run_cli("run", "--dry-run", cwd=tmp_path)
        received = list(server.received)
    assert dry.returncode == 0, dry.stderr
    assert "api/tok24/flat" in dry.stdout and "bm25/rec24/inverted" in dry.stdout
    assert received == []  # the dry run only saw that the port accepts a connection
