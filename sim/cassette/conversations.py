"""A cassette's chat completions read as conversations: each request's new messages and the reply it got."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sim.adapters.chat_wire import messages_from_wire, reply_from_events, reply_from_wire, tools_from_wire
from sim.cassette.reader import Cassette, RecordedInteraction
from sim.core.errors import AgentError
from sim.core.messages import ChatMessage
from sim.core.model import ModelReply, ToolSpec


@dataclass(frozen=True, slots=True)
class HttpFailure:
    """A recorded error response (or a reply that cannot be read)."""

    status: int
    message: str
    error_type: str | None = None
    code: str | None = None
    unreadable: bool = False


@dataclass(frozen=True, slots=True)
class Exchange:
    """One chat completion: what the request held, what it added, and what came back."""

    interaction: RecordedInteraction
    messages: list[ChatMessage]
    new_messages: list[ChatMessage]
    tools: tuple[ToolSpec, ...]
    streamed: bool
    reply: ModelReply | HttpFailure
    request_problem: str | None = None


@dataclass(slots=True)
class Conversation:
    """Requests that each extend the one before (in recorded order, other conversations' requests may
    come between them)."""

    exchanges: list[Exchange] = field(default_factory=list)

    def continued_by(self, messages: list[ChatMessage]) -> tuple[bool, int] | None:
        """How well `messages` continue this conversation (its last reply comes next, the length of what
        it repeats), or None when they do not extend it. A conversation ending in an unreadable request
        is continued by nothing."""
        last = self.exchanges[-1]
        previous = last.messages
        if last.request_problem or len(messages) <= len(previous) or messages[: len(previous)] != previous:
            return None
        reply = last.reply
        carries_reply = isinstance(reply, ModelReply) and messages[len(previous)] == reply.message
        return carries_reply, len(previous)


def _request(
    interaction: RecordedInteraction,
) -> tuple[list[ChatMessage], tuple[ToolSpec, ...], bool, str | None]:
    body = interaction.request.json()
    if not isinstance(body, dict):
        return [], (), False, "request body is not a JSON object"
    try:
        return (
            messages_from_wire(body.get("messages")),
            tools_from_wire(body.get("tools")),
            bool(body.get("stream")),
            None,
        )
    except AgentError as error:
        return [], (), bool(body.get("stream")), str(error)


def _reply(interaction: RecordedInteraction) -> ModelReply | HttpFailure:
    response = interaction.response
    if response.status >= 400:
        body: Any = response.json()
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            return HttpFailure(
                response.status,
                str(error.get("message", "")),
                _text(error.get("type")),
                _text(error.get("code")),
            )
        return HttpFailure(response.status, response.body.decode("utf-8", errors="replace")[:200])
    try:
        if response.is_event_stream:
            return reply_from_events(response.events())
        return reply_from_wire(response.json())
    except (AgentError, ValueError) as error:
        return HttpFailure(response.status, f"unreadable reply: {error}", unreadable=True)


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def conversations(cassette: Cassette) -> list[Conversation]:
    """The cassette's chat completions grouped into conversations, in recorded order. Each request joins
    the conversation it continues best (the one whose last reply it carries, then the one it repeats
    most of), so conversations that take turns (concurrent tests, several agents) stay whole; a request
    that cannot be read stands alone."""
    found: list[Conversation] = []
    for interaction in cassette.interactions:
        if not interaction.is_chat_completion:
            continue
        messages, tools, streamed, problem = _request(interaction)
        scored = (
            []
            if problem
            else [(fit, index) for index, c in enumerate(found) if (fit := c.continued_by(messages))]
        )
        if scored:
            conversation = found[max(scored)[1]]
            new = messages[len(conversation.exchanges[-1].messages) :]
        else:
            conversation = Conversation()
            found.append(conversation)
            new = messages
        conversation.exchanges.append(
            Exchange(interaction, messages, new, tools, streamed, _reply(interaction), problem)
        )
    return found
