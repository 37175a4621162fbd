"""`sim drift` as its user meets it: the table per file and the summary, `--json`, `--report`, `--rerecord`,
`--max-requests`, exit codes, one-line usage errors, untrusted text written out, and the key never shown
or written. The live model is `sim serve` playing a scenario: in process (the command's transport swapped
for an ASGI one) and, once, as a real process on 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from sim.cli import app
from sim.host.app import Host
from sim.scenario.answerer import ScriptAnswerer
from sim.scenario.schema import Scenario
from tests.commands import in_process
from tests.drift.live import drift, live_model, live_model_afresh
from tests.host.processes import SIM, served

ROOT = Path(__file__).resolve().parents[2]
ECHO = ROOT / "scenarios" / "echo-42.yaml"
KEY = "sk-drift-marked-key-0123456789abcdef"
ORG = "org-drift-marked-0123456789"


@pytest.fixture
def live(monkeypatch: pytest.MonkeyPatch) -> Host[ScriptAnswerer]:
    """The "live" model: `sim serve scenarios/echo-42.yaml --cycle`, in process, without the scenario's
    `expect_request`s (checked in every round): a live model answers whatever it is asked."""
    script = yaml.safe_load(ECHO.read_text())
    script["replies"] = [{k: v for k, v in r.items() if k != "expect_request"} for r in script["replies"]]
    simulator = live_model(monkeypatch, Scenario.model_validate(script), cycle=True)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_ORG_ID", ORG)
    return simulator


def test_recordings_the_model_still_answers_pass(live: Host[ScriptAnswerer]) -> None:
    done = drift(ROOT / "cassettes" / "echo-42.yaml", ROOT / "cassettes" / "responses" / "echo-42.yaml")
    assert done.exit_code == 0, done.output
    assert f"SAME {ROOT / 'cassettes' / 'echo-42.yaml'} (2 requests)" in done.output
    assert "2 files: 2 same, 0 compatible, 0 breaking; 4 requests, 140 + 26 tokens" in done.output
    assert "no price known for every model: see --prices" in done.output  # the scenario's model is sim-model
    assert KEY not in done.output and ORG not in done.output


def test_breaking_drift_exits_1_with_the_turn_side_by_side_and_is_rerecorded(
    live: Host[ScriptAnswerer], tmp_path: Path
) -> None:
    report, folder = tmp_path / "drift.html", tmp_path / "fresh"
    done = drift(ROOT / "cassettes" / "echo-42.yaml", ROOT / "cassettes" / "parallel-calls.yaml",
                 "--report", report, "--rerecord", folder)  # fmt: skip
    assert done.exit_code == 1, done.output
    assert f"BREAKING {ROOT / 'cassettes' / 'parallel-calls.yaml'} (1 request)" in done.output
    assert "turn 1 breaking: a call drops open_browser, shell" in done.output
    assert '      live:     shell {"command":"echo 42"} [tool_calls]' in done.output
    assert "! stopped at turn 1 of 2: the recorded results no longer answer the live reply" in done.output
    assert (
        f"needs a real re-recording with your program: {ROOT / 'cassettes' / 'parallel-calls.yaml'}"
        in done.output
    )
    (written,) = folder.glob("*.yaml")  # only the drifted file; it holds the live conversation
    assert written.name == "parallel-calls.yaml"
    assert yaml.safe_load(written.read_text())["interactions"][0]["response"]["status"]["code"] == 200
    html = report.read_text()
    assert '<div class="verdict fail">breaking drift</div>' in html
    assert (
        "<strong>recorded reply</strong>" in html
        and "<strong>live reply</strong>" in html
        and "open_browser" in html
    )  # recorded and live side by side
    for path in [written, report]:
        assert KEY not in path.read_text() and ORG not in path.read_text()


def test_json_and_max_requests(live: Host[ScriptAnswerer]) -> None:
    done = drift(ROOT / "cassettes" / "responses" / "echo-42.yaml", "--json", "--max-requests", "1")
    assert done.exit_code == 0, done.output
    summary: dict[str, Any] = json.loads(done.output)
    (file,) = summary["files"]
    assert (file["drift"], file["requests"], file["model"]) == ("same", 1, "sim-model")
    (conversation,) = file["conversations"]
    assert conversation["stopped"] == "stopped before turn 2: --max-requests reached"
    assert (
        conversation["turns"][0] | {"drift": "same", "why": "same", "similarity": None}
        == conversation["turns"][0]
    )
    assert summary["summary"]["same"] == 1 and summary["summary"]["usage"]["total_tokens"] > 0


def test_untrusted_text_from_the_live_model_is_written_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    hostile = yaml.safe_load(ECHO.read_text())
    hostile["replies"][0] = {"content": "\x1b]52;c;ZXZpbA==\x07 done \u202e"}
    live_model(monkeypatch, Scenario.model_validate(hostile))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    done = drift(ROOT / "cassettes" / "echo-42.yaml")
    assert done.exit_code == 1
    assert "\x1b" not in done.output and "\u202e" not in done.output and "\\x1b]52" in done.output


def test_a_live_reply_that_echoes_the_key_never_writes_or_shows_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An upstream that says the credentials back (a careless proxy, a hostile endpoint): the key and the
    organization are masked in the table, the JSON, the HTML report and the re-recorded cassette."""
    echoing = yaml.safe_load(ECHO.read_text())
    echoing["replies"][0] = {"content": f"your key is {KEY}, your organization {ORG}"}
    scenario = Scenario.model_validate(echoing)  # each run is served afresh, from its first reply
    live_model_afresh(monkeypatch, scenario)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_ORG_ID", ORG)
    report, fresh = tmp_path / "drift.html", tmp_path / "fresh"
    shown = drift(ROOT / "cassettes" / "echo-42.yaml", "--report", report, "--rerecord", fresh)
    assert shown.exit_code == 1 and "your key is" in shown.output, shown.output
    as_json = drift(ROOT / "cassettes" / "echo-42.yaml", "--json")
    assert "your key is" in as_json.output
    written = report.read_text() + "".join(path.read_text() for path in fresh.iterdir())
    assert "your key is" in written
    for text in (shown.output, as_json.output, written):
        assert KEY not in text and ORG not in text


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--upstream", "api.openai.com"], "--upstream must be an http(s) URL"),
        (
            ["--upstream", "http://sim.test/v1", "--prices", "missing.yaml"],
            "--prices missing.yaml: cannot read it",
        ),
    ],
)
def test_usage_errors_are_one_line(options: list[str], said: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    done = CliRunner().invoke(app, ["drift", str(ROOT / "cassettes" / "echo-42.yaml"), *options])
    assert done.exit_code == 2 and said in done.output, done.output


def test_a_real_process_against_a_real_server_never_shows_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real `sim drift` process against `sim serve` on a port: only a real process shows what reaches its
    own stdout and stderr across a real connection. Without a key, the one-line refusal (in process)."""
    environment = {**os.environ, "OPENAI_API_KEY": KEY}
    with served(ECHO, "--cycle", "--quiet") as (_, base_url):
        done = subprocess.run(
            [*SIM, "drift", str(ROOT / "cassettes" / "echo-42.yaml"), "--upstream", base_url, "--json"],
            capture_output=True, text=True, timeout=60, env=environment, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["files"][0]["drift"] == "same"
    assert KEY not in done.stdout + done.stderr
    monkeypatch.chdir(tmp_path)
    missing = in_process(
        "drift", "x.yaml", "--upstream", "http://127.0.0.1:9/v1", env={"OPENAI_API_KEY": None}
    )
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1, missing.stderr
    assert "OPENAI_API_KEY" in missing.stderr


if sys.platform == "win32":  # pragma: no cover
    pytestmark = pytest.mark.skip(reason="uses POSIX processes")


def test_the_output_the_docs_show_is_what_the_command_prints(
    live: Host[ScriptAnswerer], monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = re.search(
        r"^```text\n\$ OPENAI_API_KEY=\S+ sim (drift .*?)\n(.*?)^```",
        (ROOT / "docs" / "drift.md").read_text(),
        re.S | re.M,
    )
    assert shown is not None
    monkeypatch.chdir(ROOT)
    done = CliRunner().invoke(app, shlex.split(shown[1]), terminal_width=200)
    assert done.output == shown[2]


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_scenario_is_asked_again_as_the_recording_it_stands_for(
    live: Host[ScriptAnswerer], api: str
) -> None:
    """Its scripted replies are the recorded side: played through the real loop and SDK first, its traffic
    is the conversation asked again."""
    done = drift(ECHO, "--api", api, "--json")
    assert done.exit_code == 0, done.output
    (file,) = json.loads(done.output)["files"]
    assert (file["path"], file["drift"], file["requests"]) == (str(ECHO), "same", 2)


def test_a_scenario_that_cannot_stand_for_a_recording_is_a_problem(
    live: Host[ScriptAnswerer], tmp_path: Path
) -> None:
    served_only = tmp_path / "served-only.yaml"
    served_only.write_text("replies:\n  - content: hi\n")
    done = drift(served_only)
    assert done.exit_code == 1
    assert "missing required key 'prompt'" in done.output
