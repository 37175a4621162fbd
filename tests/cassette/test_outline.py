"""`sim show` of a cassette: interactions are counted from 1, as the cassette server, requests, replies and
turns are."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from sim.cli import app

ROOT = Path(__file__).resolve().parents[2]


def test_interactions_are_counted_from_one() -> None:
    done = CliRunner().invoke(app, ["show", str(ROOT / "cassettes" / "echo-42.yaml")])
    assert done.exit_code == 0, done.output
    numbers = [int(number) for number in re.findall(r"^turn \d+ \(interaction (\d+)\)", done.output, re.M)]
    assert numbers == [1, 2]
