"""The Python API (bench.run_shootout, load_run, evaluate, candidates_frame, questions_frame): hand-computed
values, trec_eval and ranx on random judgments, and a stored run read back as typed values."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

import bench
from bench.core.records import QuestionRecord
from bench.core.summary import CandidateResult, RunSummary
from bench.errors import BenchError
from bench.results.schema import StoredRun
from tests.helpers import write_project

TOL = 1e-9


def test_evaluate_by_hand():
    qrels = {"q1": {"a": 2, "b": 1, "z": 0}, "q2": {"c": 1}, "q3": {"x": 1}}
    # q1: b and c tie at 0.9; as in trec_eval the larger doc id ranks first: c, b, a
    run = {"q1": {"a": 0.5, "b": 0.9, "c": 0.9}, "q2": {"d": 0.3, "c": 0.1}}
    got = bench.evaluate(qrels, run, ["mrr@2", "recall@2", "precision@2", "hit_rate@1", "map@3", "ndcg@3"])
    assert got["mrr@2"] == pytest.approx((1 / 2 + 1 / 2 + 0) / 3)
    assert got["recall@2"] == pytest.approx((1 / 2 + 1 + 0) / 3)  # q3 has no run: zeros, still counted
    assert got["precision@2"] == pytest.approx((1 / 2 + 1 / 2 + 0) / 3)
    assert got["hit_rate@1"] == 0.0
    assert got["map@3"] == pytest.approx(((1 / 2 + 2 / 3) / 2 + 1 / 2 + 0) / 3)
    # exponential gain: q1 ranks grades 0, 1, 2 against the ideal 2, 1
    dcg = 1 / math.log2(3) + 3 / math.log2(4)
    idcg = 3 + 1 / math.log2(3)
    q2 = (1 / math.log2(3)) / 1
    assert got["ndcg@3"] == pytest.approx((dcg / idcg + q2 + 0) / 3)
    per = bench.evaluate(qrels, run, "mrr@2", per_question=True)
    assert per == {"mrr@2": {"q1": 0.5, "q2": 0.5, "q3": 0.0}}


def test_evaluate_rejects_unknown_and_span_metrics():
    with pytest.raises(BenchError, match="did you mean 'mrr'"):
        bench.evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, ["mrrr@5"])
    with pytest.raises(BenchError, match="needs a cutoff"):
        bench.evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, ["ndcg"])
    with pytest.raises(BenchError, match="character spans"):
        bench.evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, ["span_recall@5"])
    with pytest.raises(BenchError, match="at least one metric"):
        bench.evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, [])


@st.composite
def judged_runs(draw, ties: bool):
    docs = [f"d{i}" for i in range(12)]
    qrels, run = {}, {}
    for q in range(draw(st.integers(1, 6))):
        qid = f"q{q}"
        judged = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=6, unique=True))
        qrels[qid] = {d: draw(st.integers(0, 3)) for d in judged}
        qrels[qid][judged[0]] = max(1, qrels[qid][judged[0]])  # at least one relevant doc
        retrieved = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=10, unique=True))
        if ties:
            scores = [draw(st.sampled_from([0.1, 0.5, 0.9])) for _ in retrieved]
        else:
            scores = draw(
                st.lists(st.integers(0, 10_000), min_size=len(retrieved), max_size=len(retrieved), unique=True)
            )
        run[qid] = {d: float(s) for d, s in zip(retrieved, scores)}
    return qrels, run, draw(st.integers(1, 10))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(judged_runs(ties=True))
def test_evaluate_equals_trec_eval_ties_included(case):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run, k = case
    ours = bench.evaluate(
        qrels, run, [f"precision@{k}", f"recall@{k}", f"ndcg@{k}", f"map@{k}"], ndcg_gain="linear", per_question=True
    )
    measures = {f"P_{k}", f"recall_{k}", f"ndcg_cut_{k}", f"map_cut_{k}"}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    for qid in qrels:
        for name, trec in (("precision", "P"), ("recall", "recall"), ("ndcg", "ndcg_cut"), ("map", "map_cut")):
            assert ours[f"{name}@{k}"][qid] == pytest.approx(theirs[qid][f"{trec}_{k}"], abs=TOL), (name, qid)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(judged_runs(ties=True), st.data())
def test_evaluate_counts_every_qrels_question_as_trec_eval_would_score_it(case, data):
    """Questions missing from the run or with no relevant doc count as zeros (trec_eval leaves them
    out); questions only in the run change nothing."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run, k = case
    for qid in data.draw(st.lists(st.sampled_from(sorted(qrels)), unique=True), label="dropped from the run"):
        del run[qid]
    qrels["q-unjudged"] = {"d0": 0, "d1": -1}
    run["q-unjudged"] = {"d0": 0.9}
    run["q-only-in-run"] = {"d0": 0.5, "d3": 0.5}
    names = ["precision", "recall", "ndcg", "map"]
    ours = bench.evaluate(qrels, run, [f"{m}@{k}" for m in names], ndcg_gain="linear", per_question=True)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {f"P_{k}", f"recall_{k}", f"ndcg_cut_{k}", f"map_cut_{k}"})
    scored = theirs.evaluate({q: r for q, r in run.items() if q in qrels and any(g > 0 for g in qrels[q].values())})
    for name, trec in zip(names, ("P", "recall", "ndcg_cut", "map_cut")):
        assert list(ours[f"{name}@{k}"]) == list(qrels)
        for qid in qrels:
            want = scored[qid][f"{trec}_{k}"] if qid in scored else 0.0
            assert ours[f"{name}@{k}"][qid] == pytest.approx(want, abs=TOL), (name, qid)
    means = bench.evaluate(qrels, run, f"recall@{k}")
    assert means[f"recall@{k}"] == pytest.approx(sum(ours[f"recall@{k}"].values()) / len(qrels), abs=TOL)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(judged_runs(ties=False))
def test_evaluate_equals_ranx_without_ties(case):
    ranx = pytest.importorskip("ranx")
    qrels, run, k = case
    names = {"mrr": "mrr", "ndcg": "ndcg_burges", "hit_rate": "hit_rate", "f1": "f1", "recall": "recall"}
    ours = bench.evaluate(qrels, run, [f"{m}@{k}" for m in names])
    theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), [f"{m}@{k}" for m in names.values()])
    for name, ranx_name in names.items():
        assert ours[f"{name}@{k}"] == pytest.approx(float(theirs[f"{ranx_name}@{k}"]), abs=TOL), name


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> StoredRun:
    root = tmp_path_factory.mktemp("api")
    config = write_project(root)
    return bench.run_shootout(config, reports=False, console=Console(quiet=True))


def test_run_returns_what_it_wrote_and_load_run_reads_it_back(stored: StoredRun):
    assert stored.path.is_dir() and stored.path.name == stored.run_id
    again = bench.load_run("latest", results=stored.path.parent)
    assert again.summary == stored.summary and again.records == stored.records
    assert again.manifest.run_id == stored.run_id and again.texts == stored.texts
    summary = json.loads((stored.path / "summary.json").read_text())
    assert RunSummary.from_dict(summary) == again.summary and again.summary.to_dict() == summary
    assert all(isinstance(c, CandidateResult) for c in again.summary.candidates)
    assert all(isinstance(r, QuestionRecord) for r in again.records)
    assert {c.lexical for c in again.summary.candidates} == {True, False}
    assert [c.id for c in again.summary.candidates if c.lexical] == [
        c["id"] for c in summary["candidates"] if c["model"] == "bm25"
    ]


def test_every_candidate_carries_the_same_keys(stored: StoredRun):
    summary = json.loads((stored.path / "summary.json").read_text())
    keys = [set(c) for c in summary["candidates"]]
    ops = [set(c["ops"]) for c in summary["candidates"]]
    assert all(k == keys[0] for k in keys) and all(o == ops[0] for o in ops)
    bm25 = next(c for c in summary["candidates"] if c["model"] == "bm25")
    assert bm25["ops"]["truncated_chunks"] is None and bm25["ops"]["dims"] is None


def test_frames(stored: StoredRun):
    cands = bench.candidates_frame(stored)
    ranked = sorted(stored.summary.candidates, key=lambda c: c.rank)
    assert list(cands["id"]) == [c.id for c in ranked] and list(cands["rank"]) == [1, 2, 3, 4]
    for row, c in zip(cands.to_dict("records"), ranked):
        assert row["mrr@3"] == c.quality["mrr@3"] and row["lexical"] == c.lexical
        assert row["n_chunks"] == c.ops["n_chunks"]
    questions = bench.questions_frame(stored)
    assert len(questions) == len(stored.records) == 4 * 6
    exported = bench.api.questions_frame(stored)  # the same table as `bench export --format csv`
    from bench.results.export import export_run

    [table] = [p for p in export_run(stored.path, stored.path / "export", "csv") if p.suffix == ".csv"]
    with table.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["question_id"] for r in rows] == list(exported["question_id"])
    assert [float(r["mrr@3"]) for r in rows] == pytest.approx(list(exported["mrr@3"]))


def test_remeasure_times_query_encoding_again(stored: StoredRun, tmp_path: Path):
    """The command's --remeasure is the API's too: a rerun keeps the first run's query timings, unless
    ``remeasure``. ``only`` may be one pattern."""
    config = stored.manifest.config_path

    def rerun(**options) -> list[bool]:
        run = bench.run_shootout(config, only="hash/*", results=str(tmp_path), reports=False, **options)
        return [c.ops["query_embed_from_cache"] for c in run.summary.candidates]

    assert rerun() == [True, True]
    assert rerun(remeasure=True) == [False, False]
    with pytest.raises(BenchError, match="run option 'remesure' does not exist; did you mean 'remeasure'"):
        bench.run_shootout(config, remesure=True)


def test_bad_input_raises_bench_error(tmp_path: Path):
    with pytest.raises(BenchError, match="config not found"):
        bench.run_shootout(tmp_path / "nope.toml")
    with pytest.raises(BenchError, match="no finished runs"):
        bench.load_run("latest", results=tmp_path)


def test_every_public_name_resolves_once_the_stages_are_imported():
    import bench.evaluation.scoring
    import bench.run.shootout

    assert bench.run_shootout is bench.api.run_shootout and bench.evaluate is bench.api.evaluate
    for name in bench.__all__:
        assert getattr(bench, name) is not None, name
