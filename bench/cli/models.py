"""`bench models` and `bench models install`."""

from __future__ import annotations

from pathlib import Path

import click

from bench.cli.app import main, out_console


@main.group(invoke_without_command=True)
@click.pass_context
def models(ctx: click.Context) -> None:
    """List the models bench knows, without loading any weights."""
    if ctx.invoked_subcommand is None:
        from bench.report.terminal import models_table

        out_console().print(models_table())


@models.command()
@click.argument("name")
@click.option("--cache-dir", type=click.Path(path_type=Path), help="Where prepared models are kept.")
def install(name: str, cache_dir: Path | None) -> None:
    """Prepare an opt-in model that is too large for the default install (e.g. mpnet)."""
    from bench.embedders import paths
    from bench.embedders.install import install_model

    path = install_model(name, paths.models_dir(paths.cache_root(cache_dir)), echo=click.echo)
    click.echo(f"installed: {path}")
