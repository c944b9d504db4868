"""`bench answers score | agree`: the answer layer beside retrieval (docs/answers.md). The commands that
ask a chat model, `generate` and `judge`, are in answers_chat."""

from __future__ import annotations

from pathlib import Path

import click

from bench.cli.app import err_console, main, out_console, results_option


@main.group()
def answers() -> None:
    """Score answers beside retrieval: groundedness, answer relevance, and how far a judge agrees with people."""


_min_claims = click.option(
    "--min-claims",
    type=click.IntRange(min=1),
    default=30,
    show_default=True,
    help="Claims a person must have labelled before a judge's labels count as calibrated.",
)
_min_kappa = click.option(
    "--min-kappa",
    type=click.FloatRange(min=-1.0, max=1.0),
    default=0.6,
    show_default=True,
    help="Cohen's κ a judge must reach on that sample.",
)


@answers.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--run", "run_ref", metavar="RUN", help="The run whose questions were answered (folder, id or latest).")
@click.option(
    "--candidate",
    metavar="ID",
    help="The run's candidate whose top k were the contexts (default: the file's meta, else the run's best).",
)
@_min_claims
@_min_kappa
@click.option(
    "--calibration",
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="A judge's agreement with people (from `bench answers agree`; default: the one beside FILE).",
)
@click.option("--no-report", is_flag=True, help="Do not rewrite the run's report.pdf and inspector.html.")
@results_option()
def score(
    file: Path,
    run_ref: str | None,
    candidate: str | None,
    min_claims: int,
    min_kappa: float,
    calibration: Path | None,
    no_report: bool,
    results: Path,
) -> None:
    """Groundedness, answer relevance and claim recall of the answers in FILE, beside the retrieval
    metrics of the same questions (with --run); written into the run folder, or beside FILE."""
    from bench.answers.contexts import open_run
    from bench.answers.score import score_file
    from bench.inputs.answers import load_answers
    from bench.report.answers_view import print_answers

    answers = load_answers(file)
    run_ref = run_ref or answers.meta_text("run_id")
    if candidate is None and run_ref == answers.meta_text("run_id"):
        candidate = answers.meta_text("candidate")
    source = open_run(run_ref, results, candidate) if run_ref else None
    scored = score_file(answers, source, min_claims=min_claims, min_kappa=min_kappa, agreement_file=calibration)
    print_answers(out_console(), scored.summary, scored.rows)
    if source is not None and not no_report:
        from bench.report.writer import write_reports

        with err_console().status("rewriting the run's reports with the answer layer"):
            write_reports(source.run.path)
    where = scored.folder
    click.echo(f"answer figures: {where / 'answers_summary.json'}", err=True)


@answers.command()
@click.argument("human", type=click.Path(path_type=Path))
@click.argument("judge", type=click.Path(path_type=Path))
@_min_claims
@_min_kappa
def agree(human: Path, judge: Path, min_claims: int, min_kappa: float) -> None:
    """How far a judge's claim labels (JUDGE, from `bench answers judge`) agree with a person's on the
    same answers (HUMAN): agreement, Cohen's κ, the confusion matrix and every disagreement. Enough
    agreement marks the judge's scores calibrated."""
    from bench.answers.score import agree as compare_labels
    from bench.report.agreement_view import print_agreement

    print_agreement(out_console(), compare_labels(human, judge, min_claims=min_claims, min_kappa=min_kappa))
