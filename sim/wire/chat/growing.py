"""Chat Completions requests of a client in process: a growing conversation's requests parsed for what each
adds (`GrowingConversation`), and what the client wrote taken as it would be read back (`message_as_read`,
`reply_as_read`), with the same checks and results as writing and reading it."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from sim.core.errors import MessageContractError, ModelReplyError
from sim.core.messages import (
    AssistantMessage,
    ChatMessage,
    PairingChecker,
    ToolCall,
    ToolMessage,
)
from sim.core.model import ModelReply, ModelRequest
from sim.wire.chat import CONVERSATION
from sim.wire.chat.client import finish_reason_from_wire
from sim.wire.chat.protocol import ChatProtocol, estimate_usage
from sim.wire.chat.reading import (
    contract_error,
    message_from_wire,
    offered_tools,
    refused_conversation,
)
from sim.wire.chat.served import served_finish
from sim.wire.replies import well_formed
from sim.wire.requests import (
    Asked,
    Refused,
)


class GrowingConversation:
    """`ChatProtocol.parse` for the requests of one client whose conversation only grows (each request's
    `messages` starts with the previous request's, the same objects): what a request shares with the last
    one parsed, the same objects, is not read again, so a run of n requests reads n messages, not n²/2.
    A client that says which messages it wrote each body's `messages` from (`written`) is not read back
    at all: each message is taken as `message_as_read` says it would be read.

    The result is what `ChatProtocol.parse` gives for the same body: its refusals, its problems, its
    typed request. It relies on the client's word that an object it sends again is unchanged (and that
    `written` is what it wrote); a request that shares less (other fields, a shorter or different
    conversation) is read whole.
    """

    __slots__ = ("_last", "_pairing", "_protocol")

    def __init__(self, protocol: ChatProtocol) -> None:
        self._protocol = protocol
        self._last: Asked | None = None
        self._pairing = PairingChecker()
        """The pairing of `_last`'s messages, checked to their end."""

    def parse(
        self, body: dict[str, Any], number: int, written: Sequence[ChatMessage] | None = None
    ) -> Asked | Refused:
        """The request body read as `ChatProtocol.parse` reads it, the part the last one shares read once;
        `written`: the messages `body["messages"]` was written from by `message_to_wire`, one for one."""
        last, self._last = self._last, None
        raw = body.get(CONVERSATION)
        if not isinstance(raw, list) or not raw:
            return self._protocol.parse(body, number)  # refused as it refuses it
        if written is not None and len(written) != len(raw):
            written = None
        read = self._read(body, raw, number, last, written)
        if isinstance(read, Asked):
            self._last = read
        return read

    def _read(
        self,
        body: dict[str, Any],
        raw: list[Any],
        number: int,
        last: Asked | None,
        written: Sequence[ChatMessage] | None,
    ) -> Asked | Refused:
        """`body` read in `ChatProtocol.parse`'s order (refused parameters, messages, pairing, tools, terms),
        after `last` when it only adds messages at the end: every other field being the same object, it is
        refused for nothing `last` was not refused for, and its tools and terms are `last`'s."""
        if last is not None and _extends(body, raw, last.body):
            known, tools, terms = last.decoded.messages, last.decoded.tools, last.terms
        else:
            if (refused := self._protocol.refused(body)) is not None:
                return refused
            known, tools, terms = (), None, None
            self._pairing = PairingChecker()
        start = len(known)
        try:
            if written is not None:
                added = [message_as_read(message, f"messages[{index}]")
                         for index, message in enumerate(written[start:], start)]  # fmt: skip
            else:
                added = [message_from_wire(message, f"messages[{index}]")
                         for index, message in enumerate(raw[start:], start)]  # fmt: skip
            for message in added:
                self._pairing.check(message)
            self._pairing.require_complete()
            if tools is None:
                tools = offered_tools(body)
        except MessageContractError as error:
            return refused_conversation(error, raw)
        if terms is None:
            terms = self._protocol.terms(body)
        return Asked(body, ModelRequest([*known, *added], tools), number, terms)


def _extends(body: dict[str, Any], raw: list[Any], before: dict[str, Any]) -> bool:
    """Whether `body` is `before` with messages added at the end of `raw`, its `messages`."""
    if body.keys() != before.keys():
        return False
    for key, value in body.items():
        if key != CONVERSATION and value is not before[key]:
            return False
    known = before[CONVERSATION]
    return len(raw) >= len(known) and all(map(operator.is_, raw, known))


def message_as_read(message: ChatMessage, where: str) -> ChatMessage:
    """`message` as a server reads it once `message_to_wire` wrote it, without writing and reading it:
    `message_from_wire(message_to_wire(message), where)`, with the same checks and the same result (what
    Chat Completions cannot carry, an assistant's reasoning and items, left out)."""
    if isinstance(message, ToolMessage):
        if not (isinstance(message.tool_call_id, str) and message.tool_call_id):
            raise contract_error(f"{where}.tool_call_id", "a tool message must answer a tool_call_id")
        return message
    if not isinstance(message, AssistantMessage):
        return message
    try:
        calls = tuple(_call_as_read(call) for call in message.tool_calls)
    except ModelReplyError as error:
        raise contract_error(f"{where}.tool_calls", str(error)) from None
    if _same(calls, message.tool_calls) and not message.reasoning and not message.items:
        return message
    return AssistantMessage(content=message.content, tool_calls=calls)


def reply_as_read(reply: ModelReply, asked: Asked) -> ModelReply:
    """What a client reads of the `chat.completion` `ChatProtocol.reply` writes for `reply` (not as a
    refusal: a refusal's text is read back as the content all the same), without writing it:
    `reply_from_wire(ChatProtocol().reply(reply, asked))`, with the same checks and the same result."""
    usage = estimate_usage(asked.decoded, reply)  # first, as writing the reply counts it first
    finish_reason = finish_reason_from_wire(served_finish(reply, asked.terms))
    message = reply.message
    content = message.content
    calls = tuple(_call_as_read(call) for call in message.tool_calls)
    text = None if content is None else well_formed(content)
    if text is content and not message.reasoning and not message.items and _same(calls, message.tool_calls):
        read = message  # what it would be read as, equal and as immutable
    else:
        read = AssistantMessage(content=text, tool_calls=calls)
    return ModelReply(message=read, finish_reason=finish_reason, usage=usage)


def _same(read: tuple[ToolCall, ...], calls: tuple[ToolCall, ...]) -> bool:
    """Whether every call was read back as itself."""
    return all(map(operator.is_, read, calls))


def _call_as_read(call: ToolCall) -> ToolCall:
    """`call` as `tool_call_from_wire` reads it back from `message_to_wire`'s shape."""
    call_id, name, arguments = call.id, call.name, call.arguments
    if not (isinstance(call_id, str) and call_id and isinstance(name, str) and name):
        raise ModelReplyError("tool call id and function name must be non-empty strings")
    if not isinstance(arguments, str):
        raise ModelReplyError("tool call arguments must be a string")
    read = well_formed(arguments)
    if read is arguments:
        return call
    return ToolCall(id=call_id, name=name, arguments=read, kind=call.kind)
