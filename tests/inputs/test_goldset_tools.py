"""`bench goldset validate | lock | stats` and the lock check of `bench run`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import finished_runs, run_cli


def test_validate_reports_every_problem_on_its_own_line(project: Path):
    gold = project.parent / "gold.jsonl"
    lines = gold.read_text().splitlines()
    bad = json.loads(lines[1])
    bad["evidence"][0]["quote"] = "no such words in the document"
    lines[1] = json.dumps(bad)
    lines.append(json.dumps({"id": "q1", "question": "dup?", "evidence": [{"doc": "kb/vacation.md"}]}))
    lines.append(
        json.dumps(
            {
                "id": "q9",
                "question": "grades?",
                "evidence": [
                    {"doc": "kb/vacation.md", "quote": "Requests longer than two weeks", "grade": -1},
                    {"doc": "nope.md", "quote": "x"},
                ],
            }
        )
    )
    gold.write_text("\n".join(lines) + "\n")
    result = run_cli("goldset", "validate", str(gold), "--corpus", str(project.parent / "corpus"))
    assert result.returncode == 2
    problems = result.stderr.strip().splitlines()
    assert any(f"{gold}:2:" in p and "not found" in p for p in problems)
    assert any(f"{gold}:7:" in p and "duplicate question id 'q1'" in p for p in problems)
    assert any(f"{gold}:8:" in p and "grade -1" in p for p in problems)
    assert any(f"{gold}:8:" in p and "unknown document 'nope.md'" in p for p in problems)
    assert "Traceback" not in result.stderr


def test_validate_ok(project: Path):
    result = run_cli(
        "goldset", "validate", str(project.parent / "gold.jsonl"), "--corpus", str(project.parent / "corpus")
    )
    assert result.returncode == 0 and "ok" in result.stdout


def test_validate_without_corpus_says_how_to_give_one(project: Path):
    result = run_cli("goldset", "validate", str(project.parent / "gold.jsonl"))
    assert result.returncode == 2 and "--corpus" in result.stderr


def test_the_corpus_is_found_by_convention(tmp_path: Path):
    (tmp_path / "corpora" / "kb").mkdir(parents=True)
    (tmp_path / "corpora" / "kb" / "a.md").write_text("Alpha beta gamma delta.\n")
    (tmp_path / "goldsets").mkdir()
    gold = tmp_path / "goldsets" / "kb.jsonl"
    gold.write_text(json.dumps({"id": "1", "question": "?", "evidence": [{"doc": "a.md", "quote": "beta"}]}) + "\n")
    assert run_cli("goldset", "validate", str(gold)).returncode == 0


def test_stats_counts_questions_evidence_and_coverage(project: Path):
    result = run_cli(
        "goldset", "stats", str(project.parent / "gold.jsonl"), "--corpus", str(project.parent / "corpus"), "--json"
    )
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    assert stats["questions"] == 6 and stats["evidence_items"] == 6 and stats["unit"] == "chunk"
    assert stats["grades"] == {"1": 1, "2": 5}
    assert stats["documents_referenced"] == 4 and stats["documents_in_corpus"] == 4
    assert stats["multi_evidence_share"] == 0
    quotes_chars = sum(
        len(q)
        for q in (
            "Full-time employees accrue twenty-five days of paid vacation per calendar year.",
            "Unused vacation days may be carried over until the end of March",
            "Engineers receive a laptop with 32 GB of memory and a 1 TB disk.",
            "kept for thirty-five days",
            "Pages must be acknowledged within fifteen minutes, day or night.",
            "The on-call rotation changes every Monday at 10:00 local time.",
        )
    )
    assert stats["evidence_chars"] == quotes_chars
    human = run_cli("goldset", "stats", str(project.parent / "gold.jsonl"), "--corpus", str(project.parent / "corpus"))
    assert human.returncode == 0 and "questions" in human.stdout


def _lock(project: Path):
    return run_cli("goldset", "lock", str(project.parent / "gold.jsonl"), "--corpus", str(project.parent / "corpus"))


def test_a_locked_run_says_so_in_its_manifest(project: Path):
    assert _lock(project).returncode == 0
    lock = json.loads((project.parent / "gold.lock.json").read_text())
    assert len(lock["goldset"]["sha256"]) == 64 and len(lock["corpus"]["sha256"]) == 64
    result = run_cli("run", str(project))
    assert result.returncode == 0, result.stderr
    [run] = finished_runs(project.parent / "results")
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["locked"] is True and manifest["lock"]["problem"] is None


def test_an_unlocked_goldset_runs_with_a_warning(project: Path):
    result = run_cli("run", str(project))
    assert result.returncode == 0 and "not locked" in result.stderr
    [run] = finished_runs(project.parent / "results")
    assert json.loads((run / "manifest.json").read_text())["locked"] is False


def test_a_changed_goldset_is_refused_until_relocked(project: Path):
    assert _lock(project).returncode == 0
    gold = project.parent / "gold.jsonl"
    gold.write_text(gold.read_text().replace("each year", "every year"))
    result = run_cli("run", str(project))
    assert result.returncode == 2
    assert "goldset changed since it was locked" in result.stderr and "bench goldset lock" in result.stderr
    assert finished_runs(project.parent / "results") == []
    allowed = run_cli("run", str(project), "--allow-unlocked")
    assert allowed.returncode == 0
    [run] = finished_runs(project.parent / "results")
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["locked"] is False and "changed" in manifest["lock"]["problem"]
    assert _lock(project).returncode == 0
    assert run_cli("run", str(project)).returncode == 0


def test_a_changed_corpus_is_refused(project: Path):
    assert _lock(project).returncode == 0
    doc = project.parent / "corpus" / "kb" / "laptops.md"
    doc.write_text(doc.read_text() + "\nA new paragraph.\n")
    result = run_cli("run", str(project))
    assert result.returncode == 2 and "corpus changed since the goldset was locked" in result.stderr
