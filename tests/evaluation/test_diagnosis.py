"""Diagnosis rules (bench.evaluation.findings and finding_rules) on hand-built summaries and per-question records,
in words by bench.report.findings_text.

Every rule is checked three ways: it fires on its pattern (rule, severity, numbers quoted), it stays silent
just across its threshold, and it stays silent on a healthy candidate.
"""

from __future__ import annotations

import dataclasses
import typing

import pytest

from bench.core.findings import Evidence, Finding
from bench.core.operating import Operating
from bench.core.records import QuestionRecord, RankedUnit
from bench.core.summary import CandidateResult, RunSummary
from bench.evaluation import finding_rules as dg
from bench.evaluation import findings as diagnosis
from bench.evaluation.findings import RUN
from bench.report.findings_text import finding_text, findings_lines

K, DEPTH, N = 5, 20, 100

# A healthy chunk-unit candidate: decent recall, precision near its ceiling, good order, little past k.
HEALTHY = {"hit_rate": 0.85, "recall": 0.75, "precision": 0.25, "mrr": 0.70, "span_precision": 0.05}


def candidate(
    model: str = "minilm",
    chunker: str = "md256",
    index: str = "flat",
    late: float = 0.1,
    hit1: float = 0.6,
    diagnostics: dict | None = None,
    ops: dict | None = None,
    **quality,
) -> CandidateResult:
    """A summary candidate: healthy defaults, ``quality`` overrides by metric name without the cutoff."""
    q = {**HEALTHY, **quality}
    hit_k = q["hit_rate"]
    curve = {f"hit_rate@{r}": _interpolate(r, hit1, hit_k, hit_k + late) for r in range(1, DEPTH + 1)}
    diag = {
        "n_questions": N,
        "first_relevant_rank": {"1": 60, "miss": 2},
        "mean_relevant_score": 0.5,
        "questions_without_relevant_unit": 0,
        **(diagnostics or {}),
    }
    return CandidateResult(
        id=f"{model}/{chunker}/{index}",
        model=model,
        chunker=chunker,
        index=index,
        search=None,
        lexical=model == "bm25",
        quality={f"{name}@{K}": v for name, v in q.items() if v is not None},
        curve=curve,
        diagnostics=diag,
        ops=Operating.from_dict({"n_chunks": 100, "truncated_chunks": 0, "truncated_token_share": 0.0, **(ops or {})}),
    )


def _interpolate(r: int, at1: float, at_k: float, at_depth: float) -> float:
    if r <= K:
        return at1 + (at_k - at1) * (r - 1) / (K - 1)
    return at_k + (at_depth - at_k) * (r - K) / (DEPTH - K)


def summary(*candidates: CandidateResult, unit: str = "chunk", k: int = K) -> RunSummary:
    return RunSummary(
        k=k,
        depth=DEPTH,
        unit=unit,
        ndcg_gain="exponential",
        min_overlap=0.5,
        candidates=list(candidates),
    )


def records(cand_id: str, n: int = 20, expected: int = 1, gaps=(), ranks=None) -> list[QuestionRecord]:
    """Per-question records: ``expected`` relevant units each, score gaps from ``gaps`` then 0.1."""
    gaps = list(gaps) + [0.1] * (n - len(gaps))
    ranks = ranks or [1] * n
    return [
        QuestionRecord(
            candidate=cand_id,
            question_id=f"q{i:02d}",
            question=f"question {i}?",
            tags=[],
            ranking=[],
            expected=[
                RankedUnit(id=f"d#{j}", doc_id="d", start=10 * j, end=10 * j + 10, score=None, grade=1)
                for j in range(expected)
            ],
            evidence=[],
            first_relevant_rank=ranks[i],
            diagnostics={"score_gap": gaps[i]},
        )
        for i in range(n)
    ]


@dataclasses.dataclass(frozen=True)
class Said:
    """A finding with the words the reports give it."""

    rule: str
    severity: str
    candidates: tuple[str, ...]
    evidence: Evidence
    text: str


def diagnose(s: RunSummary, recs: list[QuestionRecord] | None = None) -> dict[str, list[Said]]:
    """The run's findings (bench.evaluation.findings), each with its sentences (bench.report.findings_text)."""
    return {
        key: [Said(f.rule, f.severity, f.candidates, f.evidence, finding_text(f, s)) for f in found]
        for key, found in diagnosis.diagnose(s, recs).items()
    }


def only(findings: dict[str, list[Said]], key: str, rule: str) -> Said:
    hits = [f for f in findings[key] if f.rule == rule]
    assert len(hits) == 1, findings[key]
    return hits[0]


def rules(findings: dict[str, list[Said]], key: str) -> set[str]:
    return {f.rule for f in findings[key]}


def test_healthy_candidate_has_no_findings():
    c = candidate()
    assert diagnose(summary(c), records(c.id, expected=2)) == {RUN: [], c.id: []}
    assert diagnose(summary(c)) == {RUN: [], c.id: []}


# ---------------------------------------------------------------------------------------------------
# too_conservative


def test_too_conservative_fires_when_top_k_is_full_but_recall_low():
    c = candidate(recall=0.40, precision=0.90)
    f = only(diagnose(summary(c), records(c.id, expected=10)), c.id, "too_conservative")
    assert f.severity == "info"
    assert "0.40" in f.text and "0.90" in f.text and "achievable 1.00" in f.text and "10.0 relevant" in f.text
    assert f.evidence.precision_ceiling == 1.0


def test_too_conservative_estimates_ceiling_without_records():
    c = candidate(recall=0.45, precision=0.90)  # precision > recall: more relevant units than k, ceiling 1
    assert "too_conservative" in rules(diagnose(summary(c)), c.id)


@pytest.mark.parametrize("recall, precision", [(0.50, 0.90), (0.40, 0.78)])
def test_too_conservative_silent_across_threshold(recall, precision):
    c = candidate(recall=recall, precision=precision)
    assert "too_conservative" not in rules(diagnose(summary(c), records(c.id, expected=10)), c.id)


# ---------------------------------------------------------------------------------------------------
# too_broad


def test_too_broad_fires_on_high_recall_and_low_precision():
    c = candidate(recall=0.85, precision=0.30, span_precision=0.04)
    f = only(diagnose(summary(c), records(c.id, expected=2)), c.id, "too_broad")
    assert f.severity == "info"
    assert "0.85" in f.text and "at most 0.40 (it is 0.30)" in f.text and "2.0 relevant chunks" in f.text
    assert "0.040" in f.text and "96%" in f.text and "smaller chunks" in f.text


@pytest.mark.parametrize("recall, precision", [(0.79, 0.22), (0.85, 0.50)])
def test_too_broad_silent_across_threshold(recall, precision):
    c = candidate(recall=recall, precision=precision)
    assert "too_broad" not in rules(diagnose(summary(c)), c.id)


# ---------------------------------------------------------------------------------------------------
# mismatch


def test_mismatch_fires_when_recall_and_precision_are_low():
    c = candidate(recall=0.45, precision=0.09, hit_rate=0.55, mrr=0.45)  # ceiling 0.2: 45% of it
    f = only(diagnose(summary(c), records(c.id, expected=1)), c.id, "mismatch")
    assert f.severity == "warning"
    assert "0.45" in f.text and "0.090" in f.text and "achievable 0.20" in f.text and "another model" in f.text


def test_mismatch_silent_when_precision_just_above_half_its_ceiling():
    c = candidate(recall=0.45, precision=0.11, hit_rate=0.55, mrr=0.45)
    assert "mismatch" not in rules(diagnose(summary(c), records(c.id, expected=1)), c.id)


def test_mismatch_silent_at_recall_threshold():
    c = candidate(recall=0.50, precision=0.05, hit_rate=0.6, mrr=0.5)
    assert "mismatch" not in rules(diagnose(summary(c), records(c.id, expected=1)), c.id)


def test_mismatch_mentions_bm25_when_it_beats_a_dense_model():
    dense = candidate(recall=0.60, precision=0.2)
    bm25 = candidate(model="bm25", index="inverted", recall=0.62, precision=0.2)
    out = diagnose(summary(dense, bm25))
    f = only(out, dense.id, "mismatch")
    assert "BM25" in f.text and "0.62" in f.text and "0.60" in f.text
    assert f.evidence.bm25_recall == 0.62
    assert "mismatch" not in rules(out, bm25.id)


def test_mismatch_silent_when_dense_model_beats_bm25_or_chunkers_differ():
    dense = candidate(recall=0.60, precision=0.2)
    assert "mismatch" not in rules(
        diagnose(summary(dense, candidate(model="bm25", index="inverted", recall=0.58))), dense.id
    )
    other = candidate(model="bm25", chunker="tok256", index="inverted", recall=0.70)
    assert "mismatch" not in rules(diagnose(summary(dense, other)), dense.id)


def test_mismatch_on_bm25_points_to_a_dense_model():
    c = candidate(model="bm25", index="inverted", recall=0.3, precision=0.04, hit_rate=0.4, mrr=0.3)
    f = only(diagnose(summary(c)), c.id, "mismatch")
    assert "dense model" in f.text and "0.30" in f.text


# ---------------------------------------------------------------------------------------------------
# wrong_order


def test_wrong_order_fires_when_hits_land_low_in_top_k():
    c = candidate(hit_rate=0.80, mrr=0.45, hit1=0.32)  # ratio 0.56 < 0.64 (a third of the way from 0.46 to 1)
    f = only(diagnose(summary(c)), c.id, "wrong_order")
    assert f.severity == "info"
    assert "0.80" in f.text and "0.45" in f.text and "0.56" in f.text and "0.46" in f.text and "40%" in f.text
    assert "reranker over the top 5" in f.text


def test_wrong_order_silent_above_ratio_bound_or_below_min_hit_rate():
    c = candidate(hit_rate=0.80, mrr=0.52)  # ratio 0.65
    assert "wrong_order" not in rules(diagnose(summary(c)), c.id)
    low = candidate(hit_rate=0.45, mrr=0.20, recall=0.6)  # finding them at all is the problem
    assert "wrong_order" not in rules(diagnose(summary(low)), low.id)


def test_wrong_order_fires_when_the_curve_rises_late():
    c = candidate(hit_rate=0.60, late=0.25)
    f = only(diagnose(summary(c)), c.id, "wrong_order")
    assert "0.60 at 5" in f.text and "0.85 at 20" in f.text and "25%" in f.text and "ranks 6–20" in f.text
    assert "reranker over the top 20" in f.text


def test_wrong_order_silent_when_the_curve_rises_just_under_threshold():
    c = candidate(hit_rate=0.60, late=0.19)
    assert "wrong_order" not in rules(diagnose(summary(c)), c.id)


def test_wrong_order_on_bm25_suggests_hybrid():
    c = candidate(model="bm25", index="inverted", hit_rate=0.60, late=0.3)
    assert "hybrid" in only(diagnose(summary(c)), c.id, "wrong_order").text


# ---------------------------------------------------------------------------------------------------
# near_duplicates


def test_near_duplicates_fires_on_many_near_zero_gaps():
    c = candidate()
    f = only(diagnose(summary(c), records(c.id, gaps=[0.001, -0.004, 0.0, 0.002])), c.id, "near_duplicates")
    assert f.severity == "info"
    assert "20%" in f.text and "±0.005" in f.text and "Deduplicate" in f.text


def test_near_duplicates_silent_just_under_share_or_outside_band():
    c = candidate()
    assert "near_duplicates" not in rules(diagnose(summary(c), records(c.id, gaps=[0.0, 0.001])), c.id)
    wide = records(c.id, gaps=[0.005, -0.005, 0.006, 0.01])  # the band is open: |gap| < 0.005
    assert "near_duplicates" not in rules(diagnose(summary(c), wide), c.id)


def test_near_duplicates_needs_records_and_enough_gaps():
    c = candidate()
    assert "near_duplicates" not in rules(diagnose(summary(c)), c.id)
    few = records(c.id, n=dg.MIN_GAP_QUESTIONS - 1, gaps=[0.0] * 5)
    assert "near_duplicates" not in rules(diagnose(summary(c), few), c.id)


def test_near_duplicates_scales_the_band_to_bm25_scores():
    bm25 = candidate(model="bm25", index="inverted", diagnostics={"mean_relevant_score": 5.0})  # band 0.05
    dense = candidate()
    gaps = [0.03, -0.03, 0.04, 0.0]
    out = diagnose(summary(bm25, dense), records(bm25.id, gaps=gaps) + records(dense.id, gaps=gaps))
    assert "±0.05" in only(out, bm25.id, "near_duplicates").text
    assert "near_duplicates" not in rules(out, dense.id)


# ---------------------------------------------------------------------------------------------------
# truncation


def test_truncation_warns_when_tokens_are_lost():
    c = candidate(ops={"truncated_chunks": 30, "truncated_token_share": 0.03})
    f = only(diagnose(summary(c)), c.id, "truncation")
    assert f.severity == "warning"
    assert "30 of 100" in f.text and "30%" in f.text and "3.0%" in f.text and "minilm" in f.text


def test_truncation_informs_when_few_tokens_are_lost():
    c = candidate(ops={"truncated_chunks": 10, "truncated_token_share": 0.005})
    assert only(diagnose(summary(c)), c.id, "truncation").severity == "info"


def test_truncation_silent_just_under_both_shares_and_for_bm25():
    c = candidate(ops={"truncated_chunks": 9, "truncated_token_share": 0.009})
    assert "truncation" not in rules(diagnose(summary(c)), c.id)
    bm25 = candidate(model="bm25", index="inverted")
    bm25 = dataclasses.replace(
        bm25, ops=Operating.from_dict({"n_chunks": 100})
    )  # lexical runs report no truncation figures
    assert "truncation" not in rules(diagnose(summary(bm25)), bm25.id)


# ---------------------------------------------------------------------------------------------------
# misses and no_relevant_unit


def test_misses_fires_when_a_fifth_find_nothing_within_depth():
    c = candidate(diagnostics={"first_relevant_rank": {"miss": 20}})
    f = only(diagnose(summary(c)), c.id, "misses")
    assert f.severity == "warning" and "20 of 100" in f.text and "top 20" in f.text


def test_misses_silent_just_under_share():
    c = candidate(diagnostics={"first_relevant_rank": {"miss": 19}})
    assert "misses" not in rules(diagnose(summary(c)), c.id)


def test_no_relevant_unit_fires_on_any_lost_question():
    c = candidate(diagnostics={"questions_without_relevant_unit": 3})
    f = only(diagnose(summary(c)), c.id, "no_relevant_unit")
    assert f.severity == "warning"
    assert "3 of 100" in f.text and "md256" in f.text and "min_overlap 0.5" in f.text


# ---------------------------------------------------------------------------------------------------
# chunkers_apart (run level)


def test_chunkers_apart_fires_for_same_model_at_similar_recall():
    md = candidate(chunker="md256", recall=0.76, span_precision=0.06)
    tok = candidate(chunker="tok256", recall=0.78, span_precision=0.03)
    out = diagnose(summary(md, tok))
    f = only(out, RUN, "chunkers_apart")
    assert f.severity == "info" and f.evidence.preferred.chunker == "md256"
    assert "0.060" in f.text and "0.030" in f.text and "2.0×" in f.text and "0.76" in f.text and "0.78" in f.text
    assert "Prefer md256" in f.text


def test_chunkers_apart_silent_for_different_models():
    md = candidate(model="minilm", chunker="md256", recall=0.76, span_precision=0.06)
    tok = candidate(model="static", chunker="tok256", recall=0.78, span_precision=0.03)
    assert "chunkers_apart" not in rules(diagnose(summary(md, tok)), RUN)


@pytest.mark.parametrize("recall, span_precision", [(0.60, 0.06), (0.72, 0.06), (0.78, 0.044)])
def test_chunkers_apart_silent_when_recall_differs_or_precision_close(recall, span_precision):
    md = candidate(chunker="md256", recall=recall, span_precision=span_precision)
    tok = candidate(chunker="tok256", recall=0.78, span_precision=0.03)
    assert "chunkers_apart" not in rules(diagnose(summary(md, tok)), RUN)


def test_chunkers_apart_reports_each_group_once():
    md = candidate(chunker="md256", span_precision=0.06)
    rec = candidate(chunker="rec256", span_precision=0.03)
    tok = candidate(chunker="tok256", span_precision=0.02)
    f = only(diagnose(summary(md, rec, tok)), RUN, "chunkers_apart")
    assert isinstance(f.evidence, dg.ChunkersApart)
    assert [c.chunker for c in (f.evidence.preferred, *f.evidence.beaten)] == ["md256", "rec256", "tok256"]


# ---------------------------------------------------------------------------------------------------
# missed_by_all (run level)


def test_missed_by_all_lists_questions_no_candidate_finds():
    a, b = candidate(chunker="md256"), candidate(chunker="tok256")
    ranks_a = [None] + [7] + [1] * 18  # q00 nowhere, q01 below k
    ranks_b = [6] + [1] * 19  # q00 below k too, q01 found
    out = diagnose(summary(a, b), records(a.id, ranks=ranks_a) + records(b.id, ranks=ranks_b))
    f = only(out, RUN, "missed_by_all")
    assert f.evidence.question_ids == ("q00",) and "1 of 20" in f.text and "q00" in f.text


def test_missed_by_all_needs_two_candidates():
    a = candidate()
    out = diagnose(summary(a), records(a.id, ranks=[None] * 20))
    assert "missed_by_all" not in rules(out, RUN)


# ---------------------------------------------------------------------------------------------------
# Shapes and edge cases


def test_document_unit_summary_without_span_metrics():
    a = candidate(chunker="md256", span_precision=None, recall=0.85, precision=0.2)
    b = candidate(chunker="tok256", span_precision=None, diagnostics={"questions_without_relevant_unit": 2})
    out = diagnose(summary(a, b, unit="document"), records(a.id) + records(b.id))
    assert list(out) == [RUN, a.id, b.id]
    assert "chunkers_apart" not in rules(out, RUN)
    broad = only(out, a.id, "too_broad")
    assert "documents" in broad.text and "smaller chunks" not in broad.text and "span_precision" not in broad.text
    assert "not in the index" in only(out, b.id, "no_relevant_unit").text


def test_empty_candidate_list():
    assert diagnose(summary()) == {RUN: []}
    assert diagnose(summary(k=5), []) == {RUN: []}
    assert findings_lines(diagnosis.diagnose(summary()), summary()) == []


def test_findings_keep_summary_order_and_are_frozen():
    cands = [candidate(chunker=name) for name in ("c", "a", "b")]
    out = diagnose(summary(*cands))
    assert list(out) == [RUN, *(c.id for c in cands)]
    f = Finding("info", ("c",), dg.NoRelevantUnit(questions=2, n_questions=10))
    assert f.rule == "no_relevant_unit"
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.severity = "warning"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.evidence.questions = 3  # type: ignore[misc]
    # figures and codes: every sentence is the report's
    a = candidate(chunker="md256", recall=0.3, precision=0.05, span_precision=0.06)
    b = candidate(chunker="tok256", recall=0.3, precision=0.05, span_precision=0.03)
    found = diagnosis.diagnose(summary(a, b), records(a.id, ranks=[None] * 20) + records(b.id, ranks=[None] * 20))
    assert {f.rule for fs in found.values() for f in fs} >= {"chunkers_apart", "missed_by_all", "mismatch"}
    assert all(" " not in v for fs in found.values() for f in fs for v in _strings(dataclasses.asdict(f.evidence)))


def _strings(value: object) -> list[str]:
    """Every string in a figure: the evidence's ids and codes, however nested."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def test_each_rule_has_its_own_evidence_type_and_code():
    kinds = typing.get_args(Evidence)
    assert len({k.rule for k in kinds}) == len(kinds) == len(dg.CANDIDATE_RULES) + len(dg.RUN_RULES)


def test_findings_lines_put_run_level_first_and_mark_warnings():
    cut = {"n_chunks": 100, "truncated_chunks": 30, "truncated_token_share": 0.03}
    a = candidate(chunker="md256", span_precision=0.06, recall=0.85, precision=0.3, ops=cut)
    b = candidate(chunker="tok256", span_precision=0.03)
    s = summary(a, b)
    found = diagnosis.diagnose(s)
    assert [f.rule for f in found[RUN]] == ["chunkers_apart"] and [f.rule for f in found[a.id]] == [
        "too_broad",
        "truncation",
    ]
    lines = findings_lines(found, s)
    assert [line.split(": ")[0] for line in lines] == ["run", a.id, a.id]
    assert lines[0] == f"run: {finding_text(found[RUN][0], s)}" and "Prefer md256." in lines[0]
    assert lines[1].startswith(f"{a.id}: Recall@5 is 0.85")
    assert lines[2].startswith(f"{a.id}: warning: 30 of 100 chunks (30%) are longer than minilm reads")
