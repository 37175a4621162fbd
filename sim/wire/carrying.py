"""What asking a recorded conversation again needs of either API: a recorded reply read as the `Answer` the
next request carries back, the recorded call ids paired with the live ones, and `CannotResend` when the next
recorded request cannot carry the live reply."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sim.core.messages import ToolCall
from sim.core.model import ModelReply


@dataclass(frozen=True, slots=True)
class Answer:
    """A reply as a server sent it: read as the loop's reply, whether it was a refusal, what the next
    request carries back of it (Chat's assistant message, the Responses API's output items), and the
    response's id (for a chain)."""

    reply: ModelReply
    refused: bool
    carried: list[Any]
    response_id: str | None


class CannotResend(Exception):
    """The next recorded request cannot carry the live reply (the recorded conversation was rewritten)."""


def renamed(was: Sequence[ToolCall], now: Sequence[ToolCall]) -> dict[str, str]:
    """The recorded call ids -> the live ones, calls of the same tool paired in order."""
    waiting: dict[str, list[str]] = {}
    for call in now:
        waiting.setdefault(call.name, []).append(call.id)
    return {call.id: waiting[call.name].pop(0) for call in was if waiting.get(call.name)}
