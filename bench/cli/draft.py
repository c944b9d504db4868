"""`bench goldset draft`: a draft goldset to review, pooled from real questions or written by a chat model."""

from __future__ import annotations

from pathlib import Path

import click

from bench.cli.app import err_console
from bench.cli.chat_options import STOP_BEFORE, ChatOptions, chat_options
from bench.cli.corpus import cache_option
from bench.cli.goldset import goldset
from bench.errors import BenchError
from bench.formatting import plural


@goldset.command()
@click.option("--corpus", "corpus_path", type=click.Path(path_type=Path), required=True, help="The corpus.")
@click.option(
    "--questions",
    type=click.Path(path_type=Path),
    help='Real questions (one a line, or JSONL with a "question" field): each gets the passages retrievers find.',
)
@click.option("--generate", type=int, metavar="N", help="Have a chat model write N questions with verbatim quotes.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    required=True,
    help="The draft to write, e.g. goldsets/handbook.draft.jsonl.",
)
@click.option(
    "--config",
    type=click.Path(path_type=Path),
    help="Models and chunkers to pool with (default: bench.toml where it exists).",
)
@click.option("--depth", type=int, default=10, show_default=True, help="Passages each retriever adds to the pool.")
@click.option(
    "--chunker",
    help="The config's chunker whose passages are pooled (default: its first markdown or recursive one).",
)
@click.option("--force", is_flag=True, help="Replace an existing draft (its review is lost).")
@cache_option
@chat_options(
    "--llm-model", "The chat model's name (needed with --generate).", required=False, max_cost_help=STOP_BEFORE
)
@click.option("--per-call", type=int, default=3, show_default=True, help="Questions asked for in each call.")
@click.option("--seed", type=int, default=0, show_default=True, help="Which passages are drawn, and in what order.")
def draft(  # noqa: PLR0913 - a click command: its parameters are its options
    corpus_path: Path,
    questions: Path | None,
    generate: int | None,
    out: Path,
    config: Path | None,
    depth: int,
    chunker: str | None,
    force: bool,
    cache_dir: Path | None,
    chat: ChatOptions,
    per_call: int,
    seed: int,
) -> None:
    """Write a draft goldset to review in the browser (`bench goldset review DRAFT`).

    With --questions, each question comes with the passages that the config's retrievers find for
    it. With --generate N, a chat model writes N questions about passages drawn across the corpus,
    each with quotes that are checked against the documents; its replies are kept beside the draft,
    so that running the same command again after a failure resumes without paying twice.
    """
    if (questions is None) == (generate is None):
        raise BenchError(
            "give exactly one of --questions FILE (pool real questions) or --generate N (ask a chat model)"
        )
    if questions is not None:
        from bench.drafting.pool import pool_draft

        if config is None and Path("bench.toml").is_file():
            config = Path("bench.toml")
        made = pool_draft(
            corpus_path, questions, out, config, depth=depth, chunker=chunker, console=err_console(), force=force,
            cache_dir=cache_dir,
        )  # fmt: skip
        click.echo(f"draft: {out} ({plural(len(made.questions), 'question')})")
    else:
        from bench.cli.corpus import open_corpus
        from bench.drafting.generate import DraftPlan, generate_draft

        assert generate is not None
        if generate < 1:
            raise BenchError(f"--generate {generate}: ask for at least one question")
        settings = chat.settings(needed_by="--generate")
        corpus = open_corpus(corpus_path, cache_dir)
        plan = DraftPlan(per_call=per_call, seed=seed)
        report = generate_draft(corpus, generate, out, settings, plan, force=force, console=err_console())
        click.echo(f"draft: {out} ({plural(report.kept, 'question')}; replies in {report.log.name})")
    click.echo(f"next:  bench goldset review {out}")
