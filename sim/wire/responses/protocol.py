"""The Responses API, the server side (`ResponsesProtocol`): a request parsed once, chained to a stored
response and checked (reasoning items sent back as served) or refused as the API refuses it, and a reply
written as a `response` or its events, kept for the requests that chain to it."""

from __future__ import annotations

import base64
import json
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

from sim.core.errors import MessageContractError
from sim.core.messages import (
    AssistantMessage,
    HistoryView,
    HostedItem,
    PairingChecker,
    Reasoning,
    SharedPrefix,
    SystemMessage,
)
from sim.core.model import ModelReply, ModelRequest
from sim.core.strict_schema import strict_by_default
from sim.wire import STORE_LIMIT_BYTES
from sim.wire.chat.protocol import estimate_usage, reasoning_tokens
from sim.wire.hosted import (
    forced_hosted,
    minted,
    offered_hosted,
    refused_hosted,
    refused_hosted_choice,
)
from sim.wire.obfuscation import padded_events, refused_option, wanted
from sim.wire.requests import (
    CREATED,
    Asked,
    Refused,
    RefusedError,
    parse,
    refused_custom_format,
    refused_strict,
    refused_tool_choice,
    refused_type,
    refused_unsupported,
)
from sim.wire.resources import Resource
from sim.wire.response_store import ResponseStore
from sim.wire.responses import CONVERSATION, PATHS
from sim.wire.responses.client import (
    ENCRYPTED_REASONING,
)
from sim.wire.responses.conversations import Conversations
from sim.wire.responses.items import (
    reasoning_from_wire,
)
from sim.wire.responses.lifecycle import Lifecycle, background_events, refused_background
from sim.wire.responses.reading import (
    instructions_from_wire,
    messages_from_items,
    refused_pairing,
    tools_from_wire,
)
from sim.wire.responses.rendering import events_to_wire, response_to_wire, summary_asked
from sim.wire.service_tier import asked_tier, refused_service_tier
from sim.wire.sse import frame
from sim.wire.text_format import refused_responses_format, responses_format, with_format
from sim.wire.tool_choice import ReplyTerms, reply_terms

ENCRYPTED_PREFIX = "sim-reasoning:"


@dataclass(frozen=True, slots=True)
class _ServedReasoning:
    """A reasoning item as it was served, and whether the API kept it (`store` not false)."""

    item: Reasoning
    stored: bool


def _not_found(item_id: str, *, unstored: bool) -> Refused:
    message = f"Item with id '{item_id}' not found."
    if unstored:
        message += (
            " Items are not persisted when `store` is set to false. Try again with `store` set to true, or"
            " remove this item from your input."
        )
    return Refused(message, "input", None, status=404)


class ResponsesProtocol:
    """`POST /v1/responses`: stateless or chained through `previous_response_id`, with a store of the
    responses it sent with `store` not false (bounded), and the reasoning items it served, by item id."""

    name = "responses"
    paths: tuple[str, ...] = PATHS
    closing = b""
    STORED = 10_000
    """The most reasoning items and function calls remembered (a store of responses is bounded by bytes)."""

    def __init__(self, store_limit: int = STORE_LIMIT_BYTES) -> None:
        self.store = ResponseStore(store_limit)
        """The responses kept for chains."""
        self.lifecycle = Lifecycle(self)
        """Stored responses (retrieve, delete, cancel, input items, token counts) and background mode."""
        self.conversations = Conversations(store_limit, self._referenced)
        """The conversations kept, for the Conversations API and the `conversation` parameter."""
        self.resources: tuple[Resource, ...] = (*self.lifecycle.resources, *self.conversations.resources)
        """Its endpoints beyond asking the model: the lifecycle's and the Conversations API's."""
        self._reasoning: OrderedDict[str, _ServedReasoning] = OrderedDict()
        """Each reasoning item served, by its item id."""
        self._needs: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        """The reasoning item ids served before each function call item (by its item id): the API refuses
        the call item sent back by id without them."""
        self._items: OrderedDict[str, dict[str, Any] | None] = OrderedDict()
        """Each output item served, by its id: what an `item_reference` names (None: its response was not
        kept, `store: false`)."""

    def parse(self, body: dict[str, Any], number: int) -> Asked | Refused:
        """The request body read once: the request being answered, or the API's refusal."""
        asked = parse(self, body, number)
        if isinstance(asked, Asked) and body.get("background") is True:
            return replace(asked, deferred=True)
        return asked

    def refused(self, body: dict[str, Any]) -> Refused | None:
        """Types, `n`, `logprobs` (Chat's name: the Responses API takes `top_logprobs` and `include`),
        `tool_choice`."""
        if "logprobs" in body:
            return Refused("Unknown parameter: 'logprobs'.", "logprobs", "unknown_parameter")
        offered = [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]
        return (refused_type(body) or refused_unsupported(body) or refused_hosted(body)
                or refused_custom_format(body.get("tools")) or refused_service_tier(body)
                or self._refused_choice(body, offered)
                or refused_strict(self._functions(body)) or refused_responses_format(body)
                or refused_background(body)
                or self.conversations.refused(body) or refused_option(body))  # fmt: skip

    @staticmethod
    def _refused_choice(body: dict[str, Any], offered: list[str]) -> Refused | None:
        """`tool_choice`: one forcing a hosted tool must name one offered; any other is read as both APIs
        read it."""
        choice = body.get("tool_choice")
        if isinstance(choice, dict) and forced_hosted(choice) is not None:
            return refused_hosted_choice(choice, body.get("tools"))
        return refused_tool_choice(choice, offered)

    @staticmethod
    def _functions(body: dict[str, Any]) -> list[tuple[str, Any]]:
        """Each function a request offers, with where it sits in the body."""
        return [(f"tools[{n}]", t) for n, t in enumerate(body.get("tools") or [])
                if isinstance(t, dict) and t.get("type") == "function"]  # fmt: skip

    def decode(self, body: dict[str, Any]) -> ModelRequest:
        """`instructions` and `input` (after the stored conversation `previous_response_id` names), and
        flat `tools`; pairing is checked on the whole rebuilt conversation."""
        previous = body.get("previous_response_id")
        in_conversation = body.get("conversation") is not None
        sent = body.get(CONVERSATION)
        new = [] if sent is None and in_conversation else messages_from_items(sent, self._referenced)
        pairing = PairingChecker()
        found = None
        if in_conversation:  # its items, then `input` (`refused` saw it is not with `previous_response_id`)
            found = self.conversations.continued(body, pairing)
        if previous is not None:
            found = self.store.conversation(previous) if isinstance(previous, str) else None
            if found is None:
                message = f"Previous response with id '{previous}' not found."
                raise RefusedError(Refused(message, "previous_response_id", "previous_response_not_found"))
        try:
            if found:  # it was checked up to its reply when it was asked for: the reply on is checked
                pairing.check(found[-1])
            for item in new:
                pairing.check(item)
            pairing.require_complete()
        except MessageContractError as error:
            checked = [found[-1], *new] if found else new
            raise RefusedError(refused_pairing(error, body.get(CONVERSATION), checked)) from None
        conversation = SharedPrefix(new) if found is None else found.extended(new)
        system = instructions_from_wire(body)
        tools = tools_from_wire(body.get("tools"))
        if system is None:
            return ModelRequest(conversation, tools)
        return ModelRequest(HistoryView(system, conversation.shared, len(conversation)), tools)

    def terms(self, body: dict[str, Any]) -> ReplyTerms:
        """Functions are strict where they say `strict: true`, and where they leave it out and their schema
        can be made strict (as the API then makes it)."""
        functions = [function for _, function in self._functions(body)]
        terms = with_format(reply_terms(body, functions, unsaid=strict_by_default), responses_format(body))
        choice = forced_hosted(body.get("tool_choice"))
        return replace(terms, hosted=offered_hosted(body.get("tools")), hosted_choice=choice)

    def _referenced(self, item_id: str) -> dict[str, Any]:
        """The item an `item_reference` names, as the API kept it; `RefusedError` for one it never kept."""
        kept = self._items.get(item_id)
        if kept is None:
            raise RefusedError(_not_found(item_id, unstored=item_id in self._items))
        return kept

    def check(self, body: dict[str, Any], decoded: ModelRequest) -> Refused | None:
        """Reasoning items sent back as the API checks them: one sent by id alone must be one the API kept
        (not `store: false`), one sent in full must be as it was served, and a function call item sent back
        by its id needs the reasoning items served before it."""
        items = body.get("input")
        if not isinstance(items, list):
            return None
        sent: set[str] = set()
        for item in items:
            if not isinstance(item, dict):
                continue
            item_id = item.get("id")
            if item.get("type") == "reasoning" and isinstance(item_id, str):
                sent.add(item_id)
                if (refused := self._check_reasoning(item_id, item)) is not None:
                    return refused
            elif item.get("type") == "function_call" and body.get("previous_response_id") is None:
                missing = [r for r in self._needs.get(str(item_id), ()) if r not in sent]
                if missing:
                    message = (f"Item '{item_id}' of type 'function_call' was provided without its required"
                               f" 'reasoning' item: '{missing[0]}'.")  # fmt: skip
                    return Refused(message, "input")
        return None

    def _check_reasoning(self, item_id: str, item: dict[str, Any]) -> Refused | None:
        served = self._reasoning.get(item_id)
        encrypted = item.get("encrypted_content")
        if served is None:
            return None if encrypted is not None else _not_found(item_id, unstored=False)
        if encrypted is None and not served.stored:
            return _not_found(item_id, unstored=True)
        returned = reasoning_from_wire(item)
        if (encrypted is not None and encrypted != served.item.encrypted_content) or (
            "summary" in item and returned.summary != served.item.summary
        ):
            message = f"The reasoning item {item_id} did not come back as it was served."
            return Refused(message, None, "sim_reasoning_changed")
        return None

    def reply(self, reply: ModelReply, asked: Asked, *, refusal: bool = False) -> dict[str, Any]:
        """A `response` object, kept (with the conversation it ends) for requests that chain to it unless
        the request said `store: false`; a refusal as a `refusal` content part."""
        response_id = f"resp_sim{asked.number:06d}"
        served = self._served(_hosted_minted(reply, response_id), response_id, asked.body)
        wire = response_to_wire(
            served,
            response_id=response_id,
            created=CREATED,
            model=asked.model,
            usage=estimate_usage(asked.decoded, reply),
            request=asked.body,
            reasoning_tokens=reasoning_tokens(reply),
        )
        stored = asked.body.get("store") is not False
        if stored:
            messages = asked.decoded.messages
            history = (
                messages.dialogue
                if isinstance(messages, HistoryView)
                else messages
                if isinstance(messages, SharedPrefix)
                else SharedPrefix([m for m in messages if not isinstance(m, SystemMessage)])
            )
            self.store.put(response_id, history.extended([served.message]))
        for item in served.message.reasoning:
            if item.id is not None:
                self._reasoning[item.id] = _ServedReasoning(item, stored)
        _bound(self._reasoning, self.STORED)
        reasoning_ids = tuple(item["id"] for item in wire["output"] if item["type"] == "reasoning")
        for item in wire["output"]:
            if item["type"] == "function_call" and reasoning_ids:
                self._needs[item["id"]] = reasoning_ids
        _bound(self._needs, self.STORED)
        served_ids = [item for item in wire["output"] if isinstance(item.get("id"), str)]
        self._items.update((item["id"], item if stored else None) for item in served_ids)
        _bound(self._items, self.STORED)
        if refusal:
            for item in wire["output"]:
                if item["type"] == "message":
                    item["content"] = [
                        {"type": "refusal", "refusal": p.get("text", "")} for p in item["content"]
                    ]
        if "conversation" in asked.body:
            self.conversations.kept(asked, wire, served.message)
        return self.lifecycle.kept(asked, wire, reply, refusal=refusal, stored=stored)

    def served_again(self, reply: ModelReply, response_id: str, body: dict[str, Any]) -> ModelReply:
        """`reply` (as answered) served again to `body` as `reply` serves it (a stored response retrieved
        with more `include`), its reasoning items remembered as served now (sent back, they are its own)."""
        served = self._served(_hosted_minted(reply, response_id), response_id, body)
        for item in served.message.reasoning:
            if item.id is not None:
                self._reasoning[item.id] = _ServedReasoning(item, stored=True)
        return served

    def _served(self, reply: ModelReply, response_id: str, body: dict[str, Any]) -> ModelReply:
        """The reply with its reasoning as served: an id, encrypted content when the request asked, and its
        summary only when the request asks for one (`reasoning.summary`)."""
        if not reply.message.reasoning:
            return reply
        encrypted = ENCRYPTED_REASONING in (body.get("include") or [])
        summarized = summary_asked(body)
        reasoning = tuple(
            Reasoning(
                id=f"rs_{response_id.removeprefix('resp_')}_{n}",
                summary=item.summary if summarized else (),
                encrypted_content=ENCRYPTED_PREFIX
                + base64.b64encode(json.dumps([response_id, item.summary]).encode()).decode()
                if encrypted
                else None,
            )
            for n, item in enumerate(reply.message.reasoning, 1)
        )
        update: dict[str, Any] = {"reasoning": reasoning}
        if reply.message.items:  # the items keep their order, each reasoning item as served
            served = iter(reasoning)
            update["items"] = tuple(next(served) if isinstance(part, Reasoning) else part
                                    for part in reply.message.items)  # fmt: skip
        return reply.model_copy(update={"message": reply.message.model_copy(update=update)})

    def stream(self, reply: ModelReply, asked: Asked, *, refusal: bool = False) -> list[bytes]:
        """The response's events, named and numbered as the API sends them (kept as `reply` keeps it)."""
        wire = self.reply(reply, asked, refusal=refusal)
        events = background_events(wire, asked.body) if asked.deferred else events_to_wire(wire, asked.body)
        if wanted(asked.body):
            padded_events(events, asked.number)
        return [frame(event, event["type"]) for event in events]

    def failed(self, error: dict[str, Any], asked: Asked) -> list[bytes]:
        """`response.created`, `response.in_progress`, then `response.failed` carrying the error (its
        `code` one the API uses: `server_error` when the script names none)."""
        empty = ModelReply(message=AssistantMessage(), finish_reason="stop")
        response_id = f"resp_sim{asked.number:06d}"

        def response(status: str, failure: dict[str, Any] | None = None) -> dict[str, Any]:
            return response_to_wire(empty, response_id=response_id, created=CREATED,
                model=asked.model, usage=None, request=asked.body, status=status, error=failure)  # fmt: skip

        started = {**response("in_progress"), "service_tier": asked_tier(asked.body)}
        ended = response("failed", {"code": error.get("code") or "server_error", "message": error["message"]})
        events = [
            {"type": "response.created", "response": started},
            {"type": "response.in_progress", "response": started},
            {"type": "response.failed", "response": ended},
        ]
        return [frame({**event, "sequence_number": n}, str(event["type"])) for n, event in enumerate(events)]

    def broken(self, stream: bool) -> bytes:
        """Half a response."""
        return b'event: response.created\ndata: {"type": "response.cr\n\n' if stream else b'{"id": "resp_'


def _hosted_minted(reply: ModelReply, response_id: str) -> ModelReply:
    """The reply with an id on each hosted item, as the API gives them (`ws_<suffix>_<n>`, ...)."""
    message = reply.message
    if not any(isinstance(part, HostedItem) and part.id is None for part in message.items):
        return reply
    suffix = response_id.removeprefix("resp_")
    items = tuple(minted(part, suffix, n) if isinstance(part, HostedItem) else part
                  for n, part in enumerate(message.items, 1))  # fmt: skip
    return reply.model_copy(update={"message": message.model_copy(update={"items": items})})


def _bound(kept: OrderedDict[str, Any], most: int) -> None:
    """Forget the oldest entries past `most`."""
    while len(kept) > most:
        kept.popitem(last=False)


def server(store_limit: int) -> ResponsesProtocol:
    """A new server side of the Responses API, its store of responses bounded to `store_limit` bytes."""
    return ResponsesProtocol(store_limit)
