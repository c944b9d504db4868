"""The typed run: files read back key for key, keys a newer bench wrote kept, older runs read,
damaged ones refused in one line."""

from __future__ import annotations

import json

import pytest

from bench import files
from bench.core.records import QuestionRecord
from bench.core.summary import CandidateResult, RunSummary
from bench.errors import BenchError
from bench.results import schema

CANDIDATE = {
    "id": "bm25/c/inverted",
    "model": "bm25",
    "chunker": "c",
    "index": "inverted",
    "search": None,
    "rank": 1,
    "quality": {"mrr@3": 0.5},
    "curve": {},
    "diagnostics": {},
    "ops": {"n_chunks": 3},
}
SUMMARY = {"k": 3, "depth": 5, "unit": "chunk", "ndcg_gain": "linear", "min_overlap": 0.5, "candidates": [CANDIDATE]}
RECORD = {
    "candidate": "bm25/c/inverted",
    "question_id": "q1",
    "question": "?",
    "tags": ["t"],
    "ranking": [{"id": "a#0", "doc_id": "a", "start": 0, "end": 4, "score": 1.5, "grade": 2, "page": 7}],
    "expected": [],
    "evidence": [{"doc": "a", "start": 0, "end": 4, "grade": 2}],
    "first_relevant_rank": 1,
    "metrics": {"mrr@3": 1.0},
    "diagnostics": {},
    "answer": {"grounded": True},
}


def test_unknown_keys_survive_a_round_trip_in_place():
    rec = QuestionRecord.from_dict(RECORD)
    assert rec.extra == {"answer": {"grounded": True}} and rec.ranking[0].extra == {"page": 7}
    assert rec.to_dict() == RECORD and list(rec.to_dict()) == list(RECORD)
    summary = RunSummary.from_dict({**SUMMARY, "decision": "x"})
    assert summary.to_dict()["decision"] == "x"


def test_operating_figures_are_read_into_sections_and_written_back_key_for_key():
    # an older run: no corpus_embed_seconds; a figure no section knows; summary.json's own order
    stored = {"search_ms_p95": 1.5, "recall_vs_exact@5": 0.9, "n_chunks": 3, "price_source": None, "new_figure": 7}
    c = CandidateResult.from_dict({**CANDIDATE, "ops": stored})
    ops = c.ops
    assert ops.latency.search_ms_p95 == 1.5 and ops.indexing.n_chunks == 3 and ops.cost.price_source is None
    assert ops.recall_vs_exact(5) == 0.9 and ops.extra == {"recall_vs_exact@5": 0.9, "new_figure": 7}
    assert ops.has("price_source") and not ops.has("corpus_embed_seconds")
    assert list(c.to_dict()["ops"].items()) == list(stored.items())
    merged = ops.merged({"monthly_cost_usd": 2.0, "n_chunks": 4})
    assert list(merged.to_dict()) == [*stored, "monthly_cost_usd"] and merged.indexing.n_chunks == 4


def test_a_run_from_before_the_lexical_field_is_told_by_its_index():
    old = RunSummary.from_dict(SUMMARY)  # CANDIDATE has no "lexical" key
    assert old.candidates[0].lexical is True
    dense = CandidateResult.from_dict({**CANDIDATE, "index": "flat", "model": "hash"})
    assert dense.lexical is False
    assert CandidateResult.from_dict({**CANDIDATE, "lexical": False}).lexical is False  # stored wins


def test_load_run_reads_what_save_run_wrote(tmp_path):
    files.write_json(tmp_path / "summary.json", SUMMARY)
    files.write_jsonl(tmp_path / "per_question.jsonl", [RECORD])
    files.write_json(tmp_path / "manifest.json", {"run_id": "r1", "corpus": {"sha256": "ab"}, "future": 1})
    run = schema.load_run(tmp_path)
    assert run.run_id == "r1" and run.manifest.fingerprint("corpus") == "ab" and run.manifest.extra == {"future": 1}
    assert run.texts == [] and run.records_of("bm25/c/inverted") == run.records
    out = tmp_path / "again"
    out.mkdir()
    schema.save_run(out, run)
    assert json.loads((out / "per_question.jsonl").read_text()) == RECORD
    assert json.loads((out / "manifest.json").read_text())["future"] == 1


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("summary.json", "{not json", "unreadable"),
        ("summary.json", json.dumps({"k": 3}), "missing"),
        ("summary.json", "[]", "not a JSON object"),
        ("per_question.jsonl", json.dumps({"candidate": "x"}) + "\n", "per_question.jsonl:1"),
    ],
)
def test_a_damaged_run_is_one_bench_error(tmp_path, name, content, says):
    files.write_json(tmp_path / "summary.json", SUMMARY)
    files.write_jsonl(tmp_path / "per_question.jsonl", [RECORD])
    (tmp_path / name).write_text(content)
    with pytest.raises(BenchError, match=says) as e:
        schema.load_run(tmp_path)
    assert "damaged" in str(e.value) and "\n" not in str(e.value)
