"""The command group: one line and exit code 2 for bad input, 3 for a fault of the machine (disk, permissions,
filesystem, limits), 130 for Ctrl-C; the consoles commands print on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from bench.errors import BenchError, EnvironmentFault, fault_of
from bench.version import __version__

if TYPE_CHECKING:
    from rich.console import Console

F = TypeVar("F", bound=Callable[..., Any])

EXIT_BAD_INPUT = 2
EXIT_ENVIRONMENT = 3  # the input was fine; the disk, a permission, the filesystem or a limit was not


def results_option(help: str = "Folder holding runs, for RUN given as an id or 'latest'.") -> Callable[[F], F]:
    """``--results DIR`` (default ``results``), as every command that reads stored runs takes it."""
    return click.option(
        "--results", type=click.Path(path_type=Path), default=Path("results"), show_default=True, help=help
    )


def err_console() -> Console:
    from bench.report.terminal import console

    return console(stderr=True)


def out_console() -> Console:
    from bench.report.terminal import console

    return console()


class _Group(click.Group):
    """One line on stderr per problem and an exit code for what is no bug of bench's: BenchError (bad
    input) exits 2; EnvironmentFault, or an OS, SQLite or safetensors error that means a full disk, a
    missing permission, a filesystem without a feature or a process limit, exits 3; Ctrl-C 130."""

    def invoke(self, ctx: click.Context) -> Any:
        # Any: whatever the invoked command returns, as click.Group.invoke types it
        try:
            return super().invoke(ctx)
        except EnvironmentFault as e:
            _say(e)
            ctx.exit(EXIT_ENVIRONMENT)
        except BenchError as e:
            _say(e)
            ctx.exit(EXIT_BAD_INPUT)
        except KeyboardInterrupt:
            click.echo("bench: interrupted; nothing half-written was kept", err=True)
            ctx.exit(130)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as e:
            fault = fault_of(e)
            if fault is None:
                raise
            _say(fault)
            ctx.exit(EXIT_ENVIRONMENT)


def _say(error: Exception) -> None:
    for line in str(error).splitlines() or [""]:
        click.echo(f"bench: error: {line}", err=True)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, prog_name="bench")
def main() -> None:
    """Which embedding model, chunker and vector index suit your documents, and at what cost."""
