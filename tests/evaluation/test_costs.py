"""Prices, cost arithmetic and the cheapest-within-margin pick (bench.evaluation.costs); no model is loaded."""

from __future__ import annotations

import math

import pytest

from bench.core.operating import Operating
from bench.core.summary import CandidateResult
from bench.embedders import MODELS
from bench.embedders.base import ModelSpec
from bench.errors import BenchError
from bench.evaluation import costs
from bench.evaluation.costs import (
    Price,
    cheapest_within,
    compute_cost_usd,
    cost_per_1k_queries_usd,
    index_cost_usd,
    parse_price_table,
    price_table,
    recommendation_line,
    resolve_price,
    run_cost_usd,
)
from bench.formatting import usd

# --- arithmetic, checked against sums done by hand -------------------------------------------------


def test_index_cost_hand_computed():
    # 52,754 tokens x $0.02 per million = 52,754 x 0.00000002 = $0.00105508
    assert index_cost_usd(52_754, 0.02) == pytest.approx(0.00105508, rel=1e-12)
    # 1,000,000 tokens x $0.13/M = $0.13 exactly
    assert index_cost_usd(1_000_000, 0.13) == pytest.approx(0.13, rel=1e-12)
    assert index_cost_usd(0, 0.13) == 0.0


def test_cost_per_1k_queries_hand_computed():
    # 12.5 tokens per question x 1,000 questions = 12,500 tokens; x $0.02/M = $0.00025
    assert cost_per_1k_queries_usd(12.5, 0.02) == pytest.approx(0.00025, rel=1e-12)
    # 9.4 tokens x 1,000 = 9,400 tokens; x $0.13/M = $0.001222
    assert cost_per_1k_queries_usd(9.4, 0.13) == pytest.approx(0.001222, rel=1e-12)


def test_run_cost_counts_billed_tokens_only():
    # 80,000 tokens sent x $0.10/M = $0.008; a fully cached rerun sends 0 tokens and costs $0
    assert run_cost_usd(80_000, 0.10) == pytest.approx(0.008, rel=1e-12)
    assert run_cost_usd(0, 0.10) == 0.0


def test_compute_cost_hand_computed():
    # 90 s on a $1.20/hour machine = 90/3600 h x 1.20 = 0.025 h x 1.20 = $0.03
    assert compute_cost_usd(90, 1.20) == pytest.approx(0.03, rel=1e-12)
    # one hour at $0.50/h = $0.50
    assert compute_cost_usd(3600, 0.5) == pytest.approx(0.5, rel=1e-12)


@pytest.mark.parametrize("fn", [index_cost_usd, cost_per_1k_queries_usd, run_cost_usd, compute_cost_usd])
def test_none_propagates_never_zero(fn):
    assert fn(None, 0.02) is None
    assert fn(1000, None) is None
    assert fn(None, None) is None
    assert fn(1000, 0.0) == 0.0  # a known zero price stays a real zero


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
        assert price.date and costs.valid_date(price.date), (model_id, price.date)
        assert not price.estimate


def test_table_known_prices():
    table = price_table()
    assert table["text-embedding-3-small"].price_per_mtok == 0.02
    assert table["text-embedding-3-large"].price_per_mtok == 0.13
    assert table["text-embedding-ada-002"].price_per_mtok == 0.10


def test_valid_date():
    assert costs.valid_date("2026-04-29")
    assert costs.valid_date("2026-06")  # month only, when the source gives no day
    for bad in ("2026-13", "2026-02-30", "26-04-29", "2026/04/29", "April 2026", "2026-4-9", ""):
        assert not costs.valid_date(bad), bad


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
    assert costs.hourly_usd(spec) == 1.2


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


# --- cheapest_within -------------------------------------------------------------------------------


def _cand(cid: str, score, cost, metric: str = "mrr@5", key: str = "cost_per_1k_queries_usd", **ops) -> CandidateResult:
    return _result(cid, {metric: score}, {key: cost, **ops})


def _result(cid: str, quality: dict, ops: dict) -> CandidateResult:
    return CandidateResult(
        id=cid, model="m", chunker="c", index="flat", search=None, quality=quality, ops=Operating.from_dict(ops)
    )


K = "cost_per_1k_queries_usd"


def test_cheapest_within_picks_lowest_cost_inside_margin():
    cands = [_cand("a", 0.80, 0.010), _cand("b", 0.79, 0.002), _cand("c", 0.70, 0.0)]
    # c is free but 0.10 below the best; b is inside 0.02 and cheaper than a
    assert cheapest_within(cands, "mrr@5", 0.02, K).id == "b"
    assert cheapest_within(cands, "mrr@5", 0.10, K).id == "c"
    assert cheapest_within(cands, "mrr@5", 0.0, K).id == "a"


def test_margin_boundary_is_included_despite_float_error():
    # In floats 0.14 - 0.02 == 0.12000000000000001, a hair ABOVE 0.12: without SCORE_EPSILON a
    # candidate exactly 0.02 below the best would fall out of a 0.02 margin.
    assert 0.14 - 0.02 > 0.12
    cands = [_cand("best", 0.14, 0.01), _cand("edge", 0.12, 0.001)]
    assert cheapest_within(cands, "mrr@5", 0.02, K).id == "edge"
    cands = [_cand("best", 0.731, 0.01), _cand("edge", 0.711, 0.001)]
    assert cheapest_within(cands, "mrr@5", 0.02, K).id == "edge"
    # just outside the margin, by far more than the epsilon, stays out
    cands = [_cand("best", 0.731, 0.01), _cand("out", 0.7109, 0.001)]
    assert cheapest_within(cands, "mrr@5", 0.02, K).id == "best"


def test_cost_ties_go_to_higher_score_then_id():
    cands = [_cand("z", 0.75, 0.0), _cand("y", 0.76, 0.0), _cand("best", 0.77, 0.5)]
    assert cheapest_within(cands, "mrr@5", 0.02, K).id == "y"
    cands = [_cand("b", 0.76, 0.0), _cand("a", 0.76, 0.0), _cand("best", 0.77, 0.5)]
    assert cheapest_within(cands, "mrr@5", 0.02, K).id == "a"


def test_unknown_costs_are_skipped():
    cands = [_cand("a", 0.80, None), _cand("b", 0.79, 0.004), _cand("c", 0.795, float("nan"))]
    assert cheapest_within(cands, "mrr@5", 0.02, K).id == "b"


def test_all_unknown_costs_give_none():
    cands = [_cand("a", 0.80, None), _cand("b", 0.79, None), _cand("c", 0.50, 0.0)]
    # c has a cost but is outside the margin: nothing within it has a known cost
    assert cheapest_within(cands, "mrr@5", 0.02, K) is None


def test_missing_cost_key_counts_as_unknown():
    cands = [_result("a", {"mrr@5": 0.8}, {})]
    assert cheapest_within(cands, "mrr@5", 0.02, K) is None


def test_candidates_without_a_score_are_ignored():
    cands = [_cand("a", None, 0.0), _cand("b", float("nan"), 0.0), _cand("c", 0.6, 0.3)]
    assert cheapest_within(cands, "mrr@5", 0.02, K).id == "c"
    assert cheapest_within([], "mrr@5", 0.02, K) is None
    assert cheapest_within([_cand("a", None, 0.0)], "mrr@5", 0.02, K) is None


def test_negative_margin_is_refused():
    with pytest.raises(BenchError, match="margin"):
        cheapest_within([_cand("a", 0.8, 0.0)], "mrr@5", -0.01, K)


# --- recommendation_line ---------------------------------------------------------------------------


def test_recommendation_line_names_best_and_pick():
    cands = [_cand("minilm/md256/flat", 0.711, 0.0003), _cand("static/tok256/flat", 0.705, 0.0)]
    line = recommendation_line(cands, "mrr@5", 0.02, K)
    assert line == (
        "cheapest within 0.02 mrr@5 of the best (minilm/md256/flat 0.711): "
        "static/tok256/flat at $0 per 1k queries (mrr@5 0.705)"
    )


def test_recommendation_line_when_best_is_cheapest():
    cands = [_cand("minilm/md256/flat", 0.711, 0.0), _cand("openai/tok512/flat", 0.70, 0.00025)]
    line = recommendation_line(cands, "mrr@5", 0.02, K)
    assert line == (
        "the best mrr@5, minilm/md256/flat (0.711), is also the cheapest within 0.02 of it: $0 per 1k queries"
    )


def test_recommendation_line_unknown_costs():
    cands = [_cand("a", 0.8, None), _cand("b", 0.79, 0.0001)]
    assert recommendation_line(cands, "mrr@5", 0.02, K).endswith(
        "b at $0.00010 per 1k queries (mrr@5 0.790); 1 candidate in that margin with unknown cost skipped"
    )
    line = recommendation_line([_cand("a", 0.8, None)], "mrr@5", 0.02, K)
    assert line.startswith("no recommendation: the cost per 1k queries is unknown for every candidate")
    assert "price_per_mtok" in line
    assert recommendation_line([], "mrr@5", 0.02, K) == "no recommendation: no candidate has a mrr@5 score"


def test_recommendation_line_marks_estimates_and_other_cost_keys():
    cands = [_cand("self/x/flat", 0.8, 0.0123, key="index_cost_usd", cost_estimate=True)]
    line = recommendation_line(cands, "mrr@5", 0.02, "index_cost_usd")
    assert line.endswith("$0.012 (compute estimate) to index the corpus")


def test_usd_never_hides_small_costs():
    assert usd(0.0) == "$0"
    assert usd(0.00105508) == "$0.0011"
    assert usd(0.000021) == "$0.000021"
    assert usd(0.00002) == "$0.000020"
    assert usd(None) == "unknown"


# --- latency end to end ----------------------------------------------------------------------------


def test_end_to_end_p95_adds_embedding_and_search():
    def p95(embed, search) -> float | None:
        return costs.end_to_end_p95_ms(_result("a", {}, {"query_embed_ms_p95": embed, "search_ms_p95": search}))

    assert p95(10.0, 1.5) == 11.5
    assert p95(None, 0.2) == 0.2  # BM25 embeds nothing
    assert p95(50.0, None) == 50.0
    assert p95(None, None) is None
    assert costs.end_to_end_p95_ms(_result("a", {}, {})) is None
