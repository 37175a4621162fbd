"""A run told as plain lines for people: each turn, each call and its result, how it ended."""

from __future__ import annotations

from sim.core.calls import CallRef
from sim.core.counts import counted, turns
from sim.core.events import (
    ModelReplied,
    RunEnded,
    RunEvent,
    ToolCallApproved,
    ToolCallFinished,
    TurnStarted,
)
from sim.core.outcome import outcome_of
from sim.core.untrusted import visible

_PREVIEW_CHARS = 200


def preview(text: str, limit: int = _PREVIEW_CHARS) -> str:
    """`text` on one line, shortened to `limit` characters, its control characters written out (only
    what is shown is worked on: each character is written as one or more, so its first `limit` are enough)."""
    flat = visible(text[:limit])  # a newline written out too
    return flat if len(flat) <= limit and len(text) <= limit else flat[: limit - 1] + "…"


def event_lines(event: RunEvent) -> list[str]:
    """The lines that tell one event."""
    if isinstance(event, TurnStarted):
        return [f"turn {event.turn}: request with {counted(len(event.request.messages), 'message')}"]
    if isinstance(event, ModelReplied):
        message = event.reply.message
        lines = []
        if message.content is not None:
            lines.append(f"  assistant: {preview(message.content)}")
        lines += [
            f"  call {visible(call.id)}: {visible(call.name)} {preview(call.arguments)}"
            for call in message.tool_calls
        ]
        if message.content is None and not message.tool_calls:
            lines.append("  assistant: (no content)")
        if event.reply.finish_reason not in ("stop", "tool_calls"):
            lines.append(f"  finish_reason: {event.reply.finish_reason}")
        return lines
    if isinstance(event, ToolCallApproved) and not event.decision.allowed:
        return [f"  denied {visible(event.call.id)}: {preview(event.decision.reason)}"]
    if isinstance(event, ToolCallFinished):
        return [f"  result {visible(event.call.id)}: {preview(event.result.content)}"]
    if isinstance(event, RunEnded):
        if event.result is not None:
            return [f"completed in {turns(event.result.turns)}: {preview(event.result.final_text)}"]
        if event.error is not None:
            return [
                f"{outcome_of(event.error)} after {turns(event.error.turns)}: {preview(str(event.error))}"
            ]
    return []


class TranscriptRecorder:
    """An observer that keeps the transcript lines and every call's result."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.tool_results: dict[CallRef, ToolCallFinished] = {}
        """Each call's result, by `(id, turn)`."""

    def __call__(self, event: RunEvent) -> None:
        """Record one event."""
        self.lines.extend(event_lines(event))
        if isinstance(event, ToolCallFinished):
            self.tool_results[(event.call.id, event.turn)] = event
