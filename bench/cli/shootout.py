"""`bench run`, `bench chunk` and `bench report`: a shootout and what it shows."""

from __future__ import annotations

import dataclasses
import errno
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from bench.cli.app import err_console, main, out_console, results_option
from bench.cli.chat_options import STOP_BEFORE, ChatOptions, chat_options
from bench.cli.corpus import strict_option
from bench.engines import ENGINES
from bench.errors import RESULTS_ELSEWHERE, BenchError, os_fault
from bench.run.options import DEFAULTS, RunOptions

if TYPE_CHECKING:
    from rich.console import Console

    from bench.config import Config
    from bench.results.schema import QuestionRecord, RunSummary


@main.command()
@click.argument("config", default=DEFAULTS.config, type=click.Path(path_type=Path))
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
@click.option(
    "--dry-run",
    is_flag=True,
    help="Show the grid, token counts and estimated cost; check the lock, API keys and that services "
    "answer; embed nothing.",
)
@click.option("--allow-unlocked", is_flag=True, help="Run even if the goldset or corpus changed since its lock.")
@strict_option
@click.option(
    "--engine",
    type=click.Choice(list(ENGINES)),
    default=DEFAULTS.engine,
    show_default=True,
    help="Where corpus embedding runs: this process, or Ray (local, or the cluster in $RAY_ADDRESS).",
)
@click.option(
    "--perturb",
    metavar="KINDS",
    help="Ask every question again as people type it: typos, case, punctuation, width (comma-separated; "
    "overrides the config's perturb; '' for none).",
)
@click.option(
    "--questions",
    type=click.Path(path_type=Path),
    help="Questions only, no goldset yet (one a line, or JSONL): a relevance judge (--judge-model) grades "
    "every candidate's top k, marked uncalibrated on every page.",
)
@chat_options(
    "--judge-model", "With --questions: the chat model that grades relevance, by the name its server knows it.",
    required=False, max_cost_help=f"The run's budget for chat calls (overrides [llm] max_cost). {STOP_BEFORE}",
)  # fmt: skip
def run(dry_run: bool, no_cache: bool, no_report: bool, chat: ChatOptions, **options: Any) -> None:
    """Run the shootout described by CONFIG (default bench.toml)."""
    from bench.report.decision_text import recommendation_line
    from bench.report.judge_text import judge_lines
    from bench.report.terminal import diagnostics_table, shootout_table

    judge = chat.settings(needed_by="--questions") if options.get("questions") is not None else None
    # every other option is a RunOptions field of the same name
    run_options = RunOptions(
        use_cache=not no_cache, reports=not no_report, judge=judge, max_cost=chat.max_cost, **options
    )
    cfg = run_options.load_config()
    _refuse_before_running(cfg, run_options, writes=not dry_run)
    run_options = dataclasses.replace(run_options, config=cfg)
    if dry_run:
        from bench.report.terminal import plan_table
        from bench.run.dry_run import dry_run as plan_run

        out_console().print(plan_table(plan_run(run_options, err_console())))
        return
    from bench.run.shootout import run_shootout

    outcome = run_shootout(run_options, err_console())
    out = out_console()
    out.print(shootout_table(outcome.summary))
    out.print(diagnostics_table(outcome.summary))
    _print_robustness(out, outcome.summary)
    _print_diagnosis(out, outcome.summary, outcome.records)
    if outcome.summary.recommendation:
        out.print(recommendation_line(outcome.summary), markup=False)
    for line in judge_lines(outcome.summary):
        out.print(line, markup=False)
    out.print(f"results: {outcome.path}")
    if run_options.reports:
        out.print(f"report: {outcome.path / 'report.pdf'}   inspector: {outcome.path / 'inspector.html'}")


def _refuse_before_running(cfg: Config, options: RunOptions, writes: bool) -> None:
    """Refuse what the run would reject only after printing its header (an empty grid, a results
    folder that cannot be made), so that the error is the only line."""
    cfg.candidates(options.only, options.skip)
    if writes:
        _check_results_folder(cfg.results)


def _check_results_folder(results: Path) -> None:
    """The nearest existing folder on the way to ``results`` must be a writable folder; nothing is created."""
    existing = results
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise BenchError(f"{results}: cannot write results there ({existing} is not a folder); pass --results DIR")
    if not os.access(existing, os.W_OK | os.X_OK):  # the machine's refusal, not the input's: exit 3
        code = errno.EROFS if _read_only(existing) else errno.EACCES
        raise os_fault(code, existing, switch=RESULTS_ELSEWHERE)


def _read_only(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _print_robustness(out: Console, summary: RunSummary) -> None:
    """What typing as people type costs each candidate compared, for a run that measured it."""
    from bench.report.robustness_view import robustness_table

    table = robustness_table(summary)
    if table is not None:
        out.print(table)


def _print_diagnosis(out: Console, summary: RunSummary, records: list[QuestionRecord]) -> None:
    """What the numbers suggest, in plain words (bench.evaluation.findings), under the tables."""
    from rich.markup import escape

    from bench.evaluation.findings import diagnose
    from bench.report.findings_text import findings_lines

    lines = findings_lines(diagnose(summary, records), summary)
    if lines:
        out.print("[bold]Diagnosis[/]")
        for line in lines:
            out.print(f"- {escape(line)}")


@main.command()
@click.argument("config", default="bench.toml", type=click.Path(path_type=Path))
@strict_option
def chunk(config: Path, strict: bool) -> None:
    """Chunk the corpus with every chunker of CONFIG and show counts and sizes; embeds nothing."""
    from bench.chunking.sizes import chunk_stats
    from bench.cli.corpus import open_corpus
    from bench.config import load_config
    from bench.report.terminal import chunk_table
    from bench.run.dry_run import tables_without_models

    cfg = load_config(config)
    docs = open_corpus(cfg.corpus, configured=cfg.cache_dir, strict=strict, limits=cfg.documents)
    tables, skipped = tables_without_models(cfg, docs)
    kinds = {c.name: c.kind for c in cfg.chunkers}
    out_console().print(chunk_table([chunk_stats(name, kinds[name], t) for name, t in tables.items()], skipped))


@main.command()
@click.argument("run_ref", metavar="RUN")
@results_option()
def report(run_ref: str, results: Path) -> None:
    """Recompute a stored run's metrics from its rankings (no model is loaded), show them, and
    write rank_matrix.csv, plots/, report.pdf and inspector.html again."""
    from bench.report.decision_text import recommendation_line
    from bench.report.terminal import diagnostics_table, shootout_table
    from bench.results.recompute import recompute

    _, run, differences = recompute(run_ref, results)
    # the plotting libraries load only once the run is found, so a wrong RUN fails at once
    from bench.report.writer import write_reports

    path = run.path
    out = out_console()
    out.print(shootout_table(run.summary, title=f"{path.name}: recomputed from stored rankings"))
    out.print(diagnostics_table(run.summary))
    _print_robustness(out, run.summary)
    _print_diagnosis(out, run.summary, run.records)
    if run.summary.recommendation:
        out.print(recommendation_line(run.summary), markup=False)
    with err_console().status("writing rank_matrix.csv, plots, report.pdf and inspector.html"):
        written = write_reports(path, run)
    out.print(f"wrote {len(written.files)} files under {path} (report.pdf: {written.pdf_pages} pages)")
    if differences:
        click.echo(
            f"bench: warning: {len(differences)} figures differ from summary.json, e.g. {differences[0]}", err=True
        )
        sys.exit(1)
