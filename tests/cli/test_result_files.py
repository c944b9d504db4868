"""Through the real command line: a tiny corpus, the hashing model and BM25, every result file checked."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench.evaluation import metrics
from bench.evaluation.metrics import Grades
from tests.helpers import DOCS, QUESTIONS, finished_runs, run_cli, write_project

K, DEPTH = 3, 6


def _load_run(run: Path):
    manifest = json.loads((run / "manifest.json").read_text())
    summary = json.loads((run / "summary.json").read_text())
    rows = [json.loads(line) for line in (run / "per_question.jsonl").read_text().splitlines()]
    return manifest, summary, rows


def test_run_writes_the_three_files_and_a_ranked_table(project: Path):
    result = run_cli("run", str(project))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    [run] = finished_runs(project.parent / "results")
    assert {"manifest.json", "per_question.jsonl", "summary.json", "texts.jsonl"} <= {p.name for p in run.iterdir()}
    assert all(p.stat().st_mode & 0o044 for p in run.iterdir())  # readable by others, as ordinary files
    manifest, summary, rows = _load_run(run)
    texts = {
        (t["doc_id"], t["start"], t["end"]): t["text"]
        for t in map(json.loads, (run / "texts.jsonl").read_text().splitlines())
    }
    for row in rows:  # every unit a report shows has its text, the corpus's own characters
        for e in row["ranking"] + row["expected"]:
            assert texts[(e["doc_id"], e["start"], e["end"])] == DOCS[e["doc_id"]][e["start"] : e["end"]]
        assert row["question"] == next(q[1] for q in QUESTIONS if q[0] == row["question_id"]) and row["tags"] == ["t"]
    assert summary["chunkers"]["tok24"]["chunks"] == sum(
        c["ops"]["n_chunks"] for c in summary["candidates"] if c["id"] == "hash/tok24/flat"
    )

    ids = {c["id"] for c in summary["candidates"]}
    assert ids == {"hash/tok24/flat", "hash/rec24/flat", "bm25/tok24/inverted", "bm25/rec24/inverted"}
    for cand_id in ids:  # the table names every candidate
        assert cand_id in result.stdout
    assert summary["k"] == K and summary["depth"] == DEPTH and summary["unit"] == "chunk"

    # ranked by mrr@k, then recall@k, then id
    order = [(-c["quality"]["mrr@3"], -c["quality"]["recall@3"], c["id"]) for c in summary["candidates"]]
    assert order == sorted(order)
    assert [c["rank"] for c in summary["candidates"]] == [1, 2, 3, 4]

    assert len(rows) == len(ids) * len(QUESTIONS)
    assert run.name.endswith(manifest["config_hash"])
    assert len(manifest["corpus"]["sha256"]) == 64 and len(manifest["goldset"]["sha256"]) == 64
    assert manifest["versions"]["faiss-cpu"] and manifest["versions"]["python"]
    assert manifest["config"]["models"] == ["hash", "bm25"]


def test_stored_metrics_follow_from_stored_rankings(project: Path):
    assert run_cli("run", str(project)).returncode == 0
    [run] = finished_runs(project.parent / "results")
    _, summary, rows = _load_run(run)
    for cand in summary["candidates"]:
        mine = [r for r in rows if r["candidate"] == cand["id"]]
        assert [r["question_id"] for r in mine] == [q[0] for q in QUESTIONS]
        ranked = np.zeros((len(mine), DEPTH), dtype=int)
        ideal = np.zeros((len(mine), DEPTH), dtype=int)
        for i, r in enumerate(mine):
            assert len(r["ranking"]) <= DEPTH
            assert len({e["id"] for e in r["ranking"]}) == len(r["ranking"])
            scores = [e["score"] for e in r["ranking"]]
            assert scores == sorted(scores, reverse=True)
            ranked[i, : len(r["ranking"])] = [e["grade"] for e in r["ranking"]]
            top = sorted((e["grade"] for e in r["expected"]), reverse=True)
            ideal[i, : len(top)] = top
            # every relevant unit in the ranking is one of the expected units, with the same grade
            expected = {e["id"]: e["grade"] for e in r["expected"]}
            for e in r["ranking"]:
                assert e["grade"] == expected.get(e["id"], 0)
            ranks = [j + 1 for j, e in enumerate(r["ranking"]) if e["grade"] > 0]
            assert r["first_relevant_rank"] == (ranks[0] if ranks else None)
        grades = Grades(ranked, ideal, np.array([len(r["expected"]) for r in mine]))
        per_q = metrics.quality(grades, K, "exponential")
        for key, values in per_q.items():
            assert cand["quality"][key] == pytest.approx(float(values.mean()), abs=1e-12)
            assert [r["metrics"][key] for r in mine] == pytest.approx(values.tolist(), abs=1e-12)
        assert cand["curve"]["hit_rate@3"] == pytest.approx(cand["quality"]["hit_rate@3"])
        assert sum(cand["diagnostics"]["first_relevant_rank"].values()) == len(QUESTIONS)


def test_chunks_are_spans_of_their_documents(project: Path):
    assert run_cli("run", str(project)).returncode == 0
    [run] = finished_runs(project.parent / "results")
    _, _, rows = _load_run(run)
    corpus = project.parent / "corpus"
    for r in rows:
        for e in r["ranking"] + r["expected"]:
            text = (corpus / e["doc_id"]).read_text()
            assert 0 <= e["start"] < e["end"] <= len(text)


def test_second_run_reuses_the_cache_and_gives_identical_results(project: Path):
    assert run_cli("run", str(project)).returncode == 0
    assert run_cli("run", str(project)).returncode == 0
    runs = finished_runs(project.parent / "results")
    assert len(runs) == 2
    first, second = runs[0], runs[-1]
    _, s1, rows1 = _load_run(first)
    _, s2, rows2 = _load_run(second)
    strip = lambda rows: [(r["candidate"], r["question_id"], r["ranking"], r["metrics"]) for r in rows]  # noqa: E731
    assert strip(rows1) == strip(rows2)
    assert [c["quality"] for c in s1["candidates"]] == [c["quality"] for c in s2["candidates"]]
    dense = [c for c in s2["candidates"] if c["model"] == "hash"]
    assert all(
        c["ops"]["chunks_embedded"] == 0 and c["ops"]["chunks_from_cache"] == c["ops"]["n_chunks"] for c in dense
    )


def test_query_latency_is_kept_per_machine_and_remeasured_on_request(project: Path):
    def latency(run: Path) -> dict:
        _, summary, _ = _load_run(run)
        [c] = [c for c in summary["candidates"] if c["id"] == "hash/tok24/flat"]
        return {key: value for key, value in c["ops"].items() if key.startswith("query_embed")}

    for extra in ((), (), ("--remeasure",)):
        assert run_cli("run", str(project), *extra).returncode == 0
    first, second, third = map(latency, finished_runs(project.parent / "results"))
    assert first["query_embed_from_cache"] is False and first["query_embed_ms_p50"] > 0
    assert second["query_embed_from_cache"] is True
    assert second == {**first, "query_embed_from_cache": True}  # the very same samples
    assert third["query_embed_from_cache"] is False and third["query_embed_measured"] >= first["query_embed_measured"]
    _, summary, _ = _load_run(finished_runs(project.parent / "results")[1])
    bm25 = [c for c in summary["candidates"] if c["model"] == "bm25"]
    assert all(c["ops"]["query_embed_from_cache"] is False for c in bm25)  # lexical: nothing to keep


def test_report_recomputes_exactly_what_the_run_wrote(project: Path):
    assert run_cli("run", str(project)).returncode == 0
    [run] = finished_runs(project.parent / "results")
    result = run_cli("report", str(run))
    assert result.returncode == 0, result.stderr
    assert "recomputed" in result.stdout and "hash/tok24/flat" in result.stdout


def test_report_notices_a_tampered_summary(project: Path):
    assert run_cli("run", str(project)).returncode == 0
    [run] = finished_runs(project.parent / "results")
    summary = json.loads((run / "summary.json").read_text())
    summary["candidates"][0]["quality"]["mrr@3"] += 0.25
    (run / "summary.json").write_text(json.dumps(summary))
    result = run_cli("report", str(run))
    assert result.returncode == 1 and "differ" in result.stderr


def test_document_unit_pools_chunks_into_documents(tmp_path: Path):
    config = write_project(tmp_path, whole_documents=True)
    result = run_cli("run", str(config))
    assert result.returncode == 0, result.stderr
    [run] = finished_runs(tmp_path / "results")
    _, summary, rows = _load_run(run)
    assert summary["unit"] == "document"
    for r in rows:
        docs = [e["id"] for e in r["ranking"]]
        assert len(docs) == len(set(docs))
        assert all(e["id"] == e["doc_id"] for e in r["ranking"])
        assert len(r["expected"]) == 1 and r["expected"][0]["score"] is not None
    # every dense ranking reaches every document (4 documents, depth 6)
    assert all(len(r["ranking"]) == 4 for r in rows if r["candidate"].startswith("hash/"))


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: c.replace("k = 3", "k = 0"), "k = 0 must be a whole number from 1 to 50"),
        (lambda c: c.replace('"hash", "bm25"', '"hsah"'), "did you mean 'hash'"),
        (lambda c: c.replace('kind = "tokens"', 'kind = "tokenz"'), "did you mean 'tokens'"),
        (lambda c: c.replace("k = 3", "kay = 3"), "unknown key 'kay'"),
        (lambda c: c.replace("size = 24\noverlap = 4", "size = 24\noverlap = 40"), "overlap"),
        (lambda c: c + "\n[[broken", "invalid TOML"),
    ],
)
def test_bad_config_is_one_line_and_exit_2(project: Path, edit, message):
    project.write_text(edit(project.read_text()))
    result = run_cli("run", str(project))
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert finished_runs(project.parent / "results") == []


def test_bad_goldset_names_file_and_line(tmp_path: Path):
    questions = [*QUESTIONS[:2], ("q3", "?", "kb/laptops.md", "this sentence is not in the document", 1)]
    config = write_project(tmp_path, questions=questions)
    result = run_cli("run", str(config))
    assert result.returncode == 2
    assert "gold.jsonl:3" in result.stderr and "not found" in result.stderr
    assert not (tmp_path / "results").exists() or finished_runs(tmp_path / "results") == []


def test_missing_config_is_exit_2(tmp_path: Path):
    result = run_cli("run", str(tmp_path / "nope.toml"))
    assert result.returncode == 2 and "config not found" in result.stderr


def test_a_failing_run_leaves_no_run_folder(project: Path, monkeypatch):
    from bench.config import load_config
    from bench.run import retrieve, shootout

    calls = {"n": 0}
    original = retrieve.run_candidate

    def fail_on_second(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(retrieve, "run_candidate", fail_on_second)
    with pytest.raises(KeyboardInterrupt):
        shootout.run_shootout(load_config(project))
    results = project.parent / "results"
    assert list(results.iterdir()) == []  # neither a run folder nor a staging folder


def test_models_lists_without_loading_weights():
    result = run_cli("models")
    assert result.returncode == 0
    assert "minilm" in result.stdout and "bm25" in result.stdout and "384" in result.stdout
    flat = " ".join(result.stdout.replace("│", " ").split())
    assert "(reads: en)" in flat and "(reads: multilingual)" in flat  # which models read a Chinese corpus


def test_latency_is_sampled_on_the_configured_number_of_questions(tmp_path: Path):
    config = write_project(tmp_path)
    config.write_text(config.read_text().replace("k = 3", "k = 3\nlatency_samples = 4"))
    result = run_cli("run", str(config))
    assert result.returncode == 0, result.stderr
    _, summary, _ = _load_run(finished_runs(tmp_path / "results")[0])
    assert {c["ops"]["latency_samples"] for c in summary["candidates"]} == {4}
    assert "the first 4 of 6 questions" in " ".join(result.stdout.split())
