"""`sim serve --rate-limit`: a malformed value is a one-line usage error (exit 2) before anything listens, and
the option is in the command's help."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.commands import in_process

SCENARIO = "replies:\n  - content: ok\n"


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("", "expected requests=N/min"),
        ("60", "expected requests=N/min"),
        ("requests=60", "whole number per minute"),
        ("requests=60/sec", "whole number per minute"),
        ("requests=0/min", "from 1 to"),
        ("tokens=99999999999999999999/min", "from 1 to"),
        ("requests=1/min,requests=1/min", "twice"),
        ("requests=1/min,burst=5/min", "expected requests=N/min"),
        ("requests=\x1b[31m1/min", "whole number per minute"),
    ],
)
def test_a_malformed_rate_limit_is_a_one_line_usage_error(tmp_path: Path, value: str, says: str) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCENARIO)
    result = in_process("serve", scenario, "--port", "0", "--rate-limit", value)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if "--rate-limit" in line]
    assert len(lines) == 1 and says in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert "OPENAI_BASE_URL" not in result.stdout
    assert "\x1b[31m" not in result.stderr  # untrusted text is shown, not obeyed


def test_the_option_is_in_the_help() -> None:
    result = in_process("serve", "--help")
    assert result.returncode == 0
    assert "--rate-limit" in result.stdout


LIMITED = """
name: echo-42 limited
prompt: Run `echo 42` and tell me the result.
tools: [shell]
approvals: allow
rate_limit: requests=1/min
commands:
  - {command: echo 42, output: "42", exit_code: 0}
replies:
  - tool_calls: [{id: call_1, name: shell, arguments: {command: echo 42}}]
  - content: The command printed 42.
expect: {outcome: completed, final_text: The command printed 42.}
"""


def test_sim_play_through_the_sdk_meets_the_scenarios_rate_limit(tmp_path: Path) -> None:
    scenario = tmp_path / "limited.yaml"
    scenario.write_text(LIMITED)
    through_sdk = in_process("play", scenario, "--via", "sdk")
    assert through_sdk.returncode == 1
    assert "HTTP 429: Rate limit reached for sim-model" in through_sdk.stdout + through_sdk.stderr
    direct = in_process("play", scenario)  # no HTTP between: no limit to meet
    assert direct.returncode == 0, direct.stdout + direct.stderr
