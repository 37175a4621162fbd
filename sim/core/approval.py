"""Approval of tool calls: the `Approver` protocol and the approvers sim ships."""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from typing import Any, Protocol, TextIO

from pydantic import BaseModel

from sim.core.messages import ToolCall
from sim.core.tools import ToolEffect

NO_TTY_REASON = "No interactive approval input was available"
USER_DENIED_REASON = "The user denied this call"
SCRIPT_DENIED_REASON = "The call was denied"

_EFFECT_REASONS: dict[str, str] = {
    "read": "it reads data from this machine",
    "write": "it changes files on this machine",
    "execute": "it runs a command on this machine",
}


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A validated call waiting for permission."""

    call: ToolCall
    effect: ToolEffect
    validated: BaseModel

    @property
    def arguments(self) -> dict[str, Any]:
        """The validated arguments as JSON-compatible data."""
        return self.validated.model_dump(mode="json")

    @property
    def reason(self) -> str:
        """Why this call needs approval, in words for a person."""
        return f"{self.call.name} needs approval because {_EFFECT_REASONS[self.effect]}"


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    """Allowed, or denied with a reason the model will read."""

    allowed: bool
    reason: str = ""

    @classmethod
    def allow(cls) -> ApprovalDecision:
        """Let the call run."""
        return cls(True)

    @classmethod
    def deny(cls, reason: str) -> ApprovalDecision:
        """Refuse the call; the model reads `Error [permission_denied]: reason`."""
        return cls(False, reason)


class Approver(Protocol):
    """Decides whether a validated call may run; raising or a blank denial fails closed."""

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        """Allow or deny one call."""
        ...


class AllowAllApprover:
    """Allows every call."""

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        """Allow."""
        return ApprovalDecision.allow()


class DenyAllApprover:
    """Denies every call with one reason."""

    def __init__(self, reason: str = SCRIPT_DENIED_REASON) -> None:
        self.reason = reason

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        """Deny."""
        return ApprovalDecision.deny(self.reason)


class TerminalApprover:
    """Asks a person on the terminal; only `y` or `yes` allows. Without a TTY it denies."""

    def __init__(self, stdin: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self._stdin = stdin
        self._stderr = stderr

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        """Print the call on stderr and read the answer from the TTY."""
        return await asyncio.to_thread(self._ask, request)

    def _ask(self, request: ApprovalRequest) -> ApprovalDecision:
        stdin = self._stdin or sys.stdin
        stderr = self._stderr or sys.stderr
        if stdin is None or stdin.closed or not stdin.isatty():
            return ApprovalDecision.deny(NO_TTY_REASON)
        arguments = json.dumps(request.arguments, ensure_ascii=False)
        stderr.write(
            f"Tool: {request.call.name}\nReason: {request.reason}\nArguments: {arguments}\n"
            "Allow this call? [y/N] "
        )
        stderr.flush()
        answer = stdin.readline()
        if answer.strip().lower() in ("y", "yes"):
            return ApprovalDecision.allow()
        return ApprovalDecision.deny(USER_DENIED_REASON)
