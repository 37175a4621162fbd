"""A recorded conversation as an editable scenario that `sim play` plays the same way through our loop.

The replies are the recorded replies; every tool offered is a scripted tool with its recorded schema,
answered with the recorded results; the expectations are what the recording ended with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sim.cassette.conversations import Conversation, HttpFailure
from sim.cassette.session import result_from_text
from sim.core.calls import CallRef, keyed, results_in_history
from sim.core.json_text import loads
from sim.core.messages import AssistantMessage, ChatMessage, SharedPrefix, SystemMessage, UserMessage
from sim.core.model import ModelReply, ToolSpec

NOT_RECORDED = "(result not recorded)"


@dataclass(frozen=True, slots=True)
class Opening:
    """What the history a run starts from holds: its first system prompt, and the model's turns before
    the run."""

    system: str | None
    earlier: int
    messages: Sequence[ChatMessage]
    """The history it was read from."""


def opening(messages: Sequence[ChatMessage], before: Opening | None = None) -> Opening:
    """The opening of `messages`, read from what they add to `before`'s when they are a later view of the
    same list (a conversation cut into many runs is read once, not once per run)."""
    added = None
    if before is not None and isinstance(messages, SharedPrefix):
        added = messages.new_since(before.messages)
    system, earlier = (None, 0) if before is None or added is None else (before.system, before.earlier)
    for message in messages if added is None else added:
        if isinstance(message, AssistantMessage):
            earlier += 1
        elif system is None and isinstance(message, SystemMessage):
            system = message.content
    return Opening(system, earlier, messages)


@dataclass(slots=True)
class Run(Conversation):
    """A run cut from a conversation: its exchanges, and the opening of the history before them."""

    opening: Opening | None = None


def runs(conversation: Conversation) -> list[Conversation]:
    """A conversation cut into runs: a request that adds a user message after a reply starts another (a
    scenario has one prompt), with the turns before it as its history."""
    found: list[Conversation] = []
    start: Opening | None = None
    for exchange in conversation.exchanges:
        if not found or any(isinstance(m, UserMessage) for m in exchange.new_messages):
            start = opening(exchange.messages, start)
            found.append(Run(opening=start))
        found[-1].exchanges.append(exchange)
    return found


def scenario_data(conversation: Conversation, *, name: str, source: str) -> dict[str, Any]:
    """The scenario, as data ready to be written as YAML."""
    exchanges = conversation.exchanges
    first = exchanges[0]
    start = (conversation.opening if isinstance(conversation, Run) else None) or opening(first.messages)
    system, earlier = start.system, start.earlier
    prompt = next((m.content for m in reversed(first.messages) if isinstance(m, UserMessage)), "")
    offered_specs: dict[str, ToolSpec] = {}  # every tool the run was offered (a handoff may change them)
    for exchange in exchanges:
        for spec in exchange.tools:
            offered_specs.setdefault(spec.name, spec)
    tools = list(offered_specs.values())
    offered = set(offered_specs)
    # the results the run's calls got (a result in its opening answers a turn before it)
    last = exchanges[-1].messages
    added = last.new_since(first.messages) if isinstance(last, SharedPrefix) else None
    answered = (
        results_in_history(last, first_turn=1 - earlier) if added is None else results_in_history(added)
    )
    for turn, exchange in enumerate(exchanges, 1):  # a request answers the turn before it
        for sent, returned in exchange.renamed_calls.items():
            if (sent, turn - 1) in answered:
                answered[(returned, turn - 1)] = answered[(sent, turn - 1)]
    replies: list[dict[str, Any]] = []
    results: dict[CallRef, Any] = {}
    for turn, exchange in enumerate(exchanges, 1):
        reply = exchange.reply
        if isinstance(reply, HttpFailure):
            replies.append(_failure(reply))
            continue
        replies.append(_reply(reply))
        for call in reply.message.tool_calls:
            if call.name in offered and (call.kind == "custom" or _is_object(call.arguments)):
                result = result_from_text(answered.get((call.id, turn), NOT_RECORDED))
                results[(call.id, turn)] = (
                    result.content
                    if not result.is_error
                    else {"content": result.content, "is_error": True, "error_code": result.error_code}
                )
    outcome, final_text = _ending(exchanges[-1].reply)
    data: dict[str, Any] = {
        "name": name,
        "description": f"Converted from {source}: {len(replies)} recorded replies"
        + (f" (after {earlier} earlier turns, which are not part of this scenario)." if earlier else "."),
        "prompt": prompt,
    }
    if system:  # an empty one (`instructions: ""`) is no prompt a scenario can say
        data["system_prompt"] = system
    if outcome == "max_turns" or len(replies) > 20:
        data["max_turns"] = len(replies)
    data["tools"] = [_tool(spec) for spec in tools]
    data["results"] = keyed(results)
    data["replies"] = replies
    expect: dict[str, Any] = {"outcome": outcome, "turns": len(replies)}
    if final_text is not None:
        expect["final_text"] = final_text
    data["expect"] = expect
    return data


def _tool(spec: ToolSpec) -> dict[str, Any]:
    """A recorded tool as a scenario offers it: a function's schema, a custom tool's format."""
    if spec.kind != "custom":
        return {"name": spec.name, "description": spec.description, "parameters": dict(spec.parameters)}
    grammar = spec.grammar
    form = {"type": "text"} if grammar is None else {
        "type": "grammar", "syntax": grammar.syntax, "definition": grammar.definition}  # fmt: skip
    return {"name": spec.name, "description": spec.description, "format": form}


def _is_object(arguments: str) -> bool:
    try:
        return isinstance(loads(arguments, strict=True), dict)
    except ValueError:
        return False


def _failure(failure: HttpFailure) -> dict[str, Any]:
    if failure.unreadable:
        return {"malformed": True}
    error: dict[str, Any] = {"status": failure.status, "message": failure.message}
    if failure.error_type:
        error["type"] = failure.error_type
    if failure.code:
        error["code"] = failure.code
    return {"error": error}


def _reply(reply: ModelReply) -> dict[str, Any]:
    data: dict[str, Any] = {"content": reply.message.content}
    if reply.message.reasoning:
        summaries = [text for item in reply.message.reasoning for text in item.summary]
        hidden = sum(len(item.encrypted_content or "") for item in reply.message.reasoning)
        data["reasoning"] = " ".join(summaries) if summaries else f"[{hidden} chars of encrypted reasoning]"
    if reply.message.tool_calls:
        data["tool_calls"] = [
            {
                "id": call.id,
                "name": call.name,
                "input" if call.kind == "custom" else "arguments": call.arguments,
            }
            for call in reply.message.tool_calls
        ]
    derived = "tool_calls" if reply.message.tool_calls else "stop"
    if reply.finish_reason != derived:
        data["finish_reason"] = reply.finish_reason
    return data


def _ending(reply: ModelReply | HttpFailure) -> tuple[str, str | None]:
    """The outcome our loop reaches on the conversation's last reply, and its final text."""
    if isinstance(reply, HttpFailure):
        return "api_error", None
    if reply.finish_reason == "length":
        return "incomplete", None
    if reply.finish_reason == "content_filter":
        return "content_filter", None
    if reply.message.tool_calls:
        return "max_turns", None
    if reply.message.content is None:
        return "no_final_text", None
    return "completed", reply.message.content
