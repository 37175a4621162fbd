"""The `sim` command line: one typer app, its commands gathered from a module per command group."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated

import typer

from sim.cli.compacting import compact, expand, recover
from sim.cli.drifting import drift
from sim.cli.files import check, convert, play, replay, show
from sim.cli.fuzzing import fuzz, fuzz_loop
from sim.cli.live import record, run
from sim.cli.serving import proxy, serve

app = typer.Typer(
    name="sim",
    help="Record, replay and simulate OpenAI tool-calling agent loops.",
    no_args_is_help=True,
    add_completion=False,
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"sim {version('sim')}")
        raise typer.Exit()


@app.callback()
def root(
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Record, replay and simulate OpenAI tool-calling agent loops."""


COMMANDS = (play, check, show, replay, convert, run, record, compact, expand, recover, fuzz, fuzz_loop,
            serve, proxy, drift)  # fmt: skip
"""In the order `sim --help` lists them."""


def _summary(command: Callable[..., None]) -> str:
    """A command's line in `sim --help`: its docstring's first paragraph, its lines joined (typer's rich
    help keeps a docstring's line breaks there, and breaks the summary mid-sentence)."""
    return " ".join(inspect.cleandoc(command.__doc__ or "").split("\n\n")[0].split())


for command in COMMANDS:
    app.command(short_help=_summary(command))(command)


def main() -> None:
    """Entry point of the `sim` console script."""
    app()
