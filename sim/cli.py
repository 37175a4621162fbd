"""The `sim` command line: parses options, calls the layers, renders the outcome."""

from __future__ import annotations

from importlib.metadata import version
from typing import Annotated

import typer

app = typer.Typer(
    name="sim",
    help="Record, replay and simulate OpenAI tool-calling agent loops.",
    no_args_is_help=True,
    add_completion=False,
)


def _print_version(value: bool) -> None:
    if value:
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


def main() -> None:
    """Entry point of the `sim` console script."""
    app()
