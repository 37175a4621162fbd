"""What every `sim` command shares on the terminal: the two consoles, one-line usage errors (exit 2), and
reading the one file a command takes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import typer
from rich.console import Console

from sim.core.errors import AgentError

_Read = TypeVar("_Read")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def usage_error(message: str) -> typer.Exit:
    """Say `error: message` on stderr; the exit (code 2) to raise."""
    err.print(f"error: {message}", markup=False)
    return typer.Exit(2)


def open_one(file: Path, read: Callable[[Path], _Read]) -> _Read:
    """One file read by `read`, or exit: 2 when there is no such file, 1 when it cannot be read."""
    if file.is_dir():
        raise usage_error(f"{file} is a folder: this command takes one file")
    if not file.is_file():
        raise usage_error(f"no such file: {file}")
    try:
        return read(file)
    except AgentError as error:
        err.print(str(error), markup=False)
        raise typer.Exit(1) from None
