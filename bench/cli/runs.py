"""`bench compare`, `history`, `check` and `export`: stored runs, side by side and over time."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from bench.cli.app import main, out_console, results_option
from bench.errors import BenchError
from bench.formatting import plural
from bench.results.export import FORMATS


@main.command()
@click.argument("run_refs", metavar="RUN [RUN_B]", nargs=-1, required=True)
@click.option("--a", "a", metavar="ID", help="First candidate of a head-to-head (with --b).")
@click.option("--b", "b", metavar="ID", help="Second candidate of a head-to-head (with --a).")
@click.option("--metric", metavar="NAME", help="Metric of the all-pairs table (default mrr@k).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the randomisation test and bootstrap.")
@click.option("--force", is_flag=True, help="With two runs: compare even if their corpus, goldset, k or unit differ.")
@results_option()
def compare(
    run_refs: tuple[str, ...], a: str | None, b: str | None, metric: str | None, seed: int, force: bool, results: Path
) -> None:
    """Paired significance tests between candidates of one run: every pair on one metric, or
    --a ID --b ID head to head on every headline metric. Given two runs, how every candidate's
    metrics changed from RUN to RUN_B."""
    if len(run_refs) > 2:
        raise BenchError(
            f"compare: {plural(len(run_refs), 'run')} given; give one run (candidates within it) or two (RUN RUN_B)"
        )
    if len(run_refs) == 2:  # before the statistics imports: two runs need none of them
        _compare_two_runs(run_refs, a, b, metric, force, results)
        return
    if force:
        raise BenchError("--force: only for two runs (RUN RUN_B) whose fingerprints differ; drop it for one run")
    run_ref = run_refs[0]
    from bench.evaluation import significance as stats
    from bench.evaluation.metrics import parse_metric
    from bench.report.terminal import head_to_head_table, pairs_table
    from bench.results import schema, store

    if (a is None) != (b is None):
        raise BenchError("give both --a ID and --b ID for a head-to-head, or neither for every pair")
    run = schema.load_run(store.find_run(run_ref, results))
    summary, records = run.summary, run.records
    out = out_console()
    if a is not None and b is not None:  # both or neither, as checked above
        out.print(head_to_head_table(stats.head_to_head(summary, records, a, b, seed=seed)))
        return
    known = list(summary.candidates[0].quality) if summary.candidates else []
    metric = parse_metric(metric or "mrr", summary.k, "--metric", known, "this run")
    out.print(pairs_table(stats.all_pairs(summary, records, metric=metric, seed=seed), metric))


def _compare_two_runs(
    run_refs: tuple[str, ...], a: str | None, b: str | None, metric: str | None, force: bool, results: Path
) -> None:
    """``bench compare RUN RUN_B``: metric changes per candidate between two runs."""
    from bench.report.history_tables import compare_view
    from bench.results import store
    from bench.results.history import compare_runs

    given = [name for name, value in (("--a", a), ("--b", b), ("--metric", metric)) if value is not None]
    if given:
        raise BenchError(f"{', '.join(given)}: only for candidates within one run; drop it to compare two runs")
    paths = [store.find_run(ref, results) for ref in run_refs]
    out_console().print(compare_view(compare_runs(paths[0], paths[1], force=force)))


@main.command()
@results_option("Folder holding runs.")
@click.option("--candidate", metavar="ID", help="Follow one candidate over time (with --metric).")
@click.option("--metric", metavar="NAME", help="The metric to follow, e.g. mrr (each run's mrr@k) or mrr@5.")
def history(results: Path, candidate: str | None, metric: str | None) -> None:
    """Stored runs oldest first, with fingerprints and headline metrics; or, with --candidate and
    --metric, one candidate's metric run by run."""
    from bench.evaluation.metrics import parse_metric
    from bench.report.history_tables import runs_table, trend_table
    from bench.results.history import list_runs, trend_points

    if (candidate is None) != (metric is None):
        raise BenchError("give both --candidate ID and --metric NAME for a trend, or neither for the list of runs")
    if metric is not None:
        metric = parse_metric(metric, None, "--metric")  # a bare name: each run's own k
    runs = list_runs(results)
    for note in runs.notes:
        click.echo(f"bench: note: {note}", err=True)
    if not runs:
        click.echo(f"no finished runs under {results} yet; `bench run` makes one")
        return
    if candidate is None or metric is None:  # both or neither, as checked above
        out_console().print(runs_table(runs, results))
        return
    points = trend_points(runs, candidate, metric)
    label = metric if "@" in metric else f"{metric}@k"  # a bare name: each run's own k
    out_console().print(trend_table(points, candidate, label, {r.run_id: r.k for r in runs}))


@main.command()
@click.argument("run_ref", metavar="RUN")
@click.option(
    "--baseline",
    "baseline_ref",
    metavar="RUN_OR_FILE",
    help="What to check against: a file written by --save-baseline, or a run (folder, id, latest).",
)
@click.option(
    "--save-baseline",
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="Write RUN's metrics to FILE as the baseline to commit, instead of checking.",
)
@click.option(
    "--max-drop",
    type=float,
    default=0.0,
    show_default=True,
    help="Largest absolute drop allowed for any metric, e.g. 0.02.",
)
@click.option(
    "--metrics",
    metavar="LIST",
    help="Comma-separated metrics to check, e.g. mrr@5,recall@5 ('@k' may be left off); default: all.",
)
@click.option("--force", is_flag=True, help="Check even if corpus, goldset, k or unit differ from the baseline's.")
@results_option()
def check(
    run_ref: str,
    baseline_ref: str | None,
    save_baseline: Path | None,
    max_drop: float,
    metrics: str | None,
    force: bool,
    results: Path,
) -> None:
    """Regression gate: exit 1 when a metric of RUN dropped below the baseline by more than
    --max-drop, or a baseline candidate is missing; exit 0 otherwise."""
    from bench.evaluation.metrics import parse_metric
    from bench.report.history_tables import check_failure_line, check_table
    from bench.results import gate, store

    exactly_one = "give exactly one of --baseline RUN_OR_FILE (to check) or --save-baseline FILE (to record)"
    if (baseline_ref is None) == (save_baseline is None):
        raise BenchError(exactly_one)
    path = store.find_run(run_ref, results)
    if save_baseline is not None:
        saved = gate.save_baseline(path, save_baseline)
        click.echo(f"baseline: {save_baseline} ({plural(len(saved['metrics']), 'candidate')} of {saved['run_id']})")
        return
    if baseline_ref is None:  # ruled out above once --save-baseline has returned
        raise BenchError(exactly_one)
    names = None if metrics is None else [m.strip() for m in metrics.split(",") if m.strip()]
    if names == []:
        raise BenchError("--metrics: empty; give names like mrr@5,recall@5, or leave the option out for all")
    baseline = gate.load_baseline(baseline_ref, results)
    wanted = None
    if names is not None:
        known = list(dict.fromkeys(m for quality in baseline["metrics"].values() for m in quality))
        wanted = [parse_metric(name, baseline["k"], "--metrics", known, "the baseline") for name in names]
    result = gate.check(path, baseline, max_drop, wanted, force=force)
    _note_uncalibrated(path, wanted)
    if result.forced:
        click.echo(f"forced: not comparable with the baseline ({'; '.join(result.forced)})")
    if result.new:
        click.echo(f"new since the baseline (not checked): {', '.join(result.new)}")
    if result.ok:
        click.echo(
            f"ok: no metric of {plural(result.candidates_checked, 'candidate')} dropped by more than {max_drop:g} "
            f"({plural(result.metrics_checked, 'metric')} checked)"
        )
        return
    out_console().print(check_table(result))
    click.echo(check_failure_line(result))
    sys.exit(1)


def _note_uncalibrated(run: Path, metrics: list[str] | None) -> None:
    """A judge's answer figures are checked like any metric, but never without saying they are uncalibrated."""
    from bench.evaluation.answers import UNCALIBRATED
    from bench.evaluation.metrics import ANSWER_METRICS
    from bench.results.history import read_run

    info = read_run(run)
    checked = [m for m in info.answers if metrics is None or m in metrics]
    if checked and info.answers_status == UNCALIBRATED:
        click.echo(
            f"note: {', '.join(m for m in ANSWER_METRICS if m in checked)} of {info.answers_candidate} are a "
            "judge's labels, uncalibrated (`bench answers agree` compares them with a person's)"
        )


@main.command()
@click.argument("run_ref", metavar="RUN")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(FORMATS)),
    required=True,
    help="trec: run + qrels files per candidate; ranx: their JSON; csv/parquet: one per-question table.",
)
@click.option("--out", type=click.Path(path_type=Path), help="Folder to write into (default RUN/export/FORMAT).")
@results_option()
def export(run_ref: str, fmt: str, out: Path | None, results: Path) -> None:
    """Write a stored run for trec_eval, ranx, or a spreadsheet/dataframe (see docs/export.md)."""
    from bench.results import store
    from bench.results.export import export_run

    path = store.find_run(run_ref, results)
    folder = out or path / "export" / fmt
    written = export_run(path, folder, fmt)
    out_console().print(f"wrote {plural(len(written), f'{fmt} file')} under {folder}", soft_wrap=True, markup=False)
