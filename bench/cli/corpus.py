"""`bench corpus stats | text`: what bench sees of the documents, before anything is chunked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from bench.cli.app import err_console, main, out_console
from bench.errors import BenchError

if TYPE_CHECKING:
    from bench.inputs.corpus import Corpus
    from bench.inputs.formats import Limits


@main.group()
def corpus() -> None:
    """See what bench reads from your documents: formats, pages, files left out, extracted text."""


# what every command that reads a corpus takes: where extracted text is kept, and --strict
cache_option = click.option(
    "--cache-dir",
    type=click.Path(path_type=Path),
    help="Cache folder (text extracted from PDFs, Word files … is kept there); overrides $BENCH_CACHE_DIR "
    "and a config's cache_dir.",
)
strict_option = click.option(
    "--strict", is_flag=True, help="Treat every file of the corpus that is left out as an error (exit code 2)."
)


def open_corpus(
    path: Path,
    cache_dir: Path | None = None,
    configured: Path | None = None,
    strict: bool = False,
    warn: bool = True,
    limits: Limits | None = None,
) -> Corpus:
    """The corpus at ``path`` for a command: extracted text cached, warnings on standard error;
    ``limits`` (a config's [documents], else the defaults) bound each document."""
    from bench.embedders import paths
    from bench.inputs.formats import LIMITS
    from bench.run.progress import read_corpus

    root = paths.cache_root(configured, cache_dir)
    return read_corpus(path, paths.extracted_dir(root), err_console(), strict, warn, limits or LIMITS)


@corpus.command()
@click.argument("source", default="bench.toml", type=click.Path(path_type=Path))
@cache_option
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def stats(source: Path, cache_dir: Path | None, as_json: bool) -> None:
    """Documents per format, pages, characters, files left out and why. SOURCE is a config
    (default bench.toml) or a corpus folder or JSONL file."""
    from bench.inputs.corpus_stats import corpus_stats
    from bench.report.corpus_view import corpus_stats_tables

    path, configured, limits = _corpus_of(source)
    figures = corpus_stats(open_corpus(path, cache_dir, configured, warn=False, limits=limits))  # its tables say it all
    if as_json:
        click.echo(json.dumps(figures, indent=2, ensure_ascii=False))
        return
    out = out_console()
    for table in corpus_stats_tables(figures):
        out.print(table)


@corpus.command()
@click.argument("document", type=click.Path(path_type=Path))
@cache_option
@click.option("--pages", is_flag=True, help="Mark where each page or slide starts (a line of its own).")
def text(document: Path, cache_dir: Path | None, pages: bool) -> None:
    """The text bench extracts from DOCUMENT (a PDF, Word file, page …): copy quotes from it."""
    import hashlib

    from bench.embedders import paths
    from bench.inputs.extraction_cache import ExtractionCache
    from bench.inputs.formats import Unreadable, for_suffix, suffixes

    extractor = for_suffix(document.suffix)
    if extractor is None:
        raise BenchError(
            f"{document}: no format reads {document.suffix or 'files without a suffix'}; "
            f"bench reads {', '.join(suffixes())}"
        )
    try:
        data = document.read_bytes()
    except OSError as e:
        raise BenchError(f"{document}: cannot read it ({e.strerror}); give the path of a document file") from None
    cache = ExtractionCache(paths.extracted_dir(paths.cache_root(None, cache_dir)))
    try:
        extracted = cache.extract(extractor, data, hashlib.sha256(data).hexdigest())
    except Unreadable as e:
        raise BenchError(f"{document}: {e}") from None
    for note in extracted.notes:
        click.echo(f"bench: note: {document}: {note}", err=True)
    if not pages or not extracted.pages:
        click.echo(extracted.text)
        return
    bounds = [*extracted.pages, len(extracted.text)]
    for number, (start, end) in enumerate(zip(bounds, bounds[1:]), start=1):
        click.echo(f"──── {extractor.page_label} {number} ────")
        click.echo(extracted.text[start:end].strip("\n"))


def _corpus_of(source: Path) -> tuple[Path, Path | None, Any]:
    """A corpus path, the cache folder its config names and its [documents] limits, from a config or
    a corpus path (the default limits)."""
    if source.is_dir() or source.suffix.lower() == ".jsonl":
        return source, None, None
    from bench.config import load_config

    config = load_config(source)
    return config.corpus, config.cache_dir, config.documents
