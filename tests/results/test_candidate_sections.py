"""A candidate's sections in summary.json (bench.core.scores, bench.core.pipeline): read and written
key for key, unknown keys kept, runs that predate a key still load."""

from __future__ import annotations

import json

from bench.core.pipeline import Fusion, Pipeline, Reranker
from bench.core.records import QuestionRecord
from bench.core.scores import Curve, Diagnostics, Quality, QuestionDiagnostics
from bench.core.summary import CandidateResult

STORED = {
    "id": "bm25/md256/inverted>minilm@20",
    "model": "bm25",
    "chunker": "md256",
    "index": "inverted",
    "search": None,
    "lexical": True,
    "pipeline": {
        "kind": "lexical",
        "parts": ["bm25/md256/inverted"],
        "reranker": {"name": "minilm", "kind": "bi-encoder", "top": 20, "model": "minilm", "device": "cpu"},
        "first_stage": "bm25/md256/inverted",
    },
    "rank": 3,
    "quality": {"mrr@5": 0.75, "recall@5": 0.5},
    "curve": {"hit_rate@1": 0.625, "hit_rate@2": 0.75},
    "diagnostics": {
        "score_gap_mean": 0.25,
        "n_questions": 8,
        "first_relevant_rank": {"1": 5, "2": 1, "miss": 2},
        "newer_figure": [1, 2],
    },
    "ops": {"dims": None},
}


def test_a_candidate_is_written_back_key_for_key_in_the_order_read():
    c = CandidateResult.from_dict(json.loads(json.dumps(STORED)))
    assert json.dumps(c.to_dict()) == json.dumps(STORED)


def test_the_sections_read_by_attribute():
    c = CandidateResult.from_dict(STORED)
    assert isinstance(c.pipeline.reranker, Reranker) and c.pipeline.reranker.top == 20
    assert c.pipeline.reranker.extra == {"device": "cpu"}  # a key no version knew yet, kept
    assert c.pipeline.fusion is None and c.pipeline.first_stage == "bm25/md256/inverted"
    assert c.quality.of("mrr", 5) == 0.75 and c.quality.of("ndcg", 5) is None
    assert c.curve.hit_rate(2) == 0.75 and c.curve.hit_rate(3) is None
    assert c.diagnostics.n_questions == 8 and c.diagnostics.missed == 2
    assert c.diagnostics.score_gap_median is None and not c.diagnostics.has("score_gap_median")
    assert c.diagnostics.extra == {"newer_figure": [1, 2]}


def test_a_run_before_pipelines_and_diagnostics_loads_and_writes_nothing_new():
    old = {k: v for k, v in STORED.items() if k not in ("pipeline", "diagnostics", "lexical")}
    c = CandidateResult.from_dict(old)
    assert c.pipeline == {} and c.pipeline.kind is None and c.pipeline.reranker is None
    assert c.diagnostics == {} and c.diagnostics.missed is None
    written = c.to_dict()
    assert written["pipeline"] == {} and written["diagnostics"] == {} and written["lexical"] is True


def test_sections_equal_the_dicts_they_hold_and_dicts_are_read_into_them():
    fusion = {"method": "rrf", "k": 60, "depth": 100, "models": ["minilm", "bm25"]}
    c = CandidateResult(
        id="f",
        model="minilm+bm25",
        chunker="md256",
        index="flat",
        search="rrf",
        pipeline={"kind": "fusion", "parts": ["a", "b"], "fusion": fusion},
        quality={"mrr@5": 0.5},
    )
    assert isinstance(c.pipeline, Pipeline) and isinstance(c.pipeline.fusion, Fusion)
    assert isinstance(c.quality, Quality) and isinstance(c.curve, Curve) and isinstance(c.diagnostics, Diagnostics)
    assert c.pipeline == {"kind": "fusion", "parts": ["a", "b"], "fusion": fusion}
    assert c.pipeline != {"kind": "fusion", "parts": ["a", "b"]}
    assert c.pipeline.fusion.models == ["minilm", "bm25"] and c.pipeline.fusion.weights is None
    assert c.to_dict()["pipeline"]["fusion"] == fusion and c.quality == {"mrr@5": 0.5}


def test_question_diagnostics_built_in_code_write_every_field_in_order():
    d = QuestionDiagnostics(best_relevant_score=0.5, score_gap=0.25, missed=["a#1"])
    assert list(d.to_dict()) == [
        "best_relevant_score",
        "mean_relevant_score",
        "top_distractor_score",
        "score_gap",
        "missed",
    ]
    line = {
        "candidate": "c",
        "question_id": "q1",
        "question": "?",
        "tags": [],
        "ranking": [],
        "expected": [],
        "evidence": [],
        "first_relevant_rank": None,
        "metrics": {},
        "diagnostics": {"score_gap": None, "missed": []},  # an older line with fewer keys
    }
    rec = QuestionRecord.from_dict(line)
    assert rec.diagnostics.score_gap is None and rec.diagnostics.best_relevant_score is None
    assert rec.to_dict() == line
