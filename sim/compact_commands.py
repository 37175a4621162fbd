"""`sim compact` and `sim expand`: rewrite cassettes, ours or anyone's, in the compact form or back in the
plain vcrpy form, in place and atomically."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from sim.cassette.compact import compact_data, expand_data
from sim.cassette.reader import load_data
from sim.cassette.writer import to_yaml, write_atomically
from sim.core.errors import CassetteError
from sim.terminal import err, out, usage_error

Cassettes = Annotated[list[Path], typer.Argument(help="Cassette files, rewritten in place.")]


def _rewrite(files: list[Path], change: Callable[[Mapping[str, Any]], dict[str, Any]], did: str) -> None:
    failed = False
    for file in files:
        if not file.is_file():
            raise usage_error(f"no such file: {file}")
    for file in files:
        try:
            data = load_data(file)
            if not isinstance(data, Mapping) or not isinstance(data.get("interactions"), list):
                raise CassetteError(f"{file}: not a vcrpy cassette (no `interactions` list)")
            try:
                text = to_yaml(change(data))
            except ValueError as error:
                raise CassetteError(f"{file}: {error}") from None
        except CassetteError as error:
            err.print(str(error), markup=False)
            failed = True
            continue
        before = file.stat().st_size
        write_atomically(file, text)
        out.print(f"{did} {file}: {before:,} -> {len(text.encode('utf-8')):,} bytes", markup=False)
    if failed:
        raise typer.Exit(1)


def compact(files: Cassettes) -> None:
    """Write each request body that extends an earlier one of its conversation as a reference plus what it
    adds (every reader of sim reads it; stock vcrpy does not: `sim expand` writes the plain form back)."""
    _rewrite(files, compact_data, "compacted")


def expand(files: Cassettes) -> None:
    """Write compact cassettes back in the plain vcrpy form, every request body in full."""
    _rewrite(files, expand_data, "expanded")
