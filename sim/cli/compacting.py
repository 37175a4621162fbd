"""The commands that write cassette files from files: `sim compact` and `sim expand` rewrite cassettes,
ours or anyone's, in the compact form or back in the plain vcrpy form, in place and atomically; `sim recover`
makes a cassette of the journal a recording that did not finish left behind."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from sim.cli.terminal import err, out, usage_error
from sim.core.counts import counted
from sim.core.errors import CassetteError

Cassettes = Annotated[list[Path], typer.Argument(metavar="FILES", help="Cassette files, rewritten in place.")]


Rewrite = Callable[[Mapping[str, Any]], tuple[Iterable[Any], dict[str, Any]]]
"""A cassette's data -> its interactions as they are to be written (one at a time), and its other keys."""


def _rewrite(files: list[Path], change: Rewrite, did: str) -> None:
    from sim.cassette.reader import load_data
    from sim.cassette.writer import cassette_pieces, write_pieces
    from sim.scenario.user_files import refusal

    failed = False
    for file in files:
        if (refused := refusal(file)) is not None:  # a FIFO, a device, a folder
            raise usage_error(str(refused))
        if not file.is_file():
            raise usage_error(f"no such file: {file}")
    for file in files:
        before = file.stat().st_size
        try:
            data = load_data(file)
            if not isinstance(data, Mapping) or not isinstance(data.get("interactions"), list):
                raise CassetteError(f"{file}: not a vcrpy cassette (no `interactions` list)")
            interactions, rest = change(data)
            try:
                after = write_pieces(file, cassette_pieces(interactions, rest))
            except ValueError as error:
                raise CassetteError(f"{file}: {error}") from None
        except CassetteError as error:
            err.print(str(error), markup=False)
            failed = True
            continue
        out.print(f"{did} {file}: {before:,} -> {after:,} bytes", markup=False)
    if failed:
        raise typer.Exit(1)


def _compacting(data: Mapping[str, Any]) -> tuple[Iterable[Any], dict[str, Any]]:
    from sim.cassette.compact import compacted

    rest = {key: value for key, value in data.items() if key != "interactions"}
    return compacted(data["interactions"]), {**rest, "sim": {**(data.get("sim") or {}), "compact": True}}


def _expanding(data: Mapping[str, Any]) -> tuple[Iterable[Any], dict[str, Any]]:
    from sim.cassette.compact import expanded, expanded_rest

    return expanded(data["interactions"]), expanded_rest(data)


def compact(files: Cassettes) -> None:
    """Write each request body that extends an earlier one of its conversation as a reference plus what it
    adds (every reader of sim reads it; stock vcrpy does not: `sim expand` writes the plain form back)."""
    _rewrite(files, _compacting, "compacted")


def expand(files: Cassettes) -> None:
    """Write compact cassettes back in the plain vcrpy form, every request body in full (refused, in one
    line, when they would rebuild into more than 1 GiB in all), an interaction at a time."""
    _rewrite(files, _expanding, "expanded")


def recover(
    journal: Annotated[
        Path, typer.Argument(metavar="FILE", help="The journal (CASSETTE.journal) a recording left.")
    ],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="The cassette to write (default: CASSETTE).")
    ] = None,
    compact_form: Annotated[
        bool, typer.Option("--compact", help="Write request bodies as what they add to the one before.")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing cassette.")] = False,
) -> None:
    """Make a cassette of the exchanges a recording (`sim record`, `sim proxy`) finished before it was
    stopped, then remove the journal (once the cassette is on disk; never when it would be the cassette).
    The session's `sim:` block was never written: replay the result with `sim serve`, or convert it
    (`sim convert`)."""
    from sim.cassette.journal import SUFFIX, same_file, write_recovered

    if not journal.is_file():
        raise usage_error(f"no such file: {journal}")
    if output is None:
        if journal.suffix != SUFFIX:
            raise usage_error(f"{journal}: not named CASSETTE{SUFFIX}; say where to write (--output)")
        output = journal.with_suffix("")
    if output.is_dir():
        raise usage_error(f"{output}: is a folder; name the cassette file to write (--output)")
    if output.exists() and same_file(output, journal):
        raise usage_error(f"{output}: is the journal itself; write the cassette elsewhere (--output)")
    if output.exists() and not force:
        raise usage_error(f"cassette exists: {output} (use --force to overwrite it)")
    try:
        recovered = write_recovered(journal, output, compact=compact_form)
    except CassetteError as error:
        err.print(f"error: {error}", markup=False)
        raise typer.Exit(1) from None
    if recovered.torn:
        err.print(f"{journal}: its last exchange was cut short and is left out", markup=False)
    if recovered.skipped:
        err.print(f"{journal}: skipped {_lines(recovered.skipped)}", markup=False)
    journal.unlink()  # only now: the cassette is written and fsynced, and is another file
    out.print(f"recovered {counted(recovered.count, 'exchange')} into {output}", markup=False)


def _lines(skipped: list[str]) -> str:
    """The lines `sim recover` skipped, in one line: how many, which, and why the first was."""
    numbers = [reason.split(":", 1)[0].removeprefix("line ") for reason in skipped]
    shown = ", ".join(numbers[:10]) + (f" and {len(numbers) - 10} more" if len(numbers) > 10 else "")
    count = f"{len(skipped)} line{'s' if len(skipped) > 1 else ''}"
    holds = "holds" if len(skipped) == 1 else "hold"
    return f"{count} that {holds} no whole exchange ({shown}; {skipped[0]})"
