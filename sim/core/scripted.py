"""Strict scripted fakes of the model, the command runner, the approver and tool results.

Each records what it was asked, raises `ScenarioError` when asked for something its script does not
hold, and `assert_complete()` raises when parts of the script were never used.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from sim.core.approval import SCRIPT_DENIED_REASON, ApprovalDecision, ApprovalRequest
from sim.core.calls import call_key
from sim.core.commands import CommandOutput, OutputBudget
from sim.core.errors import ScenarioError
from sim.core.messages import RequestPairing, ToolCall
from sim.core.model import ModelReply, ModelRequest
from sim.core.tools import ToolContext, ToolResult


class ScriptedModel:
    """Answers requests with scripted replies (or raises scripted exceptions), in order.

    Every request is checked the way the real API checks it: tool calls and results must pair.
    """

    def __init__(self, replies: Iterable[ModelReply | Exception]) -> None:
        self._script: list[ModelReply | Exception] = list(replies)
        self.requests: list[ModelRequest] = []
        self._pairing = RequestPairing()

    @property
    def remaining(self) -> int:
        """How many scripted replies have not been used."""
        return len(self._script) - len(self.requests)

    async def complete(self, request: ModelRequest) -> ModelReply:
        """The next scripted reply, after checking the request's pairing."""
        self.requests.append(request)
        number = len(self.requests)
        self._pairing.check(request.messages)
        if number > len(self._script):
            raise ScenarioError(
                f"ScriptedModel got request {number} but its script has {len(self._script)} replies"
            )
        step = self._script[number - 1]
        if isinstance(step, Exception):
            raise step
        return step

    def assert_complete(self) -> None:
        """Raise `ScenarioError` if scripted replies were left unused."""
        if self.remaining > 0:
            raise ScenarioError(
                f"ScriptedModel has {self.remaining} unused of {len(self._script)} scripted replies"
            )


@dataclass(frozen=True, slots=True)
class ScriptedCommand:
    """What one command "prints" and how it ends; it is never executed."""

    command: str
    output: str = ""
    exit_code: int = 0
    timed_out: bool = False
    start_fails: bool = False

    def result(self, max_chars: int) -> CommandOutput:
        """What a runner reports for this command, keeping at most `max_chars` characters."""
        budget = OutputBudget(max_chars)
        budget.feed_text(self.output)
        return CommandOutput(
            output=budget.text(),
            exit_code=None if self.timed_out else self.exit_code,
            timed_out=self.timed_out,
            truncated=budget.truncated,
        )


class ScriptedCommandRunner:
    """Answers commands from a script: each entry answers one run of its exact command, in any order."""

    def __init__(self, commands: Iterable[ScriptedCommand]) -> None:
        self._unused: list[ScriptedCommand] = list(commands)
        self.calls: list[str] = []

    async def run(self, command: str, *, cwd: Path, timeout: float, max_chars: int) -> CommandOutput:
        """The first unused scripted entry for `command`; `ScenarioError` when there is none."""
        self.calls.append(command)
        for index, entry in enumerate(self._unused):
            if entry.command == command:
                del self._unused[index]
                if entry.start_fails:
                    raise OSError(f"scripted start failure: {command!r}")
                return entry.result(max_chars)
        raise ScenarioError(f"unscripted command: {command!r}")

    def assert_complete(self) -> None:
        """Raise `ScenarioError` if scripted commands were never run."""
        if self._unused:
            names = ", ".join(repr(entry.command) for entry in self._unused)
            raise ScenarioError(f"scripted commands never run: {names}")


class ScriptedApprover:
    """Answers approval requests from a script, in order; `True` allows, `False` denies."""

    def __init__(self, answers: Iterable[bool | ApprovalDecision]) -> None:
        self._answers: deque[ApprovalDecision] = deque(
            answer
            if isinstance(answer, ApprovalDecision)
            else ApprovalDecision(answer, "" if answer else SCRIPT_DENIED_REASON)
            for answer in answers
        )
        self.requests: list[ApprovalRequest] = []

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        """The next scripted answer; `ScenarioError` when there is none."""
        self.requests.append(request)
        if not self._answers:
            raise ScenarioError(
                f"approval request {len(self.requests)} (call {request.call.id},"
                f" {request.call.name}) has no scripted answer"
            )
        return self._answers.popleft()

    def assert_complete(self) -> None:
        """Raise `ScenarioError` if scripted answers were left unused."""
        if self._answers:
            raise ScenarioError(f"{len(self._answers)} scripted approval answer(s) never used")


class ScriptedHandlerFailure(RuntimeError):
    """What a scripted tool handler raises when its script says it fails."""


class ScriptedToolResults:
    """Answers tool calls from a script, by call key: a tool handler for tools whose results are scripted.

    A key is the call id, or `id@turn` for the call of that id made in that turn (ids may be reused
    across turns); `id@turn` is looked up first. A result given as an exception instance is raised
    instead of returned.
    """

    def __init__(self, results: Mapping[str, ToolResult | Exception]) -> None:
        self._unused: dict[str, ToolResult | Exception] = dict(results)
        self.calls: list[ToolCall] = []

    def answer(self, arguments: object, context: ToolContext) -> ToolResult:
        """The scripted result of `context.call`; `ScenarioError` when there is none (or it was used)."""
        call = context.call
        self.calls.append(call)
        result = self._unused.pop(call_key(call.id, context.turn), None) or self._unused.pop(call.id, None)
        if result is None:
            raise ScenarioError(f"no scripted result for call {call.id} ({call.name}) in turn {context.turn}")
        if isinstance(result, Exception):
            raise result
        return result

    def assert_complete(self) -> None:
        """Raise `ScenarioError` if scripted results were never asked for."""
        if self._unused:
            raise ScenarioError(f"scripted results never used: {', '.join(self._unused)}")
