"""`bench goldset review DRAFT`: review a draft in the browser; the goldset is rewritten after every change."""

from __future__ import annotations

import signal
from collections.abc import Mapping
from pathlib import Path
from types import FrameType

import click

from bench.cli.app import err_console, results_option
from bench.cli.corpus import cache_option
from bench.cli.goldset import goldset
from bench.errors import BenchError
from bench.formatting import plural


@goldset.command()
@click.argument("draft", type=click.Path(path_type=Path))
@click.option(
    "--corpus", type=click.Path(path_type=Path), help="The draft's corpus (default: the one its meta file names)."
)
@click.option(
    "--goldset",
    "out",
    type=click.Path(path_type=Path),
    help="Where the accepted questions go (default: <name>.jsonl beside <name>.draft.jsonl).",
)
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="Port on 127.0.0.1 (default: any free one).")
@click.option("--no-browser", is_flag=True, help="Print the address only; do not open a browser.")
@click.option(
    "--from-run",
    "from_run",
    help="A finished run (path, id or 'latest'): show its top distractors for each question it asked.",
)
@results_option()
@cache_option
def review(
    draft: Path,
    corpus: Path | None,
    out: Path | None,
    port: int,
    no_browser: bool,
    from_run: str | None,
    results: Path,
    cache_dir: Path | None,
) -> None:
    """Accept or reject each question, fix its text and tags, and select its evidence in the passages
    (or anywhere in the corpus) in a page on 127.0.0.1. Every change is saved at once; accepted
    questions with evidence are written as a goldset. Stop with Ctrl-C."""
    from bench.cli.corpus import open_corpus
    from bench.drafting.draft import goldset_path, load_draft
    from bench.drafting.review.server import ReviewServer
    from bench.drafting.review.store import ReviewStore

    meta_corpus, fingerprint = _corpus_of(load_draft(draft).meta)
    corpus_path = corpus or meta_corpus
    if corpus_path is None:
        raise BenchError(f"{draft}: its meta file names no corpus; give one with --corpus")
    docs = open_corpus(corpus_path, cache_dir)
    if corpus is None and fingerprint and fingerprint != docs.fingerprint:
        err_console().print(
            f"[yellow]warning:[/] {corpus_path} changed since the draft was made; its spans may point elsewhere",
            soft_wrap=True,
            markup=True,
        )
    store = ReviewStore(draft, docs, out or goldset_path(draft))
    if store.replayed:
        click.echo(f"recovered {plural(store.replayed, 'change')} an earlier session had not finished writing")
    try:
        server = ReviewServer(store, port)
    except OSError as e:
        raise BenchError(f"cannot listen on 127.0.0.1:{port} ({e.strerror}); pick another --port") from None
    if from_run:
        from bench.drafting.review.distractors import run_distractors
        from bench.results.store import find_run

        run_id, extra = run_distractors(find_run(from_run, results), store.draft)
        store.extra_passages = extra
        server.run_label = f"distractor in {run_id}"
        click.echo(f"{run_id}: top distractors added for {plural(len(extra), 'question')}")
    click.echo(f"reviewing {draft} ({plural(len(store.draft.questions), 'question')}) → {store.goldset}")
    click.echo(f"open {server.url}")
    click.echo("stop with Ctrl-C (every change is already saved)")
    if not no_browser:
        _open_browser(server.url)
    previous = signal.signal(signal.SIGTERM, _stop)  # `kill` ends the review as Ctrl-C does
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.server_close()
    written = store.written()
    if written:
        click.echo(f"\ngoldset: {store.goldset} ({plural(written, 'question')})")
        click.echo(f"next: bench goldset validate {store.goldset} && bench goldset lock {store.goldset}")
    else:
        click.echo(f"\nno question accepted with evidence yet, so no goldset written; draft: {draft}")


def _stop(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _corpus_of(meta: Mapping[str, object]) -> tuple[Path | None, str | None]:
    """The corpus a draft's meta names, and its fingerprint: ``{"corpus": {"path", "sha256"}}``."""
    corpus = meta.get("corpus")
    if isinstance(corpus, dict) and isinstance(path := corpus.get("path"), str):
        sha = corpus.get("sha256")
        return Path(path), sha if isinstance(sha, str) else None
    return None, None


def _open_browser(url: str) -> None:
    """Open the page where a browser is at hand; a machine without one just has the printed address."""
    import threading
    import webbrowser

    def open_it() -> None:
        try:
            webbrowser.open(url)
        except Exception:  # no browser is no error: the address is printed
            pass

    threading.Thread(target=open_it, daemon=True).start()
