from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from sim.cli import app

REPO = Path(__file__).resolve().parents[1]


def test_help_lists_the_program() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "Record, replay and simulate" in result.output


def test_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith("sim ")


def test_bundled_offline_example_runs_the_real_loop() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "offline_echo.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert 'shell {"command": "echo 42"} -> \'42\'' in done.stdout
    assert done.stdout.strip().endswith("final (2 turns): The command printed 42.")
