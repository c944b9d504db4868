"""NaN and ±Infinity, which Python's JSON reader accepts and no other does, are refused with file:line in
every JSON input: goldsets, JSONL corpora, answers files and baselines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.errors import BenchError
from bench.inputs.answers import load_answers
from bench.inputs.corpus import load_corpus
from bench.inputs.goldset import load_goldset
from bench.results.gate import read_baseline
from tests.helpers import run_cli

CONSTANTS = ["NaN", "Infinity", "-Infinity"]


def _corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"id": "a", "text": "Backups run nightly."}\n{"id": "b", "text": "Laptops are replaced."}\n')
    return path


@pytest.mark.parametrize("constant", CONSTANTS)
def test_a_goldset_grade_that_is_not_a_number_is_refused_at_its_line(tmp_path, constant):
    corpus = load_corpus(_corpus(tmp_path))
    gold = tmp_path / "gold.jsonl"
    first = {"id": "q1", "question": "When do backups run?", "evidence": [{"doc": "a", "quote": "Backups run"}]}
    second = {"id": "q2", "question": "Laptops?", "evidence": [{"doc": "b", "quote": "Laptops", "grade": 1.5}]}
    gold.write_text(json.dumps(first) + "\n" + json.dumps(second).replace("1.5", constant) + "\n")
    with pytest.raises(BenchError, match=rf"gold\.jsonl:2: invalid JSON \({constant} is not a JSON number\)"):
        load_goldset(gold, corpus)
    validated = run_cli("goldset", "validate", str(gold), "--corpus", str(tmp_path / "corpus.jsonl"))
    assert validated.returncode == 2 and "gold.jsonl:2:" in validated.stdout + validated.stderr
    assert "Traceback" not in validated.stderr


@pytest.mark.parametrize("constant", CONSTANTS)
def test_a_jsonl_corpus_with_a_non_number_is_refused_at_its_line(tmp_path, constant):
    path = _corpus(tmp_path)
    path.write_text(path.read_text() + f'{{"id": "c", "text": "x", "year": {constant}}}\n')
    with pytest.raises(BenchError, match=rf"corpus\.jsonl:3: invalid JSON \({constant} is not a JSON number\)"):
        load_corpus(path)


@pytest.mark.parametrize("constant", CONSTANTS)
def test_an_answers_file_with_a_non_number_is_refused_at_its_line(tmp_path, constant):
    path = tmp_path / "answers.jsonl"
    path.write_text(f'{{"question_id": "q1", "answer": "x", "confidence": {constant}}}\n')
    with pytest.raises(BenchError, match=rf"answers\.jsonl:1: invalid JSON \({constant} is not a JSON number\)"):
        load_answers(path)


@pytest.mark.parametrize("constant", CONSTANTS)
def test_a_baseline_with_a_non_number_is_refused(tmp_path, constant):
    baseline = {
        "bench_baseline": 1,
        "run_id": "r",
        "k": 5,
        "unit": "chunk",
        "corpus_sha256": "0",
        "goldset_sha256": "0",
        "metrics": {"m/c/flat": {"mrr@5": 0.5}},
    }
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(baseline, indent=2).replace("0.5", constant))
    with pytest.raises(BenchError, match=rf"baseline\.json:10: not valid JSON \({constant} is not a JSON number\)"):
        read_baseline(path)
    path.write_text(json.dumps(baseline).replace("0.5", '"0.5"'))
    with pytest.raises(BenchError, match=r"metric m/c/flat mrr@5 = '0\.5' is not a number"):
        read_baseline(path)
