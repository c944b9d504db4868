"""Metric names read the same in every command that takes one (`compare --metric`, `check --metrics`,
`history --metric`): a bare name is the run's k, ``name@N`` that cutoff, and a misspelt name gets the
same "did you mean" from each. Counts of one read in the singular."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import finished_runs, run_cli, write_project

CANDIDATE = "hash/tok24/flat"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("metric-names")
    write_project(root)
    result = run_cli("run", cwd=root)
    assert result.returncode == 0, result.stderr
    return root


def quality(project: Path) -> dict:
    [run] = finished_runs(project / "results")
    summary = json.loads((run / "summary.json").read_text())
    return next(c["quality"] for c in summary["candidates"] if c["id"] == CANDIDATE)


@pytest.mark.parametrize("name", ["recall", "recall@3", "recall@k"])
def test_compare_takes_a_bare_name_as_the_runs_k(project: Path, name: str):
    result = run_cli("compare", "latest", "--metric", name, cwd=project)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Every pair on recall@3,")


@pytest.mark.parametrize(("names", "checked"), [("mrr", 1), ("recall@3", 1), ("mrr,recall@3", 2), ("ndcg@k", 1)])
def test_check_takes_the_same_names(project: Path, names: str, checked: int):
    result = run_cli("check", "latest", "--baseline", "latest", "--metrics", names, cwd=project)
    assert result.returncode == 0, result.stderr
    assert f"({4 * checked} metrics checked)" in result.stdout  # four candidates


@pytest.mark.parametrize("name", ["recall", "recall@3"])
def test_history_takes_the_same_names(project: Path, name: str):
    result = run_cli("history", "--candidate", CANDIDATE, "--metric", name, cwd=project)
    assert result.returncode == 0, result.stderr
    assert f"{quality(project)['recall@3']:.4f}" in result.stdout


def test_a_misspelt_name_gets_the_same_suggestion_from_every_command(project: Path):
    commands = {
        "--metric": ("compare", "latest", "--metric", "recal"),
        "--metrics": ("check", "latest", "--baseline", "latest", "--metrics", "recal"),
        "--metric ": ("history", "--candidate", CANDIDATE, "--metric", "recal"),
    }
    for option, args in commands.items():
        result = run_cli(*args, cwd=project)
        assert result.returncode == 2 and result.stdout == "", (args, result.stdout)
        [line] = result.stderr.strip().splitlines()
        assert line.startswith(f"bench: error: {option.strip()} recal: unknown metric 'recal'; did you mean 'recall'? ")


def test_a_cutoff_the_run_lacks_gets_the_same_suggestion_from_compare_and_check(project: Path):
    compare = run_cli("compare", "latest", "--metric", "mrr@9", cwd=project)
    check = run_cli("check", "latest", "--baseline", "latest", "--metrics", "mrr@9", cwd=project)
    assert compare.returncode == check.returncode == 2
    assert "--metric mrr@9: not in this run; did you mean 'mrr@3'? choose one of" in compare.stderr
    assert "--metrics mrr@9: not in the baseline; did you mean 'mrr@3'? choose one of" in check.stderr


def test_counts_of_one_read_in_the_singular(project: Path, tmp_path: Path):
    listing = run_cli("history", cwd=project)
    assert "1 run under results" in listing.stdout and "runs under" not in listing.stdout
    trend = run_cli("history", "--candidate", CANDIDATE, "--metric", "mrr", cwd=project)
    assert f"mrr@k of {CANDIDATE} over 1 run," in trend.stdout
    file = tmp_path / "baseline.json"
    assert run_cli("check", "latest", "--save-baseline", str(file), cwd=project).returncode == 0
    baseline = json.loads(file.read_text())
    baseline["metrics"] = {CANDIDATE: {"mrr@3": baseline["metrics"][CANDIDATE]["mrr@3"]}}
    file.write_text(json.dumps(baseline))
    ok = run_cli("check", "latest", "--baseline", str(file), cwd=project)
    assert "\nok: no metric of 1 candidate dropped by more than 0 (1 metric checked)\n" in ok.stdout, ok.stdout
    baseline["metrics"][CANDIDATE]["mrr@3"] += 0.5
    file.write_text(json.dumps(baseline))
    failed = run_cli("check", "latest", "--baseline", str(file), cwd=project)
    assert failed.returncode == 1
    assert (
        failed.stdout.strip().splitlines()[-1]
        == "FAIL: 1 metric of 1 candidate dropped by more than 0 (1 metric checked)"
    )
