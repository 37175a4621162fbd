from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sim import (
    CommandOutput,
    ScriptedCommand,
    ScriptedCommandRunner,
    ToolCall,
    ToolRegistry,
    ToolResult,
    shell_tool,
)
from sim.core.tools import PreparedCall
from sim.tools.shell import format_command_output


def run_shell(
    command: str, tool_runner: object = None, workspace: Path = Path("."), **options: object
) -> ToolResult:
    snapshot = ToolRegistry([shell_tool(tool_runner, **options)]).snapshot()  # type: ignore[arg-type]
    prepared = snapshot.prepare(ToolCall(id="c", name="shell", arguments=f'{{"command": "{command}"}}'))
    assert isinstance(prepared, PreparedCall)
    return asyncio.run(snapshot.invoke(prepared, workspace))


def scripted(*entries: ScriptedCommand) -> ScriptedCommandRunner:
    return ScriptedCommandRunner(entries)


def test_definition() -> None:
    tool = shell_tool()
    assert tool.name == "shell"
    assert tool.effect == "execute"
    assert "bash -c" in tool.description


def test_success_is_the_right_trimmed_output() -> None:
    result = run_shell("ls", scripted(ScriptedCommand("ls", "a\nb\n\n  ")))
    assert result == ToolResult.ok("a\nb")


def test_empty_output() -> None:
    assert run_shell("true", scripted(ScriptedCommand("true", " \n"))) == ToolResult.ok("(no output)")


def test_truncated_output_is_still_a_success() -> None:
    result = run_shell("big", scripted(ScriptedCommand("big", "abcdefghij")), max_chars=4)
    assert result == ToolResult.ok("abcd\n[output truncated]")


def test_non_zero_exit() -> None:
    result = run_shell("f", scripted(ScriptedCommand("f", "oops\n", exit_code=3)))
    assert result.content == "Error [shell_failed]: Command exited with code 3\noops"
    assert result.error_code == "shell_failed"


def test_timeout_keeps_the_partial_output() -> None:
    result = run_shell("s", scripted(ScriptedCommand("s", "partial", timed_out=True)), timeout=2.5)
    assert result.content == "Error [shell_timeout]: Command timed out after 2.5 seconds\npartial"
    assert result.error_code == "shell_timeout"


def test_start_failure_does_not_leak_the_reason() -> None:
    class Unstartable:
        async def run(self, command: str, *, cwd: Path, timeout: float, max_chars: int) -> CommandOutput:
            raise OSError("secret path /opt/hidden")

    result = run_shell("ls", Unstartable())
    assert result.content == "Error [shell_start_failed]: Shell process could not be started"
    assert "secret" not in result.content


def test_real_runner_start_failure_when_the_workspace_is_missing(tmp_path: Path) -> None:
    result = run_shell("ls", workspace=tmp_path / "missing")
    assert result.error_code == "shell_start_failed"


def test_real_shell_end_to_end(tmp_path: Path) -> None:
    assert run_shell("echo 42", workspace=tmp_path) == ToolResult.ok("42")
    assert (
        run_shell("exit 7", workspace=tmp_path).content
        == "Error [shell_failed]: Command exited with code 7\n(no output)"
    )


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (CommandOutput("x\n", 0), "x"),
        (CommandOutput("", 0, truncated=True), "(no output)\n[output truncated]"),
    ],
)
def test_format_command_output(output: CommandOutput, expected: str) -> None:
    assert format_command_output(output, 1).content == expected
