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
from sim.core.messages import AssistantMessage, ChatMessage, Reasoning, SystemMessage, validate_pairing
from sim.core.model import ModelReply, ModelRequest

CREATED = 1_700_000_000
"""The creation time of every reply: fixed, so that replies are byte-stable."""


@dataclass(frozen=True, slots=True)
class Refused:
    """A request the API would refuse with a 400 (or that sim cannot honour), saying which parameter."""

    message: str
    param: str | None = None
    code: str | None = None


_TYPED = (
    ("model", str, "a string"), ("stream", bool, "a boolean"), ("n", int, "an integer"),
    ("logprobs", bool, "a boolean"), ("max_tokens", int, "an integer"),
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
    """What sim does not simulate, refused rather than faked (one choice for `n: 2`, no log
    probabilities for `logprobs: true`)."""
    if body.get("n") not in (None, 1):
        return Refused(
            f"sim serves one choice per request: n must be 1, not {body['n']}.", "n", "unsupported_value"
        )
    for param in ("logprobs", "top_logprobs"):
        if body.get(param) not in (None, False, 0):
            message = f"sim does not simulate log probabilities: '{param}' is not supported."
            return Refused(message, param, "unsupported_parameter")
    return None


def named_choice(choice: Any) -> str | None:
    """The function a `tool_choice` names (Chat's `{function: {name}}` or the Responses API's flat
    `{name}`), if it names one."""
    if not isinstance(choice, dict) or choice.get("type") != "function":
        return None
    function = choice.get("function")
    name = function.get("name") if isinstance(function, dict) else choice.get("name")
    return name if isinstance(name, str) else None


def refused_tool_choice(choice: Any, offered: list[str]) -> Refused | None:
    """A `tool_choice` that is malformed or names a tool not offered."""
    if choice is None or choice in ("none", "auto", "required"):
        return None
    name = named_choice(choice)
    if name is None:
        message = "Invalid value for 'tool_choice': expected 'none', 'auto', 'required' or a named function."
        return Refused(message, "tool_choice", "invalid_value")
    if name not in offered:
        message = f"Invalid value for 'tool_choice': no function named '{name}' was specified in 'tools'."
        return Refused(message, "tool_choice", "invalid_value")
    return None


def contradicts_tool_choice(choice: Any, reply: ModelReply) -> str | None:
    """How a scripted reply contradicts the request's `tool_choice` (the real model could not answer so)."""
    calls = [call.name for call in reply.message.tool_calls]
    if choice == "required" and not calls:
        return "the request says tool_choice 'required', but the scripted reply calls no tool"
    if choice == "none" and calls:
        return f"the request says tool_choice 'none', but the scripted reply calls {', '.join(calls)}"
    name = named_choice(choice)
    if name is not None and (not calls or any(call != name for call in calls)):
        return f"the request says tool_choice {name!r}, but the scripted reply calls {calls or 'no tool'}"
    return None


@dataclass(frozen=True, slots=True)
class Asked:
    """A request being answered: its JSON body, what it says as messages and tools, and its number."""

    body: dict[str, Any]
    decoded: ModelRequest
    number: int

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

    def check(self, decoded: ModelRequest) -> str | None:
        """A problem with what a well-formed request carries back (reasoning changed on its way)."""
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
        offered = [t["function"].get("name") for t in body.get("tools") or []
                   if isinstance(t, dict) and isinstance(t.get("function"), dict)]  # fmt: skip
        return refused or refused_tool_choice(body.get("tool_choice"), offered)

    def decode(self, body: dict[str, Any]) -> ModelRequest:
        """`messages` and `tools`, pairing checked."""
        return chat_wire.request_from_wire(body)

    def check(self, decoded: ModelRequest) -> str | None:
        """Nothing travels back unchanged over Chat Completions."""
        return None

    def reply(self, reply: ModelReply, asked: Asked, *, refusal: bool = False) -> dict[str, Any]:
        """A `chat.completion`; a refusal in `message.refusal`, its content null."""
        wire = chat_wire.completion_to_wire(
            reply,
            completion_id=f"chatcmpl-sim{asked.number:06d}",
            created=CREATED,
            model=asked.model,
            usage=chat_wire.estimate_usage(asked.decoded, reply),
        )
        if refusal:
            message = wire["choices"][0]["message"]
            message["refusal"], message["content"] = message["content"], None
        return wire

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
        )
        if refusal:
            for chunk in chunks:
                for choice in chunk["choices"]:
                    delta = choice["delta"]
                    if "role" in delta:
                        delta["content"], delta["refusal"] = None, ""
                    elif "content" in delta:
                        delta["refusal"] = delta.pop("content")
        return [_frame(chunk) for chunk in chunks]

    def broken(self, stream: bool) -> bytes:
        """Half a completion."""
        return b'data: {"id": "chatcmpl-\n\n' if stream else b'{"id": "chatcmpl-'

    def failed(self, error: dict[str, Any], asked: Asked) -> list[bytes]:
        """An `error` chunk, as the API streams a failure."""
        return [_frame({"error": error})]


ENCRYPTED_PREFIX = "sim-reasoning:"


class ResponsesProtocol:
    """`POST /v1/responses`: stateless or chained through `previous_response_id`, with a store of the
    responses it sent (bounded), and reasoning that must come back unchanged."""

    name = "responses"
    paths: tuple[str, ...] = ("/v1/responses", "/responses")
    closing = b""
    STORED = 10_000

    def __init__(self) -> None:
        self._stored: OrderedDict[str, list[ChatMessage]] = OrderedDict()
        self._reasoning: dict[str, tuple[Reasoning, ...]] = {}
        """The reasoning each call was served with, by call id: a later request must send it back."""

    def refused(self, body: dict[str, Any]) -> Refused | None:
        """Types, `n`, log probabilities, `tool_choice`."""
        offered = [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]
        return _typed(body) or _unsupported(body) or refused_tool_choice(body.get("tool_choice"), offered)

    def decode(self, body: dict[str, Any]) -> ModelRequest:
        """`instructions` and `input` (after the stored conversation `previous_response_id` names), and
        flat `tools`; pairing is checked on the whole rebuilt conversation."""
        earlier: list[ChatMessage] = []
        previous = body.get("previous_response_id")
        if previous is not None:
            if previous not in self._stored:
                message = f"Previous response with id '{previous}' not found."
                raise RefusedError(Refused(message, "previous_response_id", "previous_response_not_found"))
            earlier = self._stored[previous]
        conversation = earlier + responses_wire.messages_from_items(body.get("input"))
        validate_pairing(conversation)
        instructions = body.get("instructions")
        system = [SystemMessage(content=instructions)] if isinstance(instructions, str) else []
        return ModelRequest([*system, *conversation], responses_wire.tools_from_wire(body.get("tools")))

    def check(self, decoded: ModelRequest) -> str | None:
        """Reasoning served with calls must come back with them, unchanged, in a stateless request."""
        for message in decoded.messages:
            if not isinstance(message, AssistantMessage):
                continue
            for call in message.tool_calls:
                served = self._reasoning.get(call.id)
                if served is not None and message.reasoning != served:
                    shown = ", ".join(r.id or "?" for r in served)
                    return f"the reasoning served with call {call.id} ({shown}) did not come back unchanged"
        return None

    def reply(self, reply: ModelReply, asked: Asked, *, refusal: bool = False) -> dict[str, Any]:
        """A `response` object, kept (with the conversation it ends) for requests that chain to it; a
        refusal as a `refusal` content part."""
        response_id = f"resp_sim{asked.number:06d}"
        served = self._served(reply, response_id, asked.body)
        wire = responses_wire.response_to_wire(
            served,
            response_id=response_id,
            created=CREATED,
            model=asked.model,
            usage=chat_wire.estimate_usage(asked.decoded, reply),
            previous_response_id=asked.body.get("previous_response_id"),
            store=asked.body.get("store", True) is not False,
        )
        history = [m for m in asked.decoded.messages if not isinstance(m, SystemMessage)]
        self._stored[response_id] = [*history, served.message]
        while len(self._stored) > self.STORED:
            self._stored.popitem(last=False)
        for call in served.message.tool_calls:
            if served.message.reasoning:
                self._reasoning[call.id] = served.message.reasoning
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
        """`response.created`, `response.in_progress`, then `response.failed` carrying the error."""
        response = {"id": f"resp_sim{asked.number:06d}", "object": "response", "created_at": CREATED,
                    "model": asked.model, "output": [], "usage": None}  # fmt: skip
        events = [
            {"type": "response.created", "response": {**response, "status": "in_progress", "error": None}},
            {
                "type": "response.in_progress",
                "response": {**response, "status": "in_progress", "error": None},
            },
            {"type": "response.failed", "response": {**response, "status": "failed", "error": error}},
        ]
        return [_frame({**event, "sequence_number": n}, str(event["type"])) for n, event in enumerate(events)]

    def broken(self, stream: bool) -> bytes:
        """Half a response."""
        return b'event: response.created\ndata: {"type": "response.cr\n\n' if stream else b'{"id": "resp_'
