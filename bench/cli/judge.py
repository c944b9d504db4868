"""`bench judge RUN`: a relevance judge grades the units of a run that no person judged (docs/judge.md)."""

from __future__ import annotations

from pathlib import Path

import click

from bench.cli.app import err_console, main, out_console, results_option
from bench.cli.chat_options import ChatOptions, chat_options


@main.command()
@click.argument("run_ref", metavar="RUN")
@results_option()
@click.option("--rubric", type=click.Path(path_type=Path), help="A rubric file of your own (default: relevance-v1).")
@click.option(
    "--calibrate",
    type=click.IntRange(min=0),
    default=60,
    show_default=True,
    help="Units a person judged that the judge grades too, to measure how far it agrees.",
)
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path),
    help="Where replies are kept; overrides $BENCH_CACHE_DIR and the run's config's cache_dir.",
)
@chat_options("--judge-model", "The chat model that grades, by the name its server knows it.")
def judge(
    run_ref: str, results: Path, rubric: Path | None, calibrate: int, cache_dir: Path | None, chat: ChatOptions
) -> None:
    """Grade RUN's holes — every candidate's unjudged top-k units, each asked once — with a chat model.

    The grades go to judgments.jsonl; summary.json's "judge" gives every candidate's metrics with
    them beside the goldset's, never merged, and how far the judge agrees with the units a person
    judged (Cohen's κ). Replies are kept in the cache folder: the same command again sends nothing.
    """
    from bench.embedders import paths
    from bench.judging.judge_run import Judging, judge_run
    from bench.report.judge_text import judge_lines
    from bench.report.writer import write_reports
    from bench.results import store

    folder = store.find_run(run_ref, results)
    cache = paths.cache_root(_configured_cache(folder), cache_dir)
    judging = Judging(chat.settings(), cache, rubric, calibrate, console=err_console())
    report = judge_run(folder, results, judging)
    out = out_console()
    for line in judge_lines(report.run.summary):
        out.print(line, markup=False)
    with err_console().status("writing report.pdf and inspector.html"):
        write_reports(report.run.path, report.run)
    out.print(f"judgments: {report.run.path / store.JUDGMENTS} ({report.judged.tally.summary()})")


def _configured_cache(folder: Path) -> Path | None:
    """The cache folder the run's config names, when that config can still be read where the run read it."""
    from bench.config import load_config
    from bench.errors import BenchError
    from bench.results import schema

    config_path = schema.load_manifest(folder).config_path
    try:
        return load_config(Path(config_path)).cache_dir if config_path else None
    except BenchError:
        return None
