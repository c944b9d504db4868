"""What a run records of each phase of its build (time and memory), in its manifest."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import finished_runs, run_cli, write_project

# --- what a run records of its phases ---------------------------------------------------------------------


def test_a_run_records_each_phase_with_time_and_memory(tmp_path: Path):
    config = write_project(tmp_path)
    result = run_cli("run", str(config), cwd=tmp_path, reports=True)
    assert result.returncode == 0, result.stderr
    [run] = finished_runs(tmp_path / "results")
    phases = json.loads((run / "manifest.json").read_text())["phases"]
    names = [p["phase"] for p in phases]
    assert names[:3] == ["load corpus", "load goldset", "check lock"]
    for expected in (
        "chunk tok24",
        "judge relevance",
        "embed hash/tok24",
        "index hash/tok24/flat",
        "index bm25/tok24/inverted",
        "search hash/tok24/flat",
        "recall vs exact hash/tok24/flat",
        "measure chunk sizes",
        "write results",
    ):
        assert expected in names
    assert names[-1] == "reports"
    assert all(p["seconds"] >= 0 and p["rss_mb"] > 0 and p["peak_rss_mb"] >= p["rss_mb"] * 0.5 for p in phases)
