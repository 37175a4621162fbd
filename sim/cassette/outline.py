"""A cassette told turn by turn: each request's new messages, each reply or HTTP error, what was ignored."""

from __future__ import annotations

from sim.cassette.conversations import Exchange, HttpFailure, conversations
from sim.cassette.reader import Cassette
from sim.core.messages import AssistantMessage, ChatMessage, ToolMessage
from sim.core.transcript import preview


def _message(message: ChatMessage) -> list[str]:
    if isinstance(message, ToolMessage):
        return [f"  + tool {message.tool_call_id}: {preview(message.content)}"]
    if isinstance(message, AssistantMessage):
        lines = [f"  + assistant: {preview(message.content)}"] if message.content else []
        return lines + [
            f"  + assistant calls {c.id}: {c.name} {preview(c.arguments)}" for c in message.tool_calls
        ]
    return [f"  + {message.role}: {preview(message.content)}"]


def _exchange(exchange: Exchange, turn: int) -> list[str]:
    request = exchange.interaction.request
    streamed = " (streamed)" if exchange.streamed else ""
    lines = [
        f"turn {turn} (interaction {exchange.interaction.index}): {request.method} {request.uri}{streamed}"
    ]
    if exchange.request_problem:
        lines.append(f"  ! request cannot be read: {exchange.request_problem}")
    for message in exchange.new_messages:
        lines += _message(message)
    reply = exchange.reply
    if isinstance(reply, HttpFailure):
        return [*lines, f"  = HTTP {reply.status}: {preview(reply.message)}"]
    if reply.message.content is not None:
        lines.append(f"  = assistant: {preview(reply.message.content)}")
    lines += [f"  = calls {c.id}: {c.name} {preview(c.arguments)}" for c in reply.message.tool_calls]
    usage = reply.usage
    tokens = f", tokens {usage.prompt_tokens}+{usage.completion_tokens}={usage.total_tokens}" if usage else ""
    lines.append(f"  = finish_reason: {reply.finish_reason}{tokens}")
    return lines


def outline(cassette: Cassette) -> list[str]:
    """Lines for people, conversation by conversation."""
    found = conversations(cassette)
    chats = sum(len(c.exchanges) for c in found)
    lines = [
        f"{cassette.path.name}: {len(cassette.interactions)} interactions, {chats} chat completions"
        f" in {len(found)} conversation(s)"
    ]
    for number, conversation in enumerate(found, 1):
        lines.append(f"conversation {number}")
        for turn, exchange in enumerate(conversation.exchanges, 1):
            lines += _exchange(exchange, turn)
    for interaction in cassette.interactions:
        if not interaction.is_chat_completion:
            request = interaction.request
            ignored = f"{request.method} {request.uri} (not a chat completion)"
            lines.append(f"ignored interaction {interaction.index}: {ignored}")
    if (sim := cassette.sim) is not None:
        lines.append(f"recorded by sim record: outcome {sim.get('outcome')} in {sim.get('turns')} turns")
    return lines
