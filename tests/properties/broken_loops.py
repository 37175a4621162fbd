"""A small agent loop with one deliberate bug at a time, to prove that fuzzing catches each.

It follows the same rules as `AgentRunner` (and builds the same way) except where `bug` says.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

from sim.core.approval import ApprovalDecision, ApprovalRequest
from sim.core.errors import (
    AgentError,
    AgentLimitError,
    AgentRunError,
    IncompleteModelReplyError,
    MessageContractError,
)
from sim.core.loop import RunResult
from sim.core.messages import ChatMessage, SystemMessage, ToolMessage, UserMessage
from sim.core.model import ModelRequest
from sim.core.outcome import CONTENT_FILTERED, NO_FINAL_TEXT
from sim.core.tools import AnyArguments, PreparedCall, ToolResult, ToolSnapshot

BUGS = (
    "skip_tool_message_when_handler_raises",
    "store_reply_on_length",
    "one_turn_too_many",
    "handler_before_validation",
    "stale_tool_snapshot",
)


class BrokenLoop:
    """`AgentRunner`'s rules, but for one bug."""

    def __init__(self, model: Any, tools: Any, approver: Any, *, workspace: Path, system_prompt: str,
                 max_turns: int, bug: str) -> None:  # fmt: skip
        self.model, self.tools, self.approver, self.bug = model, tools, approver, bug
        self.workspace, self.system, self.max_turns = (
            workspace,
            SystemMessage(content=system_prompt),
            max_turns,
        )
        self.history: list[ChatMessage] = []

    async def run(self, prompt: str) -> RunResult:
        self.history.append(UserMessage(content=prompt))
        turns = 0
        first = self.tools.snapshot()
        try:
            for turn in range(1, self.max_turns + (2 if self.bug == "one_turn_too_many" else 1)):
                turns = turn
                snapshot = first if self.bug == "stale_tool_snapshot" else self.tools.snapshot()
                reply = await self.model.complete(ModelRequest([self.system, *self.history], snapshot.specs))
                if reply.finish_reason == "length":
                    if self.bug == "store_reply_on_length":
                        self.history.append(reply.message)
                    raise IncompleteModelReplyError("Model output reached the token limit")
                if reply.finish_reason == "content_filter":
                    raise AgentRunError(CONTENT_FILTERED)
                ids = [call.id for call in reply.message.tool_calls]
                if len(set(ids)) != len(ids):
                    raise MessageContractError("assistant tool call ids must be unique")
                self.history.append(reply.message)
                if not reply.message.tool_calls:
                    if reply.message.content is None:
                        raise AgentRunError(NO_FINAL_TEXT)
                    return RunResult(reply.message.content, tuple(self.history), turns)
                for call in reply.message.tool_calls:
                    result = await self._execute(call, snapshot)
                    if (
                        self.bug == "skip_tool_message_when_handler_raises"
                        and result.error_code == "tool_execution_error"
                    ):
                        continue
                    self.history.append(ToolMessage(tool_call_id=call.id, content=result.content))
            raise AgentLimitError(f"Agent exceeded max_turns={self.max_turns}")
        except AgentError as error:
            error.history, error.turns = tuple(self.history), turns
            raise

    async def _execute(self, call: Any, snapshot: ToolSnapshot) -> ToolResult:
        if self.bug == "handler_before_validation" and (tool := snapshot.get(call.name)) is not None:
            try:
                loose = AnyArguments.model_validate(json.loads(call.arguments))
            except ValueError:
                loose = None
            if loose is not None:  # asks and runs before the schema has had its say
                decision = await self.approver.approve(ApprovalRequest(call, tool.effect, loose))
                if not decision.allowed:
                    return ToolResult.error("permission_denied", decision.reason)
                unchecked = tool.input_model.model_construct(**loose.model_dump())
                return await snapshot.invoke(PreparedCall(call, tool, unchecked), self.workspace)
        prepared = snapshot.prepare(call)
        if isinstance(prepared, ToolResult):
            return prepared
        decision: ApprovalDecision = await self.approver.approve(
            ApprovalRequest(call, prepared.tool.effect, prepared.arguments)
        )
        if not decision.allowed:
            return ToolResult.error("permission_denied", decision.reason)
        return await snapshot.invoke(prepared, self.workspace)


def broken(bug: str) -> Any:
    """A runner factory for the loop with `bug`."""
    return partial(BrokenLoop, bug=bug)
