"""`bench answers generate | judge`: the answer-layer commands that ask a chat model (docs/answers-chat.md)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from bench.cli.answers import answers
from bench.cli.app import err_console, results_option
from bench.errors import BenchError

if TYPE_CHECKING:
    from bench.answers.calls import ChatSettings

# The parameters chat_options adds, which reach the command as one ChatSettings, `chat`.
_CHAT_PARAMS = ("llm_base_url", "model", "llm_api_key_env", "max_cost", "price_in", "price_out", "concurrency")


def chat_options(model_flag: str, model_help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The chat model's address, name, key and prices, and how many calls go at once, as `goldset draft` takes
    them; the command is given them as one ``chat: ChatSettings``."""
    options = [
        click.option(
            "--llm-base-url",
            envvar="BENCH_LLM_BASE_URL",
            help="The chat model's OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 "
            "(default: $BENCH_LLM_BASE_URL).",
        ),
        click.option(model_flag, "model", required=True, help=model_help),
        click.option(
            "--llm-api-key-env",
            default="OPENAI_API_KEY",
            show_default=True,
            help="Environment variable holding the API key (optional for a server on this machine).",
        ),
        click.option("--max-cost", type=float, metavar="USD", help="Send no call that would take the cost past this."),
        click.option("--price-in", type=float, default=0.0, show_default=True, help="USD per million prompt tokens."),
        click.option("--price-out", type=float, default=0.0, show_default=True, help="USD per million reply tokens."),
        click.option("--concurrency", type=int, default=4, show_default=True, help="Calls in flight at once."),
    ]

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def command(**params: Any) -> Any:
            chat = _chat_settings(**{name: params.pop(name) for name in _CHAT_PARAMS})
            return f(chat=chat, **params)

        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def _chat_settings(llm_base_url: str | None, model: str, llm_api_key_env: str, **rest: Any) -> ChatSettings:
    from bench.answers.calls import ChatSettings

    if not llm_base_url:
        raise BenchError("give the chat model's --llm-base-url (e.g. http://127.0.0.1:8000/v1) or $BENCH_LLM_BASE_URL")
    return ChatSettings(llm_base_url, model, api_key_env=llm_api_key_env, **rest)


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
    chat: ChatSettings,
) -> None:
    """Have a chat model answer each question of RUN from its candidate's top k contexts.

    The answers file names each answer's contexts by unit id; it is unlabelled until judged
    (`bench answers judge`) or labelled by a person. Replies are kept beside it, so that the same
    command after a failure resumes without paying twice.
    """
    from bench.answers.contexts import open_run
    from bench.answers.generate import generate_answers

    run = open_run(run_ref, results, candidate)
    report = generate_answers(run, out, chat, prompt=prompt, force=force, console=err_console())
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
def judge(
    file: Path,
    out: Path | None,
    run_ref: str | None,
    candidate: str | None,
    goldset: Path | None,
    results: Path,
    rubric: Path | None,
    force: bool,
    chat: ChatSettings,
) -> None:
    """Label FILE's answers with a chat model's verdicts, claim by claim, by a written rubric.

    Each answer is split into claims (unless FILE gives them), each claim is checked against the
    contexts, the answer against the question, and, where the goldset has a reference answer, each
    of its claims against the answer. Only the question, the answer and the contexts are sent.
    """
    from bench.answers.judge import judge_answers, resolve_sources
    from bench.inputs.answers import load_answers

    source = load_answers(file)
    run, questions = resolve_sources(source, run_ref=run_ref, results=results, candidate=candidate, goldset=goldset)
    report = judge_answers(
        source, out, chat, rubric=rubric, run=run, questions=questions, force=force, console=err_console()
    )
    click.echo(f"judged: {report.out} ({report.answers} answers, {report.claims} claims)")
    click.echo(f"next:   bench answers score {report.out}")
