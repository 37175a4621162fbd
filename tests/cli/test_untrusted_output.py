"""Text sim did not write (a recording, a client's request, a live reply) shown on every surface with the
characters that act or hide in it (zero-width space, LRM, RLM, soft hyphen, line separator, bidi override,
ESC, NEL, newline) written out: `sim show` and its page, `sim serve CASSETTE`'s summary and its JSON access
log, `sim drift --json` and its page. Nothing can pass for `shell` or forge a line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from sim.cassette.reader import read_cassette
from sim.cassette.recording_answerer import RecordingAnswerer, recording_host
from sim.cli import app, serving
from sim.core.untrusted import visible
from sim.host.access_log import AccessLog
from sim.scenario.schema import Scenario
from tests.drift.live import live_model
from tests.host.in_process import messages, post
from tests.scripts import cassette_calling

ROOT = Path(__file__).resolve().parents[2]
UNSEEN = ("\u200b", "\u200e", "\u200f", "\u00ad", "\u2028", "\u202e", "\x1b", "\x85", "\n", "\x7f", "\ufeff")
NAME = "she" + "ll".join(UNSEEN)
"""A tool name holding each of them."""
WRITTEN = [visible(char) for char in UNSEEN]


def raw_in(text: str, allowed: str = "") -> list[str]:
    """The characters of UNSEEN that `text` holds as they are (`allowed` aside)."""
    return [char for char in UNSEEN if char in text and char not in allowed]


def test_show_and_its_page_write_out_a_tool_name(tmp_path: Path) -> None:
    page = tmp_path / "shown.html"
    done = CliRunner().invoke(
        app, ["show", str(cassette_calling(tmp_path / "calls.yaml", NAME)), "--html", str(page)]
    )
    assert done.exit_code == 0, done.output
    assert raw_in(done.output, allowed="\n") == []
    (line,) = [line for line in done.output.splitlines() if ": she" in line]  # one line, not forged two
    assert visible(NAME) in line
    html = page.read_text()
    assert raw_in(html, allowed="\n") == [] and visible(NAME) in html


def test_serve_cassettes_summary_and_json_log_write_out_the_clients_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    logged: list[str] = []
    answerer = RecordingAnswerer(read_cassette(ROOT / "cassettes" / "echo-42.yaml").interactions)
    served = recording_host(answerer, on_answered=AccessLog(logged.append, as_json=True))
    asked = {"model": "m", "messages": [{"role": "user", "content": f"run {NAME}"}]}
    assert post(served, asked)[0].status_code == 400
    problems = messages(answerer.problems)
    assert any("\u202e" in problem for problem in problems)  # the client's text, as the server has it
    serving._tell(problems, served.received, answerer.answered_by, "0 interactions played")
    summary = capsys.readouterr().err
    assert raw_in(summary, allowed="\n") == [] and visible("\u202e") in summary
    assert len(summary.splitlines()) == len(problems) + 1
    (line,) = logged
    assert raw_in(line) == [] and "\u202e" in json.loads(line)["said"]


def test_drift_json_and_page_write_out_the_live_reply(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    scenario = yaml.safe_load((ROOT / "scenarios" / "echo-42.yaml").read_text())
    scenario["replies"][0] = {"content": f"done {NAME}"}
    live_model(monkeypatch, Scenario.model_validate(scenario), cycle=True)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-drift-untrusted-0123456789abcdef")
    page = tmp_path / "drift.html"
    done = CliRunner().invoke(app, ["drift", str(ROOT / "cassettes" / "echo-42.yaml"), "--json", "--report",
                                    str(page), "--upstream", "http://sim.test/v1"])  # fmt: skip
    assert done.exit_code == 1, done.output
    said = done.stdout
    assert raw_in(said, allowed="\n") == []
    (turn, *_) = json.loads(said)["files"][0]["conversations"][0]["turns"]
    assert visible("\u202e") in turn["live"]
    html = page.read_text()
    assert raw_in(html, allowed="\n") == [] and visible("\u202e") in html
