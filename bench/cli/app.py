"""The command group: one line and exit code 2 for bad input, 130 for Ctrl-C; the consoles commands print on."""

from __future__ import annotations

from pathlib import Path

import click

from bench import __version__
from bench.errors import BenchError

EXIT_BAD_INPUT = 2


def results_option(help: str = "Folder holding runs, for RUN given as an id or 'latest'."):
    """``--results DIR`` (default ``results``), as every command that reads stored runs takes it."""
    return click.option(
        "--results", type=click.Path(path_type=Path), default=Path("results"), show_default=True, help=help
    )


def err_console():
    from bench.report.terminal import console

    return console(stderr=True)


def out_console():
    from bench.report.terminal import console

    return console()


class _Group(click.Group):
    """Turns BenchError into one line on stderr (a line per problem when it lists several) and exit
    code 2; Ctrl-C into exit 130."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BenchError as e:
            for line in str(e).splitlines() or [""]:
                click.echo(f"bench: error: {line}", err=True)
            ctx.exit(EXIT_BAD_INPUT)
        except KeyboardInterrupt:
            click.echo("bench: interrupted; nothing half-written was kept", err=True)
            ctx.exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, prog_name="bench")
def main() -> None:
    """Which embedding model, chunker and vector index suit your documents, and at what cost."""
