"""Recorded Chat Completions bodies read for generic code (through the registry's `Codec`): a request's
conversation, what it chains to, a reply's id and ending, a stream's text pieces; and drift's
carry-forward (`answer_from_wire`, `carried_forward`, `chained`)."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from typing import Any

from sim.core.messages import (
    ChatMessage,
)
from sim.core.model import ModelReply
from sim.wire.carrying import Answer, CannotResend, renamed
from sim.wire.chat import CONVERSATION
from sim.wire.chat.client import (
    message_to_wire,
    reply_from_events,
    reply_from_wire,
)
from sim.wire.chat.reading import (
    messages_from_wire,
)
from sim.wire.stream_text import StreamText


def history(body: Mapping[str, Any]) -> list[ChatMessage]:
    """A request body's conversation, pairing unchecked (`MessageContractError` when malformed)."""
    return messages_from_wire(body.get(CONVERSATION))


def chained_to(body: Mapping[str, Any]) -> str | None:
    """Nothing: Chat Completions keeps no response a request could continue."""
    return None


def response_id(reply: Any) -> str | None:
    """Nothing: no request refers to a completion by its id."""
    return None


def ending(reply: ModelReply) -> str:
    """How a reply ended, in the API's words (`finish_reason: stop`)."""
    return f"finish_reason: {reply.finish_reason}"


def stream_text_pieces(event: Any) -> Iterator[StreamText]:
    """The pieces of text a `chat.completion.chunk` streams: per choice every text field of its delta
    (`content`, `refusal`, `reasoning_content` and what other servers add, the legacy
    `function_call.arguments`), per tool call (by its `index`) each of its fields. Joined in order they
    are what the reply says (secrets are looked for there)."""
    if not isinstance(event, Mapping):
        return
    for choice in event.get("choices") or []:
        delta = choice.get("delta") if isinstance(choice, Mapping) else None
        if isinstance(delta, dict):
            yield from _delta_texts(delta, (choice.get("index", 0),))


def _delta_texts(holder: dict[str, Any], where: tuple[Hashable, ...]) -> Iterator[StreamText]:
    for key, value in holder.items():
        if isinstance(value, str):
            yield (*where, key), holder, key
        elif isinstance(value, dict):
            yield from _delta_texts(value, (*where, key))
        elif key == "tool_calls" and isinstance(value, list):
            for position, call in enumerate(value):
                if isinstance(call, dict):
                    yield from _delta_texts(call, (*where, key, str(call.get("index", position))))


def answer_from_wire(recorded: Any, streamed: bool) -> Answer:
    """A recorded completion (its body, or its stream's events when `streamed`) as the next request
    carries it back; a refusal where `message.refusal` (or a `refusal` delta) says one."""
    if not streamed:
        reply = reply_from_wire(recorded)
        choices = recorded.get("choices") if isinstance(recorded, dict) else None
        message = choices[0].get("message") if isinstance(choices, list) and choices else None
        refused = isinstance(message, dict) and isinstance(message.get("refusal"), str)
    else:
        reply = reply_from_events(recorded)
        refused = any(
            isinstance(choice, dict) and isinstance((choice.get("delta") or {}).get("refusal"), str)
            for event in recorded
            if isinstance(event, dict)
            for choice in event.get("choices") or []
        )
    return Answer(reply, refused, [message_to_wire(reply.message)], None)


def carried_forward(added: list[Any], was: Answer, now: Answer) -> list[Any]:
    """What a recorded request added to `messages` after the request before it, with the live assistant
    message where the recorded one was and the tool messages to the live ids."""
    if not added or not isinstance(added[0], Mapping) or added[0].get("role") != "assistant":
        raise CannotResend("the next request does not carry the reply right after the one before")
    ids = renamed(was.reply.message.tool_calls, now.reply.message.tool_calls)
    return [_as_sent(added[0], now.carried[0]), *(_answering(message, ids) for message in added[1:])]


def chained(recorded: dict[str, Any], was: Answer, now: Answer) -> dict[str, Any] | None:
    """Nothing: Chat Completions keeps nothing, every request sends the whole conversation."""
    return None


def _as_sent(sent: Mapping[str, Any], live: Mapping[str, Any]) -> dict[str, Any]:
    """The live assistant message in the shape the client sent the recorded one (the fields it adds, such
    as `annotations` or `refusal: null`, kept): its text and calls are the live ones."""
    shaped = dict(sent)
    for key in ("content", "tool_calls"):
        value = live.get(key)
        if value is not None or key in sent:
            shaped[key] = value
    if shaped.get("tool_calls") is None and "tool_calls" not in live:
        shaped.pop("tool_calls", None)
    return shaped


def _answering(message: Any, ids: Mapping[str, str]) -> Any:
    if isinstance(message, Mapping) and message.get("role") == "tool" and message.get("tool_call_id") in ids:
        return {**message, "tool_call_id": ids[message["tool_call_id"]]}
    return message
