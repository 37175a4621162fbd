"""A cassette told turn by turn, either API: each request's new messages, each reply (reasoning shown by
size and summary) or HTTP error, what was ignored."""

from __future__ import annotations

from sim.cassette.conversations import HttpFailure, ModelCall, conversations
from sim.cassette.reader import Cassette
from sim.cassette.session import result_from_text
from sim.core.counts import counted
from sim.core.messages import AssistantMessage, ChatMessage, Reasoning, ToolMessage
from sim.core.transcript import Line, LineKind, call_line, preview


def _reasoning(reasoning: Reasoning) -> str:
    encrypted = reasoning.encrypted_content
    hidden = f"[reasoning: {len(encrypted)} chars encrypted]" if encrypted else "[reasoning]"
    summary = " ".join(reasoning.summary)
    return f"{hidden} {preview(summary)}" if summary else hidden


_ROLES = {"user": LineKind.user, "system": LineKind.system}


def _message(message: ChatMessage) -> list[Line]:
    if isinstance(message, ToolMessage):
        code = result_from_text(message.content).error_code  # as the model read it: the recording's words
        told = f"  + tool {message.tool_call_id}: {preview(message.content)}"
        return [Line(LineKind.result, told, error_code=code)]
    if isinstance(message, AssistantMessage):
        lines = [Line(LineKind.reasoning, f"  + assistant {_reasoning(r)}") for r in message.reasoning]
        if message.content:
            lines.append(Line(LineKind.assistant, f"  + assistant: {preview(message.content)}"))
        return lines + [
            call_line(f"  + assistant calls {c.id}: {c.name}", preview(c.arguments))
            for c in message.tool_calls
        ]
    kind = _ROLES.get(message.role, LineKind.note)
    return [Line(kind, f"  + {message.role}: {preview(message.content)}")]


def _exchange(exchange: ModelCall, turn: int) -> list[Line]:
    request = exchange.interaction.request
    streamed = " (streamed)" if exchange.streamed else ""
    number = exchange.interaction.index + 1
    lines = [
        Line(LineKind.turn, f"turn {turn} (interaction {number}): {request.method} {request.uri}{streamed}")
    ]
    if exchange.request_problem:
        lines.append(Line(LineKind.error, f"  ! request cannot be read: {exchange.request_problem}"))
    if exchange.continues is not None:
        known = (
            "not recorded here: the conversation before it is unknown" if exchange.unknown_previous else ""
        )
        lines.append(
            Line(LineKind.note, f"  (continues {exchange.continues}{'; ' + known if known else ''})")
        )
    for sent, returned in exchange.renamed_calls.items():
        renamed = f"  ! sends call id {sent} for the model's call {returned} (paired by position)"
        lines.append(Line(LineKind.error, renamed))
    for message in exchange.new_messages:
        lines += _message(message)
    reply = exchange.reply
    if isinstance(reply, HttpFailure):
        return [*lines, Line(LineKind.error, f"  = HTTP {reply.status}: {preview(reply.message)}")]
    lines += [Line(LineKind.reasoning, f"  = {_reasoning(r)}") for r in reply.message.reasoning]
    if reply.message.content is not None:
        lines.append(Line(LineKind.assistant, f"  = assistant: {preview(reply.message.content)}"))
    lines += [
        call_line(f"  = calls {c.id}: {c.name}", preview(c.arguments)) for c in reply.message.tool_calls
    ]
    usage = reply.usage
    tokens = f", tokens {usage.prompt_tokens}+{usage.completion_tokens}={usage.total_tokens}" if usage else ""
    lines.append(Line(LineKind.end, f"  = {exchange.codec.ending(reply)}{tokens}"))
    return lines


def outline(cassette: Cassette) -> list[Line]:
    """Lines for people, conversation by conversation."""
    found = conversations(cassette)
    chats = sum(len(c.exchanges) for c in found)
    heading = (
        f"{cassette.path.name}: {counted(len(cassette.interactions), 'interaction')},"
        f" {counted(chats, 'model call')} in {counted(len(found), 'conversation')}"
    )
    lines = [Line(LineKind.heading, heading)]
    for number, conversation in enumerate(found, 1):
        lines.append(Line(LineKind.conversation, f"conversation {number}"))
        for turn, exchange in enumerate(conversation.exchanges, 1):
            lines += _exchange(exchange, turn)
    for interaction in cassette.interactions:
        if not interaction.is_model_call:
            request = interaction.request
            ignored = f"{request.method} {request.uri} (not a model call)"
            lines.append(Line(LineKind.note, f"ignored interaction {interaction.index + 1}: {ignored}"))
    if (sim := cassette.sim) is not None:
        told = sim.get("turns")
        took = counted(told, "turn") if isinstance(told, int) else f"{told} turns"
        lines.append(Line(LineKind.end, f"recorded by sim record: outcome {sim.get('outcome')} in {took}"))
    return lines
