"""`bench goldset validate | lock | stats | import`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from bench.cli.app import EXIT_BAD_INPUT, main, out_console
from bench.cli.corpus import cache_option, strict_option
from bench.formatting import plural

if TYPE_CHECKING:
    from bench.inputs.corpus import Corpus
    from bench.inputs.importers.base import ImportResult

F = TypeVar("F", bound=Callable[..., Any])


@main.group()
def goldset() -> None:
    """Validate, lock, describe and import goldsets."""


_corpus_option = click.option(
    "--corpus",
    type=click.Path(path_type=Path),
    help="The goldset's corpus (default: from its lock, else corpora/<name>).",
)


def _load_pair(
    file: Path, corpus_path: Path | None, cache_dir: Path | None, strict: bool = False, warn: bool = True
) -> Corpus:
    from bench.cli.corpus import open_corpus
    from bench.inputs.lock import corpus_for

    return open_corpus(corpus_path or corpus_for(file), cache_dir, strict=strict, warn=warn)


def _warn(docs: Corpus) -> None:
    """The corpus warnings, once the goldset read without error (so an error stays the only line)."""
    from bench.cli.app import err_console
    from bench.run.progress import print_warnings

    print_warnings(err_console(), docs)


@goldset.command()
@click.argument("file", type=click.Path(path_type=Path))
@_corpus_option
@cache_option
@strict_option
@click.option(
    "--explain", is_flag=True, help="Show each quote matched by its words and numbers beside the span bench chose."
)
def validate(file: Path, corpus: Path | None, cache_dir: Path | None, strict: bool, explain: bool) -> None:
    """Check every question: quotes found exactly once (as a reader copies them: line breaks, curly
    quotes and hyphenation forgiven; else by their words and numbers, as another tool copied them),
    ids unique, grades positive integers."""
    from bench.inputs.goldset import read_goldset
    from bench.inputs.quote_anchoring import APPROXIMATE

    docs = _load_pair(file, corpus, cache_dir, strict)
    gold, errors = read_goldset(file, docs)
    for line in errors:
        click.echo(line, err=True)
    if errors or gold is None:
        click.echo(f"bench: {plural(len(errors), 'problem')} in {file}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    quoted = [(q, i, e) for q in gold.questions for i, e in enumerate(q.evidence, start=1) if e.matched]
    loose = [(q, i, e) for q, i, e in quoted if e.matched == APPROXIMATE]
    if not loose:
        click.echo(f"{file}: ok")
        return
    hint = "" if explain else "; --explain shows them"
    click.echo(
        f"{file}: ok ({len(loose)} of {plural(len(quoted), 'quote')} matched approximately, by their words "
        f"and numbers{hint})"
    )
    for q, i, e in loose if explain else ():
        where = f", {e.pages}" if e.pages else ""
        click.echo(f"\nquestion {q.id!r} evidence {i}: {e.doc}{where}, {_percent(e.similarity)} alike")
        click.echo("  the quote:")
        click.echo(_indented(e.quote))
        click.echo(f"  the span bench chose (characters {e.start:,}–{e.end:,}):")
        click.echo(_indented(docs.get(e.doc).text[e.start : e.end]))


def _percent(share: float | None) -> str:
    return f"{100 * (share or 0.0):.0f}%"


def _indented(text: str) -> str:
    return "\n".join("    " + line for line in text.strip().splitlines() if line.strip())


@goldset.command()
@click.argument("file", type=click.Path(path_type=Path))
@_corpus_option
@cache_option
@strict_option
def lock(file: Path, corpus: Path | None, cache_dir: Path | None, strict: bool) -> None:
    """Record the sha256 of the goldset and its corpus in <name>.lock.json."""
    from bench.inputs.goldset import load_goldset
    from bench.inputs.lock import write_lock

    docs = _load_pair(file, corpus, cache_dir, strict, warn=False)
    gold = load_goldset(file, docs)
    _warn(docs)
    path = write_lock(gold, docs)
    click.echo(f"locked: {path}")


@goldset.command()
@click.argument("file", type=click.Path(path_type=Path))
@_corpus_option
@cache_option
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def stats(file: Path, corpus: Path | None, cache_dir: Path | None, as_json: bool) -> None:
    """Questions, evidence per question, grades, tags, and how much of the corpus the evidence covers."""
    import json

    from bench.inputs.goldset import load_goldset
    from bench.inputs.goldset_stats import goldset_stats
    from bench.report.terminal import stats_tables

    docs = _load_pair(file, corpus, cache_dir, warn=False)
    figures = goldset_stats(load_goldset(file, docs), docs)
    _warn(docs)
    if as_json:
        click.echo(json.dumps(figures, indent=2))
        return
    out = out_console()
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


def _with_import_options(f: F) -> F:
    for option in reversed(_import_options):
        f = option(f)
    return f


def _report_import(result: ImportResult) -> None:
    click.echo(f"corpus:  {result.corpus} ({plural(result.documents, 'document')})")
    click.echo(f"goldset: {result.goldset} ({plural(result.questions, 'question')})")
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


@import_.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.option(
    "--corpus",
    "corpus_path",
    required=True,
    type=click.Path(path_type=Path),
    help="The folder of the documents the questions name (PDFs, slides, spreadsheets); used where it lies.",
)
@click.option(
    "--zero-based/--one-based",
    default=None,
    help="Page numbers count from 0 / from 1 (default: 0 for FinanceBench's evidence_page_num, else 1).",
)
@click.option("--question-field", help="The question's field (default: question or query).")
@click.option("--doc-field", help="The document name's field (default: doc_name, doc, document, file …).")
@click.option("--page-field", help="The page number's field (default: evidence_page_num, page, pages …).")
@click.option("--text-field", help="The evidence text's field (default: evidence_text or quote).")
@cache_option
@_with_import_options
def pages(  # noqa: PLR0913 - a click command: its parameters are its options
    source: Path,
    corpus_path: Path,
    zero_based: bool | None,
    question_field: str | None,
    doc_field: str | None,
    page_field: str | None,
    text_field: str | None,
    cache_dir: Path | None,
    name: str | None,
    out: Path,
    force: bool,
) -> None:
    """Questions whose evidence is a page of a document (FinanceBench and the like): the evidence text's
    span where it is found within its page, else the page; chunks are the unit."""
    from bench.cli.corpus import open_corpus
    from bench.inputs.importers import import_pages
    from bench.inputs.importers.base import Destination
    from bench.inputs.importers.pages import Fields

    fields = Fields(question=question_field, doc=doc_field, page=page_field, text=text_field)
    dest = Destination(out, name or Path(source).stem, force)
    dest.refuse_overwrite(dest.goldset)  # before the documents are read
    docs = open_corpus(corpus_path, cache_dir)
    result = import_pages(source, corpus_path, dest, zero_based, fields, corpus=docs)
    click.echo(f"corpus:  {result.corpus} ({plural(result.documents, 'document')}, used where it lies)")
    click.echo(
        f"goldset: {result.goldset} ({plural(result.questions, 'question')}, pages counted from "
        f"{0 if result.zero_based else 1} in the source)"
    )
    click.echo(
        f"  evidence found as a quote within its page: {result.quote_resolved}"
        f" ({result.quote_approximate} of them by words and numbers, as another tool read the page)"
    )
    click.echo(f"  evidence that is the whole page: {result.page_only}")
    for what, n in result.dropped.items():
        click.echo(f"  dropped, {what.replace('_', ' ')}: {n}")
    if result.config:
        click.echo(
            f"config:  {result.config}   next: bench goldset lock {result.goldset} --corpus {result.corpus}"
            f" && bench run {result.config}"
        )
