"""`sim`'s command line run by the tests to its end: in this process (typer's `CliRunner`), told as a
process would end, or, where only a real process shows it, as a process of its own."""

from __future__ import annotations

import os
import subprocess
import traceback
from collections.abc import Mapping
from pathlib import Path

from typer.testing import CliRunner, Result

from sim.cli import app
from tests.host.processes import SIM


def invoke(*args: str | Path, env: Mapping[str, str | None] | None = None) -> Result:
    """`sim ARGS` in this process, with `env` set over the environment while it runs."""
    return CliRunner().invoke(app, [str(arg) for arg in args], env=env)


def in_process(
    *args: str | Path, env: Mapping[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """`sim ARGS` in this process, told as a process would end: its exit code, what it printed and any
    traceback that escaped."""
    argv = [str(arg) for arg in args]
    result = CliRunner().invoke(app, argv, env=env)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(argv, result.exit_code, result.stdout, stderr)


def in_a_process(
    *args: str | Path, env: Mapping[str, str] | None = None, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """`sim ARGS` in a real process of its own, in `cwd`, `env` added to this one's environment, its time
    bounded."""
    return subprocess.run(
        [*SIM, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
