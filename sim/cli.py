"""The `sim` command line: parses options, calls the layers, renders the outcome."""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from importlib.metadata import version
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress
from rich.text import Text

from sim.core.errors import ScenarioError
from sim.core.transcript import turns
from sim.scenario.loader import load_scenario, scenario_files
from sim.scenario.outline import outline
from sim.scenario.player import PlayReport, play_file

app = typer.Typer(
    name="sim",
    help="Record, replay and simulate OpenAI tool-calling agent loops.",
    no_args_is_help=True,
    add_completion=False,
)
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

PROGRESS_FROM_FILES = 20

Paths = Annotated[list[Path], typer.Argument(help="Scenario files, or folders searched recursively.")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON for machines.")]


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


def _usage_error(message: str) -> typer.Exit:
    err.print(f"error: {message}", markup=False)
    return typer.Exit(2)


def _files(paths: list[Path]) -> list[Path]:
    for path in paths:
        if not path.exists():
            raise _usage_error(f"no such file or folder: {path}")
    files = scenario_files(paths)
    if not files:
        raise _usage_error(f"no scenario files (*.yaml, *.yml) in: {', '.join(map(str, paths))}")
    return files


@app.command()
def play(
    paths: Paths,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Print each run's transcript.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Run scenario files through the real loop with their scripted model and world."""
    files = _files(paths)
    reports = asyncio.run(_play_all(files, progress=not as_json and len(files) >= PROGRESS_FROM_FILES))
    failed = [report for report in reports if not report.passed]
    if as_json:
        out.print_json(json.dumps([{**asdict(r), "passed": r.passed} for r in reports]))
    else:
        for report in reports:
            _print_report(report, verbose)
        out.print(f"{len(reports) - len(failed)} passed, {len(failed)} failed")
    if failed:
        raise typer.Exit(1)


async def _play_all(files: list[Path], *, progress: bool) -> list[PlayReport]:
    reports = []
    with Progress(console=err, transient=True, disable=not progress or not err.is_terminal) as bar:
        task = bar.add_task("playing", total=len(files))
        for path in files:
            reports.append(await play_file(path))
            bar.advance(task)
    return reports


def _print_report(report: PlayReport, verbose: bool) -> None:
    if report.passed:
        detail = f"{report.outcome}, {turns(report.turns)}"
        out.print(f"[green]PASS[/green] {report.path} [dim]({detail})[/dim]")
    else:
        out.print(f"[red]FAIL[/red] {report.path}")
    if verbose or not report.passed:
        for line in report.problems:
            out.print(f"  ! {line}", markup=False)
    if verbose:
        for line in report.transcript:
            out.print(f"  {line}", markup=False)


@app.command()
def check(paths: Paths, as_json: JsonFlag = False) -> None:
    """Validate scenario files without running them."""
    results: list[tuple[Path, str | None]] = []
    for path in _files(paths):
        try:
            load_scenario(path)
            results.append((path, None))
        except ScenarioError as error:
            results.append((path, str(error)))
    invalid = [problem for _, problem in results if problem]
    if as_json:
        out.print_json(json.dumps([{"path": str(p), "valid": e is None, "error": e} for p, e in results]))
    else:
        for path, problem in results:
            if problem is None:
                out.print(f"[green]ok[/green] {path}")
            else:
                out.print(Text.assemble(("invalid ", "red"), problem))
        out.print(f"{len(results) - len(invalid)} valid, {len(invalid)} invalid")
    if invalid:
        raise typer.Exit(1)


@app.command()
def show(file: Annotated[Path, typer.Argument(help="A scenario file.")]) -> None:
    """Print a scenario's scripted conversation turn by turn."""
    if not file.is_file():
        raise _usage_error(f"no such file: {file}")
    try:
        scenario = load_scenario(file)
    except ScenarioError as error:
        err.print(str(error), markup=False)
        raise typer.Exit(1) from None
    for line in outline(scenario):
        out.print(line, markup=False)


def main() -> None:
    """Entry point of the `sim` console script."""
    app()
