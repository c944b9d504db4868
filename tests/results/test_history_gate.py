"""Runs over time: ``bench history``, ``bench compare RUN RUN_B`` and the regression gate ``bench check``.

Real runs of the tiny project check that the commands read what ``bench run`` writes; hand-made run
folders pin the exact numbers (deltas, drops at and beyond the threshold).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.cli import main
from bench.errors import BenchError
from bench.results import gate, history, schema
from tests.helpers import DOCS, finished_runs, next_second, run_cli, write_project

CORPUS_A, CORPUS_B, GOLDSET = "a" * 64, "b" * 64, "c" * 64


# --- helpers ---------------------------------------------------------------------------------------------------


def quality(k: int = 5, mrr: float = 0.5, recall: float = 0.6, ndcg: float = 0.55, hit_rate: float = 0.8) -> dict:
    return {f"mrr@{k}": mrr, f"recall@{k}": recall, f"ndcg@{k}": ndcg, f"hit_rate@{k}": hit_rate}


def make_run(
    results: Path,
    run_id: str,
    candidates: dict[str, dict],
    k: int = 5,
    corpus: str = CORPUS_A,
    goldset: str = GOLDSET,
    unit: str = "chunk",
) -> Path:
    """A run folder written by hand, with just what history, compare and check read."""
    folder = results / run_id
    folder.mkdir(parents=True)
    started = datetime.strptime(run_id.lstrip(".")[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC).isoformat()
    summary = {
        "k": k,
        "depth": 10,
        "unit": unit,
        "ndcg_gain": "exponential",
        "min_overlap": 0.5,
        "candidates": [
            {
                "id": cid,
                "model": cid.split("/")[0],
                "chunker": "c",
                "index": "flat",
                "search": None,
                "rank": i,
                "quality": q,
            }
            for i, (cid, q) in enumerate(candidates.items(), start=1)
        ],
    }
    manifest = {
        "run_id": run_id,
        "config_hash": run_id.split("-")[1][:6],
        "corpus": {"path": "corpus", "sha256": corpus, "documents": 4},
        "goldset": {"path": "gold.jsonl", "sha256": goldset, "questions": 2, "unit": unit},
        "locked": True,
        "started": started,
        "finished": started,
    }
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "per_question.jsonl").write_text(
        "".join(json.dumps({"candidate": cid, "question_id": "q1"}) + "\n" for cid in candidates)
    )
    return folder


def cli(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


def summary_of(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def manifest_of(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text())


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> Path:
    """Three real runs of the tiny project: two identical, then one after a corpus file changed."""
    root = tmp_path_factory.mktemp("history")
    config = write_project(root)
    for step in range(3):
        if step:
            next_second()  # each run starts in a second of its own
        if step == 2:
            (root / "corpus" / "ops" / "oncall.txt").write_text(
                DOCS["ops/oncall.txt"] + "\nHandover notes live in the team wiki.\n", encoding="utf-8"
            )
        result = run_cli("run", str(config), "--no-report")
        assert result.returncode == 0, result.stderr
    runs = finished_runs(root / "results")
    assert len(runs) == 3
    return root / "results"


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return tmp_path / "results"


# --- history ---------------------------------------------------------------------------------------------------


def test_history_lists_real_runs_oldest_first_with_their_fingerprints(real: Path):
    runs = history.list_runs(real)
    assert [r.run_id for r in runs] == [p.name for p in finished_runs(real)] and not runs.notes
    manifests = [manifest_of(p) for p in finished_runs(real)]
    assert [r.corpus_sha256 for r in runs] == [m["corpus"]["sha256"] for m in manifests]
    assert [r.goldset_sha256 for r in runs] == [m["goldset"]["sha256"] for m in manifests]
    assert runs[0].corpus_sha256 == runs[1].corpus_sha256 != runs[2].corpus_sha256
    assert len({r.goldset_sha256 for r in runs}) == 1
    assert runs[0].started < runs[1].started < runs[2].started
    first = runs[0]
    assert first.k == 3 and first.unit == "chunk" and first.locked is False
    assert first.candidates == {c["id"]: c["quality"] for c in summary_of(first.path)["candidates"]}
    # the one headline list, as in compare and the report
    assert set(first.headline("hash/tok24/flat")) == {"mrr@3", "recall@3", "ndcg@3", "hit_rate@3", "precision@3"}


def test_history_skips_partial_damaged_and_foreign_folders(results: Path):
    make_run(results, "20260102T000000Z-bbbbbb", {"alpha": quality()})
    make_run(results, "20260101T000000Z-aaaaaa", {"alpha": quality()})
    make_run(results, ".20260103T000000Z-cccccc.partial", {"alpha": quality()})
    damaged = make_run(results, "20260104T000000Z-dddddd", {"alpha": quality()})
    (damaged / "summary.json").write_text("{not json")
    (results / "scratch").mkdir()
    runs = history.list_runs(results)
    assert [r.run_id for r in runs] == ["20260101T000000Z-aaaaaa", "20260102T000000Z-bbbbbb"]
    assert len(runs.notes) == 2
    assert "20260104T000000Z-dddddd" in runs.notes[0] and "damaged" in runs.notes[0]
    assert "scratch" in runs.notes[1]
    result = cli("history", "--results", results)
    assert result.exit_code == 0
    assert "20260101T000000Z-aaaaaa" in result.stdout and "20260104T000000Z-dddddd" not in result.stdout
    assert "scratch" in result.stderr and ".partial" not in result.stdout + result.stderr


def test_trend_values_equal_the_summaries_and_accept_names_without_cutoff(real: Path):
    expected = [summary_of(p) for p in finished_runs(real)]
    for metric in ("mrr", "mrr@3"):
        points = history.trend(real, "bm25/rec24/inverted", metric)
        assert [p.run_id for p in points] == [p.name for p in finished_runs(real)]
        assert [p.value for p in points] == [
            next(c["quality"]["mrr@3"] for c in s["candidates"] if c["id"] == "bm25/rec24/inverted") for s in expected
        ]
    changed = [history.fingerprint_changed(a, b) for a, b in pairwise(points)]
    assert changed == [[], ["corpus"]]


def test_trend_skips_runs_without_the_candidate_or_metric(results: Path):
    make_run(results, "20260101T000000Z-aaaaaa", {"alpha": quality(mrr=0.1)})
    make_run(results, "20260102T000000Z-aaaaaa", {"beta": quality(mrr=0.2)})
    make_run(results, "20260103T000000Z-aaaaaa", {"alpha": quality(k=3, mrr=0.3)}, k=3)
    assert [p.value for p in history.trend(results, "alpha", "mrr")] == [0.1, 0.3]
    assert [p.value for p in history.trend(results, "alpha", "mrr@5")] == [0.1]


def test_unknown_candidate_or_metric_says_what_exists(real: Path):
    with pytest.raises(BenchError, match=r"did you mean hash/tok24/flat"):
        history.trend(real, "hash/tok42/flat", "mrr")
    with pytest.raises(BenchError, match=r"--metric mmr: not in any run.*mrr@3"):
        history.trend(real, "hash/tok24/flat", "mmr")
    result = cli("history", "--results", real, "--candidate", "hash/tok42/flat", "--metric", "mrr")
    assert result.exit_code == 2 and "did you mean" in result.stderr


def test_history_cli_lists_run_ids_and_trend_shows_values_and_the_fingerprint_change(real: Path):
    listing = cli("history", "--results", real)
    assert listing.exit_code == 0, listing.output
    for run in finished_runs(real):
        assert run.name in listing.stdout
    assert manifest_of(finished_runs(real)[2])["corpus"]["sha256"][:12] in listing.stdout

    result = cli("history", "--results", real, "--candidate", "hash/tok24/flat", "--metric", "mrr")
    assert result.exit_code == 0, result.output
    values = [r.headline("hash/tok24/flat")["mrr@3"] for r in history.list_runs(real)]
    rows = [line for line in result.stdout.splitlines() if any(p.name in line for p in finished_runs(real))]
    assert len(rows) == 3
    for row, value in zip(rows, values):
        assert f"{value:.4f}" in row
    assert "corpus changed" in rows[2] and "changed" not in rows[0] + rows[1]


def test_history_cli_without_runs_and_with_half_a_trend(tmp_path: Path):
    empty = cli("history", "--results", tmp_path / "nothing")
    assert empty.exit_code == 0 and "no finished runs" in empty.stdout
    for args in (["--metric", "mrr"], ["--candidate", "alpha"]):
        result = cli("history", "--results", tmp_path, *args)
        assert result.exit_code == 2 and "--candidate ID and --metric NAME" in result.stderr


def test_history_for_report_keeps_runs_up_to_this_one_with_the_same_fingerprints(results: Path):
    make_run(results, "20260101T000000Z-aaaaaa", {"alpha": quality(mrr=0.1), "beta": quality(mrr=0.9)})
    make_run(results, "20260102T000000Z-aaaaaa", {"alpha": quality(mrr=0.2)}, corpus=CORPUS_B)
    make_run(results, "20260103T000000Z-aaaaaa", {"alpha": quality(k=3, mrr=0.3)}, k=3)
    this = make_run(results, "20260104T000000Z-aaaaaa", {"alpha": quality(mrr=0.4), "beta": quality(mrr=0.8)})
    make_run(results, "20260105T000000Z-aaaaaa", {"alpha": quality(mrr=0.5)})
    trends = history.history_for_report(results, schema.load_summary(this), schema.load_manifest(this), "mrr")
    assert [t.candidate for t in trends] == ["alpha", "beta"]
    assert [p.value for p in trends[0].points] == [0.1, 0.4]  # other corpus, other k and later runs left out
    assert [p.value for p in trends[1].points] == [0.9, 0.8]


# --- compare two runs ------------------------------------------------------------------------------------------


def test_compare_runs_gives_exact_deltas_and_lists_one_sided_candidates(results: Path):
    a = make_run(results, "20260101T000000Z-aaaaaa", {"alpha": quality(mrr=0.5, recall=0.6), "beta": quality()})
    b = make_run(results, "20260102T000000Z-aaaaaa", {"gamma": quality(), "alpha": quality(mrr=0.55, recall=0.4)})
    result = history.compare_runs(a, b)
    assert result["forced"] == [] and result["only_a"] == ["beta"] and result["only_b"] == ["gamma"]
    assert list(result["deltas"]) == ["alpha"]
    assert result["deltas"]["alpha"]["mrr@5"] == {"a": 0.5, "b": 0.55, "delta": 0.55 - 0.5}
    assert result["deltas"]["alpha"]["recall@5"]["delta"] == 0.4 - 0.6
    assert set(result["deltas"]["alpha"]) == {"mrr@5", "recall@5", "ndcg@5", "hit_rate@5"}
    shown = cli("compare", a, b)
    assert shown.exit_code == 0, shown.output
    assert "0.500 → 0.550 (+0.050)" in shown.stdout and "0.600 → 0.400 (-0.200)" in shown.stdout
    assert "only in A" in shown.stdout and "beta" in shown.stdout and "gamma" in shown.stdout


def test_compare_refuses_other_fingerprints_in_one_line_unless_forced(results: Path):
    a = make_run(results, "20260101T000000Z-aaaaaa", {"alpha": quality(mrr=0.5)})
    b = make_run(results, "20260102T000000Z-aaaaaa", {"alpha": quality(mrr=0.7)}, corpus=CORPUS_B)
    refused = run_cli("compare", str(a), str(b))
    assert refused.returncode == 2 and refused.stdout == ""
    [line] = refused.stderr.strip().splitlines()
    assert "fingerprints differ (corpus aaaaaaaaaaaa… vs bbbbbbbbbbbb…)" in line and "--force" in line
    forced = run_cli("compare", str(a), str(b), "--force")
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.startswith("forced:") and "corpus aaaaaaaaaaaa" in forced.stdout.splitlines()[0]
    assert "0.500 → 0.700 (+0.200)" in forced.stdout
    assert history.compare_runs(a, b, force=True)["forced"] == ["corpus aaaaaaaaaaaa… vs bbbbbbbbbbbb…"]


def test_compare_forced_across_k_pairs_the_same_metric(results: Path):
    a = make_run(results, "20260101T000000Z-aaaaaa", {"alpha": quality(k=3, mrr=0.5)}, k=3)
    b = make_run(results, "20260102T000000Z-aaaaaa", {"alpha": quality(k=5, mrr=0.6)})
    with pytest.raises(BenchError, match=r"settings differ .k 3 vs 5"):
        history.compare_runs(a, b)
    deltas = history.compare_runs(a, b, force=True)["deltas"]["alpha"]
    assert deltas["mrr@3 vs mrr@5"]["delta"] == pytest.approx(0.1)


def test_compare_argument_rules_and_the_one_run_behaviour(real: Path, results: Path):
    a = make_run(results, "20260101T000000Z-aaaaaa", {"alpha": quality()})
    for args in ([a, a, a], [a, a, "--a", "x", "--b", "y"], [a, a, "--metric", "mrr@5"]):
        result = cli("compare", *args)
        assert result.exit_code == 2 and result.stderr.startswith("bench: error:")
    one = cli("compare", "latest", "--results", real)
    assert one.exit_code == 0, one.output
    assert "Every pair on mrr@3" in one.stdout


# --- the regression gate ---------------------------------------------------------------------------------------


def test_check_passes_on_identical_real_runs_and_round_trips_a_baseline(real: Path, tmp_path: Path):
    first, second, changed = finished_runs(real)
    ok = cli("check", second, "--baseline", first, "--max-drop", "0")
    assert ok.exit_code == 0, ok.output
    assert ok.stdout.startswith("ok: no metric of 4 candidates dropped by more than 0 (")

    file = tmp_path / "goldsets" / "baseline.json"
    saved = cli("check", first, "--save-baseline", file)
    assert saved.exit_code == 0 and str(file) in saved.stdout
    baseline = json.loads(file.read_text())
    assert baseline["bench_baseline"] == 1 and baseline["run_id"] == first.name and baseline["k"] == 3
    assert baseline["corpus_sha256"] == manifest_of(first)["corpus"]["sha256"]
    assert baseline["metrics"] == {c["id"]: c["quality"] for c in summary_of(first)["candidates"]}
    again = cli("check", second, "--baseline", file, "--max-drop", "0.02", "--metrics", "mrr@3,recall")
    assert again.exit_code == 0, again.output
    assert "(8 metrics checked)" in again.stdout

    refused = cli("check", changed, "--baseline", file)
    assert refused.exit_code == 2 and "fingerprints differ" in refused.stderr and "--force" in refused.stderr
    forced = cli("check", changed, "--baseline", file, "--max-drop", "1", "--force")
    assert forced.exit_code == 0 and forced.stdout.startswith("forced:")


def test_check_fails_with_a_table_when_mrr_drops_beyond_max_drop(results: Path):
    base = make_run(results, "20260101T000000Z-aaaaaa", {"alpha": quality(mrr=0.60), "beta": quality()})
    run = make_run(results, "20260102T000000Z-aaaaaa", {"alpha": quality(mrr=0.55), "beta": quality()})
    result = cli("check", run, "--baseline", base, "--max-drop", "0.02")
    assert result.exit_code == 1, result.output
    row = next(line for line in result.stdout.splitlines() if "alpha" in line)
    assert "mrr@5" in row and "0.6000" in row and "0.5500" in row and "0.0500" in row
    assert "beta" not in result.stdout
    assert result.stdout.strip().splitlines()[-1].startswith("FAIL: 1 metric of 1 candidate dropped by more")
    assert cli("check", run, "--baseline", base, "--max-drop", "0.05").exit_code == 0


def test_a_drop_exactly_at_the_threshold_passes(results: Path):
    base = make_run(results, "20260101T000000Z-aaaaaa", {"alpha": quality(mrr=0.5)})
    at = make_run(results, "20260102T000000Z-aaaaaa", {"alpha": quality(mrr=0.48)})
    beyond = make_run(results, "20260103T000000Z-aaaaaa", {"alpha": quality(mrr=0.4799)})
    assert 0.5 - 0.48 > 0.02  # float rounding: the gate must not fail on it
    assert cli("check", at, "--baseline", base, "--max-drop", "0.02").exit_code == 0
    baseline = gate.load_baseline(str(base), results)
    [regression] = gate.check(beyond, baseline, 0.02).regressions
    assert regression.metric == "mrr@5" and regression.drop == pytest.approx(0.0201)


def test_metrics_option_restricts_the_check(results: Path):
    base = make_run(results, "20260101T000000Z-aaaaaa", {"alpha": quality(mrr=0.6)})
    run = make_run(results, "20260102T000000Z-aaaaaa", {"alpha": quality(mrr=0.5)})
    assert cli("check", run, "--baseline", base, "--metrics", "recall@5,ndcg").exit_code == 0
    assert cli("check", run, "--baseline", base, "--metrics", "mrr").exit_code == 1
    unknown = cli("check", run, "--baseline", base, "--metrics", "mmr")
    assert unknown.exit_code == 2 and "mrr@5" in unknown.stderr
    result = gate.check(run, gate.load_baseline(str(base), results), 0.0, ["recall"])
    assert result.ok and result.metrics_checked == 1


def test_missing_candidate_fails_and_new_candidate_is_only_listed(results: Path):
    base = make_run(results, "20260101T000000Z-aaaaaa", {"alpha": quality(), "beta": quality()})
    run = make_run(results, "20260102T000000Z-aaaaaa", {"alpha": quality(), "gamma": quality(mrr=0.0)})
    result = cli("check", run, "--baseline", base)
    assert result.exit_code == 1
    assert "new since the baseline (not checked): gamma" in result.stdout
    row = next(line for line in result.stdout.splitlines() if "beta" in line)
    assert "missing" in row
    grown = make_run(results, "20260103T000000Z-aaaaaa", {"alpha": quality(), "beta": quality(), "gamma": quality()})
    passed = cli("check", grown, "--baseline", base)
    assert passed.exit_code == 0 and "gamma" in passed.stdout and "of 2 candidates" in passed.stdout


def test_bad_baselines_and_option_combinations_exit_2(results: Path, tmp_path: Path):
    run = make_run(results, "20260101T000000Z-aaaaaa", {"alpha": quality()})
    not_baseline = tmp_path / "other.json"
    not_baseline.write_text(json.dumps({"metrics": {}}))
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    cases = {
        ("--baseline", not_baseline): f"{not_baseline}: not a bench baseline",
        ("--baseline", broken): f"{broken}:1: not valid JSON",
        ("--baseline", tmp_path / "nowhere.json"): "neither a baseline file nor a finished run",
        ("--baseline", run, "--save-baseline", tmp_path / "b.json"): "exactly one of --baseline",
        (): "exactly one of --baseline",
        ("--baseline", run, "--max-drop", "-0.01"): "--max-drop -0.01: must be 0 or more",
        ("--baseline", run, "--metrics", ","): "--metrics: empty",
    }
    for args, message in cases.items():
        result = cli("check", run, *args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "`bench check RUN --save-baseline FILE`" in cli("check", run, "--baseline", not_baseline).stderr
    assert not (tmp_path / "b.json").exists()


def test_check_exit_codes_through_the_real_command_line(results: Path):
    base = make_run(results, "20260101T000000Z-aaaaaa", {"alpha": quality(mrr=0.60)})
    run = make_run(results, "20260102T000000Z-aaaaaa", {"alpha": quality(mrr=0.55)})
    failed = run_cli("check", str(run), "--baseline", str(base), "--max-drop", "0.02")
    assert failed.returncode == 1 and "Traceback" not in failed.stderr and "FAIL" in failed.stdout
