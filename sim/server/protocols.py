"""What the simulator does differently per wire protocol: how a request is checked and read, and how a
reply is written back, as JSON or as a stream. Chat Completions and the Responses API, side by side; the
simulator picks one per route and never asks which it has."""

from __future__ import annotations

import base64
import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

from sim.adapters import chat_wire, responses_wire
from sim.core.messages import (
    AssistantMessage,
    HistoryView,
    PairingChecker,
    Reasoning,
    SharedPrefix,
    SystemMessage,
)
from sim.core.model import ModelReply, ModelRequest
from sim.core.strict_schema import strict_by_default, strict_problem
from sim.server.response_store import STORE_LIMIT_BYTES, ResponseStore
from sim.server.tool_choice import ReplyTerms, ToolChoiceError, read_tool_choice, reply_terms

CREATED = 1_700_000_000
"""The creation time of every reply: fixed, so that replies are byte-stable."""


@dataclass(frozen=True, slots=True)
class Refused:
    """A request the API would refuse with a 400 (or that sim cannot honour), saying which parameter."""

    message: str
    param: str | None = None
    code: str | None = None
    status: int = 400
    unsimulated: bool = False
    """Whether it is sim's own limit (the API would answer): a run that meets it is not simulated."""


_TYPED = (
    ("model", str, "a string"), ("stream", bool, "a boolean"), ("n", int, "an integer"),
    ("logprobs", bool, "a boolean"), ("top_logprobs", int, "an integer"), ("max_tokens", int, "an integer"),
    ("max_completion_tokens", int, "an integer"), ("max_output_tokens", int, "an integer"),
    ("stream_options", dict, "an object"), ("previous_response_id", str, "a string"),
    ("store", bool, "a boolean"), ("include", list, "an array"), ("instructions", str, "a string"),
)  # fmt: skip


def _typed(body: dict[str, Any]) -> Refused | None:
    for name, kind, label in _TYPED:
        value = body.get(name)
        if value is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
            message = f"Invalid type for '{name}': expected {label}, but got {type(value).__name__}."
            return Refused(message, name, "invalid_type")
    return None


def _unsupported(body: dict[str, Any]) -> Refused | None:
    """What sim does not simulate, refused rather than faked (one choice for `n: 2`), and log probabilities
    asked for out of the API's range."""
    if body.get("n") not in (None, 1):
        return Refused(
            f"sim serves one choice per request: n must be 1, not {body['n']}.",
            "n",
            "unsupported_value",
            unsimulated=True,
        )
    top = body.get("top_logprobs")
    if top is not None and not 0 <= top <= TOP_LOGPROBS:
        message = f"Invalid 'top_logprobs': integer above maximum value. Expected a value <= {TOP_LOGPROBS}"
        return Refused(message if top > 0 else "Invalid 'top_logprobs': must be >= 0.", "top_logprobs",
                       "integer_above_max_value" if top > 0 else "integer_below_min_value")  # fmt: skip
    return None


TOP_LOGPROBS = 20
"""The most alternatives per token the API lists."""


def refused_tool_choice(choice: Any, offered: list[str]) -> Refused | None:
    """A `tool_choice` that is malformed or names a tool not offered."""
    try:
        read_tool_choice(choice, offered)
    except ToolChoiceError as error:
        return Refused(str(error), "tool_choice", "invalid_value", unsimulated=error.unsimulated)
    return None


def refused_strict(functions: list[tuple[str, Any]]) -> Refused | None:
    """The first function (each given with where it sits, e.g. `tools[0].function`) that says
    `strict: true` of parameters strict mode cannot take, refused as the API refuses it."""
    for where, function in functions:
        parameters = function.get("parameters")
        said = function.get("strict") is True and parameters is not None
        if said and (problem := strict_problem(parameters)) is not None:
            message = f"Invalid schema for function '{function.get('name')}': {problem}"
            return Refused(message, f"{where}.parameters", "invalid_function_parameters")
    return None


@dataclass(frozen=True, slots=True)
class Asked:
    """A request being answered: its JSON body, what it says as messages and tools, and its number."""

    body: dict[str, Any]
    decoded: ModelRequest
    number: int
    terms: ReplyTerms
    """What the API guarantees the reply (`tool_choice`, `parallel_tool_calls`, strict functions)."""

    @property
    def model(self) -> str:
        """The model the request names (echoed in replies)."""
        return str(self.body.get("model") or "sim-model")


class WireProtocol(Protocol):
    """One API as the simulator serves it."""

    name: str
    paths: tuple[str, ...]
    closing: bytes
    """What ends a stream after its last event (`data: [DONE]` for Chat, nothing for Responses)."""

    def refused(self, body: dict[str, Any]) -> Refused | None:
        """A parameter the API (or sim) refuses, before anything else is read."""
        ...

    def decode(self, body: dict[str, Any]) -> ModelRequest:
        """The request as the loop's messages and tools; `MessageContractError` or `RefusedError` as the
        API would refuse it."""
        ...

    def check(self, body: dict[str, Any], decoded: ModelRequest) -> Refused | None:
        """What the API refuses in what a well-formed request carries back (reasoning items)."""
        ...

    def terms(self, body: dict[str, Any]) -> ReplyTerms:
        """What the API guarantees the reply to this request."""
        ...

    def reply(self, reply: ModelReply, asked: Asked, *, refusal: bool = False) -> dict[str, Any]:
        """The reply as the API's JSON body (and, for a store, kept for later requests); with `refusal`,
        its text sent as the API sends a refusal."""
        ...

    def stream(self, reply: ModelReply, asked: Asked, *, refusal: bool = False) -> list[bytes]:
        """The reply as the stream of events the API would send, each a complete SSE frame."""
        ...

    def broken(self, stream: bool) -> bytes:
        """A body that is not JSON, or a stream whose first event is cut."""
        ...

    def failed(self, error: dict[str, Any], asked: Asked) -> list[bytes]:
        """A stream that fails after it started, carrying `error` (`message`, `type`, `code`)."""
        ...


class RefusedError(Exception):
    """A request refused with a 400 and a code (e.g. `previous_response_not_found`)."""

    def __init__(self, refused: Refused) -> None:
        super().__init__(refused.message)
        self.refused = refused


def _frame(data: dict[str, Any], event: str | None = None) -> bytes:
    named = f"event: {event}\n".encode() if event else b""
    return named + b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"


class ChatProtocol:
    """`POST /v1/chat/completions`."""

    name = "chat"
    paths: tuple[str, ...] = ("/v1/chat/completions", "/chat/completions")
    closing = b"data: [DONE]\n\n"

    def refused(self, body: dict[str, Any]) -> Refused | None:
        """Types, `stream_options` without `stream`, `n`, log probabilities, `tool_choice`."""
        refused = _typed(body) or _unsupported(body)
        if refused is None and body.get("stream_options") is not None and not body.get("stream"):
            message = "The 'stream_options' parameter is only allowed when 'stream' is enabled."
            refused = Refused(message, "stream_options", "invalid_value")
        if refused is None and not isinstance(
            (body.get("stream_options") or {}).get("include_usage", False), bool
        ):
            refused = Refused(
                "Invalid type for 'include_usage'.", "stream_options.include_usage", "invalid_type"
            )
        functions = self._functions(body)
        offered = [function.get("name") for _, function in functions]
        return refused or refused_tool_choice(body.get("tool_choice"), offered) or refused_strict(functions)

    @staticmethod
    def _functions(body: dict[str, Any]) -> list[tuple[str, Any]]:
        """Each function a request offers, with where it sits in the body."""
        return [(f"tools[{n}].function", t["function"]) for n, t in enumerate(body.get("tools") or [])
                if isinstance(t, dict) and isinstance(t.get("function"), dict)]  # fmt: skip

    def decode(self, body: dict[str, Any]) -> ModelRequest:
        """`messages` and `tools`, pairing checked."""
        return chat_wire.request_from_wire(body)

    def terms(self, body: dict[str, Any]) -> ReplyTerms:
        """Functions are strict where they say `strict: true`."""
        return reply_terms(body, [function for _, function in self._functions(body)], unsaid=lambda _: None)

    def check(self, body: dict[str, Any], decoded: ModelRequest) -> Refused | None:
        """Nothing travels back by reference over Chat Completions."""
        return None

    def reply(self, reply: ModelReply, asked: Asked, *, refusal: bool = False) -> dict[str, Any]:
        """A `chat.completion`; a refusal in `message.refusal`, its content null."""
        return chat_wire.completion_to_wire(
            reply,
            completion_id=f"chatcmpl-sim{asked.number:06d}",
            created=CREATED,
            model=asked.model,
            usage=chat_wire.estimate_usage(asked.decoded, reply),
            logprobs=self._logprobs(asked.body),
            refusal=refusal,
        )

    def stream(self, reply: ModelReply, asked: Asked, *, refusal: bool = False) -> list[bytes]:
        """`chat.completion.chunk`s; the usage chunk only when `stream_options.include_usage` asks; a
        refusal in `refusal` deltas."""
        include_usage = bool((asked.body.get("stream_options") or {}).get("include_usage"))
        chunks = chat_wire.chunks_to_wire(
            reply,
            completion_id=f"chatcmpl-sim{asked.number:06d}",
            created=CREATED,
            model=asked.model,
            usage=chat_wire.estimate_usage(asked.decoded, reply) if include_usage else None,
            logprobs=self._logprobs(asked.body),
            refusal=refusal,
        )
        return [_frame(chunk) for chunk in chunks]

    @staticmethod
    def _logprobs(body: dict[str, Any]) -> int | None:
        """How many alternatives per token the request asks for, when it asks for log probabilities."""
        return int(body.get("top_logprobs") or 0) if body.get("logprobs") else None

    def broken(self, stream: bool) -> bytes:
        """Half a completion."""
        return b'data: {"id": "chatcmpl-\n\n' if stream else b'{"id": "chatcmpl-'

    def failed(self, error: dict[str, Any], asked: Asked) -> list[bytes]:
        """An `error` chunk, as the API streams a failure."""
        return [_frame({"error": error})]


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
    paths: tuple[str, ...] = ("/v1/responses", "/responses")
    closing = b""
    STORED = 10_000
    """The most reasoning items and function calls remembered (a store of responses is bounded by bytes)."""

    def __init__(self, store_limit: int = STORE_LIMIT_BYTES) -> None:
        self.store = ResponseStore(store_limit)
        """The responses kept for chains."""
        self._reasoning: OrderedDict[str, _ServedReasoning] = OrderedDict()
        """Each reasoning item served, by its item id."""
        self._needs: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        """The reasoning item ids served before each function call item (by its item id): the API refuses
        the call item sent back by id without them."""

    def refused(self, body: dict[str, Any]) -> Refused | None:
        """Types, `n`, `logprobs` (Chat's name: the Responses API takes `top_logprobs` and `include`),
        `tool_choice`."""
        if "logprobs" in body:
            return Refused("Unknown parameter: 'logprobs'.", "logprobs", "unknown_parameter")
        offered = [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]
        return (_typed(body) or _unsupported(body) or refused_tool_choice(body.get("tool_choice"), offered)
                or refused_strict(self._functions(body)))  # fmt: skip

    @staticmethod
    def _functions(body: dict[str, Any]) -> list[tuple[str, Any]]:
        """Each function a request offers, with where it sits in the body."""
        return [(f"tools[{n}]", t) for n, t in enumerate(body.get("tools") or [])
                if isinstance(t, dict) and t.get("type") == "function"]  # fmt: skip

    def decode(self, body: dict[str, Any]) -> ModelRequest:
        """`instructions` and `input` (after the stored conversation `previous_response_id` names), and
        flat `tools`; pairing is checked on the whole rebuilt conversation."""
        previous = body.get("previous_response_id")
        new = responses_wire.messages_from_items(body.get("input"))
        pairing = PairingChecker()
        found = None
        if previous is not None:
            found = self.store.conversation(previous) if isinstance(previous, str) else None
            if found is None:
                message = f"Previous response with id '{previous}' not found."
                raise RefusedError(Refused(message, "previous_response_id", "previous_response_not_found"))
            if found:  # it was checked up to its reply when it was asked for: the reply on is checked
                pairing.check(found[-1])
        for item in new:
            pairing.check(item)
        pairing.require_complete()
        conversation = SharedPrefix(new) if found is None else found.extended(new)
        instructions = body.get("instructions")
        tools = responses_wire.tools_from_wire(body.get("tools"))
        if not isinstance(instructions, str):
            return ModelRequest(conversation, tools)
        system = SystemMessage(content=instructions)
        return ModelRequest(HistoryView(system, conversation.shared, len(conversation)), tools)

    def terms(self, body: dict[str, Any]) -> ReplyTerms:
        """Functions are strict where they say `strict: true`, and where they leave it out and their schema
        can be made strict (as the API then makes it)."""
        functions = [function for _, function in self._functions(body)]
        return reply_terms(body, functions, unsaid=strict_by_default)

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
        returned = responses_wire.reasoning_from_wire(item)
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
        served = self._served(reply, response_id, asked.body)
        wire = responses_wire.response_to_wire(
            served,
            response_id=response_id,
            created=CREATED,
            model=asked.model,
            usage=chat_wire.estimate_usage(asked.decoded, reply),
            request=asked.body,
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
        if refusal:
            for item in wire["output"]:
                if item["type"] == "message":
                    item["content"] = [
                        {"type": "refusal", "refusal": p.get("text", "")} for p in item["content"]
                    ]
        return wire

    def _served(self, reply: ModelReply, response_id: str, body: dict[str, Any]) -> ModelReply:
        """The reply with its reasoning as served: an id, and encrypted content when the request asked."""
        if not reply.message.reasoning:
            return reply
        encrypted = responses_wire.ENCRYPTED_REASONING in (body.get("include") or [])
        reasoning = tuple(
            Reasoning(
                id=f"rs_{response_id.removeprefix('resp_')}_{n}",
                summary=item.summary,
                encrypted_content=ENCRYPTED_PREFIX
                + base64.b64encode(json.dumps([response_id, item.summary]).encode()).decode()
                if encrypted
                else None,
            )
            for n, item in enumerate(reply.message.reasoning, 1)
        )
        return reply.model_copy(update={"message": reply.message.model_copy(update={"reasoning": reasoning})})

    def stream(self, reply: ModelReply, asked: Asked, *, refusal: bool = False) -> list[bytes]:
        """The response's events, named and numbered as the API sends them (kept as `reply` keeps it)."""
        wire = self.reply(reply, asked, refusal=refusal)
        return [_frame(event, event["type"]) for event in responses_wire.events_to_wire(wire)]

    def failed(self, error: dict[str, Any], asked: Asked) -> list[bytes]:
        """`response.created`, `response.in_progress`, then `response.failed` carrying the error (its
        `code` one the API uses: `server_error` when the script names none)."""
        empty = ModelReply(message=AssistantMessage(), finish_reason="stop")
        response_id = f"resp_sim{asked.number:06d}"

        def response(status: str, failure: dict[str, Any] | None = None) -> dict[str, Any]:
            return responses_wire.response_to_wire(empty, response_id=response_id, created=CREATED,
                model=asked.model, usage=None, request=asked.body, status=status, error=failure)  # fmt: skip

        started = response("in_progress")
        ended = response("failed", {"code": error.get("code") or "server_error", "message": error["message"]})
        events = [
            {"type": "response.created", "response": started},
            {"type": "response.in_progress", "response": started},
            {"type": "response.failed", "response": ended},
        ]
        return [_frame({**event, "sequence_number": n}, str(event["type"])) for n, event in enumerate(events)]

    def broken(self, stream: bool) -> bytes:
        """Half a response."""
        return b'event: response.created\ndata: {"type": "response.cr\n\n' if stream else b'{"id": "resp_'


def _bound(kept: OrderedDict[str, Any], most: int) -> None:
    """Forget the oldest entries past `most`."""
    while len(kept) > most:
        kept.popitem(last=False)
