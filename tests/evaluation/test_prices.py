"""The price table and which price applies to a model (bench.evaluation.prices); no model is loaded."""

from __future__ import annotations

import math

import pytest

from bench.embedders import MODELS
from bench.embedders.base import ModelSpec
from bench.errors import BenchError
from bench.evaluation import prices
from bench.evaluation.prices import Price, parse_price_table, price_table, resolve_price

# --- the shipped table -----------------------------------------------------------------------------


def test_table_loads_and_every_entry_is_complete():
    table = price_table()
    assert table is price_table()  # cached
    for model_id in (
        "text-embedding-3-small",
        "text-embedding-3-large",
        "text-embedding-ada-002",
        "embed-english-v3.0",
        "embed-multilingual-v3.0",
        "embed-v4.0",
        "voyage-3",
        "voyage-3-lite",
        "voyage-3.5",
        "voyage-3.5-lite",
        "gemini-embedding-001",
        "mistral-embed",
        "jina-embeddings-v3",
    ):
        assert model_id in table, model_id
    for model_id, price in table.items():
        assert isinstance(price.price_per_mtok, float) and price.price_per_mtok > 0, model_id
        assert math.isfinite(price.price_per_mtok)
        assert price.source.startswith(("https://", "http://")), model_id
        assert price.date and prices.valid_date(price.date), (model_id, price.date)
        assert not price.estimate


def test_table_known_prices():
    table = price_table()
    assert table["text-embedding-3-small"].price_per_mtok == 0.02
    assert table["text-embedding-3-large"].price_per_mtok == 0.13
    assert table["text-embedding-ada-002"].price_per_mtok == 0.10


def test_valid_date():
    assert prices.valid_date("2026-04-29")
    assert prices.valid_date("2026-06")  # month only, when the source gives no day
    for bad in ("2026-13", "2026-02-30", "26-04-29", "2026/04/29", "April 2026", "2026-4-9", ""):
        assert not prices.valid_date(bad), bad


_GOOD_ENTRY = (
    '[[model]]\nid = "m"\nprovider = "p"\nprice_per_mtok = 0.1\n'
    'source = "https://example.com/pricing"\ndate = "2026-01-02"\n'
)


def test_parse_good_entry():
    table = parse_price_table(_GOOD_ENTRY + 'note = "unverified"\n')
    assert table == {"m": Price(0.1, "https://example.com/pricing", "2026-01-02", note="unverified")}


@pytest.mark.parametrize(
    "text, message",
    [
        ("[[model]\n", "invalid TOML"),
        ('[model]\nid = "m"\n', "[[model]] entries"),
        ("rate = 1\n" + _GOOD_ENTRY, "unknown top-level"),
        (_GOOD_ENTRY.replace('date = "2026-01-02"\n', ""), "lacks date"),
        (_GOOD_ENTRY.replace("0.1", "0"), "positive number"),
        (_GOOD_ENTRY.replace("0.1", "-0.1"), "positive number"),
        (_GOOD_ENTRY.replace("0.1", '"0.1"'), "positive number"),
        (_GOOD_ENTRY.replace("https://example.com/pricing", "example.com"), "must be a URL"),
        (_GOOD_ENTRY.replace("2026-01-02", "Jan 2026"), "YYYY-MM-DD"),
        (_GOOD_ENTRY + 'colour = "red"\n', "unknown key"),
        (_GOOD_ENTRY + _GOOD_ENTRY, "listed twice"),
        (_GOOD_ENTRY.replace('id = "m"', 'id = ""'), "id must be"),
    ],
)
def test_parse_rejects_malformed(text, message):
    with pytest.raises(BenchError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_price_table(text, "prices.toml")


# --- price resolution ------------------------------------------------------------------------------


def _spec(loader: str, name: str = "m", **kw) -> ModelSpec:
    params = kw.pop("params", ())
    return ModelSpec(name=name, loader=loader, params=tuple(sorted(params)), **kw)


@pytest.mark.parametrize("loader", ["sentence-transformers", "model2vec", "hashing", "bm25"])
def test_local_loaders_are_free(loader):
    assert resolve_price(_spec(loader), configured=False) == Price(0.0, "local model", None)


def test_builtin_local_models_are_free():
    for name in ("minilm", "static", "mpnet", "bm25", "hash"):
        price = resolve_price(MODELS.get(name), configured=False)
        assert price.price_per_mtok == 0.0 and price.source == "local model", name


@pytest.mark.parametrize("loader", ["sentence-transformers", "model2vec", "hashing", "bm25", "openai"])
def test_hourly_usd_makes_a_compute_estimate(loader):
    spec = _spec(loader, source="text-embedding-3-small", params=(("hourly_usd", 1.2),))
    price = resolve_price(spec, configured=False)
    assert price == Price(None, "compute estimate", None, estimate=True)
    assert prices.hourly_usd(spec) == 1.2


@pytest.mark.parametrize("bad", [-1, "cheap", True, float("nan")])
def test_bad_hourly_usd_is_refused(bad):
    with pytest.raises(BenchError, match=r"\[model.m\] hourly_usd"):
        resolve_price(_spec("sentence-transformers", params=(("hourly_usd", bad),)), configured=False)


def test_openai_looked_up_by_model_param_then_source_then_name():
    table = price_table()
    by_param = _spec("openai", source="something-else", params=(("model", "text-embedding-3-large"),))
    assert resolve_price(by_param, configured=False) == table["text-embedding-3-large"]
    by_source = _spec("openai", source="text-embedding-3-small")
    assert resolve_price(by_source, configured=False) == table["text-embedding-3-small"]
    by_name = _spec("openai", name="voyage-3.5-lite")
    assert resolve_price(by_name, configured=False) == table["voyage-3.5-lite"]
    assert table["voyage-3.5-lite"].source.startswith("https://")


def test_openai_unknown_model_is_unknown_not_free():
    price = resolve_price(_spec("openai", name="my-server", source="some-local-model"), configured=False)
    assert price.price_per_mtok is None
    assert price.source == "unknown: set price_per_mtok in [model.my-server]"
    assert price.date is None and not price.estimate
    # the built-in e5-small-serve speaks the OpenAI API but is not in the table
    assert resolve_price(MODELS.get("e5-small-serve"), configured=False).price_per_mtok is None


def test_spec_price_is_used_only_when_configured():
    # ModelSpec.price_per_mtok is None unless a [model.NAME] table sets it; the table decides otherwise
    spec = _spec("openai", source="text-embedding-3-large")
    assert spec.price_per_mtok is None
    assert resolve_price(spec, configured=False).price_per_mtok == 0.13
    stale = _spec("openai", source="text-embedding-3-large", price_per_mtok=0.0)
    assert resolve_price(stale, configured=False).price_per_mtok == 0.13


@pytest.mark.parametrize("loader", ["openai", "sentence-transformers", "bm25"])
def test_configured_price_wins(loader):
    spec = _spec(loader, source="text-embedding-3-large", price_per_mtok=0.05, params=(("hourly_usd", 2.0),))
    assert resolve_price(spec, configured=True) == Price(0.05, "config", None)
