"""The scripted world of a scenario: its model, shell, approver and tools, all strict fakes."""

from __future__ import annotations

from dataclasses import dataclass

from sim.core.approval import AllowAllApprover, Approver, DenyAllApprover
from sim.core.errors import ModelAPIError, ScenarioError
from sim.core.messages import AssistantMessage, ToolCall
from sim.core.model import ModelReply
from sim.core.scripted import ScriptedApprover, ScriptedCommand, ScriptedCommandRunner, ScriptedModel
from sim.core.tools import ToolRegistry
from sim.scenario.schema import Scenario
from sim.tools.shell import shell_tool


def scripted_replies(scenario: Scenario) -> list[ModelReply | Exception]:
    """The model's script: a `ModelReply` per reply, or the `ModelAPIError` an error reply stands for."""
    script: list[ModelReply | Exception] = []
    for reply, ids in zip(scenario.replies, scenario.call_ids(), strict=True):
        if reply.error is not None:
            error = reply.error
            script.append(
                ModelAPIError.from_status(
                    error.status,
                    error.message,
                    error_type=error.type,
                    code=error.code,
                    retry_after=error.retry_after,
                )
            )
            continue
        calls = tuple(
            ToolCall(id=call_id, name=call.name, arguments=call.raw_arguments())
            for call, call_id in zip(reply.tool_calls, ids, strict=True)
        )
        message = AssistantMessage(content=reply.content, tool_calls=calls)
        script.append(ModelReply(message=message, finish_reason=reply.finish()))
    return script


@dataclass(frozen=True, slots=True)
class ScriptedWorld:
    """Everything a scenario's run talks to."""

    model: ScriptedModel
    commands: ScriptedCommandRunner
    approver: Approver
    tools: ToolRegistry

    def unused(self) -> list[str]:
        """What the script held that the run never used, one line each."""
        problems = []
        fakes: list[ScriptedModel | ScriptedCommandRunner | ScriptedApprover] = [self.model, self.commands]
        if isinstance(self.approver, ScriptedApprover):
            fakes.append(self.approver)
        for fake in fakes:
            try:
                fake.assert_complete()
            except ScenarioError as error:
                problems.append(str(error))
        return problems


def build_world(scenario: Scenario) -> ScriptedWorld:
    """Strict fakes loaded with the scenario's script."""
    commands = ScriptedCommandRunner(
        ScriptedCommand(c.command, c.output, c.exit_code, c.timed_out, c.start_fails)
        for c in scenario.commands
    )
    approver: Approver
    if scenario.approvals == "allow":
        approver = AllowAllApprover()
    elif scenario.approvals == "deny":
        approver = DenyAllApprover()
    else:
        approver = ScriptedApprover(scenario.approvals)
    shell = shell_tool(commands, timeout=scenario.shell.timeout, max_chars=scenario.shell.max_chars)
    tools = ToolRegistry([shell] if "shell" in scenario.tools else [])
    return ScriptedWorld(ScriptedModel(scripted_replies(scenario)), commands, approver, tools)
