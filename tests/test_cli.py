from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sim.cli import app, drifting, serving
from sim.core.model import Usage
from sim.drift.session import FileDrift
from tests.commands import invoke
from tests.scripts import cassette_calling, chat_cassette

REPO = Path(__file__).resolve().parents[1]


def test_help_lists_the_program() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "Record, replay and simulate" in result.output


COMMANDS = ["play", "check", "show", "replay", "convert", "run", "record", "compact", "expand", "recover",
            "fuzz", "fuzz-loop", "serve", "proxy"]  # fmt: skip


def test_every_command_is_listed_and_its_help_shows_flags_without_values_and_arguments_one_way() -> None:
    listed = CliRunner().invoke(app, ["--help"], terminal_width=200).output
    usage = re.compile(r"Usage: \S+ (\S+) \[OPTIONS\](.*)")
    for command in COMMANDS:
        assert f" {command} " in listed, command
        shown = CliRunner().invoke(app, [command, "--help"], terminal_width=200).output
        assert "<bool>" not in shown, command  # `--once true` would fail: a flag takes no value
        match = usage.search(shown)
        assert match is not None and match.group(1) == command, shown
        assert re.fullmatch(
            r"( FILE| FILES\.\.\.| PATHS\.\.\.)?( \[-- COMMAND ARGS\.\.\.\])?\s*", match.group(2)
        )
    assert "--once   " in CliRunner().invoke(app, ["serve", "--help"], terminal_width=200).output


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


SCENARIOS = REPO / "scenarios"


class TestPlay:
    def test_bundled_scenarios_all_pass(self) -> None:
        result = invoke("play", str(SCENARIOS))
        assert result.exit_code == 0, result.output
        assert result.output.count("PASS ") == len(list(SCENARIOS.glob("*.yaml")))
        assert result.output.strip().endswith(f"{len(list(SCENARIOS.glob('*.yaml')))} passed, 0 failed")

    def test_verbose_prints_the_transcript(self) -> None:
        result = invoke("play", "-v", str(SCENARIOS / "echo-42.yaml"))
        assert result.exit_code == 0
        assert "result call_1: 42" in result.output
        assert "completed in 2 turns: The command printed 42." in result.output

    def test_failure_exits_1_and_names_the_field(self, tmp_path: Path) -> None:
        (tmp_path / "bad.yaml").write_text("prompt: p\nreplies: [{content: a}]\nexpect: {final_text: b}\n")
        (tmp_path / "good.yaml").write_text("prompt: p\nreplies: [{content: a}]\n")
        result = invoke("play", str(tmp_path))
        assert result.exit_code == 1
        assert "expect.final_text: expected 'b', got 'a'" in result.output
        assert result.output.strip().endswith("1 passed, 1 failed")

    def test_json(self) -> None:
        result = invoke("play", "--json", str(SCENARIOS / "max-turns.yaml"))
        assert result.exit_code == 0
        (report,) = json.loads(result.output)
        assert (report["passed"], report["outcome"], report["turns"]) == (True, "max_turns", 3)

    def test_missing_path_is_a_usage_error(self, tmp_path: Path) -> None:
        result = invoke("play", str(tmp_path / "nope"))
        assert result.exit_code == 2
        assert "no such file or folder" in result.output

    def test_folder_without_scenarios_is_a_usage_error(self, tmp_path: Path) -> None:
        assert invoke("play", str(tmp_path)).exit_code == 2


class TestCheck:
    def test_valid_and_invalid(self, tmp_path: Path) -> None:
        (tmp_path / "bad.yaml").write_text("prompt: p\nreplies: []\n")
        result = invoke("check", str(SCENARIOS / "echo-42.yaml"), str(tmp_path / "bad.yaml"))
        assert result.exit_code == 1
        assert f"{tmp_path / 'bad.yaml'}:2:10: replies: List should have at least 1 item" in result.output
        assert f"invalid {tmp_path / 'bad.yaml'}" in result.output
        assert result.output.strip().endswith("1 ok, 1 failed")

    def test_all_bundled_are_valid(self) -> None:
        result = invoke("check", "--json", str(SCENARIOS))
        assert result.exit_code == 0
        assert all(entry["valid"] for entry in json.loads(result.output))


class TestShow:
    def test_prints_the_scripted_conversation(self) -> None:
        result = invoke("show", str(SCENARIOS / "approval-denied.yaml"))
        assert result.exit_code == 0
        lines = result.output.splitlines()
        assert lines[0].startswith("approval-denied: The person denies")
        assert '  call call_1: shell {"command":"rm -rf build"}' in lines
        assert "approvals: False, True" in lines
        assert lines[-1].startswith("expect: outcome completed; 3 turns")

    def test_malformed_file(self, tmp_path: Path) -> None:
        (tmp_path / "bad.yaml").write_text("prompt: [\n")
        result = invoke("show", str(tmp_path / "bad.yaml"))
        assert result.exit_code == 1
        assert "bad.yaml:2:1: YAML syntax" in result.output


class TestFuzz:
    def test_a_fixed_seed_campaign_passes_and_reports_what_it_saw(self, tmp_path: Path) -> None:
        result = invoke("fuzz-loop", "--examples", "120", "--seed", "7", "--save", str(tmp_path))
        assert result.exit_code == 0, result.output
        assert result.output.startswith("120 runs; outcomes: ")
        assert "tool results: " in result.output
        assert "every invariant held" in result.output
        assert not list(tmp_path.iterdir())

    def test_same_seed_same_campaign(self) -> None:
        first = invoke("fuzz-loop", "--examples", "40", "--seed", "5").output
        assert invoke("fuzz-loop", "--examples", "40", "--seed", "5").output == first

    def test_via_sdk(self) -> None:
        result = invoke("fuzz-loop", "--examples", "30", "--via", "sdk")
        assert result.exit_code == 0, result.output


def test_fuzz_json(tmp_path: Path) -> None:
    result = invoke("fuzz-loop", "--examples", "30", "--json", "--save", str(tmp_path))
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["runs"] == 30
    assert sum(summary["outcomes"].values()) == 30
    assert (summary["violations"], summary["saved"]) == ([], None)


def test_a_folder_where_one_file_is_wanted_says_so() -> None:
    for command in (["show"], ["convert", "-o", "out.yaml"]):
        result = CliRunner().invoke(app, [command[0], str(SCENARIOS), *command[1:]])
        assert result.exit_code == 2
        assert result.output.strip() == f"error: {SCENARIOS} is a folder: this command takes one file"


def test_show_masks_credentials_and_writes_control_characters_out(tmp_path: Path) -> None:
    """A foreign cassette's text reaches neither a terminal's control sequences (title, clipboard, erase,
    conceal) nor a credential, on the terminal or in the HTML page."""
    key = "sk-FOREIGN-cassette-key-5f2a9c7e31d4"
    said = f"Hi \x1b]0;PWNED\x07 \x1b]52;c;ZXZpbA==\x07 \x1b[2K\x1b[8mhidden\x1b[0m \u202eevil {key}"
    request = {"model": "m", "messages": [{"role": "user", "content": f"my key is {key}"}]}
    reply = {
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": said}}]
    }
    path = chat_cassette(tmp_path / "foreign.yaml", request, reply)
    page = tmp_path / "shown.html"
    result = CliRunner().invoke(app, ["show", str(path), "--html", str(page)])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output and "\u202e" not in result.output
    assert "\\x1b]0;PWNED\\x07" in result.output and "\\u202eevil" in result.output  # shown, not acted on
    assert key not in result.output and key not in page.read_text() and "<redacted>" in result.output


ONE_THING = re.compile(r"(?<![\w.])(?<!exit )(?<!of )1 (?!s\b)[a-z]+s\b")
"""`1 files`, `1 requests`: one of something told as many (`exit 1 unless`, `1 of 2 files` are not)."""


def test_one_of_anything_is_told_as_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every count a command prints agrees with its noun when it is 1: show, convert, check and its page,
    serve's summary, drift's summary."""
    cassette = cassette_calling(tmp_path / "one.yaml", "shell")
    page = tmp_path / "page.html"
    said = [
        invoke("show", str(cassette)).output,
        invoke("convert", str(cassette), "-o", str(tmp_path / "scenario.yaml")).output,
        invoke("check", str(cassette), "--report", str(page)).output,
        page.read_text(),
    ]
    serving._tell([], 1, Counter(chat=1), "nothing else")
    one = FileDrift(str(cassette), requests=1, usage=Usage(prompt_tokens=1, completion_tokens=1))
    drifting._summary([one], {})
    captured = capsys.readouterr()
    said += [captured.err, captured.out]
    told = "\n".join(said)
    assert ONE_THING.findall(told) == [], told
    assert "1 interaction, 1 model call in 1 conversation" in told and "(1 reply)" in told
    assert "served 1 request (chat 1);" in told and "1 file: " in told
