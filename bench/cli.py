"""Command line: parses arguments and calls one library function per command."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console

from bench.errors import BenchError

EXIT_BAD_INPUT = 2


def _stdout() -> Console:
    """Tables go to stdout; when it is a file or a pipe, keep them wide enough to read."""
    return Console() if sys.stdout.isatty() else Console(width=160)


class _Group(click.Group):
    """Turns BenchError into one line on stderr and exit code 2; Ctrl-C into exit 130."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BenchError as e:
            click.echo(f"bench: error: {e}", err=True)
            ctx.exit(EXIT_BAD_INPUT)
        except KeyboardInterrupt:
            click.echo("bench: interrupted; nothing half-written was kept", err=True)
            ctx.exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="bench")
def main() -> None:
    """Which embedding model, chunker and vector index suit your documents, and at what cost."""


@main.command()
@click.argument("config", default="bench.toml", type=click.Path(path_type=Path))
@click.option("--k", "k", type=int, help="Cutoff for every metric (1..50); overrides the config.")
@click.option("--results", type=click.Path(path_type=Path), help="Where runs are written; overrides the config.")
@click.option("--no-cache", is_flag=True, help="Embed everything again instead of reusing cached vectors.")
def run(config: Path, k: int | None, results: Path | None, no_cache: bool) -> None:
    """Run the shootout described by CONFIG (default bench.toml)."""
    from bench.config import load_config
    from bench.report.terminal import shootout_table
    from bench.runner import run_shootout

    cfg = load_config(config).with_overrides(k=k, results=results)
    outcome = run_shootout(cfg, Console(stderr=True), use_cache=not no_cache)
    out = _stdout()
    out.print(shootout_table(outcome.summary))
    out.print(f"results: {outcome.path}")


@main.command()
@click.argument("run_ref", metavar="RUN")
@click.option("--results", type=click.Path(path_type=Path), default=Path("results"), show_default=True,
              help="Folder holding runs, for RUN given as an id or 'latest'.")
def report(run_ref: str, results: Path) -> None:
    """Recompute a stored run's metrics from its rankings (no model is loaded) and show them."""
    from bench.report.terminal import shootout_table
    from bench.report.recompute import recompute

    summary, path, differences = recompute(run_ref, results)
    _stdout().print(shootout_table(summary, title=f"{path.name}: recomputed from stored rankings"))
    if differences:
        click.echo(f"bench: warning: {len(differences)} figures differ from summary.json, e.g. {differences[0]}",
                   err=True)
        sys.exit(1)


@main.command()
def models() -> None:
    """List the models bench knows, without loading any weights."""
    from bench.report.terminal import models_table

    _stdout().print(models_table())
