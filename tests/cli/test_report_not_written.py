"""A page asked for (`--report`, `sim show --html`) where it cannot be written: in a read-only folder, or
at a path that is a folder. Each command prints its results first, then one line saying the page could not
be written, and exits 2 (it was a traceback, and check, replay and drift printed nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from sim.cli import app
from sim.scenario.schema import Scenario
from tests.drift.live import live_model

ROOT = Path(__file__).resolve().parents[2]
ECHO = ROOT / "scenarios" / "echo-42.yaml"
RECORDED = ROOT / "cassettes" / "echo-42.yaml"

COMMANDS = {
    "play": (["play", str(ECHO), "--report"], "1 passed, 0 failed"),
    "replay": (["replay", str(RECORDED), "--report"], "1 passed, 0 failed"),
    "check": (["check", str(ECHO), "--report"], "1 ok, 0 failed"),
    "check, failing": (["check", "not-a-scenario.yaml", str(ECHO), "--report"], "1 ok, 1 failed"),
    "fuzz-loop": (["fuzz-loop", "--examples", "2", "--report"], "2 runs; outcomes: "),
    "drift": (["drift", str(RECORDED), "--upstream", "http://sim.test/v1", "--report"], "1 file: 1 same"),
    "show": (["show", str(ECHO), "--html"], "user: Run `echo 42` and tell me the result."),
}
"""Each command with a page to write, and a line of the results it prints first."""


@pytest.fixture(autouse=True)
def live(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`sim drift`'s live model, in process; the test's folder the working one (fuzz saves there), with a
    scenario that does not load."""
    live_model(monkeypatch, Scenario.model_validate(yaml.safe_load(ECHO.read_text())), cycle=True)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-report-not-written-0123456789abcdef")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "not-a-scenario.yaml").write_text("prompt: [unclosed\n")


def results_then_one_line(name: str, page: Path) -> str:
    args, result = COMMANDS[name]
    done = CliRunner().invoke(app, [*args, str(page)])
    assert done.exit_code == 2, done.output
    error = f"error: cannot write the report {page}: "
    assert done.stderr.splitlines()[-1].startswith(error), done.output  # one line, no traceback
    assert done.exception is None or isinstance(done.exception, SystemExit)
    assert result in done.stdout, done.output
    assert done.output.index(result) < done.output.index(error)  # the results first
    return done.stderr.splitlines()[-1]


@pytest.mark.parametrize("name", COMMANDS)
def test_a_page_at_a_folder_is_one_line_after_the_results(name: str, tmp_path: Path) -> None:
    folder = tmp_path / "page.html"
    folder.mkdir()
    assert results_then_one_line(name, folder).endswith(": Is a directory")


@pytest.mark.parametrize("name", COMMANDS)
def test_a_page_in_a_read_only_folder_is_one_line_after_the_results(name: str, read_only_dir: Path) -> None:
    assert results_then_one_line(name, read_only_dir / "page.html").endswith(": Read-only file system")
    assert list(read_only_dir.iterdir()) == []
