"""What a correct loop does with a scenario's script: how it ends, each call's result, the tools offered.

Written apart from the loop (it shares only the shell tool's argument model, which is the specification),
so that fuzzing compares the loop with an independent account of the rules.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import ValidationError

from sim.core.approval import SCRIPT_DENIED_REASON
from sim.core.calls import CallRef, call_key
from sim.core.json_text import loads
from sim.core.outcome import Outcome
from sim.core.scripted import ScriptedCommand
from sim.scenario.schema import Scenario, ScriptedResultSpec, ScriptedToolSpec
from sim.tools.shell import ShellArguments, format_command_output


@dataclass(frozen=True, slots=True)
class ExpectedResult:
    """A call's result: its error code (None: success) and, where the rules fix it, its exact content."""

    error_code: str | None
    content: str | None


@dataclass(slots=True)
class Expected:
    """How a correct loop plays the script."""

    outcome: Outcome
    turns: int
    final_text: str | None = None
    results: dict[CallRef, ExpectedResult] = field(default_factory=dict)
    """Each call's result, by `(id, turn)`."""
    offered: list[list[str]] = field(default_factory=list)
    """The tools offered in each request, in order."""
    valid_calls: list[str] = field(default_factory=list)
    """Ids of the calls that passed validation (and so were shown to the approver), in order."""
    runs: list[str] = field(default_factory=list)
    """Commands the shell ran, in order."""


def _error(code: str, message: str | None) -> ExpectedResult:
    return ExpectedResult(code, None if message is None else f"Error [{code}]: {message}")


class Answers(Protocol):
    """Where the world's answers come from: the approver, the shell and the scripted tools."""

    def approve(self, call_id: str) -> bool:
        """Whether the valid call `call_id` is allowed."""
        ...

    def command(self, command: str) -> ScriptedCommand:
        """How `command` ends."""
        ...

    def result(self, call_id: str, turn: int) -> str | ScriptedResultSpec:
        """What the scripted tool returns for turn `turn`'s call `call_id`."""
        ...


class ScriptAnswers:
    """The answers a scenario scripts; `ValueError` when one is missing."""

    def __init__(self, scenario: Scenario) -> None:
        self._scenario = scenario
        self._answers = iter(scenario.approvals) if isinstance(scenario.approvals, list) else None
        self._commands = [c.scripted() for c in scenario.commands]

    def approve(self, call_id: str) -> bool:
        if self._answers is None:
            return self._scenario.approvals == "allow"
        return next(self._answers, False)

    def command(self, command: str) -> ScriptedCommand:
        entry = next((c for c in self._commands if c.command == command), None)
        if entry is None:
            raise ValueError(f"the script has no output for the command {command!r}")
        self._commands.remove(entry)
        return entry

    def result(self, call_id: str, turn: int) -> str | ScriptedResultSpec:
        results = self._scenario.results
        spec = results.get(call_key(call_id, turn), results.get(call_id))
        if spec is None:
            raise ValueError(f"the script has no result for the call {call_id}")
        return spec


def expect(scenario: Scenario, answers: Answers | None = None) -> Expected:
    """Play the script by the rules, taking the world's answers from `answers` (default: the script's);
    `ValueError` when the script runs out before the run can end."""
    world = answers or ScriptAnswers(scenario)
    scripted = {t.name: t for t in scenario.tools if isinstance(t, ScriptedToolSpec)}
    available = [t if isinstance(t, str) else t.name for t in scenario.tools
                 if isinstance(t, str) or t.available_after is None]  # fmt: skip
    expected = Expected(outcome="completed", turns=0)
    for turn, (reply, ids) in enumerate(zip(scenario.replies, scenario.call_ids(), strict=True), 1):
        expected.turns = turn
        expected.offered.append(list(available))
        if reply.error is not None or reply.malformed or reply.cut_after_chunks is not None or reply.fault:
            expected.outcome = "api_error"
            return expected
        finish = reply.finish()
        if finish == "length":
            expected.outcome = "incomplete"
            return expected
        if finish == "content_filter":
            expected.outcome = "content_filter"
            return expected
        if len(set(ids)) != len(ids):
            expected.outcome = "contract_error"
            return expected
        if not reply.tool_calls:
            expected.outcome = "completed" if reply.content is not None else "no_final_text"
            expected.final_text = reply.content
            return expected
        offered = set(available)
        for call, call_id in zip(reply.tool_calls, ids, strict=True):
            result = _validate(call.name, call.raw_arguments(), offered)
            if result is None:
                expected.valid_calls.append(call_id)
                if not world.approve(call_id):
                    result = _error("permission_denied", SCRIPT_DENIED_REASON)
                else:
                    if call.name == "shell":
                        command = json.loads(call.raw_arguments())["command"]
                        expected.runs.append(command)
                        result = _shell(world.command(command), scenario)
                    else:
                        result = _scripted(world.result(call_id, turn))
                    ran = (call_key(call_id, turn), call_id)  # whatever tool ran it
                    available += [t.name for t in scripted.values()
                                  if t.available_after in ran and t.name not in available]  # fmt: skip
            expected.results[(call_id, turn)] = result
        if turn == scenario.max_turns:
            expected.outcome = "max_turns"
            return expected
    raise ValueError("the script runs out of replies before the run can end")


def _validate(name: str, arguments: str, offered: set[str]) -> ExpectedResult | None:
    if name not in offered:
        return _error("unknown_tool", f"Unknown tool: {name}")
    try:
        parsed = loads(arguments, strict=True)
    except ValueError:
        return _error("invalid_json", "Tool arguments must be valid JSON")
    if not isinstance(parsed, dict):
        return _error("invalid_arguments", "Tool arguments must be a JSON object")
    if name == "shell":
        try:
            ShellArguments.model_validate_json(arguments, strict=True)
        except ValidationError:
            return _error("invalid_arguments", None)
    return None


def _shell(entry: ScriptedCommand, scenario: Scenario) -> ExpectedResult:
    if entry.start_fails:
        return _error("shell_start_failed", "Shell process could not be started")
    result = format_command_output(entry.result(scenario.shell.max_chars), scenario.shell.timeout)
    return ExpectedResult(result.error_code, result.content)


def _scripted(spec: str | ScriptedResultSpec) -> ExpectedResult:
    if isinstance(spec, str):
        return ExpectedResult(None, spec)
    if spec.raises:
        return _error("tool_execution_error", "Tool execution failed")
    return ExpectedResult(spec.error_code, spec.content)
