"""`sim check` colours each finding by its severity, never by its words: a recorded error message that says
`: serious: ` is still a warning."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

import sim.cli.files
from sim.cli import app

RED, YELLOW = "\x1b[31m", "\x1b[33m"


def failed_call(path: Path, message: str) -> Path:
    """A cassette of one Chat Completions call the API refused with HTTP 500 saying `message`."""
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    error = {"error": {"message": message, "type": "server_error", "code": None}}
    interaction = {
        "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions", "headers": {},
                    "body": json.dumps(body)},
        "response": {"status": {"code": 500, "message": "Internal Server Error"}, "headers": {},
                     "body": {"string": json.dumps(error)}},
    }  # fmt: skip
    path.write_text(yaml.safe_dump({"interactions": [interaction], "version": 1}))
    return path


def test_a_warning_that_says_serious_is_shown_as_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = io.StringIO()
    monkeypatch.setattr(
        sim.cli.files,
        "out",
        Console(file=shown, force_terminal=True, color_system="standard", soft_wrap=True),
    )
    path = failed_call(tmp_path / "refused.yaml", "overloaded: serious: really")
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 0, result.output  # a warning does not fail the file
    (finding,) = [line for line in shown.getvalue().splitlines() if "HTTP 500 recorded" in line]
    assert finding.startswith(YELLOW) and "warning: HTTP 500 recorded: overloaded: serious: really" in finding


def test_a_serious_finding_is_shown_as_serious(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shown = io.StringIO()
    monkeypatch.setattr(
        sim.cli.files,
        "out",
        Console(file=shown, force_terminal=True, color_system="standard", soft_wrap=True),
    )
    path = tmp_path / "cut.yaml"
    path.write_text("interactions: []\n")
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 1
    findings = [line for line in shown.getvalue().splitlines() if ": serious: " in line]
    assert findings and all(line.startswith(RED) for line in findings)
