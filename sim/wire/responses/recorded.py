"""Recorded Responses API bodies read for generic code (through the registry's `Codec`): a request's
conversation, the response it chains to, a reply's id and ending, a stream's text pieces; and drift's
carry-forward (`answer_from_wire`, `carried_forward`, `chained`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from sim.core.messages import (
    ChatMessage,
)
from sim.core.model import ModelReply
from sim.wire.carrying import Answer, CannotResend, renamed
from sim.wire.responses import CONVERSATION
from sim.wire.responses.client import (
    INCOMPLETE_REASONS,
    reply_from_events,
    reply_from_wire,
    response_id,
)
from sim.wire.responses.reading import instructions_from_wire, messages_from_items
from sim.wire.stream_text import StreamText


def stream_text_pieces(event: Any) -> Iterator[StreamText]:
    """The pieces of text a Responses stream carries in its delta events (output text, refusals, call
    arguments, reasoning summaries), by item and part: joined in order, they are what the reply says."""
    if not isinstance(event, dict) or not isinstance(event.get("delta"), str):
        return
    kind = event.get("type")
    if isinstance(kind, str) and kind.startswith("response.") and kind.endswith(".delta"):
        which = (kind, event.get("item_id"), event.get("output_index"), event.get("content_index"),
                 event.get("summary_index"))  # fmt: skip
        yield which, event, "delta"


def history(body: Mapping[str, Any]) -> list[ChatMessage]:
    """A request body's conversation (`instructions`, then `input`), pairing unchecked
    (`MessageContractError` when malformed)."""
    system = instructions_from_wire(body)
    return [*([system] if system is not None else []), *messages_from_items(body.get(CONVERSATION))]


def chained_to(body: Mapping[str, Any]) -> str | None:
    """The response a request continues (`previous_response_id`), if it names one."""
    previous = body.get("previous_response_id")
    return previous if isinstance(previous, str) else None


def ending(reply: ModelReply) -> str:
    """How a reply ended, in the API's words (`status: completed`, `status: incomplete (...)`)."""
    reason = {v: k for k, v in INCOMPLETE_REASONS.items()}.get(reply.finish_reason)
    return f"status: incomplete ({reason})" if reason else "status: completed"


def answer_from_wire(recorded: Any, streamed: bool) -> Answer:
    """A recorded response (its body, or its stream's events when `streamed`) as the next request carries
    it back: its output items as sent back; a refusal where a message part is one."""
    if not streamed:
        reply = reply_from_wire(recorded)
        whole = recorded if isinstance(recorded, dict) else {}
    else:
        reply = reply_from_events(recorded)
        whole = next(
            (
                e["response"]
                for e in reversed(recorded)
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
    return Answer(reply, refused, carried, response_id(recorded if streamed else whole))


def carried_forward(added: list[Any], was: Answer, now: Answer) -> list[Any]:
    """What a recorded request added to `input` after the request before it, with the live output items
    where the recorded ones were sent back and the tool outputs to the live call ids (a client that sent a
    call's item id, `fc_...`, as its `call_id` gets the live call id there too)."""
    ids = _live_ids(was, now)
    recorded_ids = {item.get("id") for item in was.carried if item.get("id")}
    recorded_calls = {item.get("call_id") for item in was.carried if item.get("call_id")}
    end = 0
    while end < len(added) and _carried_back(added[end], recorded_ids, recorded_calls):
        end += 1
    return [*now.carried, *_outputs(added[end:], ids)]


def chained(recorded: dict[str, Any], was: Answer, now: Answer) -> dict[str, Any] | None:
    """A recorded request naming `previous_response_id`: the live response named instead, its input as
    recorded but for the call ids; None for a request that sends its whole conversation."""
    if recorded.get("previous_response_id") is None:
        return None
    if now.response_id is None:
        raise CannotResend("the live response has no id to chain to")
    items = recorded.get(CONVERSATION)
    listed = items if isinstance(items, list) else [{"role": "user", "content": items}]
    return {
        **recorded,
        "previous_response_id": now.response_id,
        CONVERSATION: _outputs(listed, _live_ids(was, now)),
    }


def _live_ids(was: Answer, now: Answer) -> dict[str, str]:
    ids = renamed(was.reply.message.tool_calls, now.reply.message.tool_calls)
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
