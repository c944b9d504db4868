"""What a run shows while it works, on the console it is given: a spinner while the documents are read,
a warning for every kind of file left out, a bar for each chunking and each build. Goldset drafting
pools passages the way a run retrieves them and shows the same; so do the commands that read a corpus."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bench import measure
from bench.errors import BenchError
from bench.inputs.corpus import Corpus, load_corpus
from bench.inputs.formats import LIMITS, Limits

if TYPE_CHECKING:
    from bench.chunking.table import ChunkTable
    from bench.config import Candidate, Config
    from bench.measure import Phases
    from bench.retrieval.retrievers import BuildStats, Retriever
    from bench.run.contexts import Situating
    from bench.run.models import ModelPool


@contextmanager
def _reading(console: Console) -> Iterator:
    with console.status("reading documents") as status:
        yield lambda done, total: status.update(f"reading documents: {done:,} of {total:,} files")


def read_corpus(
    path: Path,
    cache: Path | None,
    console: Console,
    strict: bool = False,
    warn: bool = True,
    limits: Limits = LIMITS,
) -> Corpus:
    """The corpus at ``path`` (``load_corpus``) with a spinner, its warnings printed (unless not
    ``warn``); with ``strict``, a file left out is an error; a document beyond ``limits`` is left out."""
    with _reading(console) as progress:
        corpus = load_corpus(path, cache, progress, limits)
    if strict:
        corpus.check_strict()
    if warn:
        print_warnings(console, corpus)
    return corpus


def print_warnings(console: Console, corpus: Corpus) -> None:
    """One line per kind of file left out, and per note. Commands that read a goldset print them once
    it is read, so that an error in it stays the only line."""
    warn(console, corpus.warnings())


def warn(console: Console, lines: Iterable[str]) -> None:
    for line in lines:
        console.print(f"[yellow]warning:[/] {escape(line)}", soft_wrap=True)


def progress_bar(console: Console) -> Progress:
    """The bars of a run: chunking, then embedding or indexing each table."""
    return Progress(
        TextColumn("{task.description:<34}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


def chunk_all(
    config: Config,
    corpus: Corpus,
    progress: Progress,
    models: ModelPool,
    needed: set[str],
    phases: Phases,
    situating: Situating | None = None,
) -> dict[str, ChunkTable]:
    """The corpus chunked by each chunker of ``needed``, a bar each. A contextual chunker (``md256+ctx``)
    adds its headers to its plain chunker's table, chunked once for both; a situated one
    (``md256+situated``) the contexts ``situating`` has a chat model write for its chunks."""
    from bench.chunking.context import contextual
    from bench.chunking.table import ChunkTable

    wanted = {spec.plain for spec in config.chunkers if spec.name in needed}
    plain: dict[str, ChunkTable] = {}
    for spec in config.chunkers:
        if spec.context or spec.name not in wanted:
            continue
        task = progress.add_task(f"chunking {spec.name}", total=len(corpus))
        chunker = spec.build(embed=models.passage_embedding(spec.model) if spec.model else None)
        with phases(f"chunk {spec.name}"):
            plain[spec.name] = ChunkTable.chunk_corpus(corpus, chunker, functools.partial(progress.advance, task))
    situated: dict[str, ChunkTable] = {}
    if any(spec.situated and spec.name in needed for spec in config.chunkers):
        if situating is None:
            raise BenchError("chunkers whose contexts a chat model writes ([context.NAME]) are for `bench run`")
        with phases("situate chunks"):
            situated.update(situating.tables(plain, corpus, needed))
    tables: dict[str, ChunkTable] = {}
    for spec in config.chunkers:
        if spec.name not in needed:
            continue
        if spec.situated:
            tables[spec.name] = situated[spec.name]
        elif spec.context:
            with phases(f"chunk {spec.name}"):
                tables[spec.name] = contextual(plain[spec.plain], corpus)
        else:
            tables[spec.name] = plain[spec.name]
    return tables


def build_with_progress(progress: Progress, retriever: Retriever, table: ChunkTable, label: str) -> BuildStats:
    """Embed (or index) ``table`` for ``retriever``, with a bar named ``label``."""
    verb = "indexing" if retriever.lexical else "embedding"
    task = progress.add_task(f"{verb} {label}", total=len(table))
    return retriever.build(table, functools.partial(progress.advance, task))


def record_build(phases: Phases, name: str, build: BuildStats, seconds: float) -> None:
    """A build as its parts: embedding (dense models), the index, and the rest (token counts)."""
    table = name.rsplit("/", 1)[0]
    if build.dims is not None:
        phases.add(f"embed {table}", build.embed_seconds, build.rss_mb.get("embed"))
    phases.add(f"index {name}", build.index_build_seconds, build.rss_mb.get("index"))
    rest = seconds - build.embed_seconds - build.index_build_seconds
    if build.dims is not None:
        phases.add(f"count tokens {table}", rest, build.rss_mb.get("count tokens"))


def warn_truncation(console: Console, cand: Candidate, max_tokens: int | None, build: BuildStats) -> None:
    """Chunks longer than the model reads lose their tail silently; say so, with the share lost."""
    if build.chunk_tokens is None or not max_tokens:
        return
    figures = measure.token_figures(build.chunk_tokens, max_tokens)
    if figures["truncated_chunks"]:
        console.print(
            f"[yellow]warning:[/] {cand.model}/{cand.chunker}: {figures['truncated_chunks']} of "
            f"{len(build.chunk_tokens)} chunks exceed {cand.model}'s {max_tokens} tokens; "
            f"{figures['truncated_token_share']:.1%} of the corpus tokens are never embedded "
            f"(use smaller chunks)"
        )
