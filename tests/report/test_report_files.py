"""The reports a run hands over: rank_matrix.csv, plots, report.pdf, and `bench compare`, via the CLI."""

from __future__ import annotations

import csv
import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from bench.core.operating import Operating
from tests.helpers import QUESTIONS, finished_runs, run_cli
from tests.report.test_pdf import PYTHON_LITERAL

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
    "bench shootout ",  # page 1: the decision
    "Contents",
    "Every candidate, ranked",
    "Latency, throughput and cost",
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
    "Glossary",
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
    ranked = next(t for t in texts if t.startswith("Every candidate, ranked"))
    assert "minilm" not in ranked and "hash/tok24/flat" in ranked  # the summary names this run's candidates
    from bench.evaluation.findings import diagnose
    from bench.report.findings_text import findings_lines
    from bench.results.schema import load_run

    stored = load_run(run)
    lines = findings_lines(diagnose(stored.summary, stored.records), stored.summary)
    diagnosis = [t for t in texts if t.startswith("Diagnosis: what the numbers suggest")]
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


# --- report.pdf: the decision first, then details a reader can find and read --------------------------------


def _pdf_texts(path: Path) -> list[str]:
    from pypdf import PdfReader

    return [page.extract_text() for page in PdfReader(path).pages]


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_page_one_says_what_to_use_how_sure_to_be_and_what_it_costs(run: Path):
    summary = json.loads((run / "summary.json").read_text())
    rec = summary["recommendation"] or {}
    pick = rec.get("pick") or summary["candidates"][0]["id"]
    first = _flat(_pdf_texts(run / "report.pdf")[0])
    assert first.startswith("bench shootout " + run.name)
    assert f"Use {pick}: mrr@3 " in first and "(95% interval " in first
    assert "Equivalent to the best (within ±" in first and "n = 6" in first  # the tied group and its test
    assert "Undecided, too few questions to tell either way: " in first
    assert "p95 ms end to end" in first and "queries / s, 1 thread" in first
    picked = next(c for c in summary["candidates"] if c["id"] == pick)
    if picked["ops"].get("monthly_cost_usd") is not None:
        from bench.formatting import usd

        assert "monthly cost" in first and "Priced at " in first and usd(picked["ops"]["monthly_cost_usd"]) in first
    else:
        assert "monthly cost: set [scale] in bench.toml" in first
    assert "Next things to try" in first and "How sure 6 questions" in first


def test_every_page_is_numbered_and_shows_no_python_value(run: Path):
    texts = _pdf_texts(run / "report.pdf")
    for n, text in enumerate(texts, start=1):
        assert f"page {n} of {len(texts)}" in text, n
        found = PYTHON_LITERAL.search(text)
        assert found is None, (n, found and text[max(0, found.start() - 60) : found.end() + 20])


def test_the_contents_page_gives_the_page_each_section_starts_on(run: Path):
    texts = [_flat(t) for t in _pdf_texts(run / "report.pdf")]
    assert texts[1].startswith("Contents")
    entries = [
        (title, int(number))
        for title, number in re.findall(r"^(.+?) (\d+)$", _pdf_texts(run / "report.pdf")[1], re.M)
        if not re.search(r"page \d+ of", title) and title != "Contents"
    ]
    titles = [title for title, _ in entries]
    for needed in ("Every candidate, ranked", "Head to head: all pairs on mrr@3", "Per tag: mean mrr@3", "Glossary"):
        assert needed in titles
    assert titles[-1] == "Provenance"
    numbers = [number for _, number in entries]
    assert numbers == sorted(numbers) and numbers[0] == 3
    for title, number in entries:
        assert texts[number - 1].startswith(title), (title, number)  # the section starts there
        assert not texts[number - 2].startswith(title), (title, number)  # and not before


def test_the_glossary_defines_every_metric_the_report_shows(run: Path):
    texts = _pdf_texts(run / "report.pdf")
    glossary = "\n".join(t for t in texts if t.startswith("Glossary"))
    summary = json.loads((run / "summary.json").read_text())
    for metric in summary["candidates"][0]["quality"]:
        assert re.search(rf"^{re.escape(metric)} \S.{{30,}}", glossary, re.M), metric
    for term in ("f1@3", "span_iou@3", "evidence_recall@3", "score gap", "end-to-end latency", "monthly cost"):
        assert re.search(rf"^{re.escape(term)} \S.{{30,}}", glossary, re.M), term


def test_the_per_tag_page_gives_each_tags_questions_and_findings(run: Path):
    texts = [_flat(t) for t in _pdf_texts(run / "report.pdf")]
    tags = next(t for t in texts if t.startswith("Per tag"))
    assert "t n = 6" in tags  # the one tag of the tiny goldset, with its six questions
    assert "The pick, " in tags and "Fewer than 10 questions: t (6)" in tags


def test_a_run_stored_before_the_decision_keys_still_gets_its_decision_page(run: Path, tmp_path: Path):
    """A run that predates the recommendation's tied group, test and monthly costs: page 1 works them out
    or says what to set; its provenance says yes/no and – where the manifest holds booleans and nulls."""
    from bench.report.writer import write_reports
    from bench.results.schema import load_run

    copy = tmp_path / run.name
    shutil.copytree(run, copy)
    stored = load_run(copy)
    summary = stored.summary
    old_rec = {key: (summary.recommendation or {}).get(key) for key in ("metric", "margin", "cost_key", "line")}
    new_ops = ("monthly_", "end_to_end_", "qps_", "storage_gb", "index_hours", "cpu_seconds")
    candidates = [
        dataclasses.replace(c, ops=Operating.from_dict({k: v for k, v in c.ops.items() if not k.startswith(new_ops)}))
        for c in summary.candidates
    ]
    old = dataclasses.replace(
        stored,
        summary=dataclasses.replace(summary, recommendation=old_rec, candidates=candidates),
        manifest=dataclasses.replace(
            stored.manifest, config={}, locked=True, lock={"locked": True, "problem": None, "files": ["a", "b"]}
        ),
    )
    write_reports(copy, old)
    texts = _pdf_texts(copy / "report.pdf")
    first = _flat(texts[0])
    best = summary.candidates[0].id
    assert f"Use {best}: mrr@3 " in first  # no pick stored: the best
    assert "Tied with the best: " in first and "Holm-corrected over the 6 pairs on mrr@3" in first
    assert "monthly cost: set [scale] in bench.toml" in first and "p95" in first
    provenance = _flat(texts[-1])
    assert "lock: locked yes" in provenance and "lock: problem –" in provenance and "lock: files a, b" in provenance
    assert not any(PYTHON_LITERAL.search(t) for t in texts)
