"""A cassette told turn by turn, either API: each request's new messages, each reply (reasoning shown by
size and summary) or HTTP error, what was ignored."""

from __future__ import annotations

from sim.cassette.conversations import HttpFailure, ModelCall, conversations
from sim.cassette.reader import Cassette
from sim.core.counts import counted
from sim.core.messages import AssistantMessage, ChatMessage, Reasoning, ToolMessage
from sim.core.transcript import preview


def _reasoning(reasoning: Reasoning) -> str:
    encrypted = reasoning.encrypted_content
    hidden = f"[reasoning: {len(encrypted)} chars encrypted]" if encrypted else "[reasoning]"
    summary = " ".join(reasoning.summary)
    return f"{hidden} {preview(summary)}" if summary else hidden


def _message(message: ChatMessage) -> list[str]:
    if isinstance(message, ToolMessage):
        return [f"  + tool {message.tool_call_id}: {preview(message.content)}"]
    if isinstance(message, AssistantMessage):
        lines = [f"  + assistant {_reasoning(r)}" for r in message.reasoning]
        lines += [f"  + assistant: {preview(message.content)}"] if message.content else []
        return lines + [
            f"  + assistant calls {c.id}: {c.name} {preview(c.arguments)}" for c in message.tool_calls
        ]
    return [f"  + {message.role}: {preview(message.content)}"]


def _exchange(exchange: ModelCall, turn: int) -> list[str]:
    request = exchange.interaction.request
    streamed = " (streamed)" if exchange.streamed else ""
    number = exchange.interaction.index + 1
    lines = [f"turn {turn} (interaction {number}): {request.method} {request.uri}{streamed}"]
    if exchange.request_problem:
        lines.append(f"  ! request cannot be read: {exchange.request_problem}")
    if exchange.continues is not None:
        known = (
            "not recorded here: the conversation before it is unknown" if exchange.unknown_previous else ""
        )
        lines.append(f"  (continues {exchange.continues}{'; ' + known if known else ''})")
    for sent, returned in exchange.renamed_calls.items():
        lines.append(f"  ! sends call id {sent} for the model's call {returned} (paired by position)")
    for message in exchange.new_messages:
        lines += _message(message)
    reply = exchange.reply
    if isinstance(reply, HttpFailure):
        return [*lines, f"  = HTTP {reply.status}: {preview(reply.message)}"]
    lines += [f"  = {_reasoning(r)}" for r in reply.message.reasoning]
    if reply.message.content is not None:
        lines.append(f"  = assistant: {preview(reply.message.content)}")
    lines += [f"  = calls {c.id}: {c.name} {preview(c.arguments)}" for c in reply.message.tool_calls]
    usage = reply.usage
    tokens = f", tokens {usage.prompt_tokens}+{usage.completion_tokens}={usage.total_tokens}" if usage else ""
    lines.append(f"  = {exchange.codec.ending(reply)}{tokens}")
    return lines


def outline(cassette: Cassette) -> list[str]:
    """Lines for people, conversation by conversation."""
    found = conversations(cassette)
    chats = sum(len(c.exchanges) for c in found)
    lines = [
        f"{cassette.path.name}: {counted(len(cassette.interactions), 'interaction')},"
        f" {counted(chats, 'model call')} in {counted(len(found), 'conversation')}"
    ]
    for number, conversation in enumerate(found, 1):
        lines.append(f"conversation {number}")
        for turn, exchange in enumerate(conversation.exchanges, 1):
            lines += _exchange(exchange, turn)
    for interaction in cassette.interactions:
        if not interaction.is_model_call:
            request = interaction.request
            ignored = f"{request.method} {request.uri} (not a model call)"
            lines.append(f"ignored interaction {interaction.index + 1}: {ignored}")
    if (sim := cassette.sim) is not None:
        told = sim.get("turns")
        took = counted(told, "turn") if isinstance(told, int) else f"{told} turns"
        lines.append(f"recorded by sim record: outcome {sim.get('outcome')} in {took}")
    return lines
