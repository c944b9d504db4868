"""The reports a run hands over: rank_matrix.csv, plots, report.pdf, and `bench compare`, via the CLI."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import QUESTIONS, finished_runs, run_cli

PLOTS = {
    "hit_rate_curves.png",
    "first_rank.png",
    "score_gaps.png",
    "quality_vs_cost.png",
    "quality_vs_latency.png",
    "chunk_sizes.png",
    "rank_matrix.png",
}
PAGE_TITLES = [
    "bench shootout: summary",
    "Hit rate by cutoff",
    "Where the first relevant unit landed",
    "Score gap",
    "Quality vs cost",
    "Quality vs",
    "Chunk sizes per chunker",
    "Bootstrap 95% intervals",
    "Head to head: all pairs on mrr@3",
    "Head to head: all pairs on the other metrics",
    "Head to head: the two best candidates",
    "Rank matrix",
    "Per tag",
    "Provenance",
]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    from tests.helpers import write_project

    root = tmp_path_factory.mktemp("reports")
    config = write_project(root)
    result = run_cli("run", str(config), reports=True)
    assert result.returncode == 0, result.stderr
    assert "report.pdf" in result.stdout
    [folder] = finished_runs(root / "results")
    return folder


def _records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "per_question.jsonl").read_text().splitlines()]


def test_a_run_writes_every_report_file(run: Path):
    assert {p.name for p in (run / "plots").iterdir()} == PLOTS
    stats = json.loads((run / "statistics.json").read_text())
    summary = json.loads((run / "summary.json").read_text())
    n = len(summary["candidates"])
    assert set(stats["pairs"]) == {"mrr@3", "recall@3", "ndcg@3", "hit_rate@3", "precision@3"}
    assert all(len(rows) == n * (n - 1) // 2 for rows in stats["pairs"].values())
    for c in summary["candidates"]:  # an interval for every mean metric, around that mean
        assert set(stats["cis"][c["id"]]) == set(c["quality"])
        for metric, (lo, hi) in stats["cis"][c["id"]].items():
            assert lo - 1e-12 <= c["quality"][metric] <= hi + 1e-12
    assert (run / "report.pdf").read_bytes().startswith(b"%PDF")
    assert (run / "inspector.html").read_text().lstrip().lower().startswith("<!doctype html")
    assert not [p for p in run.rglob(".*") if p.is_file()]  # no temporary files left behind


def test_rank_matrix_csv_holds_every_first_relevant_rank(run: Path):
    summary = json.loads((run / "summary.json").read_text())
    with (run / "rank_matrix.csv").open(newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    assert header == ["question_id", *(c["id"] for c in summary["candidates"])]
    assert sorted(r[0] for r in body) == sorted(q[0] for q in QUESTIONS)
    stored = {(r["question_id"], r["candidate"]): r["first_relevant_rank"] for r in _records(run)}
    for row in body:
        for cand, cell in zip(header[1:], row[1:]):
            expected = stored[(row[0], cand)]
            assert cell == ("" if expected is None else str(expected))  # blank = miss


def test_report_pdf_has_its_pages_in_order_and_none_is_blank(run: Path, tmp_path: Path):
    from pypdf import PdfReader

    reader = PdfReader(run / "report.pdf")
    texts = [page.extract_text() for page in reader.pages]
    position = 0
    for title in PAGE_TITLES:  # every section is there, in this order
        found = next((i for i in range(position, len(texts)) if title.lower() in texts[i].lower()), None)
        assert found is not None, f"no page titled {title!r} after page {position + 1}"
        position = found
    assert "minilm" not in texts[0] and "hash/tok24/flat" in texts[0]  # the summary names this run's candidates
    from bench.evaluation.findings import diagnose, findings_lines
    from bench.results.schema import load_run

    stored = load_run(run)
    lines = findings_lines(diagnose(stored.summary, stored.records))
    diagnosis = [t for t in texts if "Diagnosis: what the numbers suggest" in t]
    assert bool(diagnosis) == bool(lines)
    for line in lines:  # every finding is on the page (the PDF wraps long lines)
        assert " ".join(line.split()[:6]) in " ".join(" ".join(diagnosis).split())
    manifest = json.loads((run / "manifest.json").read_text())
    provenance = " ".join(texts[position:])
    assert manifest["corpus"]["sha256"] in provenance and manifest["goldset"]["sha256"] in provenance
    if shutil.which("pdftoppm") is None:
        pytest.skip("pdftoppm (poppler-utils) is not installed: pages were read but not rendered")
    subprocess.run(["pdftoppm", "-r", "30", "-png", str(run / "report.pdf"), str(tmp_path / "page")], check=True)
    import matplotlib.image

    pages = sorted(tmp_path.glob("page*.png"))
    assert len(pages) == len(reader.pages)
    for page in pages:
        pixels = matplotlib.image.imread(page)
        assert pixels[..., :3].std() > 0.02, f"{page.name} looks blank"


def test_bench_report_rewrites_the_same_reports(run: Path, tmp_path: Path):
    copy = tmp_path / run.name
    shutil.copytree(run, copy)
    before = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    for name in ("report.pdf", "inspector.html", "rank_matrix.csv"):
        (copy / name).unlink()
    shutil.rmtree(copy / "plots")
    result = run_cli("report", str(copy))
    assert result.returncode == 0, result.stderr
    after = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    assert after.keys() == before.keys()
    changed = [str(name) for name in after if after[name] != before[name]]
    assert changed == []  # deterministic: the same stored results give byte-identical reports


def test_compare_all_pairs_and_head_to_head(run: Path):
    summary = json.loads((run / "summary.json").read_text())
    ids = [c["id"] for c in summary["candidates"]]
    pairs = run_cli("compare", str(run))
    assert pairs.returncode == 0, pairs.stderr
    assert "Every pair on mrr@3" in pairs.stdout and "Wilcoxon" in pairs.stdout
    assert pairs.stdout.count("/tok24/") + pairs.stdout.count("/rec24/") >= len(ids) * (len(ids) - 1)
    assert "trust the Wilcoxon" in pairs.stdout  # six questions only

    h2h = run_cli("compare", str(run), "--a", ids[0], "--b", ids[-1])
    assert h2h.returncode == 0, h2h.stderr
    assert f"{ids[0]} (A) vs {ids[-1]} (B)" in h2h.stdout.replace("\n", " ")
    for metric in ("mrr@3", "recall@3", "ndcg@3", "hit_rate@3", "precision@3"):
        assert metric in h2h.stdout
    records = _records(run)
    a = {r["question_id"]: r["metrics"]["mrr@3"] for r in records if r["candidate"] == ids[0]}
    b = {r["question_id"]: r["metrics"]["mrr@3"] for r in records if r["candidate"] == ids[-1]}
    wins = sum(a[q] > b[q] for q in a)
    ties = sum(np.isclose(a[q], b[q]) for q in a)
    line = next(
        line
        for line in h2h.stdout.splitlines()
        if line.strip().startswith("│ mrr@3") or line.strip().startswith("mrr@3")
    )
    assert f"{wins}/{ties}/{len(a) - wins - ties}" in line


@pytest.mark.parametrize(
    "args, message",
    [
        (("--a", "hash/tok24/flat"), "give both --a ID and --b ID"),
        (("--a", "hash/tok24/flat", "--b", "nope/x/flat"), "nope/x/flat"),
        (("--metric", "mrr@99"), "--metric mrr@99: not in this run"),
    ],
)
def test_compare_bad_input_is_one_line_and_exit_2(run: Path, args, message):
    result = run_cli("compare", str(run), *args)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_a_second_run_of_the_same_goldset_adds_a_history_page(tmp_path: Path):
    from pypdf import PdfReader

    from tests.helpers import write_project

    config = write_project(tmp_path)
    for _ in range(2):
        result = run_cli("run", str(config), reports=True)
        assert result.returncode == 0, result.stderr
    first, second = finished_runs(tmp_path / "results")
    assert not (first / "plots" / "history.png").exists()  # nothing earlier to compare with
    assert (second / "plots" / "history.png").stat().st_size > 0
    texts = [page.extract_text() for page in PdfReader(second / "report.pdf").pages]
    assert any("History: mrr@3" in t for t in texts)
