"""A run told as lines for people: each turn, each call and its result, how it ended; each line says what
it is (`LineKind`), so what shows a line (a terminal, a report page) styles it by its kind, never by its
wording (recorded text may imitate any wording)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum

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


class LineKind(StrEnum):
    """What a line for people tells."""

    heading = "heading"
    """What the lines are about (a cassette's name and size, a scenario's name)."""
    note = "note"
    """Anything else worth a line: how a reply ended mid-run, what a line continues, a campaign's script."""
    conversation = "conversation"
    """Where one of a cassette's conversations starts."""
    turn = "turn"
    """A request to the model (a turn, a scripted reply, a drifted turn)."""
    user = "user"
    system = "system"
    reasoning = "reasoning"
    assistant = "assistant"
    call = "call"
    """A tool call the model made (its arguments in `Line.arguments`)."""
    result = "result"
    """What a tool (or a scripted shell command) gave back (its error code in `Line.error_code`)."""
    denied = "denied"
    """A call the approval policy refused."""
    error = "error"
    """Something that went wrong: a run that failed, an HTTP error, a warning."""
    end = "end"
    """How a run or a reply ended well, or what is expected of it."""


@dataclass(frozen=True, slots=True)
class Line:
    """One line for people: what it tells, its text, and for a call its arguments (the JSON text shown at
    its end), for a failed tool result its error code."""

    kind: LineKind
    text: str
    arguments: str | None = None
    error_code: str | None = None

    def retold(self, say: Callable[[str], str]) -> Line:
        """The same line, its text and arguments passed through `say` (masking, writing out characters)."""
        arguments = None if self.arguments is None else say(self.arguments)
        return replace(self, text=say(self.text), arguments=arguments)


def prompt_line(prompt: str) -> Line:
    """The line that starts a run's transcript: what the user asked."""
    return Line(LineKind.user, f"user: {prompt}")


def preview(text: str, limit: int = _PREVIEW_CHARS) -> str:
    """`text` on one line, shortened to `limit` characters, its control characters written out (only
    what is shown is worked on: each character is written as one or more, so its first `limit` are enough)."""
    flat = visible(text[:limit])  # a newline written out too
    return flat if len(flat) <= limit and len(text) <= limit else flat[: limit - 1] + "…"


def call_line(text: str, arguments: str) -> Line:
    """A tool call's line: `text` (saying who calls what), then its shown `arguments`."""
    return Line(LineKind.call, f"{text} {arguments}", arguments=arguments)


def event_lines(event: RunEvent) -> list[Line]:
    """The lines that tell one event."""
    if isinstance(event, TurnStarted):
        told = f"turn {event.turn}: request with {counted(len(event.request.messages), 'message')}"
        return [Line(LineKind.turn, told)]
    if isinstance(event, ModelReplied):
        message = event.reply.message
        lines = []
        if message.content is not None:
            lines.append(Line(LineKind.assistant, f"  assistant: {preview(message.content)}"))
        lines += [
            call_line(f"  call {visible(call.id)}: {visible(call.name)}", preview(call.arguments))
            for call in message.tool_calls
        ]
        if message.content is None and not message.tool_calls:
            lines.append(Line(LineKind.assistant, "  assistant: (no content)"))
        if event.reply.finish_reason not in ("stop", "tool_calls"):
            lines.append(Line(LineKind.note, f"  finish_reason: {event.reply.finish_reason}"))
        return lines
    if isinstance(event, ToolCallApproved) and not event.decision.allowed:
        told = f"  denied {visible(event.call.id)}: {preview(event.decision.reason)}"
        return [Line(LineKind.denied, told)]
    if isinstance(event, ToolCallFinished):
        result = event.result
        told = f"  result {visible(event.call.id)}: {preview(result.content)}"
        return [Line(LineKind.result, told, error_code=result.error_code)]
    if isinstance(event, RunEnded):
        if event.result is not None:
            told = f"completed in {turns(event.result.turns)}: {preview(event.result.final_text)}"
            return [Line(LineKind.end, told)]
        if event.error is not None:
            error = event.error
            told = f"{outcome_of(error)} after {turns(error.turns)}: {preview(str(error))}"
            return [Line(LineKind.error, told)]
    return []


class TranscriptRecorder:
    """An observer that keeps the transcript lines and every call's result."""

    def __init__(self) -> None:
        self.lines: list[Line] = []
        self.tool_results: dict[CallRef, ToolCallFinished] = {}
        """Each call's result, by `(id, turn)`."""

    def __call__(self, event: RunEvent) -> None:
        """Record one event."""
        self.lines.extend(event_lines(event))
        if isinstance(event, ToolCallFinished):
            self.tool_results[(event.call.id, event.turn)] = event
