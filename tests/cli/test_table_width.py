"""Every table bench prints fits a terminal of 100 columns (a rich Console of width 100, as with
COLUMNS=100) without cutting a candidate id, a run id or a number.

Each table is rendered twice, at 100 columns and at 1,000 (where nothing needs to give way), and the
words of the wide one must all be whole in the narrow one: a cell cut with "…" or folded across
lines loses its word. Ids and figures taken from the run itself are looked for as well, so that a
table broken the same way at both widths fails too. The runs have pipeline ids as long as real ones
(``hash+bm25/recursive24/flat@convex0.3>hash@5``, 43 characters).
"""

from __future__ import annotations

import io
import re
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console

from bench.results import gate, schema, store
from bench.results.history import compare_runs, list_runs, trend_points
from tests.helpers import CONFIG, DOCS, next_second, run_cli, write_project

WIDTH = 100
LONG_IDS = (
    CONFIG.replace(
        'models = ["hash", "bm25"]', 'models = ["hash", "bm25"]\nfusions = ["hash+bm25"]\nrerankers = ["hash"]'
    )
    .replace("[chunkers.tok24]", "[chunkers.tokens24]")
    .replace("[chunkers.rec24]", "[chunkers.recursive24]")
    + '\n[fusion."hash+bm25"]\nmethod = ["rrf", "convex"]\nweights = [0.3]\n\n[reranker.hash]\ntop = [5]\n'
)
_BOX = re.compile(r"[\u2500-\u257f]")  # box drawing: the tables' lines, not their words


def render(renderable, width: int) -> str:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.export_text()


def words(text: str) -> Counter:
    return Counter(_BOX.sub(" ", text).split())


def assert_fits(renderable, expected: list[str]) -> str:
    """``renderable`` at WIDTH columns: no line longer, nothing cut, every word of the wide rendering
    and every one of ``expected`` (as many times as listed) whole."""
    narrow = render(renderable, WIDTH)
    assert max(len(line) for line in narrow.splitlines()) <= WIDTH
    found = words(narrow)
    lost = words(render(renderable, 1000)) - found
    assert not lost, f"cut or folded at {WIDTH} columns: {sorted(lost)[:8]}\n{narrow}"
    missing = Counter(expected) - found
    assert not missing, f"not shown whole at {WIDTH} columns: {sorted(missing)[:8]}\n{narrow}"
    return narrow


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """Two runs with long pipeline ids; the corpus changes between them (history marks it)."""
    root = tmp_path_factory.mktemp("wide")
    config = write_project(root, LONG_IDS)
    for step in range(2):
        if step:
            next_second()
            (root / "corpus" / "ops" / "oncall.txt").write_text(DOCS["ops/oncall.txt"] + "\nNotes live in the wiki.\n")
        result = run_cli("run", str(config))
        assert result.returncode == 0, result.stderr
    return root


@pytest.fixture(scope="module")
def stored(project: Path) -> schema.StoredRun:
    return schema.load_run(store.find_run("latest", project / "results"))


def _ids(run: schema.StoredRun) -> list[str]:
    ids = [c.id for c in run.summary.candidates]
    assert max(map(len, ids)) >= 43, ids
    return ids


# --- the tables of runs over time (bench/report/history_tables.py) ----------------------------------------


def test_history_shows_every_run_id_candidate_id_and_metric_whole(project: Path):
    from bench.report.history_tables import runs_table

    runs = list_runs(project / "results")
    expected = [r.run_id for r in runs]
    for run in runs:
        for cid in run.candidates:
            expected += [cid, *(f"{v:.3f}" for v in run.headline(cid).values())]
    text = assert_fits(runs_table(runs, project / "results"), expected)
    assert runs[1].corpus_sha256[:12] in text


def test_a_trend_shows_its_run_ids_values_and_changes_whole(project: Path, stored):
    from bench.report.history_tables import trend_table

    runs = list_runs(project / "results")
    cid = max(_ids(stored), key=len)
    points = trend_points(runs, cid, "mrr")
    expected = [cid, *(p.run_id for p in points), *(f"{p.value:.4f}" for p in points), "changed"]
    assert_fits(trend_table(points, cid, "mrr@3", {r.run_id: r.k for r in runs}), expected)


def test_comparing_two_runs_shows_ids_and_both_values_whole(project: Path, stored):
    from bench.report.history_tables import compare_view

    a, b = (store.find_run(r.run_id, project / "results") for r in list_runs(project / "results"))
    result = compare_runs(a, b, force=True)  # the corpus changed between them
    headline = ["mrr@3", "recall@3", "ndcg@3", "hit_rate@3", "precision@3"]
    expected = list(result["deltas"]) + headline
    for deltas in result["deltas"].values():
        expected += [f"{deltas[name][side]:.3f}" for name in headline for side in ("a", "b")]
    assert set(result["deltas"]) == set(_ids(stored))
    assert_fits(compare_view(result), expected)


def test_a_failed_check_shows_candidates_metrics_and_figures_whole(project: Path, stored):
    from bench.report.history_tables import check_table

    runs = list_runs(project / "results")
    baseline = gate.baseline_from_run(runs[0].path)
    for quality in baseline["metrics"].values():
        for name in quality:
            quality[name] += 0.25  # every metric of every candidate dropped
    baseline["metrics"]["gone+bm25/recursive24/flat@convex0.3>hash@5"] = {"mrr@3": 1.0}
    result = gate.check(runs[1].path, baseline, 0.0, force=True)
    assert result.regressions and result.missing
    expected = [r.candidate for r in result.regressions] + [r.metric for r in result.regressions]
    expected += [f"{r.baseline:.4f}" for r in result.regressions] + list(result.missing)
    assert_fits(check_table(result), expected)


# --- bench/report/terminal.py's tables -----------------------------------------------------------------------


def test_the_shootout_table_fits(stored):
    from bench.report.terminal import shootout_table

    k = stored.summary.k
    expected = _ids(stored) + [f"{c.quality[f'mrr@{k}']:.3f}" for c in stored.summary.candidates]
    assert_fits(shootout_table(stored.summary), expected)


def test_the_diagnostics_table_fits(stored):
    from bench.report.terminal import diagnostics_table

    expected = _ids(stored) + [f"{c.curve['hit_rate@1']:.3f}" for c in stored.summary.candidates]
    assert_fits(diagnostics_table(stored.summary), expected)


def test_every_pair_of_compare_fits(stored):
    from bench.evaluation import significance
    from bench.report.terminal import pairs_table

    pairs = significance.all_pairs(stored.summary, stored.records, metric="mrr@3", seed=0)
    expected = [p["a"] for p in pairs] + [p["b"] for p in pairs] + [f"{p['mean_diff']:+.3f}" for p in pairs]
    assert_fits(pairs_table(pairs, "mrr@3"), expected)


def test_a_head_to_head_fits(stored):
    from bench.evaluation import significance
    from bench.report.terminal import head_to_head_table

    ids = sorted(_ids(stored), key=len)
    h2h = significance.head_to_head(stored.summary, stored.records, ids[-1], ids[-2], seed=0)
    expected = [ids[-1], ids[-2], *(f"{m['mean_a']:.3f}" for m in h2h["metrics"].values())]
    assert_fits(head_to_head_table(h2h), expected)


def test_the_dry_run_table_fits(project: Path):
    from bench.config import load_config
    from bench.report.terminal import plan_table
    from bench.run.dry_run import dry_run

    planned = dry_run(load_config(project / "bench.toml"), console=Console(file=io.StringIO()))
    expected = [p.candidate.id for p in planned] + [f"{p.question_tokens:,}" for p in planned]
    assert max(map(len, expected)) >= 43
    assert_fits(plan_table(planned), expected)


def test_the_model_list_fits():
    from bench.embedders import MODELS
    from bench.report.terminal import models_table

    assert_fits(models_table(), list(MODELS))


def test_goldset_stats_and_chunk_and_corpus_tables_fit(project: Path):
    from bench.chunking.sizes import chunk_stats
    from bench.config import load_config
    from bench.inputs.corpus import load_corpus
    from bench.inputs.corpus_stats import corpus_stats
    from bench.inputs.goldset import load_goldset
    from bench.inputs.goldset_stats import goldset_stats
    from bench.report.corpus_view import corpus_stats_tables
    from bench.report.terminal import chunk_table, stats_tables
    from bench.run.dry_run import tables_without_models

    config = load_config(project / "bench.toml")
    corpus = load_corpus(config.corpus)
    stats = goldset_stats(load_goldset(config.goldset, corpus), corpus)
    for table in stats_tables(stats, title=str(config.goldset)):
        assert_fits(table, [str(stats["questions"])])
    tables, _ = tables_without_models(config, corpus)
    kinds = {c.name: c.kind for c in config.chunkers}
    sizes = [chunk_stats(name, kinds[name], t) for name, t in tables.items()]
    assert_fits(chunk_table(sizes, []), [s.chunker for s in sizes] + [f"{s.chunks:,}" for s in sizes])
    for table in corpus_stats_tables(corpus_stats(corpus)):
        assert_fits(table, [])
