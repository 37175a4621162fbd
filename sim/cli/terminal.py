"""What the `sim` commands share on the terminal: the two consoles, the common options, one-line usage errors
(exit 2), reading the one file a command takes, and writing the HTML report asked for.

Every `sim` command loads this module at start (its options are declared with it), so it imports only what
each needs; the reports and the rest of sim are loaded when used."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperArgument, TyperOption

from sim.core.errors import AgentError
from sim.core.untrusted import json_text, visible

if TYPE_CHECKING:
    from sim.reports.html import Report

_Read = TypeVar("_Read")


_LIST_TYPE = re.compile(r"<list\[(.+)\]>")


def _help_reads_plainly() -> None:
    """typer's rich help writes `<bool>` beside every flag, as if it took a value (`sim serve --once true
    FILE` then fails on `true`), a list's type as `<list[Path]>`, and a required argument as `{FILE}` on
    the usage line (a metavar already in brackets, twice: `[[-- COMMAND ARGS...]]...`). A flag shows no
    type, a list the type of its items (`<path>`), and the usage line names arguments as click does: `FILE`,
    `[FILE]`, `PATHS...`, a metavar written in brackets as it is written."""
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
    """The client the loop asks a scenario's script through, in `sim play` and `sim fuzz-loop` (`Via`)."""

    direct = "direct"
    sdk = "sdk"


def print_json(data: Any) -> None:
    """`data` as indented JSON on standard output, its unseen characters escaped (`json_text`): highlighted
    on a terminal, written as it is when piped (rich lays out each token of a document as a piece of its
    own: a 10,000-turn history took 500 MB)."""
    text = json_text(data, indent=2)
    if out.is_terminal:
        from rich.highlighter import JSONHighlighter

        out.print(JSONHighlighter()(Text(text)), soft_wrap=True)
    else:
        out.file.write(text + "\n")


def write_report_if_asked(path: Path | None, page: Callable[[], Report]) -> None:
    """Write the HTML report, when one was asked for; when it cannot be written (a read-only folder, a
    folder of that name, a full disk), one line saying so, and exit 2."""
    if path is None:
        return
    from sim.pages import write_page

    try:
        write_page(path, page())
    except OSError as error:
        why = error.strerror or type(error).__name__
        raise usage_error(f"cannot write the report {path}: {why}") from None
    err.print(f"report: {path}", markup=False)


@contextmanager
def report_after(path: Path | None, page: Callable[[], Report]) -> Iterator[None]:
    """Print the results (the block), then write the HTML report asked for, also when the block exits 1
    for a failure: a page that cannot be written is one line after the results, and exit 2."""
    try:
        yield
    except typer.Exit:
        write_report_if_asked(path, page)
        raise
    write_report_if_asked(path, page)


def usage_error(message: str) -> typer.Exit:
    """Say `error: message` on stderr; the exit (code 2) to raise."""
    err.print(f"error: {visible(message)}", markup=False)
    return typer.Exit(2)


def open_one(file: Path, read: Callable[[Path], _Read]) -> _Read:
    """One file read by `read`, or exit: 2 when there is no such file (or no regular file), 1 when it cannot
    be read."""
    from sim.scenario.user_files import refusal

    if file.is_dir():
        raise usage_error(f"{file} is a folder: this command takes one file")
    if (refused := refusal(file)) is not None:  # a FIFO, a device
        raise usage_error(str(refused))
    if not file.is_file():
        raise usage_error(f"no such file: {file}")
    try:
        return read(file)
    except AgentError as error:
        err.print(visible(str(error)), markup=False)
        raise typer.Exit(1) from None
