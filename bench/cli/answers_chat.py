"""`bench answers generate | judge`: the answer-layer commands that ask a chat model (docs/answers-chat.md)."""

from __future__ import annotations

from pathlib import Path

import click

from bench.cli.answers import answers
from bench.cli.app import err_console, results_option
from bench.cli.chat_options import ChatOptions, chat_options


@answers.command()
@click.argument("run_ref", metavar="RUN")
@click.option("--candidate", metavar="ID", help="The candidate whose top k are the contexts (default: the run's best).")
@click.option(
    "--out", type=click.Path(path_type=Path), required=True, help="The answers file to write, e.g. answers.jsonl."
)
@results_option()
@click.option(
    "--prompt", type=click.Path(path_type=Path), help="An answer prompt file of your own (default: answer_v2)."
)
@click.option("--force", is_flag=True, help="Replace an existing answers file.")
@chat_options("--llm-model", "The chat model that answers, by the name its server knows it.")
def generate(
    run_ref: str,
    candidate: str | None,
    out: Path,
    results: Path,
    prompt: Path | None,
    force: bool,
    chat: ChatOptions,
) -> None:
    """Have a chat model answer each question of RUN from its candidate's top k contexts.

    The answers file names each answer's contexts by unit id; it is unlabelled until judged
    (`bench answers judge`) or labelled by a person. Replies are kept beside it, so that the same
    command after a failure resumes without paying twice.
    """
    from bench.answers.contexts import open_run
    from bench.answers.generate import generate_answers

    settings = chat.settings()
    run = open_run(run_ref, results, candidate)
    report = generate_answers(run, out, settings, prompt=prompt, force=force, console=err_console())
    click.echo(f"answers: {out} ({report.answered} from {run.candidate} of run {run.run_id}, k={run.k})")
    click.echo(f"next:    bench answers judge {out} --judge-model MODEL")


@answers.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="The judged file to write (default: <stem>.judged.jsonl).")
@click.option(
    "--run", "run_ref", help="The run whose contexts the answers were given (default: the one the file names)."
)
@click.option(
    "--candidate", metavar="ID", help="The run's candidate (default: the one the file names, else the run's best)."
)
@click.option(
    "--goldset", type=click.Path(path_type=Path), help="Questions and reference answers (default: the run's)."
)
@results_option()
@click.option("--rubric", type=click.Path(path_type=Path), help="A rubric file of your own (default: rubric v2).")
@click.option("--force", is_flag=True, help="Replace an --out that is not an earlier judge's output.")
@chat_options("--judge-model", "The chat model that judges, by the name its server knows it.")
def judge(  # noqa: PLR0913 - a click command: its parameters are its options
    file: Path,
    out: Path | None,
    run_ref: str | None,
    candidate: str | None,
    goldset: Path | None,
    results: Path,
    rubric: Path | None,
    force: bool,
    chat: ChatOptions,
) -> None:
    """Label FILE's answers with a chat model's verdicts, claim by claim, by a written rubric.

    Each answer is split into claims (unless FILE gives them), each claim is checked against the
    contexts, the answer against the question, and, where the goldset has a reference answer, each
    of its claims against the answer. Only the question, the answer and the contexts are sent.
    """
    from bench.answers.claim_judge import judge_answers, resolve_sources
    from bench.inputs.answers import load_answers

    settings = chat.settings()
    source = load_answers(file)
    run, questions = resolve_sources(source, run_ref=run_ref, results=results, candidate=candidate, goldset=goldset)
    report = judge_answers(
        source, out, settings, rubric=rubric, run=run, questions=questions, force=force, console=err_console()
    )
    click.echo(f"judged: {report.out} ({report.answers} answers, {report.claims} claims)")
    click.echo(f"next:   bench answers score {report.out}")
