"""The agent loop: ask the model, run the tools it calls, repeat until it answers or max_turns."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ParamSpec

from sim.core.approval import ApprovalDecision, ApprovalRequest, Approver
from sim.core.checks import require_positive_int, require_text
from sim.core.errors import (
    AgentError,
    AgentLimitError,
    AgentRunError,
    IncompleteModelReplyError,
)
from sim.core.events import (
    ModelReplied,
    RunEnded,
    RunEvent,
    RunObserver,
    ToolCallApproved,
    ToolCallFinished,
    ToolCallPrepared,
    TurnStarted,
)
from sim.core.limits import DEFAULT_MAX_TURNS
from sim.core.messages import (
    ChatMessage,
    HistoryView,
    PairingChecker,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from sim.core.model import ModelClient, ModelRequest, OutputFormat
from sim.core.outcome import CONTENT_FILTERED, NO_FINAL_TEXT, Outcome, outcome_of
from sim.core.tools import ToolRegistry, ToolResult, ToolSnapshot

DEFAULT_SYSTEM_PROMPT = (
    "You are a coding agent. Use tools when needed, inspect their results, and answer accurately."
)
APPROVAL_FAILED_CLOSED = "Tool approval failed closed"

_Fields = ParamSpec("_Fields")


@dataclass(frozen=True, slots=True)
class RunResult:
    """A finished run: the final text, the whole history (all runs so far), and this run's turns."""

    final_text: str
    history: tuple[ChatMessage, ...]
    turns: int


@dataclass(frozen=True, slots=True)
class RunEnding:
    """How a run ended: its result, or the `AgentError` it raised."""

    result: RunResult | None
    error: AgentError | None

    @classmethod
    async def settle(cls, run: Awaitable[RunResult]) -> RunEnding:
        """Await a run (any loop's `run(prompt)`), keeping the `AgentError` it raises instead of raising."""
        try:
            return cls(await run, None)
        except AgentError as error:
            return cls(None, error)

    @property
    def history(self) -> tuple[ChatMessage, ...]:
        """The history the run left: its result's, or the one its error carries."""
        if self.result is not None:
            return self.result.history
        return self.error.history if self.error is not None else ()

    @property
    def final_text(self) -> str | None:
        """The final answer, when there is one."""
        return self.result.final_text if self.result else None

    @property
    def turns(self) -> int:
        """Model requests made."""
        if self.result is not None:
            return self.result.turns
        return self.error.turns if self.error else 0

    @property
    def outcome(self) -> Outcome:
        """How it ended, in one word."""
        return outcome_of(self.error)


def _both(first: RunObserver | None, then: RunObserver | None) -> RunObserver | None:
    """One observer telling `first`, then `then`, each event (either may be None)."""
    if first is None or then is None:
        return first or then

    def observe(event: RunEvent) -> None:
        first(event)
        then(event)

    return observe


class AgentRunner:
    """Runs prompts through a model and tools; the history persists across `run()` calls."""

    def __init__(
        self,
        model: ModelClient,
        tools: ToolRegistry,
        approver: Approver,
        workspace: Path | str = ".",
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        max_turns: int = DEFAULT_MAX_TURNS,
        observer: RunObserver | None = None,
        output: OutputFormat | None = None,
    ) -> None:
        self.max_turns = require_positive_int("max_turns", max_turns)
        self.output = output
        """The structured format every request asks of the text, if any."""
        require_text("system prompt", system_prompt)
        self.model = model
        self.tools = tools
        self.approver = approver
        self.workspace = Path(workspace)
        self.system = SystemMessage(content=system_prompt)
        self.observer = observer
        self._observe: RunObserver | None = None
        self._history: list[ChatMessage] = []
        self._pairing = PairingChecker()

    @property
    def history(self) -> tuple[ChatMessage, ...]:
        """Every message of every run so far, without the system prompt."""
        return tuple(self._history)

    async def run_to_end(self, prompt: str, *, observer: RunObserver | None = None) -> RunEnding:
        """`run`, returning the `AgentError` it raised instead of raising it."""
        return await RunEnding.settle(self.run(prompt, observer=observer))

    def run_sync(self, prompt: str) -> RunResult:
        """`run` for code that has no event loop."""
        return asyncio.run(self.run(prompt))

    async def run(self, prompt: str, *, observer: RunObserver | None = None) -> RunResult:
        """Answer `prompt`; raise an `AgentError` carrying the history if the run cannot finish. Each
        event is told to this run's `observer`, if given, then to the runner's."""
        self._observe = _both(observer, self.observer)
        turns = 0
        try:
            self._append(UserMessage(content=prompt))
            for turn in range(1, self.max_turns + 1):
                self._pairing.require_complete()
                snapshot = self.tools.snapshot()
                request = ModelRequest(
                    HistoryView(self.system, self._history, len(self._history)), snapshot.specs, self.output
                )
                self._emit(TurnStarted, turn, request)
                turns = turn
                reply = await self.model.complete(request)
                self._emit(ModelReplied, turn, reply)
                if reply.finish_reason == "length":
                    raise IncompleteModelReplyError("Model output reached the token limit")
                if reply.finish_reason == "content_filter":
                    raise AgentRunError(CONTENT_FILTERED)
                message = reply.message
                self._append(message)
                if not message.tool_calls:
                    if message.content is None:
                        raise AgentRunError(NO_FINAL_TEXT)
                    result = RunResult(message.content, tuple(self._history), turns)
                    self._emit(RunEnded, result, None)
                    return result
                for call in message.tool_calls:
                    outcome = await self._execute(turn, call, snapshot)
                    self._emit(ToolCallFinished, turn, call, outcome)
                    self._append(ToolMessage(tool_call_id=call.id, content=outcome.content))
            raise AgentLimitError(f"Agent exceeded max_turns={self.max_turns}")
        except AgentError as error:
            error.history, error.turns = tuple(self._history), turns
            self._emit(RunEnded, None, error)
            raise
        except Exception as error:
            wrapped = AgentRunError(
                f"Run failed: {type(error).__name__}: {error}",
                history=self._history,
                turns=turns,
            )
            self._emit(RunEnded, None, wrapped)
            raise wrapped from error

    def _append(self, message: ChatMessage) -> None:
        self._pairing.check(message)
        self._history.append(message)

    def _emit(
        self, event: Callable[_Fields, RunEvent], *fields: _Fields.args, **named: _Fields.kwargs
    ) -> None:
        """Build and report an event only when someone observes: long runs allocate less."""
        if self._observe is not None:
            self._observe(event(*fields, **named))

    async def _execute(self, turn: int, call: ToolCall, snapshot: ToolSnapshot) -> ToolResult:
        prepared = snapshot.prepare(call)
        if isinstance(prepared, ToolResult):
            self._emit(ToolCallPrepared, turn, call, prepared)
            return prepared
        self._emit(ToolCallPrepared, turn, call, None)
        request = ApprovalRequest(call, prepared.tool.effect, prepared.arguments)
        decision = await self._approve(request)
        self._emit(ToolCallApproved, turn, call, decision)
        if not decision.allowed:
            return ToolResult.error("permission_denied", decision.reason)
        return await snapshot.invoke(prepared, self.workspace, turn)

    async def _approve(self, request: ApprovalRequest) -> ApprovalDecision:
        try:
            decision = await self.approver.approve(request)
        except AgentError:
            raise
        except Exception:
            return ApprovalDecision.deny(APPROVAL_FAILED_CLOSED)
        if not isinstance(decision, ApprovalDecision) or (
            not decision.allowed and not decision.reason.strip()
        ):
            return ApprovalDecision.deny(APPROVAL_FAILED_CLOSED)
        return decision
