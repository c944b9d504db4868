"""Rerankers: a tiny cross-encoder built here (no download), a scripted rerank server on
127.0.0.1, the hashing model as a bi-encoder, the [reranker.NAME] rules and the cost arithmetic."""

from __future__ import annotations

import hashlib
import json
import threading

import numpy as np
import pytest

from bench.chunking.tokens import count_tokens
from bench.embedders import MODELS, PASSAGE, QUERY, load_embedder
from bench.embedders.cache import EmbeddingCache, text_key
from bench.errors import BenchError
from bench.retrieval.rerankers import (
    BiEncoderReranker,
    CrossEncoderReranker,
    HttpReranker,
    RerankerSpec,
    load_reranker,
    reranker_costs,
    reranker_spec_from_config,
)
from tests.helpers import JsonHandler, LocalServer

KEY_ENV = "BENCH_TEST_RERANK_KEY"
KEY = "rk-test-DO-NOT-LEAK-8d3f1a"
QUERY_TEXT = "how many vacation days do employees get"
PASSAGES = [
    "employees get twenty five vacation days",
    "backups run every night",
    "the laptop has memory",
    "pages within fifteen minutes",
    "unused vacation days carry over",
]


def one_line(error: pytest.ExceptionInfo) -> str:
    text = str(error.value)
    assert "\n" not in text
    return text


# -- a tiny cross-encoder ----------------------------------------------------------------------

WORDS = sorted({w for t in [QUERY_TEXT, *PASSAGES] for w in t.split()})


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    """A 2-layer BERT with one label, random but seeded weights, saved as a model folder."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast
    from transformers.models.bert.tokenization_bert import load_vocab

    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab=dict(load_vocab(str(vocab))))  # transformers 5 takes the vocab itself
    assert tokenizer.unk_token_id not in tokenizer(QUERY_TEXT, PASSAGES[0])["input_ids"]
    config = BertConfig(
        vocab_size=len(WORDS) + 5,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=1,
        initializer_range=0.2,  # scores far apart, so an order means something
    )
    torch.manual_seed(0)
    model = BertForSequenceClassification(config).eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    with torch.no_grad():  # the independent computation: one pair at a time, no sentence-transformers
        logits = [
            float(model(**tokenizer(QUERY_TEXT, p, return_tensors="pt", truncation=True)).logits[0, 0])
            for p in PASSAGES
        ]
    return folder, np.array(logits)


def test_cross_encoder_scores_are_the_models_logits(tiny_cross_encoder):
    folder, logits = tiny_cross_encoder
    spec = RerankerSpec(name="tiny", kind="cross-encoder", source=str(folder))
    first = load_reranker(spec)
    assert isinstance(first, CrossEncoderReranker) and not first.remote
    scores = first.score(QUERY_TEXT, PASSAGES)
    assert scores.dtype == np.float64 and scores.shape == (5,)
    np.testing.assert_allclose(scores, logits, atol=1e-6, rtol=0)  # raw logits: no sigmoid
    assert np.min(np.diff(np.sort(logits))) > 0.01 and not ((logits > 0) & (logits < 1)).all()  # apart; no sigmoid
    np.testing.assert_allclose(first.score_live(QUERY_TEXT, PASSAGES), scores, atol=1e-6, rtol=0)
    second = load_reranker(spec)
    again = second.score_live(QUERY_TEXT, PASSAGES)
    np.testing.assert_array_equal(again, first.score_live(QUERY_TEXT, PASSAGES))
    order = list(np.argsort(-logits, kind="stable"))
    assert list(np.argsort(-scores, kind="stable")) == order == list(np.argsort(-again, kind="stable"))
    assert first.searches == 3 and first.billed_tokens == 0


def test_cross_encoder_score_keeps_pairs_and_score_live_never_does(tiny_cross_encoder, monkeypatch):
    folder, logits = tiny_cross_encoder
    reranker = load_reranker(RerankerSpec(name="tiny", kind="cross-encoder", source=str(folder), batch_size=2))
    reranker.score(QUERY_TEXT, PASSAGES[:3])
    seen = []
    real = reranker.model.predict
    monkeypatch.setattr(reranker.model, "predict", lambda pairs, **kw: seen.append(list(pairs)) or real(pairs, **kw))
    scores = reranker.score(QUERY_TEXT, [PASSAGES[4], *PASSAGES[:3], PASSAGES[4]])
    assert seen == [[(QUERY_TEXT, PASSAGES[4])]]  # only the new pair, once
    np.testing.assert_allclose(scores, logits[[4, 0, 1, 2, 4]], atol=1e-6, rtol=0)
    reranker.score_live(QUERY_TEXT, PASSAGES[:2])
    assert seen[-1] == [(QUERY_TEXT, p) for p in PASSAGES[:2]]
    assert reranker.score(QUERY_TEXT, []).shape == (0,)


def test_cross_encoder_folder_missing_or_not_a_cross_encoder(tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(BenchError) as error:
        load_reranker(RerankerSpec(name="tiny", kind="cross-encoder", source=str(missing)))
    assert str(missing) in one_line(error) and "reranker 'tiny'" in str(error.value)
    embedding_model = tmp_path / "bi"
    embedding_model.mkdir()
    (embedding_model / "config.json").write_text(json.dumps({"architectures": ["BertModel"]}))
    with pytest.raises(BenchError) as error:
        load_reranker(RerankerSpec(name="tiny", kind="cross-encoder", source=str(embedding_model)))
    assert "not a cross-encoder" in one_line(error) and "bi-encoder" in str(error.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(BenchError, match=r"config\.json"):
        load_reranker(RerankerSpec(name="tiny", kind="cross-encoder", source=str(tmp_path / "empty")))


def test_hub_source_is_not_fetched_when_the_reranker_is_made():
    reranker = load_reranker(RerankerSpec(name="hubbed", kind="cross-encoder", source="hub:org/some-reranker"))
    assert "model" not in vars(reranker)  # nothing loaded, nothing downloaded


# -- a scripted rerank server ------------------------------------------------------------------


def score_for(text: str) -> float:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little") / 2**32 - 0.5


class FakeRerankServer(LocalServer):
    """Each request takes the next behaviour of ``plan`` (then ``default``); headers lower-cased."""

    def __init__(self, plan=(), default: str = "cohere") -> None:
        self.plan, self.default, self.received = list(plan), default, []
        self._lock = threading.Lock()
        self.serve(self._handler())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v2/rerank"

    def _handler(self):
        server = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with server._lock:
                    behaviour = server.plan.pop(0) if server.plan else server.default
                    server.received.append({"headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
                if behaviour == "429":
                    return self._send(429, {"message": "slow down"}, {"Retry-After": "0"})
                if behaviour == "503":
                    return self._send(503, {"message": "overloaded"})
                if behaviour == "400-echo":
                    return self._send(400, {"message": f"bad request with {self.headers.get('Authorization')}"})
                if behaviour == "not-json":
                    return self._send(200, b"<html>busy</html>")
                texts = body.get("documents", body.get("texts"))
                items = sorted(
                    ({"index": i, "relevance_score": score_for(t)} for i, t in enumerate(texts)),
                    key=lambda item: -item["relevance_score"],  # best first: not the input order
                )
                if behaviour == "tei":
                    return self._send(200, [{"index": i["index"], "score": i["relevance_score"]} for i in items])
                if behaviour == "no-index":
                    del items[0]["index"]
                elif behaviour == "bad-index":
                    items[0]["index"] = len(texts)
                elif behaviour == "string-score":
                    items[0]["relevance_score"] = "0.9"
                elif behaviour == "missing":
                    items = items[:-1]
                if behaviour == "voyage":
                    return self._send(200, {"data": items, "usage": {"total_tokens": 321}})
                self._send(200, {"id": "x", "results": items, "meta": {"billed_units": {"search_units": 1}}})

        return Handler


def http_reranker(monkeypatch, url: str, key: str | None = KEY, **settings) -> HttpReranker:
    if key is None:
        monkeypatch.delenv(KEY_ENV, raising=False)
    else:
        monkeypatch.setenv(KEY_ENV, key)
    spec = RerankerSpec(name="remote", kind="http", url=url, api_model="rerank-test", api_key_env=KEY_ENV, **settings)
    reranker = load_reranker(spec)
    assert isinstance(reranker, HttpReranker)
    reranker.backoff_base, reranker.backoff_cap = 0.001, 0.005
    return reranker


def test_http_cohere_shape_scores_come_back_in_input_order(monkeypatch):
    with FakeRerankServer() as server:
        reranker = http_reranker(monkeypatch, server.url)
        scores = reranker.score(QUERY_TEXT, PASSAGES)
        live = reranker.score_live(QUERY_TEXT, PASSAGES)
    assert scores.dtype == np.float64
    assert scores.tolist() == [score_for(p) for p in PASSAGES] == live.tolist()
    assert len(server.received) == 2  # never cached: both ask the service
    sent = server.received[0]
    assert sent["body"] == {"model": "rerank-test", "query": QUERY_TEXT, "documents": PASSAGES, "top_n": 5}
    assert sent["headers"]["authorization"] == f"Bearer {KEY}"
    assert reranker.remote and reranker.searches == 2 and reranker.billed_tokens == 0
    assert KEY not in repr(reranker) and KEY not in repr(vars(reranker))


def test_http_tei_shape_sends_texts_and_reads_a_list(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with FakeRerankServer(default="tei") as server:
        spec = RerankerSpec(name="tei", kind="http", url=server.url, shape="texts", api_key_env=KEY_ENV)
        scores = load_reranker(spec).score(QUERY_TEXT, PASSAGES)  # loopback: no key needed
    assert scores.tolist() == [score_for(p) for p in PASSAGES]
    assert server.received[0]["body"] == {"query": QUERY_TEXT, "texts": PASSAGES}
    assert "authorization" not in server.received[0]["headers"]


def test_http_voyage_data_and_billed_tokens(monkeypatch):
    with FakeRerankServer(["voyage", "cohere"]) as server:
        reranker = http_reranker(monkeypatch, server.url, price_per_mtok=0.05)
        assert reranker.score(QUERY_TEXT, PASSAGES).tolist() == [score_for(p) for p in PASSAGES]
        assert reranker.billed_tokens == 321 and not reranker.tokens_estimated  # the service's own count
        reranker.score(QUERY_TEXT, PASSAGES[:2])
    assert reranker.billed_tokens == 321 + count_tokens(QUERY_TEXT) + sum(count_tokens(p) for p in PASSAGES[:2])
    assert reranker.tokens_estimated and reranker.searches == 2


def test_http_retries_429_with_retry_after_and_503(monkeypatch):
    with FakeRerankServer(["429", "429", "cohere", "503", "cohere"]) as server:
        reranker = http_reranker(monkeypatch, server.url)
        assert reranker.score(QUERY_TEXT, PASSAGES).tolist() == [score_for(p) for p in PASSAGES]
        assert (reranker.requests, reranker.retries) == (3, 2)
        assert reranker.score_live(QUERY_TEXT, PASSAGES[:3]).tolist() == [score_for(p) for p in PASSAGES[:3]]
        assert (reranker.requests, reranker.retries, reranker.searches) == (5, 3, 2)


def test_http_exhausted_retries_say_what_failed_last(monkeypatch):
    with FakeRerankServer(default="503") as server:
        reranker = http_reranker(monkeypatch, server.url, max_retries=2)
        with pytest.raises(BenchError) as error:
            reranker.score(QUERY_TEXT, PASSAGES)
    text = one_line(error)
    assert "failed 3 attempts" in text and "HTTP 503" in text and "max_retries" in text
    assert len(server.received) == 3


def test_http_client_error_never_shows_the_key(monkeypatch):
    with FakeRerankServer(["400-echo"]) as server:
        reranker = http_reranker(monkeypatch, server.url)
        with pytest.raises(BenchError) as error:
            reranker.score(QUERY_TEXT, PASSAGES)
    text = one_line(error)
    assert "HTTP 400" in text and "bad request" in text and KEY not in text and "reranker 'remote'" in text
    assert len(server.received) == 1  # a 4xx is not retried


@pytest.mark.parametrize("behaviour", ["not-json", "no-index", "bad-index", "string-score", "missing"])
def test_http_malformed_replies(monkeypatch, behaviour):
    with FakeRerankServer([behaviour]) as server:
        reranker = http_reranker(monkeypatch, server.url)
        with pytest.raises(BenchError) as error:
            reranker.score(QUERY_TEXT, PASSAGES)
    text = one_line(error)
    assert "malformed" in text and server.url in text and KEY not in text
    assert reranker.searches == 0


def test_http_missing_key_fails_at_load_unless_loopback(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    remote = RerankerSpec(name="cohere", kind="http", url="http://example.invalid/v2/rerank", api_model="m")
    with pytest.raises(BenchError) as error:
        load_reranker(RerankerSpec(**{**vars(remote), "api_key_env": KEY_ENV}))
    assert f"${KEY_ENV}" in one_line(error) and "reranker 'cohere'" in str(error.value)
    assert isinstance(load_reranker(remote), HttpReranker)  # no key asked for, none needed
    local = RerankerSpec(name="tei", kind="http", url="http://127.0.0.1:9/rerank", shape="texts", api_key_env=KEY_ENV)
    assert load_reranker(local).score(QUERY_TEXT, []).shape == (0,)  # nothing to score: no request


# -- the hashing model as a bi-encoder ---------------------------------------------------------


def test_bi_encoder_scores_are_inner_products(tmp_path):
    model = MODELS.get("hash")
    embedder = load_embedder(model, models_dir=tmp_path / "models")
    cache = EmbeddingCache(tmp_path / "cache")
    reranker = load_reranker(RerankerSpec(name="hash", kind="bi-encoder", model="hash"), embedder, cache, batch_size=2)
    assert isinstance(reranker, BiEncoderReranker) and not reranker.remote
    scores = reranker.score(QUERY_TEXT, PASSAGES)
    q = embedder.embed([QUERY_TEXT], QUERY)[0]
    by_hand = [sum(float(a) * float(b) for a, b in zip(row, q)) for row in embedder.embed(PASSAGES, PASSAGE)]
    assert scores.dtype == np.float64
    np.testing.assert_allclose(scores, by_hand, atol=1e-6, rtol=0)
    np.testing.assert_allclose(reranker.score_live(QUERY_TEXT, PASSAGES), scores, atol=1e-5, rtol=0)
    assert int(np.argmax(scores)) == 0  # the passage sharing most words with the query
    stored = cache.lookup(model.cache_key, embedder.dims, [text_key(PASSAGE, p) for p in PASSAGES])
    assert len(stored) == 5 and reranker.searches == 2  # the quality pass went through the cache


# -- [reranker.NAME] ---------------------------------------------------------------------------

MODEL_NAMES = {"minilm", "hash"}


def test_config_defaults():
    spec = reranker_spec_from_config("minilm", None, MODEL_NAMES)
    assert (spec.kind, spec.model, spec.top, spec.over) == ("bi-encoder", "minilm", (20,), ())
    spec = reranker_spec_from_config("rescore", {"model": "hash", "top": [10, 50], "over": "bm25*"}, MODEL_NAMES)
    assert (spec.kind, spec.model, spec.top, spec.over) == ("bi-encoder", "hash", (10, 50), ("bm25*",))
    spec = reranker_spec_from_config("ce", {"kind": "cross-encoder", "source": "/m", "over": ["a*", "b"]}, MODEL_NAMES)
    assert (spec.source, spec.over, spec.batch_size, spec.max_length) == ("/m", ("a*", "b"), 32, None)
    table = {"kind": "http", "url": "https://api.cohere.com/v2/rerank", "api_model": "rerank-v3.5"}
    spec = reranker_spec_from_config("cohere", {**table, "api_key_env": "NOT_SET_HERE", "timeout_s": 5}, MODEL_NAMES)
    assert (spec.shape, spec.api_key_env, spec.timeout_s, spec.max_retries) == ("documents", "NOT_SET_HERE", 5.0, 5)
    tei = reranker_spec_from_config(
        "tei", {"kind": "http", "url": "http://127.0.0.1:8080/rerank", "shape": "texts"}, ()
    )
    assert tei.api_model is None and tei.shape == "texts"


@pytest.mark.parametrize("top", [0, "20", [20, 20], [], True, [10, -1]])
def test_config_bad_top(top):
    with pytest.raises(BenchError) as error:
        reranker_spec_from_config("minilm", {"top": top}, MODEL_NAMES)
    assert one_line(error).startswith("reranker 'minilm': top = ")


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ({"topp": 5}, "unknown key 'topp'; did you mean 'top'? known: kind, top"),
        ({"kind": "cross_encoder"}, "did you mean 'cross-encoder'?"),
        ({"kind": "cross-encoder"}, "needs source"),
        ({"kind": "http"}, "needs url"),
        ({"kind": "http", "url": "ftp://x/rerank", "api_model": "m"}, "not an http(s) URL"),
        ({"kind": "http", "url": "https://x/rerank"}, "needs api_model"),
        ({"kind": "http", "url": "https://x/rerank", "shape": "pairs", "api_model": "m"}, "shape = 'pairs'"),
        ({"kind": "http", "url": "https://x/rerank", "api_model": "m", "timeout_s": 0}, "timeout_s"),
        ({"kind": "cross-encoder", "source": "/m", "url": "https://x"}, "'url' applies to kind = \"http\""),
        ({"model": "mpnet"}, "model 'mpnet' is no dense model"),
        ({"price_per_mtok": -1}, "price_per_mtok = -1 must be a number >= 0"),
        ({"price_per_mtok": 1, "hourly_usd": 2}, "give one price"),
        ({"batch_size": 8}, "'batch_size' applies to kind = \"cross-encoder\""),
        ({"over": 3}, "over = 3"),
        ({"over": []}, "over = []"),
        ({"over": ["a*", ""]}, "over = ['a*', '']"),
    ],
)
def test_config_errors(table, expected):
    with pytest.raises(BenchError) as error:
        reranker_spec_from_config("minilm", table, MODEL_NAMES)
    assert expected in one_line(error) and "reranker 'minilm'" in str(error.value)


def test_config_without_kind_for_a_name_that_is_no_model():
    with pytest.raises(BenchError) as error:
        reranker_spec_from_config("cohere", {"url": "https://api.cohere.com/v2/rerank"}, MODEL_NAMES)
    assert "no kind" in one_line(error) and 'kind = "cross-encoder" or "http"' in str(error.value)


# -- costs -------------------------------------------------------------------------------------


def test_costs_by_hand():
    cost = "rerank_cost_per_1k_queries_usd"
    per_search = RerankerSpec(name="c", kind="http", price_per_1k_searches=2.0)
    assert reranker_costs(per_search)[cost] == 2.0
    assert reranker_costs(per_search, searches_per_1k=3000)[cost] == pytest.approx(6.0)
    per_token = RerankerSpec(name="j", kind="http", price_per_mtok=0.05)
    assert reranker_costs(per_token, tokens_per_search=500)[cost] == pytest.approx(0.025)
    assert reranker_costs(per_token)[cost] is None
    hourly = RerankerSpec(name="tei", kind="http", hourly_usd=3.6)
    assert reranker_costs(hourly, ms_mean=10)[cost] == pytest.approx(0.01)
    assert reranker_costs(hourly)[cost] is None
    local = reranker_costs(RerankerSpec(name="ce", kind="cross-encoder", source="/m"))
    assert local == {"rerank_price_source": "local model", cost: 0.0}
    assert reranker_costs(RerankerSpec(name="hash", kind="bi-encoder", model="hash"))[cost] == 0.0
    unknown = reranker_costs(RerankerSpec(name="cohere", kind="http", url="https://x"))
    assert unknown[cost] is None and "[reranker.cohere]" in unknown["rerank_price_source"]
    assert unknown["rerank_price_source"].startswith("unknown: set price_per_1k_searches or price_per_mtok")
