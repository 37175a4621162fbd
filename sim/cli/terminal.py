"""What the `sim` commands share on the terminal: the two consoles, the common options, one-line usage errors
(exit 2), reading the one file a command takes, and writing the HTML report asked for."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from typer.core import TyperArgument, TyperOption

from sim.cassette.writer import write_atomically
from sim.core.errors import AgentError
from sim.reports.html import Report, render

_Read = TypeVar("_Read")


_LIST_TYPE = re.compile(r"<list\[(.+)\]>")


def _help_reads_plainly() -> None:
    """typer's rich help writes `<bool>` beside every flag, as if it took a value (`sim serve --once true
    FILE` then fails on `true`), a list's type as `<list[Path]>`, and a required argument as `{FILE}` on
    the usage line (a metavar already in brackets twice: `[[-- COMMAND]]...`). A flag shows no type, a list
    the type of its items (`<path>`), and the usage line names arguments as click does: `FILE`, `[FILE]`,
    `PATHS...`, a metavar written in brackets as it is written."""
    option_type, argument_type = TyperOption.display_type_rich, TyperArgument.display_type_rich

    def items(shown: str | None) -> str | None:
        return shown and _LIST_TYPE.sub(lambda match: f"<{match[1].lower()}>", shown)

    def display_option(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag and not self.count else items(option_type(self, ctx))

    def display_argument(self: TyperArgument, ctx: Any) -> str | None:
        return items(argument_type(self, ctx))

    def usage(self: TyperArgument, ctx: Any) -> list[str]:
        name = self.display_name_raw
        if name.startswith("["):
            return [name]
        return [(name if self.required else f"[{name}]") + ("..." if self.nargs != 1 else "")]

    TyperOption.display_type_rich = display_option  # type: ignore[method-assign]
    TyperArgument.display_type_rich = display_argument  # type: ignore[method-assign, assignment]
    TyperArgument.get_usage_pieces = usage  # type: ignore[method-assign]


_help_reads_plainly()

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
