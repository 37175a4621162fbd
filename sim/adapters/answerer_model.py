"""`AnswererModel`: the loop's `ModelClient` asking an answerer directly, in process, with no HTTP and no
JSON text between them (the fast way to play a scenario or fuzz a loop).

Each request is what `OpenAIChatModel` would send without streaming, as the Chat Completions wire module
writes it and the host's parser reads it (a dict, never serialized; the parser reads only what each request
adds to the one before, and takes the messages this client wrote as it would read them back); the answer
comes back as that adapter would raise or return it: a model reply as the same wire module reads it, an error
mapped by `sim.adapters.api_errors` as the SDK adapters map theirs, a malformed body as the reply
error the adapter raises for a body that is not JSON, a dropped connection (a cut reply) as the connection
error the adapter raises when the SDK does not retry. So the answerer (a scenario's `ScriptAnswerer`)
judges the same requests, and the loop sees the same replies and errors, as over the real SDK and host.
An answer's pacing (a scenario's latency) is the host's to keep: asked directly, every answer comes at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from sim.adapters.api_errors import connection_error, reply_not_json, status_error
from sim.core.messages import ChatMessage, HistoryView, RequestPairing
from sim.core.model import ModelReply, ModelRequest, ToolSpec
from sim.host.answers import Answer, Answerer, ApiError, Problem, RawReply, Received, Refusal
from sim.host.app import refusal
from sim.host.faults import FaultKind, json_error
from sim.wire.chat.client import message_to_wire, request_fields, tool_to_wire
from sim.wire.chat.growing import GrowingConversation, reply_as_read
from sim.wire.chat.protocol import ChatProtocol
from sim.wire.requests import Asked, Refused
from sim.wire.text_format import chat_format_fields

__all__ = ["AnswererModel"]

_NOT_A_RETRY = {"x-stainless-retry-count": "0"}
"""This client never retries a request: it says so as the SDKs say it, so that an answerer that counts
retries counts them the same way over either client."""


class AnswererModel:
    """Asks `answerer` each request of the loop, as a non-streaming Chat Completions client would."""

    def __init__(self, answerer: Answerer, model: str) -> None:
        self.answerer = answerer
        self.model = model
        self._pairing = RequestPairing()
        self._protocol = ChatProtocol()
        self._reader = GrowingConversation(self._protocol)
        self._path = self._protocol.paths[0]
        self._fields = request_fields(model, max_tokens=None, stream=False)
        self._sent = 0
        self._previous: Sequence[ChatMessage] = ()
        self._messages: list[dict[str, Any]] = []
        """Each message of the conversation so far as the wire module writes it, written once."""
        self._tools: tuple[ToolSpec, ...] = ()
        self._wire_tools: list[dict[str, Any]] = []

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Check pairing, ask the answerer, and return the reply or raise the error the adapter raises."""
        messages = request.messages
        self._pairing.check(messages)
        body: dict[str, Any] = {**self._fields, "messages": self._wire_messages(messages)}
        if request.tools:
            body["tools"] = self._wire_tools_of(request.tools)
        body.update(chat_format_fields(request.output))
        self._sent += 1
        read = partial(_parse, self._reader, body, messages)
        received = Received(self._sent, "POST", self._path, "", _NOT_A_RETRY, b"", self._protocol.name, read)
        return self._reply(await self.answerer.answer(received), received)

    def _wire_messages(self, messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
        """`messages` as the wire module writes them: those a growing history already sent are not written
        again, and are sent as the same objects (which the parser then need not read again)."""
        new = messages.new_since(self._previous) if isinstance(messages, HistoryView) else None
        if new is None:
            self._messages = []
            new = messages
        self._messages += [message_to_wire(m) for m in new]
        self._previous = messages
        return self._messages.copy()

    def _wire_tools_of(self, tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
        """`tools` as the wire module writes them, written once for as long as the loop offers the same."""
        if tools is not self._tools:
            self._tools = tools
            self._wire_tools = [tool_to_wire(spec) for spec in tools]
        return self._wire_tools

    def _reply(self, answer: Answer, request: Received) -> ModelReply:
        """`answer` as the adapter reads the host's reply to a request that does not stream."""
        if isinstance(answer, Problem):
            raise _error(ApiError.of(answer))
        if isinstance(answer, RawReply):
            raise TypeError(
                "an HTTP reply sent as it is needs the host: play it over the SDK and `transport`"
            )
        if isinstance(answer, ApiError):
            if answer.fault is not None and answer.fault.kind is not FaultKind.stall:
                raise connection_error(json_error(answer.fault, {"error": answer.fields}))
            raise _error(answer)
        asked = request.parsed
        if isinstance(asked, Refusal):
            raise _error(asked.error)
        fault = answer.fault_met
        if fault is not None and fault.kind is not FaultKind.stall:  # a stall: pacing, the host's to keep
            wire = self._protocol.reply(answer.reply, asked, refusal=answer.refusal)
            raise connection_error(json_error(fault, wire))
        if answer.malformed:
            raise reply_not_json()
        return reply_as_read(answer.reply, asked)


def _parse(
    reader: GrowingConversation, body: dict[str, Any], written: Sequence[ChatMessage], request: Received
) -> Asked | Refusal:
    """`body` (its messages written from `written`) read as the host's parser reads a request's: the
    request being answered, or the refusal."""
    read = reader.parse(body, request.number, written)
    return refusal(read, request.number) if isinstance(read, Refused) else read


def _error(error: ApiError) -> Exception:
    return status_error(
        error.status, error.message, error_type=error.type, code=error.code, headers=_lower(error.headers)
    )


def _lower(headers: tuple[tuple[str, str], ...]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers}
