"""`sim replay` of a recording it cannot replay: anyone's cassette (the marker's, a proxy's) has no `sim:`
block, and the refusal names the routes that do replay it."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from sim.cli import app

ROOT = Path(__file__).resolve().parents[2]
MARKER_CASSETTE = ROOT / "examples" / "frameworks" / "cassettes" / "test_weather" / "test_langchain.yaml"


def test_a_foreign_cassette_is_refused_naming_serve_the_marker_and_convert() -> None:
    assert "\nsim:" not in MARKER_CASSETTE.read_text()  # recorded by the marker, not by `sim record`
    done = CliRunner().invoke(app, ["replay", str(MARKER_CASSETTE)])
    assert done.exit_code == 1
    (problem,) = [line for line in done.output.splitlines() if "no sim: block" in line]
    for route in ("`sim serve FILE`", "pytest marker", "`sim convert`"):
        assert route in problem
    assert "not recorded by" not in problem
