"""What the `sim` commands share on the terminal: the two consoles, the common options, one-line usage errors
(exit 2), reading the one file a command takes, and writing the HTML report asked for."""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from typer.core import TyperOption

from sim.cassette.writer import write_atomically
from sim.core.errors import AgentError
from sim.reports.html import Report, render

_Read = TypeVar("_Read")


def _flags_show_no_value() -> None:
    """typer's rich help writes `<bool>` beside every flag, as if it took a value (`sim serve --once true
    FILE` then fails on `true`): a flag shows none, as click's plain help shows it."""
    shown = TyperOption.display_type_rich

    def display(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag and not self.count else shown(self, ctx)

    TyperOption.display_type_rich = display  # type: ignore[method-assign]


_flags_show_no_value()

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON for machines.")]
ReportFile = Annotated[
    Path | None, typer.Option("--report", help="Also write one self-contained HTML page of the run here.")
]


class PlayVia(StrEnum):
    """How `sim play` and `sim fuzz` reach the scripted model."""

    direct = "direct"
    sdk = "sdk"


def print_json(data: Any) -> None:
    """`data` as indented JSON on standard output: highlighted on a terminal, written as it is when piped
    (rich lays out each token of a document as a piece of its own: a 10,000-turn history took 500 MB)."""
    if out.is_terminal:
        out.print_json(data=data)
    else:
        out.file.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def write_report(path: Path, report: Report) -> None:
    """Write the page atomically (a half-written page is never left behind)."""
    write_atomically(path, render(report))


def write_report_if_asked(path: Path | None, page: Callable[[], Report]) -> None:
    """Write the HTML report, when one was asked for."""
    if path is not None:
        write_report(path, page())
        err.print(f"report: {path}", markup=False)


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
