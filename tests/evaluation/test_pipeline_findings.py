"""The diagnosis of pipelines (bench.evaluation.pipeline_gains and the rules that quote it) on hand-built summaries.

The figures follow a real run (northwind, md256 chunks): BM25 0.494 mrr@5, reranked by minilm 0.726; static 0.501,
reranked 0.685; minilm 0.711; minilm+bm25 by rrf 0.691. A suggestion to rerank or fuse quotes what the run measured
of it, or the bench.toml line that would measure it; the BM25 warning holds only a single dense model against
plain BM25.
"""

from __future__ import annotations

import dataclasses

import pytest

from bench.core.summary import CandidateResult
from bench.evaluation import pipeline_gains
from bench.evaluation.findings import RUN
from tests.evaluation.test_diagnosis import candidate, diagnose, only, records, rules, summary


def single(model: str = "minilm", chunker: str = "md256", index: str = "flat", **quality) -> CandidateResult:
    c = candidate(model=model, chunker=chunker, index=index, **quality)
    kind = "lexical" if c.lexical else "dense"
    return dataclasses.replace(c, pipeline={"kind": kind, "parts": [c.id]})


def reranked(
    first: CandidateResult,
    name: str = "minilm",
    kind: str = "bi-encoder",
    top: int = 20,
    p50: float = 839.94,
    cost: float | None = 0.0,
    **quality,
) -> CandidateResult:
    c = candidate(model=first.model, chunker=first.chunker, index=first.index, **quality)
    rr = {"name": name, "kind": kind, "top": top, **({"model": name} if kind == "bi-encoder" else {})}
    return dataclasses.replace(
        c,
        id=f"{first.id}>{name}@{top}",
        lexical=first.lexical,
        pipeline={**first.pipeline, "reranker": rr, "first_stage": first.id},
        ops=c.ops.merged({"rerank_top": top, "rerank_ms_p50": p50, "rerank_cost_per_1k_queries_usd": cost}),
    )


def fused(*parts: CandidateResult, method: str = "rrf", weights: list[float] | None = None, **quality):
    models = [p.model for p in parts]
    index = next(p.index for p in parts if not p.lexical)
    label = "rrf" if method == "rrf" else f"convex{weights[0]:g}"  # type: ignore[index]
    c = candidate(model="+".join(models), chunker=parts[0].chunker, index=index, **quality)
    settings = {"method": method, "depth": 100, "models": models, **({"weights": weights} if weights else {})}
    return dataclasses.replace(
        c,
        id=f"{c.id}@{label}",
        pipeline={"kind": "fusion", "parts": [p.id for p in parts], "fusion": settings},
    )


# The real run's shapes: BM25 with many late hits; every other figure healthy unless a test says otherwise.
BM25 = single("bm25", index="inverted", mrr=0.494, hit_rate=0.66, late=0.23, recall=0.565)
MINILM = single("minilm", mrr=0.711, recall=0.81, hit_rate=0.906)
STATIC = single("static", mrr=0.501, recall=0.592, hit_rate=0.688)
BM25_RR = reranked(BM25, mrr=0.726, recall=0.78, hit_rate=0.865)
STATIC_RR = reranked(STATIC, p50=888.05, mrr=0.685, recall=0.73, hit_rate=0.835)
HYBRID = fused(MINILM, BM25, mrr=0.691, recall=0.80, hit_rate=0.894)
RUN_T18 = summary(BM25_RR, MINILM, HYBRID, STATIC_RR, STATIC, BM25)


def text(out, cid: str, rule: str) -> str:
    return only(out, cid, rule).text


# ---------------------------------------------------------------------------------------------------
# What a candidate is


def test_pipeline_helpers_read_each_shape():
    assert [pipeline_gains.kind(c) for c in (BM25, MINILM, HYBRID, BM25_RR, STATIC_RR)] == [
        "lexical",
        "dense",
        "fusion",
        "lexical",
        "dense",
    ]
    assert [pipeline_gains.is_reranked(c) for c in (BM25, HYBRID, BM25_RR)] == [False, False, True]
    assert pipeline_gains.first_stage(BM25_RR) == BM25.id and pipeline_gains.first_stage(BM25) is None
    assert pipeline_gains.parts(HYBRID) == [MINILM.id, BM25.id] and pipeline_gains.parts(BM25_RR) == [BM25.id]
    assert pipeline_gains.is_single(STATIC, "dense") and not pipeline_gains.is_single(STATIC_RR, "dense")


def test_pipeline_helpers_fall_back_on_older_runs():
    old_bm25, old_dense = candidate(model="bm25", index="inverted"), candidate()
    assert old_bm25.pipeline == {} and old_dense.pipeline == {}
    assert pipeline_gains.kind(old_bm25) == "lexical" and pipeline_gains.kind(old_dense) == "dense"
    assert pipeline_gains.parts(old_dense) == [old_dense.id] and not pipeline_gains.is_reranked(old_bm25)
    assert pipeline_gains.first_stage(old_dense) is None and pipeline_gains.is_single(old_bm25, "lexical")


# ---------------------------------------------------------------------------------------------------
# The run-level summary


def test_run_summarises_each_pipeline_against_what_it_is_built_on_best_gain_first():
    f = only(diagnose(RUN_T18), RUN, "pipelines")
    assert f.severity == "info"
    assert f.text == (
        "Pipelines measured on mrr@5, best gain first: "
        "bm25/md256/inverted>minilm@20 0.726 vs first stage bm25/md256/inverted 0.494 (+0.232); "
        "static/md256/flat>minilm@20 0.685 vs first stage static/md256/flat 0.501 (+0.184); "
        "minilm+bm25/md256/flat@rrf 0.691 vs best part minilm/md256/flat 0.711 (−0.020)."
    )
    assert f.evidence.metric == "mrr@5"
    assert [g.pipeline for g in f.evidence.gains] == [BM25_RR.id, STATIC_RR.id, HYBRID.id]
    hybrid = f.evidence.gains[2]
    assert hybrid.against == MINILM.id and hybrid.gain == pytest.approx(-0.020)


def test_run_summary_absent_without_pipelines_and_for_older_runs():
    assert "pipelines" not in rules(diagnose(summary(MINILM, BM25)), RUN)
    assert "pipelines" not in rules(diagnose(summary(candidate(), candidate(model="bm25", index="inverted"))), RUN)


def test_run_summary_skips_a_pipeline_whose_first_stage_is_not_in_the_run():
    f = only(diagnose(summary(BM25_RR, STATIC_RR, STATIC)), RUN, "pipelines")
    assert BM25_RR.id not in f.text and [g.pipeline for g in f.evidence.gains] == [STATIC_RR.id]


def test_run_summary_names_the_first_few_and_counts_the_rest():
    sweep = [fused(MINILM, BM25, method="convex", weights=[w, 1 - w], mrr=0.70 - w / 10) for w in (0.1, 0.2, 0.3)]
    sweep += [fused(MINILM, BM25, method="convex", weights=[w, 1 - w], mrr=0.60) for w in (0.4, 0.5, 0.6, 0.7)]
    f = only(diagnose(summary(MINILM, BM25, *sweep)), RUN, "pipelines")
    assert f.text.count(" vs best part ") == pipeline_gains.MAX_SHOWN
    assert f.text.endswith("; and 1 more, down to −0.111.")
    assert f.text.index("@convex0.1 0.690") < f.text.index("@convex0.2 0.680")


# ---------------------------------------------------------------------------------------------------
# The BM25 warning: a single dense model against plain BM25 only


def test_bm25_warning_ignores_a_reranked_bm25():
    out = diagnose(RUN_T18)
    assert "mismatch" not in rules(out, STATIC.id)  # 0.59 beats plain BM25's 0.565; the reranked 0.78 is no BM25
    assert "mismatch" not in rules(out, STATIC_RR.id)  # a reranked model's recall is not the model's


def test_bm25_warning_still_fires_for_a_single_dense_model_beaten_by_plain_bm25():
    weak = single("static", recall=0.55, mrr=0.5)
    f = only(diagnose(summary(BM25_RR, weak, BM25)), weak.id, "mismatch")
    assert "BM25 on the same md256 chunks reaches recall@5 0.56 against 0.55" in f.text
    assert f.evidence.bm25_recall == 0.565


def test_no_bm25_warning_on_fusions_or_reranked_candidates():
    bm25 = single("bm25", index="inverted", recall=0.70)
    fusion = fused(MINILM, bm25, recall=0.65)
    rr = reranked(STATIC, recall=0.60)
    out = diagnose(summary(fusion, rr, STATIC, bm25, MINILM))
    assert "mismatch" not in rules(out, fusion.id) and "mismatch" not in rules(out, rr.id)
    assert "mismatch" in rules(out, STATIC.id)  # the single model itself is still held against BM25


# ---------------------------------------------------------------------------------------------------
# Suggestions quote what was measured


def test_late_hits_on_bm25_quote_the_measured_reranker_and_fusion():
    t = text(diagnose(RUN_T18), BM25.id, "wrong_order")
    assert "A reranker over the top 20 can lift them into the top 5, or fuse BM25 with a dense retriever" in t
    assert (
        "Reranking the top 20 with minilm (bm25/md256/inverted>minilm@20) was measured: mrr@5 0.494 → 0.726 "
        "(+0.232) for +839.9 ms p50 per query." in t
    )
    assert "Fusing with minilm by rrf (minilm+bm25/md256/flat@rrf) was measured: mrr@5 0.494 → 0.691 (+0.197)." in t
    assert "did not help" not in t and "not tried" not in t


def test_a_measured_loss_and_a_change_within_tolerance_are_said_plainly():
    dense = single("minilm", hit_rate=0.80, mrr=0.45, hit1=0.32)  # first hits land low in the top 5
    flat = reranked(dense, name="ce", kind="cross-encoder", p50=120.0, cost=0.25, mrr=0.454)
    t = text(diagnose(summary(dense, flat)), dense.id, "wrong_order")
    assert (
        "Reranking the top 20 with ce (minilm/md256/flat>ce@20) was measured: mrr@5 0.450 → 0.454 (+0.004) for "
        "+120.0 ms p50 per query and +$0.25 per 1k queries. It did not help (within ±0.005)." in t
    )
    worse = reranked(dense, name="ce", kind="cross-encoder", mrr=0.40)
    t = text(diagnose(summary(dense, worse)), dense.id, "wrong_order")
    assert "mrr@5 0.450 → 0.400 (−0.050) for +839.9 ms p50 per query. It did not help: a loss." in t


def test_just_past_the_tolerance_is_a_gain():
    dense = single("minilm", hit_rate=0.80, mrr=0.45, hit1=0.32)
    t = text(
        diagnose(summary(dense, reranked(dense, name="ce", kind="cross-encoder", mrr=0.456))), dense.id, "wrong_order"
    )
    assert "(+0.006)" in t and "did not help" not in t
    t = text(
        diagnose(summary(dense, reranked(dense, name="ce", kind="cross-encoder", mrr=0.455))), dense.id, "wrong_order"
    )
    assert "(+0.005)" in t and "It did not help (within ±0.005)." in t


def test_the_best_of_several_rerankings_is_quoted():
    top10 = reranked(BM25, top=10, p50=400.0, mrr=0.70)
    out = diagnose(summary(BM25_RR, top10, BM25, MINILM))
    t = text(out, BM25.id, "wrong_order")
    assert "Reranking the top 20 with minilm (bm25/md256/inverted>minilm@20) was measured (best of 2)" in t


def test_a_fusion_that_lost_is_quoted_in_the_bm25_warning():
    weak = single("static", recall=0.55, mrr=0.501)
    bm25 = single("bm25", index="inverted", recall=0.62)
    fusion = fused(weak, bm25, mrr=0.48)
    t = text(diagnose(summary(fusion, weak, bm25)), weak.id, "mismatch")
    assert "or go hybrid. Fusing with bm25 by rrf (static+bm25/md256/flat@rrf) was measured" in t
    assert "mrr@5 0.501 → 0.480 (−0.021). It did not help: a loss." in t


def test_a_convex_fusion_names_its_weights_and_a_compressed_index_counts_its_models_fusion():
    binary = single("minilm", index="bin@rescore=100", mrr=0.70, diagnostics={"first_relevant_rank": {"miss": 30}})
    convex = fused(MINILM, BM25, method="convex", weights=[0.3, 0.7], mrr=0.72)
    t = text(diagnose(summary(convex, binary, MINILM, BM25)), binary.id, "misses")
    assert (
        "Fusing with bm25 by convex weights 0.3/0.7 (minilm+bm25/md256/flat@convex0.3) was measured: "
        "mrr@5 0.700 → 0.720 (+0.020)." in t
    )


# ---------------------------------------------------------------------------------------------------
# Suggestions say what was not tried, and the line that tries it


def test_not_tried_names_the_best_dense_model_of_the_run_for_bm25():
    out = diagnose(summary(STATIC, MINILM, BM25))
    t = text(out, BM25.id, "wrong_order")
    assert (
        'Reranking with minilm was not tried: add rerankers = ["minilm"] to bench.toml (a bi-encoder reranker needs '
        "no extra weights)." in t
    )
    assert 'Fusing with minilm was not tried: add fusions = ["minilm+bm25"] to bench.toml.' in t


def test_not_tried_names_the_lexical_model_for_a_dense_one_and_extends_an_existing_list():
    missing = single("static", mrr=0.501, diagnostics={"first_relevant_rank": {"miss": 25}})
    t = text(diagnose(summary(missing, BM25)), missing.id, "misses")
    assert 'Fusing with bm25 was not tried: add fusions = ["static+bm25"] to bench.toml.' in t
    t = text(diagnose(summary(missing, HYBRID, MINILM, BM25)), missing.id, "misses")
    assert 'Fusing with bm25 was not tried: add "static+bm25" to fusions in bench.toml.' in t
    alone = single("static", diagnostics={"first_relevant_rank": {"miss": 25}})
    assert 'add fusions = ["static+bm25"]' in text(diagnose(summary(alone)), alone.id, "misses")


def test_not_tried_points_an_existing_reranker_at_the_candidate():
    broad = fused(MINILM, BM25, recall=0.85, precision=0.30)
    t = text(diagnose(summary(BM25_RR, broad, MINILM, BM25)), broad.id, "too_broad")
    assert "Rerank and pass fewer chunks to the LLM, or use smaller chunks." in t
    assert (
        'Reranking with minilm was not tried here: add "minilm+bm25/md256/flat@rrf" to over in [reranker.minilm] '
        "(bench.toml)." in t
    )


def test_not_tried_suggests_a_cross_encoder_when_no_dense_model_outranks_this_one():
    broad = single("minilm", recall=0.85, precision=0.30, mrr=0.711)
    t = text(diagnose(summary(BM25_RR, broad, STATIC, BM25)), broad.id, "too_broad")
    assert "no dense model in the run outranks this one" in t and 'kind = "cross-encoder"' in t
    assert "[reranker.minilm]" not in t  # a model rescoring its own exact results changes nothing


def test_a_reranked_candidate_is_not_told_to_rerank():
    late = reranked(BM25, mrr=0.60, hit_rate=0.60, late=0.25, recall=0.85, precision=0.30)
    out = diagnose(summary(late, BM25, MINILM))
    order = text(out, late.id, "wrong_order")
    assert "minilm already reranks the top 20 of bm25/md256/inverted" in order and "not tried" not in order
    broad = text(out, late.id, "too_broad")
    assert broad.endswith("Pass fewer chunks to the LLM, or use smaller chunks.") and "Rerank and" not in broad


def test_a_fusion_with_misses_is_not_told_to_fuse():
    fusion = fused(MINILM, BM25, diagnostics={"first_relevant_rank": {"miss": 30}})
    t = text(diagnose(summary(fusion, MINILM, BM25)), fusion.id, "misses")
    assert "Try other models in the fusion" in t and "Fusing" not in t


def test_older_runs_keep_their_findings_and_learn_what_was_not_tried():
    dense = candidate(recall=0.60, precision=0.2)
    bm25 = candidate(model="bm25", index="inverted", recall=0.62, precision=0.2, hit_rate=0.60, mrr=0.45, late=0.3)
    out = diagnose(summary(dense, bm25))
    assert rules(out, dense.id) == {"mismatch"} and rules(out, bm25.id) == {"wrong_order"} and out[RUN] == []
    assert 'add fusions = ["minilm+bm25"] to bench.toml' in text(out, dense.id, "mismatch")
    assert 'add rerankers = ["minilm"]' in text(out, bm25.id, "wrong_order")


# ---------------------------------------------------------------------------------------------------
# Score gaps mean different things in a pipeline


def test_near_duplicates_silent_for_fusions_and_scaled_to_the_reranker():
    gaps = [0.001, -0.001, 0.0, 0.002]  # rrf gaps between neighbouring ranks are this small by construction
    fusion = fused(MINILM, BM25)
    assert "near_duplicates" not in rules(diagnose(summary(fusion), records(fusion.id, gaps=gaps)), fusion.id)
    bi = reranked(BM25)  # bi-encoder: cosine scores, the fixed band, though the first stage is BM25
    assert "±0.005" in text(diagnose(summary(bi), records(bi.id, gaps=gaps)), bi.id, "near_duplicates")
    ce = reranked(MINILM, name="ce", kind="cross-encoder", diagnostics={"mean_relevant_score": 8.0})
    wide = [0.05, -0.05, 0.0, 0.07]  # within 1% of 8.0
    assert "±0.08" in text(diagnose(summary(ce), records(ce.id, gaps=wide)), ce.id, "near_duplicates")


def test_chunkers_are_compared_within_one_pipeline_never_against_a_reranked_one():
    """A reranked BM25 on md256 must not pass for BM25 on md256 when chunkers are set side by side."""
    tok = single("bm25", chunker="tok256", index="inverted", recall=0.52, span_precision=0.019)
    md = single("bm25", chunker="md256", index="inverted", recall=0.565, span_precision=0.039)
    md_rr = reranked(md, recall=0.78, span_precision=0.056)
    f = only(diagnose(summary(md_rr, md, tok)), RUN, "chunkers_apart")
    assert "For bm25 on inverted," in f.text and "0.039" in f.text and "0.056" not in f.text
