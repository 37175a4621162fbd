"""The built-in `shell` tool: runs one command in the workspace through a `CommandRunner`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from sim.core.commands import (
    DEFAULT_MAX_CHARS,
    DEFAULT_TIMEOUT_SECONDS,
    CommandOutput,
    CommandRunner,
)
from sim.core.tools import ToolContext, ToolDefinition, ToolResult
from sim.tools.subprocess_runner import SubprocessRunner, shell_name

TRUNCATION_MARKER = "\n[output truncated]"


class ShellArguments(BaseModel):
    """The shell tool's arguments."""

    model_config = ConfigDict(extra="forbid")

    command: str = Field(min_length=1)


def format_command_output(result: CommandOutput, timeout: float) -> ToolResult:
    """The tool result the model reads for a finished (or stopped) command."""
    output = result.output.rstrip() or "(no output)"
    if result.truncated:
        output += TRUNCATION_MARKER
    if result.timed_out:
        return ToolResult.error("shell_timeout", f"Command timed out after {timeout:g} seconds\n{output}")
    if result.exit_code != 0:
        return ToolResult.error("shell_failed", f"Command exited with code {result.exit_code}\n{output}")
    return ToolResult.ok(output)


def shell_tool(
    runner: CommandRunner | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> ToolDefinition:
    """The `shell` tool; `runner` defaults to a real subprocess (pass a scripted one in tests)."""
    command_runner: CommandRunner = runner or SubprocessRunner()

    async def run_shell(arguments: ShellArguments, context: ToolContext) -> ToolResult:
        try:
            result = await command_runner.run(
                arguments.command, cwd=context.workspace, timeout=timeout, max_chars=max_chars
            )
        except OSError:
            return ToolResult.error("shell_start_failed", "Shell process could not be started")
        return format_command_output(result, timeout)

    return ToolDefinition(
        name="shell",
        description=(
            f"Run a command with {shell_name()} in the workspace and return its combined stdout and stderr."
        ),
        input_model=ShellArguments,
        effect="execute",
        handler=run_shell,
    )
