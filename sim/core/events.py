"""What a run reports as it goes, for observers such as a live transcript."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sim.core.approval import ApprovalDecision
from sim.core.errors import AgentError
from sim.core.messages import ToolCall
from sim.core.model import ModelReply, ModelRequest
from sim.core.tools import ToolResult

if TYPE_CHECKING:
    from sim.core.loop import RunResult


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """A model request is about to be sent."""

    turn: int
    request: ModelRequest


@dataclass(frozen=True, slots=True)
class ModelReplied:
    """The model answered."""

    turn: int
    reply: ModelReply


@dataclass(frozen=True, slots=True)
class ToolCallPrepared:
    """A call was looked up and validated; `error` is its result when that failed."""

    turn: int
    call: ToolCall
    error: ToolResult | None


@dataclass(frozen=True, slots=True)
class ToolCallApproved:
    """The approver decided on a valid call."""

    turn: int
    call: ToolCall
    decision: ApprovalDecision


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """A call has its result, which the model will read."""

    turn: int
    call: ToolCall
    result: ToolResult


@dataclass(frozen=True, slots=True)
class RunEnded:
    """The run returned `result` or raised `error`."""

    result: RunResult | None
    error: AgentError | None


RunEvent = TurnStarted | ModelReplied | ToolCallPrepared | ToolCallApproved | ToolCallFinished | RunEnded
"""Any event a run reports."""

RunObserver = Callable[[RunEvent], None]
"""Receives each event as it happens."""
