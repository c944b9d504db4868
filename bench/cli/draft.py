"""`bench goldset draft`: a draft goldset to review, pooled from real questions or written by a chat model."""

from __future__ import annotations

from pathlib import Path

import click

from bench.cli.app import err_console
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
@click.option(
    "--llm-base-url",
    envvar="BENCH_LLM_BASE_URL",
    help="The chat model's OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 (default: $BENCH_LLM_BASE_URL).",
)
@click.option("--llm-model", help="The chat model's name (needed with --generate).")
@click.option(
    "--llm-api-key-env",
    default="OPENAI_API_KEY",
    show_default=True,
    help="Environment variable holding the API key (optional for a server on this machine).",
)
@click.option("--max-cost", type=float, metavar="USD", help="Stop before a call that would take the cost past this.")
@click.option("--price-in", type=float, default=0.0, show_default=True, help="USD per million prompt tokens.")
@click.option("--price-out", type=float, default=0.0, show_default=True, help="USD per million reply tokens.")
@click.option("--per-call", type=int, default=3, show_default=True, help="Questions asked for in each call.")
@click.option("--concurrency", type=int, default=4, show_default=True, help="Calls in flight at once.")
@click.option("--seed", type=int, default=0, show_default=True, help="Which passages are drawn, and in what order.")
def draft(
    corpus_path: Path,
    questions: Path | None,
    generate: int | None,
    out: Path,
    config: Path | None,
    depth: int,
    chunker: str | None,
    force: bool,
    cache_dir: Path | None,
    llm_base_url: str | None,
    llm_model: str | None,
    llm_api_key_env: str,
    max_cost: float | None,
    price_in: float,
    price_out: float,
    per_call: int,
    concurrency: int,
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
        from bench.drafting.generate import generate_draft

        assert generate is not None
        if generate < 1:
            raise BenchError(f"--generate {generate}: ask for at least one question")
        if not llm_model:
            raise BenchError("--generate needs --llm-model (the chat model's name, as its server knows it)")
        if not llm_base_url:
            raise BenchError("--generate needs --llm-base-url (e.g. http://127.0.0.1:8000/v1) or $BENCH_LLM_BASE_URL")
        if max_cost is not None and max_cost < 0:
            raise BenchError(f"--max-cost {max_cost:g} must not be negative")
        corpus = open_corpus(corpus_path, cache_dir)
        report = generate_draft(
            corpus,
            generate,
            out,
            base_url=llm_base_url,
            model=llm_model,
            api_key_env=llm_api_key_env,
            max_cost=max_cost,
            price_in=price_in,
            price_out=price_out,
            per_call=per_call,
            concurrency=concurrency,
            seed=seed,
            force=force,
            console=err_console(),
        )
        click.echo(f"draft: {out} ({plural(report.kept, 'question')}; replies in {report.log.name})")
    click.echo(f"next:  bench goldset review {out}")
