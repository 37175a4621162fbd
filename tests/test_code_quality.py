"""The repository's own bar: ruff and mypy are clean (the dev extras install both)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "sim", "tests", "bench", "examples"],
        ["ruff", "format", "--check", "sim", "tests", "bench", "examples"],
        ["mypy", "sim"],
    ],
    ids=["ruff check", "ruff format", "mypy"],
)
def test_clean(command: list[str]) -> None:
    tool = shutil.which(command[0], path=str(Path(sys.executable).parent)) or shutil.which(command[0])
    assert tool, f"{command[0]} is not installed; install the dev extras"
    done = subprocess.run([tool, *command[1:]], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
