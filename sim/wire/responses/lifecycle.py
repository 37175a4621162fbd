"""The Responses API's stored responses and background mode: each response kept (`store` not false) answers
`GET /v1/responses/{id}` (with `include`, and with `stream=true&starting_after=N` its events again after
that sequence number), `DELETE`, `POST .../cancel`, `GET .../input_items` (paged) from what the response
store keeps beside it; `POST /v1/responses/input_tokens` counts a request's input as its `usage` would;
and a request with `background: true` is answered `queued`, then advances as it is polled.

How a background response advances, deterministically: answered `queued`; the first retrieve shows it
`in_progress`; a later retrieve shows it final (`completed`, `incomplete`) once the reply's scripted latency
has passed since it was asked (until then it stays `in_progress`). Streamed, its events run to the end as
the API streams them (`response.created` and `response.queued` first, each with its `sequence_number`), and
it is final once its latency has passed. A cancelled one stays `cancelled`, its output empty."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sim.core.json_text import loads
from sim.core.messages import AssistantMessage, SharedPrefix
from sim.core.model import ModelReply
from sim.wire.chat.protocol import estimate_usage
from sim.wire.hosted import INCLUDABLE, refused_include
from sim.wire.obfuscation import padded_events, wanted
from sim.wire.paging import page, page_asked
from sim.wire.requests import CREATED, Asked, Refused, wrong_type
from sim.wire.resources import Called, EventBody, JsonBody, Resource, ResourceAnswer
from sim.wire.responses.rendering import events_to_wire, response_to_wire
from sim.wire.service_tier import asked_tier
from sim.wire.sse import frame

if TYPE_CHECKING:
    from sim.wire.responses.protocol import ResponsesProtocol

__all__ = ["INCLUDABLE", "Lifecycle", "StoredResponse", "background_events", "refused_background"]


_PENDING = frozenset({"queued", "in_progress"})
_RECORD_BYTES = 4_500
"""What keeping a response's body and request costs beyond its conversation (its texts are the
conversation's own strings), as measured; and what each input item and each tool adds."""
_ITEM_BYTES = 250
_TOOL_BYTES = 1_000
_EMPTY = ModelReply(message=AssistantMessage(), finish_reason="stop")
_ITEM_PREFIX = {"message": "msg", "function_call": "fc", "function_call_output": "fco", "reasoning": "rs",
                "custom_tool_call": "ctc", "custom_tool_call_output": "ctco"}  # fmt: skip
"""The prefix of the id minted for an input item sent without one, by its type."""


@dataclass(slots=True)
class StoredResponse:
    """A kept response: its body as it ends, the request that asked it, the reply as answered (served again
    for `include` asked when it is retrieved), and, run in the background, where it stands."""

    final: dict[str, Any]
    request: dict[str, Any]
    reply: ModelReply
    refusal: bool
    background: bool
    streamed: bool
    ready_at: float
    """`time.monotonic()` from which it may show final (its scripted latency after it was asked)."""
    status: str
    """`queued`, `in_progress`, `cancelled`, or its final status (background); its final status otherwise."""
    number: int
    """The number of the request that asked it (what its stream's obfuscation is drawn from)."""
    weight: int = 0
    """What keeping it costs against the store limit (`_weight`)."""

    def advanced(self) -> str:
        """Its status after one more retrieve (see the module's docstring)."""
        if self.status == "queued" and not self.streamed:
            self.status = "in_progress"
        elif self.status in _PENDING and time.monotonic() >= self.ready_at:
            self.status = str(self.final["status"])
        return self.status

    def settled(self) -> str:
        """Its status as it stands, without a retrieve: a streamed one is final once its latency passed."""
        if self.streamed and self.status in _PENDING and time.monotonic() >= self.ready_at:
            self.status = str(self.final["status"])
        return self.status


def refused_background(body: dict[str, Any]) -> Refused | None:
    """`background` of the wrong type, or with `store: false` (a background response is kept to be polled)."""
    background = body.get("background")
    if background is not None and not isinstance(background, bool):
        return wrong_type("background", "a boolean", background)
    if background and body.get("store") is False:
        return Refused("background can only be used when `store` is true", "background")
    return None


def _pending(final: dict[str, Any], status: str, request: dict[str, Any]) -> dict[str, Any]:
    """The response as it stands before its reply: no output, usage or completion yet."""
    return {**final, "status": status, "completed_at": None, "output": [], "incomplete_details": None,
            "usage": None, "error": None, "service_tier": asked_tier(request)}  # fmt: skip


def background_events(final: dict[str, Any], request: dict[str, Any]) -> list[dict[str, Any]]:
    """A background response's events as the API streams them: `response.created` and `response.queued`
    (it is `queued`), then `response.in_progress` on as a response streams, renumbered from 0."""
    events = events_to_wire(final, request)
    queued = {**events[0]["response"], "status": "queued"}
    ordered = [{"type": "response.created", "response": queued},
               {"type": "response.queued", "response": queued}, *events[1:]]  # fmt: skip
    return [{**event, "sequence_number": number} for number, event in enumerate(ordered)]


def _not_found(response_id: str) -> Refused:
    return Refused(f"Response with id '{response_id}' not found.", status=404)


def _weight(request: dict[str, Any]) -> int:
    """What keeping a response to `request` costs, about (measured, not serialized: it is on every reply)."""
    items, tools = request.get("input"), request.get("tools")
    return (_RECORD_BYTES + _ITEM_BYTES * (len(items) if isinstance(items, list) else 1)
            + _TOOL_BYTES * (len(tools) if isinstance(tools, list) else 0))  # fmt: skip


class Lifecycle:
    """The endpoints of the responses one `ResponsesProtocol` keeps, answered from its store."""

    def __init__(self, protocol: ResponsesProtocol) -> None:
        self.protocol = protocol
        self.resources: tuple[Resource, ...] = (
            Resource("GET", "/responses/{response_id}", self.retrieve, "responses"),
            Resource("DELETE", "/responses/{response_id}", self.delete, "responses"),
            Resource("POST", "/responses/{response_id}/cancel", self.cancel, "responses"),
            Resource("GET", "/responses/{response_id}/input_items", self.input_items, "responses"),
            Resource("POST", "/responses/input_tokens", self.input_tokens, "responses"),
        )
        """Retrieve (and resume its stream), delete, cancel, list input items, count input tokens."""

    def kept(
        self, asked: Asked, wire: dict[str, Any], reply: ModelReply, *, refusal: bool, stored: bool
    ) -> dict[str, Any]:
        """Keep `wire` (the response as it ends) beside its stored conversation, and what to send now: the
        response `queued` when it runs in the background and is not streamed, else `wire`."""
        if not stored:
            return wire
        background = asked.deferred
        streamed = bool(asked.body.get("stream"))
        status = "queued" if background else str(wire["status"])
        ready_at = time.monotonic() + asked.latency
        # the body as sent counts too: what it holds beside the conversation's text (tools, images, ...)
        weight = _weight(asked.body) + asked.size
        record = StoredResponse(wire, asked.body, reply, refusal, background, streamed, ready_at, status,
                                asked.number, weight)  # fmt: skip
        self.protocol.store.keep(wire["id"], record, weight)
        return _pending(wire, "queued", asked.body) if background and not streamed else wire

    def _stored(self, response_id: str) -> StoredResponse | None:
        record = self.protocol.store.record(response_id)
        return record if isinstance(record, StoredResponse) else None

    def _shown(self, stored: StoredResponse, status: str) -> dict[str, Any]:
        """The response at `status`: as it ends, or before its reply."""
        if status == stored.final["status"]:
            return stored.final
        return _pending(stored.final, status, stored.request)

    async def retrieve(self, called: Called) -> ResourceAnswer:
        """The response as it stands (a background one advanced a step), with `include` honoured as on
        create; with `stream=true`, its events after `starting_after` (a background one streamed when
        asked)."""
        response_id = called.params["response_id"]
        stored = self._stored(response_id)
        if stored is None:
            return _not_found(response_id)
        include = called.every("include")
        if (refused := _refused_include(include)) is not None:
            return refused
        stream = called.first("stream")
        if stream not in (None, "false", "true"):
            message = f"Invalid value for 'stream': expected a boolean, but got '{stream}'."
            return Refused(message, "stream", "invalid_type")
        if stream == "true":
            return self._resumed(stored, called)
        status = stored.advanced() if stored.background else stored.status
        return JsonBody(self._included(stored, self._shown(stored, status), include))

    def _included(self, stored: StoredResponse, shown: dict[str, Any], include: list[str]) -> dict[str, Any]:
        """`shown` with the output `include` asks for beyond what its request included (re-rendered from the
        reply as served, each item as the request's `include` and these would have it)."""
        asked = [value for value in stored.request.get("include") or [] if isinstance(value, str)]
        added = [value for value in include if value not in asked]
        if not added or not shown["output"]:
            return shown
        request = {**stored.request, "include": [*asked, *added]}
        response_id = str(shown["id"])
        served = self.protocol.served_again(stored.reply, response_id, request)
        output = response_to_wire(served, response_id=response_id, created=CREATED, model=str(shown["model"]),
                                  usage=None, request=request)["output"]  # fmt: skip
        if stored.refusal:
            for item in output:
                if item["type"] == "message":
                    item["content"] = [
                        {"type": "refusal", "refusal": p.get("text", "")} for p in item["content"]
                    ]
        return {**shown, "output": output}

    def _resumed(self, stored: StoredResponse, called: Called) -> ResourceAnswer:
        """The events of a background response created streaming, after `starting_after`: held until its
        latency has passed, as the API streams a response until it is done."""
        if not (stored.background and stored.streamed):
            message = ("Only a response created with background=true and stream=true can be streamed again;"
                       f" response '{stored.final['id']}' was not.")  # fmt: skip
            return Refused(message, "stream")
        after_text = called.first("starting_after")
        after = -1
        if after_text is not None:
            try:
                after = int(after_text)
            except ValueError:
                message = (
                    f"Invalid value for 'starting_after': expected an integer, but got '{after_text[:100]}'."
                )
                return Refused(message, "starting_after", "invalid_type")
        events = background_events(stored.final, stored.request)
        if stored.status == "cancelled":  # it never went past starting
            events = events[:3]
        else:
            stored.status = str(stored.final["status"])
        if wanted(stored.request) and called.first("include_obfuscation") != "false":
            padded_events(events, stored.number)  # as they were first sent
        frames = [frame(event, event["type"]) for event in events if event["sequence_number"] > after]
        return EventBody(_held(frames, stored.ready_at))

    async def delete(self, called: Called) -> ResourceAnswer:
        """Forget the response: it is not found after, and a request cannot continue it."""
        response_id = called.params["response_id"]
        if self._stored(response_id) is None or not self.protocol.store.forget(response_id):
            return _not_found(response_id)
        return JsonBody({"id": response_id, "object": "response", "deleted": True})

    async def cancel(self, called: Called) -> ResourceAnswer:
        """A background response not yet final becomes `cancelled` (its reply never given: a request that
        continues it continues its input); one that ended, or was cancelled, is answered as it is."""
        response_id = called.params["response_id"]
        stored = self._stored(response_id)
        if stored is None:
            return _not_found(response_id)
        if not stored.background:
            return Refused("Cannot cancel a synchronous response.")
        if stored.settled() in _PENDING:
            stored.status = "cancelled"
            self._unanswered(response_id, stored)
        return JsonBody(self._shown(stored, stored.status))

    def _unanswered(self, response_id: str, stored: StoredResponse) -> None:
        """Keep `response_id`'s conversation without its reply (kept again beside it)."""
        store = self.protocol.store
        conversation = store.conversation(response_id)
        if isinstance(conversation, SharedPrefix) and len(conversation):
            store.put(response_id, SharedPrefix(conversation.shared, len(conversation) - 1))
            store.keep(response_id, stored, stored.weight)

    async def input_items(self, called: Called) -> ResourceAnswer:
        """The request's input items in the API's item shapes (each with an id), a page of them."""
        response_id = called.params["response_id"]
        stored = self._stored(response_id)
        if stored is None:
            return _not_found(response_id)
        asked = page_asked(called)
        if isinstance(asked, Refused):
            return asked
        if (refused := _refused_include(called.every("include"))) is not None:
            return refused
        items = _input_items(stored.request.get("input"), str(stored.final["id"]), self.protocol)

        def unknown(after: str) -> Refused:
            return Refused(f"No input item with id '{after[:200]}' in response '{response_id}'.", "after")

        return page(items, asked, unknown)

    async def input_tokens(self, called: Called) -> ResourceAnswer:
        """`{"object": "response.input_tokens", "input_tokens": N}`: the request's input counted as the
        `usage.input_tokens` sim reports for the same request."""
        try:
            body = loads(called.body or b"{}", strict=True)
        except ValueError:
            return Refused("We could not parse the JSON body of your request.")
        if not isinstance(body, dict):
            return Refused("The request body must be a JSON object.")
        if body.get("input") is None:
            body = {**body, "input": []}
        asked = self.protocol.parse({**body, "stream": False, "background": False}, called.number)
        if isinstance(asked, Refused):
            return asked
        counted = estimate_usage(asked.decoded, _EMPTY).prompt_tokens
        return JsonBody({"object": "response.input_tokens", "input_tokens": counted})


async def _held(frames: list[bytes], ready_at: float) -> AsyncIterator[bytes]:
    """`frames`, the last one once `ready_at` has come (a response still running streams until done)."""
    for number, chunk in enumerate(frames):
        if number == len(frames) - 1 and (wait := ready_at - time.monotonic()) > 0:
            await asyncio.sleep(wait)
        yield chunk


def _refused_include(include: list[str]) -> Refused | None:
    """An `include` value the API does not know, refused in create's words (its param the query's)."""
    refused = refused_include(include)
    return None if refused is None else replace(refused, param="include")


def _input_items(sent: Any, response_id: str, protocol: ResponsesProtocol) -> list[dict[str, Any]]:
    """A request's `input` as the API lists it: each item in its kept shape, with an id (minted from the
    response's for an item sent without one), a message's text as content parts, references resolved."""
    suffix = response_id.removeprefix("resp_")
    if isinstance(sent, str):
        sent = [{"role": "user", "content": sent}]
    items: list[dict[str, Any]] = []
    for number, item in enumerate(sent if isinstance(sent, list) else []):
        if not isinstance(item, dict):
            continue
        if item.get("type") == "item_reference":
            referenced = protocol._items.get(str(item.get("id")))
            if referenced is not None:
                items.append(referenced)
            continue
        kind = str(item.get("type") or "message")
        listed = {"id": f"{_ITEM_PREFIX.get(kind, 'item')}_{suffix}_in{number}", "type": kind, **item}
        if kind == "message":
            listed = _message_item(listed)
        elif kind in ("function_call", "function_call_output", "custom_tool_call_output"):
            listed.setdefault("status", "completed")
        items.append(listed)
    return items


def _message_item(item: dict[str, Any]) -> dict[str, Any]:
    """A message input item as the API keeps it: its text as a content part (`output_text` for the
    assistant's, with its annotations and log probabilities), and a status."""
    role = item.get("role")
    content = item.get("content")
    if isinstance(content, str):
        content = [{"type": "output_text" if role == "assistant" else "input_text", "text": content}]
    if role == "assistant" and isinstance(content, list):
        content = [{"annotations": [], "logprobs": [], **part}
                   if isinstance(part, dict) and part.get("type") == "output_text" else part
                   for part in content]  # fmt: skip
    return {**item, "content": content, "status": item.get("status") or "completed"}
