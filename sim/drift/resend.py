"""Asking a recorded conversation again, per API: the live reply read from its body or its stream, and the
next recorded request rebuilt to carry the live reply in place of the recorded one (its tool results, the
world's answers, kept as recorded, sent to the live call ids).

Chat Completions: the assistant message that follows the previous request's `messages` is replaced by the
live one. The Responses API: the recorded output items sent back in `input` are replaced by the live
ones, and a chained request names the live response in `previous_response_id`. What each request added
is carried forward onto what was sent before it, so earlier live replies stay in the conversation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sim.cassette.reader import RecordedResponse
from sim.core.messages import ToolCall
from sim.core.model import ModelReply
from sim.wire import Api, Codec
from sim.wire import chat as chat_wire
from sim.wire import responses as responses_wire


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


class Resender(Protocol):
    """One API's way of asking a recorded conversation again."""

    codec: Codec

    def answer(self, response: RecordedResponse) -> Answer:
        """The reply in a response body or stream (`ModelReplyError` and friends when unreadable)."""
        ...

    def carried_forward(self, added: list[Any], was: Answer, now: Answer) -> list[Any]:
        """What a recorded request added to its conversation list after the request before it (the
        recorded answer `was` carried back, then the world's answers), with the live answer `now` in its
        place and the answers sent to the live call ids."""
        ...

    def chained(self, recorded: dict[str, Any], was: Answer, now: Answer) -> dict[str, Any] | None:
        """A recorded request that continues a stored response, naming the live one instead (its
        answers sent to the live call ids); None for a request that sends its whole conversation."""
        ...


def _renamed(was: Sequence[ToolCall], now: Sequence[ToolCall]) -> dict[str, str]:
    """The recorded call ids -> the live ones, calls of the same tool paired in order."""
    waiting: dict[str, list[str]] = {}
    for call in now:
        waiting.setdefault(call.name, []).append(call.id)
    return {call.id: waiting[call.name].pop(0) for call in was if waiting.get(call.name)}


def _events(response: RecordedResponse) -> list[Any] | None:
    return response.events() if response.is_event_stream else None


class ChatResender:
    """`POST /chat/completions`."""

    codec: Codec

    def __init__(self, codec: Codec) -> None:
        self.codec = codec

    def answer(self, response: RecordedResponse) -> Answer:
        """The completion's reply; a refusal where `message.refusal` (or a `refusal` delta) says one."""
        events = _events(response)
        if events is None:
            body = response.json()
            reply = chat_wire.reply_from_wire(body)
            choices = body.get("choices") if isinstance(body, dict) else None
            message = choices[0].get("message") if isinstance(choices, list) and choices else None
            refused = isinstance(message, dict) and isinstance(message.get("refusal"), str)
        else:
            reply = chat_wire.reply_from_events(events)
            refused = any(
                isinstance(choice, dict) and isinstance((choice.get("delta") or {}).get("refusal"), str)
                for event in events
                if isinstance(event, dict)
                for choice in event.get("choices") or []
            )
        return Answer(reply, refused, [chat_wire.message_to_wire(reply.message)], None)

    def carried_forward(self, added: list[Any], was: Answer, now: Answer) -> list[Any]:
        """The live assistant message where the recorded one was, the tool messages to the live ids."""
        if not added or not isinstance(added[0], Mapping) or added[0].get("role") != "assistant":
            raise CannotResend("the next request does not carry the reply right after the one before")
        ids = _renamed(was.reply.message.tool_calls, now.reply.message.tool_calls)
        return [_as_sent(added[0], now.carried[0]), *(_answering(message, ids) for message in added[1:])]

    def chained(self, recorded: dict[str, Any], was: Answer, now: Answer) -> dict[str, Any] | None:
        """Chat Completions keeps nothing: every request sends the whole conversation."""
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


class ResponsesResender:
    """`POST /responses`, stateless or chained."""

    codec: Codec

    def __init__(self, codec: Codec) -> None:
        self.codec = codec

    def answer(self, response: RecordedResponse) -> Answer:
        """The response's reply; its output items as the next request sends them back; a refusal where a
        message part is one."""
        events = _events(response)
        if events is None:
            body = response.json()
            reply = responses_wire.reply_from_wire(body)
            whole = body if isinstance(body, dict) else {}
        else:
            reply = responses_wire.reply_from_events(events)
            whole = next(
                (
                    e["response"]
                    for e in reversed(events)
                    if isinstance(e, dict) and isinstance(e.get("response"), dict)
                ),
                {},
            )
        output = [item for item in whole.get("output") or [] if isinstance(item, dict)]
        refused = any(
            isinstance(part, dict) and part.get("type") == "refusal"
            for item in output
            if item.get("type") == "message"
            for part in item.get("content") or []
        )
        carried = list(output)  # sent back as they came, as the SDK's `response.output` is
        return Answer(
            reply, refused, carried, responses_wire.response_id(events if events is not None else whole)
        )

    def carried_forward(self, added: list[Any], was: Answer, now: Answer) -> list[Any]:
        """The live output items where the recorded ones were sent back, the tool outputs to the live call
        ids (a client that sent a call's item id, `fc_...`, as its `call_id` gets the live call id there
        too)."""
        ids = self._ids(was, now)
        recorded_ids = {item.get("id") for item in was.carried if item.get("id")}
        recorded_calls = {item.get("call_id") for item in was.carried if item.get("call_id")}
        end = 0
        while end < len(added) and _carried_back(added[end], recorded_ids, recorded_calls):
            end += 1
        return [*now.carried, *_outputs(added[end:], ids)]

    def chained(self, recorded: dict[str, Any], was: Answer, now: Answer) -> dict[str, Any] | None:
        """A request naming `previous_response_id`: the live response named instead, its input as
        recorded but for the call ids."""
        if recorded.get("previous_response_id") is None:
            return None
        if now.response_id is None:
            raise CannotResend("the live response has no id to chain to")
        items = recorded.get("input")
        listed = items if isinstance(items, list) else [{"role": "user", "content": items}]
        return {
            **recorded,
            "previous_response_id": now.response_id,
            "input": _outputs(listed, self._ids(was, now)),
        }

    @staticmethod
    def _ids(was: Answer, now: Answer) -> dict[str, str]:
        ids = _renamed(was.reply.message.tool_calls, now.reply.message.tool_calls)
        return ids | _renamed_items(was.carried, ids)


def _renamed_items(carried: list[Any], ids: Mapping[str, str]) -> dict[str, str]:
    """Each recorded function call's item id -> the live call id its call id went to."""
    return {
        item["id"]: ids[item["call_id"]]
        for item in carried
        if item.get("type") == "function_call"
        and isinstance(item.get("id"), str)
        and item.get("call_id") in ids
    }


def _carried_back(item: Any, ids: set[Any], calls: set[Any]) -> bool:
    """Whether an input item is one of the recorded reply's output items sent back."""
    if not isinstance(item, Mapping):
        return False
    if item.get("type") == "function_call":
        return item.get("call_id") in calls | ids or item.get("id") in ids
    if item.get("type") == "reasoning":
        return True
    return item.get("role") == "assistant" or (item.get("type") == "message" and item.get("id") in ids)


def _outputs(items: list[Any], ids: Mapping[str, str]) -> list[Any]:
    return [
        {**item, "call_id": ids[item["call_id"]]}
        if isinstance(item, Mapping)
        and item.get("type") == "function_call_output"
        and item.get("call_id") in ids
        else item
        for item in items
    ]


def resender(codec: Codec) -> Resender:
    """The way to ask again over `codec`'s API (chosen once, per recorded request)."""
    return ChatResender(codec) if codec.api is Api.chat else ResponsesResender(codec)
