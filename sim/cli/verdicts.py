"""What `sim play`, `sim check` and `sim replay` share: the files a command was given, each worked on in
turn (with a progress bar when there are many), and a PASS or FAIL per file with the summary."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

import typer
from rich.text import Text

from sim.cli.terminal import err, out, print_json, usage_error
from sim.core.untrusted import visible

if TYPE_CHECKING:
    from sim.core.transcript import Line

PROGRESS_FROM_FILES = 20


def files_given(paths: list[Path]) -> list[Path]:
    """The YAML files `paths` name or hold (what is no regular file in a folder left out); a usage error for
    a path that does not exist or is no regular file or folder, or when none is found."""
    from sim.scenario.loader import scenario_files
    from sim.scenario.user_files import refusal

    for path in paths:
        if not path.exists():
            raise usage_error(f"no such file or folder: {path}")
        if not path.is_dir() and (refused := refusal(path)) is not None:  # a FIFO, a device
            raise usage_error(str(refused))
    files = scenario_files(paths)
    if not files:
        raise usage_error(f"no YAML files (*.yaml, *.yml) in: {', '.join(map(str, paths))}")
    return files


class FileReport(Protocol):
    """What `sim play` and `sim replay` report per file (dataclasses, so `asdict` gives their JSON)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def path(self) -> str: ...
    @property
    def problems(self) -> tuple[str, ...]: ...
    @property
    def transcript(self) -> tuple[Line, ...]: ...
    @property
    def passed(self) -> bool: ...


_Done = TypeVar("_Done", bound=FileReport)


def each(
    files: list[Path], label: str, work: Callable[[Path], Awaitable[_Done]], as_json: bool
) -> list[_Done]:
    """`work` on each file in turn, with a progress bar on a terminal when there are many."""
    import asyncio

    from rich.progress import Progress

    async def all_of_them() -> list[_Done]:
        quiet = as_json or len(files) < PROGRESS_FROM_FILES or not err.is_terminal
        with Progress(console=err, transient=True, disable=quiet) as bar:
            task = bar.add_task(label, total=len(files))
            done = []
            for path in files:
                done.append(await work(path))
                bar.advance(task)
            return done

    return asyncio.run(all_of_them())


def _words(report: FileReport) -> list[str]:
    """A report's transcript as its JSON gives it: the lines' words."""
    return [line.text for line in report.transcript]


def verdicts(reports: Sequence[FileReport], details: list[str], verbose: bool, as_json: bool) -> None:
    """PASS or FAIL per file (problems when failed, transcripts with `-v`), a summary; exit 1 on a failure."""
    failed = [report for report in reports if not report.passed]
    if as_json:
        print_json([{**asdict(r), "transcript": _words(r), "passed": r.passed} for r in reports])
    else:
        for report, detail in zip(reports, details, strict=True):
            path = visible(report.path)
            if report.passed:
                out.print(Text.assemble(("PASS ", "green"), path, (f" ({visible(detail)})", "dim")))
            else:
                out.print(Text.assemble(("FAIL ", "red"), path))
            for line in report.problems if verbose or not report.passed else ():
                out.print(f"  ! {visible(line)}", markup=False)
            for told in report.transcript if verbose else ():
                out.print(f"  {visible(told.text)}", markup=False)
        out.print(f"{len(reports) - len(failed)} passed, {len(failed)} failed")
    if failed:
        raise typer.Exit(1)
