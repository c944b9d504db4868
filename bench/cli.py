"""Command line: parses arguments and calls one library function per command."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from bench import __version__
from bench.errors import BenchError

if TYPE_CHECKING:
    from bench.config import Config
    from bench.results.schema import QuestionRecord, RunSummary

EXIT_BAD_INPUT = 2


def _stderr():
    from bench.report.terminal import console

    return console(stderr=True)


def _stdout():
    from bench.report.terminal import console

    return console()


class _Group(click.Group):
    """Turns BenchError into one line on stderr and exit code 2; Ctrl-C into exit 130."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BenchError as e:
            click.echo(f"bench: error: {e}", err=True)
            ctx.exit(EXIT_BAD_INPUT)
        except KeyboardInterrupt:
            click.echo("bench: interrupted; nothing half-written was kept", err=True)
            ctx.exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, prog_name="bench")
def main() -> None:
    """Which embedding model, chunker and vector index suit your documents, and at what cost."""


@main.command()
@click.argument("config", default="bench.toml", type=click.Path(path_type=Path))
@click.option("--k", "k", type=int, help="Cutoff for every metric (1..50); overrides the config.")
@click.option("--results", type=click.Path(path_type=Path), help="Where runs are written; overrides the config.")
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path),
    help="Embedding cache folder; overrides the config and $BENCH_CACHE_DIR.",
)
@click.option("--no-cache", is_flag=True, help="Embed everything again instead of reusing cached vectors.")
@click.option(
    "--no-report",
    is_flag=True,
    help="Skip plots, report.pdf and inspector.html (`bench report RUN` writes them later).",
)
@click.option(
    "--remeasure", is_flag=True, help="Time query encoding again instead of reusing this machine's earlier timings."
)
@click.option("--only", multiple=True, metavar="PATTERN", help="Run only candidates whose id matches (glob).")
@click.option("--skip", multiple=True, metavar="PATTERN", help="Leave out candidates whose id matches (glob).")
@click.option("--dry-run", is_flag=True, help="Show the grid, token counts and estimated cost; embed nothing.")
@click.option("--allow-unlocked", is_flag=True, help="Run even if the goldset or corpus changed since its lock.")
@click.option(
    "--engine",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where corpus embedding runs: this process, or Ray (local, or the cluster in $RAY_ADDRESS).",
)
def run(
    config: Path,
    k: int | None,
    results: Path | None,
    cache_dir: Path | None,
    no_cache: bool,
    no_report: bool,
    remeasure: bool,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    dry_run: bool,
    allow_unlocked: bool,
    engine: str,
) -> None:
    """Run the shootout described by CONFIG (default bench.toml)."""
    from bench.config import load_config
    from bench.report.terminal import diagnostics_table, shootout_table

    cfg = load_config(config).with_overrides(k=k, results=results, cache_override=cache_dir)
    _refuse_before_running(cfg, only, skip, writes=not dry_run)
    if dry_run:
        from bench.report.terminal import plan_table
        from bench.run.dry_run import dry_run as plan_run

        _stdout().print(plan_table(plan_run(cfg, only, skip)))
        return
    from bench.run.shootout import run_shootout

    outcome = run_shootout(
        cfg,
        _stderr(),
        use_cache=not no_cache,
        allow_unlocked=allow_unlocked,
        only=only,
        skip=skip,
        remeasure=remeasure,
        reports=not no_report,
        engine=engine,
    )
    out = _stdout()
    out.print(shootout_table(outcome.summary))
    out.print(diagnostics_table(outcome.summary))
    _print_diagnosis(out, outcome.summary, outcome.records)
    if outcome.summary.recommendation:
        out.print(outcome.summary.recommendation["line"], markup=False)
    out.print(f"results: {outcome.path}")
    if not no_report:
        out.print(f"report: {outcome.path / 'report.pdf'}   inspector: {outcome.path / 'inspector.html'}")


def _refuse_before_running(cfg: Config, only: tuple[str, ...], skip: tuple[str, ...], writes: bool) -> None:
    """Refuse what the run would reject only after printing its header (an empty grid, a results
    folder that cannot be made), so that the error is the only line."""
    cfg.candidates(only, skip)
    if writes:
        _check_results_folder(cfg.results)


def _check_results_folder(results: Path) -> None:
    """The nearest existing folder on the way to ``results`` must be a writable folder; nothing is created."""
    existing = results
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    problem = (
        "is not a folder"
        if not existing.is_dir()
        else "is not writable"
        if not os.access(existing, os.W_OK | os.X_OK)
        else None
    )
    if problem:
        raise BenchError(f"{results}: cannot write results there ({existing} {problem}); pass --results DIR")


def _print_diagnosis(out, summary: RunSummary, records: list[QuestionRecord]) -> None:
    """What the numbers suggest, in plain words (bench.evaluation.findings), under the tables."""
    from rich.markup import escape

    from bench.evaluation.findings import diagnose, findings_lines

    lines = findings_lines(diagnose(summary, records))
    if lines:
        out.print("[bold]Diagnosis[/]")
        for line in lines:
            out.print(f"- {escape(line)}")


@main.command()
@click.argument("config", default="bench.toml", type=click.Path(path_type=Path))
def chunk(config: Path) -> None:
    """Chunk the corpus with every chunker of CONFIG and show counts and sizes; embeds nothing."""
    from bench.chunking.sizes import chunk_stats
    from bench.config import load_config
    from bench.inputs.corpus import load_corpus
    from bench.report.terminal import chunk_table
    from bench.run.dry_run import tables_without_models

    cfg = load_config(config)
    tables, skipped = tables_without_models(cfg, load_corpus(cfg.corpus))
    kinds = {c.name: c.kind for c in cfg.chunkers}
    _stdout().print(chunk_table([chunk_stats(name, kinds[name], t) for name, t in tables.items()], skipped))


@main.command()
@click.argument("run_ref", metavar="RUN")
@click.option(
    "--results",
    type=click.Path(path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Folder holding runs, for RUN given as an id or 'latest'.",
)
def report(run_ref: str, results: Path) -> None:
    """Recompute a stored run's metrics from its rankings (no model is loaded), show them, and
    write rank_matrix.csv, plots/, report.pdf and inspector.html again."""
    from bench.report.terminal import diagnostics_table, shootout_table
    from bench.results.recompute import recompute

    _, run, differences = recompute(run_ref, results)
    # the plotting libraries load only once the run is found, so a wrong RUN fails at once
    from bench.report.writer import write_reports

    path = run.path
    out = _stdout()
    out.print(shootout_table(run.summary, title=f"{path.name}: recomputed from stored rankings"))
    out.print(diagnostics_table(run.summary))
    _print_diagnosis(out, run.summary, run.records)
    with _stderr().status("writing rank_matrix.csv, plots, report.pdf and inspector.html"):
        written = write_reports(path, run)
    out.print(f"wrote {len(written.files)} files under {path} (report.pdf: {written.pdf_pages} pages)")
    if differences:
        click.echo(
            f"bench: warning: {len(differences)} figures differ from summary.json, e.g. {differences[0]}", err=True
        )
        sys.exit(1)


@main.command()
@click.argument("run_refs", metavar="RUN [RUN_B]", nargs=-1, required=True)
@click.option("--a", "a", metavar="ID", help="First candidate of a head-to-head (with --b).")
@click.option("--b", "b", metavar="ID", help="Second candidate of a head-to-head (with --a).")
@click.option("--metric", metavar="NAME", help="Metric of the all-pairs table (default mrr@k).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the randomisation test and bootstrap.")
@click.option("--force", is_flag=True, help="With two runs: compare even if their corpus, goldset, k or unit differ.")
@click.option(
    "--results",
    type=click.Path(path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Folder holding runs, for RUN given as an id or 'latest'.",
)
def compare(
    run_refs: tuple[str, ...], a: str | None, b: str | None, metric: str | None, seed: int, force: bool, results: Path
) -> None:
    """Paired significance tests between candidates of one run: every pair on one metric, or
    --a ID --b ID head to head on every headline metric. Given two runs, how every candidate's
    metrics changed from RUN to RUN_B."""
    if len(run_refs) > 2:
        raise BenchError(f"compare: {len(run_refs)} runs given; give one run (candidates within it) or two (RUN RUN_B)")
    if len(run_refs) == 2:  # before the statistics imports: two runs need none of them
        _compare_two_runs(run_refs, a, b, metric, force, results)
        return
    if force:
        raise BenchError("--force: only for two runs (RUN RUN_B) whose fingerprints differ; drop it for one run")
    run_ref = run_refs[0]
    from bench.evaluation import significance as stats
    from bench.evaluation.metrics import metric_key
    from bench.report.terminal import head_to_head_table, pairs_table
    from bench.results import schema, store

    if (a is None) != (b is None):
        raise BenchError("give both --a ID and --b ID for a head-to-head, or neither for every pair")
    run = schema.load_run(store.find_run(run_ref, results))
    summary, records = run.summary, run.records
    out = _stdout()
    if a is not None:
        out.print(head_to_head_table(stats.head_to_head(summary, records, a, b, seed=seed)))
        return
    metric = metric or metric_key("mrr", summary.k)
    known = summary.candidates[0].quality if summary.candidates else {}
    if metric not in known:
        raise BenchError(f"--metric {metric}: not in this run; choose one of {', '.join(known)}")
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
    _stdout().print(compare_view(compare_runs(paths[0], paths[1], force=force)))


@main.command()
@click.option(
    "--results",
    type=click.Path(path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Folder holding runs.",
)
@click.option("--candidate", metavar="ID", help="Follow one candidate over time (with --metric).")
@click.option("--metric", metavar="NAME", help="The metric to follow, e.g. mrr (each run's mrr@k) or mrr@5.")
def history(results: Path, candidate: str | None, metric: str | None) -> None:
    """Stored runs oldest first, with fingerprints and headline metrics; or, with --candidate and
    --metric, one candidate's metric run by run."""
    from bench.report.history_tables import runs_table, trend_table
    from bench.results.history import list_runs, trend_points

    if (candidate is None) != (metric is None):
        raise BenchError("give both --candidate ID and --metric NAME for a trend, or neither for the list of runs")
    runs = list_runs(results)
    for note in runs.notes:
        click.echo(f"bench: note: {note}", err=True)
    if not runs:
        click.echo(f"no finished runs under {results} yet; `bench run` makes one")
        return
    if candidate is None:
        _stdout().print(runs_table(runs, results))
        return
    points = trend_points(runs, candidate, metric)
    _stdout().print(trend_table(points, candidate, metric, {r.run_id: r.k for r in runs}))


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
@click.option(
    "--results",
    type=click.Path(path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Folder holding runs, for RUN given as an id or 'latest'.",
)
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
    from bench.report.history_tables import check_failure_line, check_table
    from bench.results import gate, store

    if (baseline_ref is None) == (save_baseline is None):
        raise BenchError("give exactly one of --baseline RUN_OR_FILE (to check) or --save-baseline FILE (to record)")
    path = store.find_run(run_ref, results)
    if save_baseline is not None:
        saved = gate.save_baseline(path, save_baseline)
        click.echo(f"baseline: {save_baseline} ({len(saved['metrics'])} candidates of {saved['run_id']})")
        return
    wanted = None if metrics is None else [m.strip() for m in metrics.split(",") if m.strip()]
    if wanted == []:
        raise BenchError("--metrics: empty; give names like mrr@5,recall@5, or leave the option out for all")
    result = gate.check(path, gate.load_baseline(baseline_ref, results), max_drop, wanted, force=force)
    if result.forced:
        click.echo(f"forced: not comparable with the baseline ({'; '.join(result.forced)})")
    if result.new:
        click.echo(f"new since the baseline (not checked): {', '.join(result.new)}")
    if result.ok:
        click.echo(
            f"ok: no metric of {result.candidates_checked} candidates dropped by more than {max_drop:g} "
            f"({result.metrics_checked} metrics checked)"
        )
        return
    _stdout().print(check_table(result))
    click.echo(check_failure_line(result))
    sys.exit(1)


@main.command()
@click.argument("run_ref", metavar="RUN")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["trec", "ranx", "csv", "parquet"]),
    required=True,
    help="trec: run + qrels files per candidate; ranx: their JSON; csv/parquet: one per-question table.",
)
@click.option("--out", type=click.Path(path_type=Path), help="Folder to write into (default RUN/export/FORMAT).")
@click.option(
    "--results",
    type=click.Path(path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Folder holding runs, for RUN given as an id or 'latest'.",
)
def export(run_ref: str, fmt: str, out: Path | None, results: Path) -> None:
    """Write a stored run for trec_eval, ranx, or a spreadsheet/dataframe (see docs/export.md)."""
    from bench.results import store
    from bench.results.export import export_run

    path = store.find_run(run_ref, results)
    folder = out or path / "export" / fmt
    written = export_run(path, folder, fmt)
    _stdout().print(f"wrote {len(written)} {fmt} file(s) under {folder}", soft_wrap=True, markup=False)


@main.group(invoke_without_command=True)
@click.pass_context
def models(ctx: click.Context) -> None:
    """List the models bench knows, without loading any weights."""
    if ctx.invoked_subcommand is None:
        from bench.report.terminal import models_table

        _stdout().print(models_table())


@models.command()
@click.argument("name")
@click.option("--cache-dir", type=click.Path(path_type=Path), help="Where prepared models are kept.")
def install(name: str, cache_dir: Path | None) -> None:
    """Prepare an opt-in model that is too large for the default install (e.g. mpnet)."""
    from bench.embedders import paths
    from bench.embedders.install import install_model

    path = install_model(name, paths.models_dir(paths.cache_root(cache_dir)), echo=click.echo)
    click.echo(f"installed: {path}")


@main.group()
def goldset() -> None:
    """Validate, lock, describe and import goldsets."""


_corpus_option = click.option(
    "--corpus",
    type=click.Path(path_type=Path),
    help="The goldset's corpus (default: from its lock, else corpora/<name>).",
)


def _load_pair(file: Path, corpus_path: Path | None):
    from bench.inputs.corpus import load_corpus
    from bench.inputs.lock import corpus_for

    return load_corpus(corpus_path or corpus_for(file))


@goldset.command()
@click.argument("file", type=click.Path(path_type=Path))
@_corpus_option
def validate(file: Path, corpus: Path | None) -> None:
    """Check every question: quotes found exactly once, ids unique, grades positive integers."""
    from bench.inputs.goldset import validate_goldset

    errors = validate_goldset(file, _load_pair(file, corpus))
    for line in errors:
        click.echo(line, err=True)
    if errors:
        click.echo(f"bench: {len(errors)} problem(s) in {file}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    click.echo(f"{file}: ok")


@goldset.command()
@click.argument("file", type=click.Path(path_type=Path))
@_corpus_option
def lock(file: Path, corpus: Path | None) -> None:
    """Record the sha256 of the goldset and its corpus in <name>.lock.json."""
    from bench.inputs.goldset import load_goldset
    from bench.inputs.lock import write_lock

    docs = _load_pair(file, corpus)
    path = write_lock(load_goldset(file, docs), docs)
    click.echo(f"locked: {path}")


@goldset.command()
@click.argument("file", type=click.Path(path_type=Path))
@_corpus_option
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def stats(file: Path, corpus: Path | None, as_json: bool) -> None:
    """Questions, evidence per question, grades, tags, and how much of the corpus the evidence covers."""
    import json

    from bench.inputs.goldset import load_goldset
    from bench.inputs.goldset_stats import goldset_stats
    from bench.report.terminal import stats_tables

    docs = _load_pair(file, corpus)
    figures = goldset_stats(load_goldset(file, docs), docs)
    if as_json:
        click.echo(json.dumps(figures, indent=2))
        return
    out = _stdout()
    for table in stats_tables(figures, title=str(file)):
        out.print(table)


@goldset.group(name="import")
def import_() -> None:
    """Turn another tool's benchmark data into a corpus and goldset bench runs."""


_import_options = [
    click.option("--name", help="Name of the corpus and goldset written (default: the source folder's name)."),
    click.option(
        "--out",
        type=click.Path(path_type=Path),
        default=Path("."),
        show_default=True,
        help="Folder that receives corpora/, goldsets/ and <name>.toml.",
    ),
    click.option("--force", is_flag=True, help="Replace an existing corpus and goldset of that name."),
]


def _with_import_options(f):
    for option in reversed(_import_options):
        f = option(f)
    return f


def _report_import(result) -> None:
    click.echo(f"corpus:  {result.corpus} ({result.documents} documents)")
    click.echo(f"goldset: {result.goldset} ({result.questions} questions)")
    for what, n in result.dropped.items():
        click.echo(f"  {what.replace('_', ' ')}: {n}")
    if result.config:
        click.echo(f"config:  {result.config}   next: bench goldset lock {result.goldset} && bench run {result.config}")


@import_.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.option("--split", default="test", show_default=True, help="Which qrels/<split>.tsv to import.")
@_with_import_options
def beir(source: Path, split: str, name: str | None, out: Path, force: bool) -> None:
    """A BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv): documents are the unit."""
    from bench.inputs.importers import import_beir
    from bench.inputs.importers.base import Destination

    _report_import(import_beir(source, Destination(out, name or Path(source).resolve().name, force), split))


@import_.command()
@click.option("--qrels", required=True, type=click.Path(path_type=Path), help="TREC qrels: qid iter docid rel.")
@click.option("--topics", required=True, type=click.Path(path_type=Path), help="TREC <top> topics or qid<TAB>text.")
@click.option(
    "--corpus",
    "corpus_path",
    required=True,
    type=click.Path(path_type=Path),
    help="Documents: a bench corpus (folder, JSONL, BEIR) or a TREC <DOC> file.",
)
@click.option("--topic-field", default="title", show_default=True, help="title, desc or title+desc.")
@_with_import_options
def trec(
    qrels: Path, topics: Path, corpus_path: Path, topic_field: str, name: str | None, out: Path, force: bool
) -> None:
    """TREC qrels and topics: documents are the unit."""
    from bench.inputs.importers import import_trec
    from bench.inputs.importers.base import Destination

    dest = Destination(out, name or Path(qrels).stem, force)
    _report_import(import_trec(qrels, topics, corpus_path, dest, topic_field))


@import_.command()
@click.argument("source", type=click.Path(path_type=Path))
@_with_import_options
def chroma(source: Path, name: str | None, out: Path, force: bool) -> None:
    """Chroma's chunking evaluation (questions_df.csv + corpora/<id>.md): spans, chunks are the unit."""
    from bench.inputs.importers import import_chroma
    from bench.inputs.importers.base import Destination

    _report_import(import_chroma(source, Destination(out, name or Path(source).resolve().name, force)))
