"""The registry of the APIs: which one a path is (`codec_for`, `api_asked`), and what generic code asks an API
(`Codec`: the same questions of each, so that no reader of recorded traffic asks which API it has)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sim.core.messages import ChatMessage
from sim.core.model import ModelReply, ToolSpec
from sim.wire import Api, chat, responses
from sim.wire.carrying import Answer
from sim.wire.chat import client as chat_client
from sim.wire.chat import protocol as chat_protocol
from sim.wire.chat import reading as chat_reading
from sim.wire.chat import recorded as chat_recorded
from sim.wire.requests import WireProtocol
from sim.wire.responses import client as responses_client
from sim.wire.responses import protocol as responses_protocol
from sim.wire.responses import reading as responses_reading
from sim.wire.responses import recorded as responses_recorded
from sim.wire.stream_text import StreamText


@dataclass(frozen=True, slots=True)
class Codec:
    """What generic code asks of one API: where it posts, and how its recorded bodies map to the
    conversation. Each field is the API package's own function or constant."""

    api: Api
    endpoint: str
    """The path it posts to, after the base URL."""
    paths: tuple[str, ...]
    """The paths a server of it answers."""
    conversation: str
    """The key of a request body's conversation list (`messages`, `input`)."""
    history: Callable[[Mapping[str, Any]], list[ChatMessage]]
    """A request body's conversation (pairing unchecked; `MessageContractError` when malformed)."""
    tools: Callable[[Any], tuple[ToolSpec, ...]]
    """A request body's `tools`."""
    reply: Callable[[Any], ModelReply]
    """A reply body as the loop's reply, checked."""
    reply_from_events: Callable[[Sequence[Any]], ModelReply]
    """A streamed reply's events as the loop's reply, checked."""
    response_id: Callable[[Any], str | None]
    """The id the server gave a reply body or stream (a later request may chain to it)."""
    chained_to: Callable[[Mapping[str, Any]], str | None]
    """The response a request continues (`previous_response_id`), if it names one."""
    ending: Callable[[ModelReply], str]
    """How a reply ended, in the API's words (`finish_reason: stop`, `status: incomplete (...)`)."""
    stream_text_pieces: Callable[[Any], Iterator[StreamText]]
    """Where one streamed event holds pieces of text (joined in order, a text as the stream carries it)."""
    answer: Callable[[Any, bool], Answer]
    """`answer(recorded, streamed)`: a recorded reply (its body, or its stream's events) as the next
    request carries it back (drift's carry-forward)."""
    carried_forward: Callable[[list[Any], Answer, Answer], list[Any]]
    """`carried_forward(added, was, now)`: what a recorded request added to its conversation list, with the
    live answer `now` in place of the recorded `was` and the tool results sent to the live call ids
    (`CannotResend` when it cannot)."""
    server: Callable[[int], WireProtocol]
    """`server(store_limit)`: a new server side of the API (parse a body once, write replies and streams),
    with its own state (the Responses API's store, bounded to `store_limit` bytes)."""
    chained: Callable[[dict[str, Any], Answer, Answer], dict[str, Any] | None]
    """`chained(recorded, was, now)`: a recorded request that continues a stored response, naming the live
    one instead; None for a request that sends its whole conversation."""


CODECS: dict[Api, Codec] = {
    Api.chat: Codec(
        api=Api.chat,
        endpoint=chat.ENDPOINT,
        paths=chat.PATHS,
        conversation=chat.CONVERSATION,
        history=chat_recorded.history,
        tools=chat_reading.tools_from_wire,
        reply=chat_client.reply_from_wire,
        reply_from_events=chat_client.reply_from_events,
        response_id=chat_recorded.response_id,
        chained_to=chat_recorded.chained_to,
        ending=chat_recorded.ending,
        stream_text_pieces=chat_recorded.stream_text_pieces,
        answer=chat_recorded.answer_from_wire,
        carried_forward=chat_recorded.carried_forward,
        chained=chat_recorded.chained,
        server=chat_protocol.server,
    ),
    Api.responses: Codec(
        api=Api.responses,
        endpoint=responses.ENDPOINT,
        paths=responses.PATHS,
        conversation=responses.CONVERSATION,
        history=responses_recorded.history,
        tools=responses_reading.tools_from_wire,
        reply=responses_client.reply_from_wire,
        reply_from_events=responses_client.reply_from_events,
        response_id=responses_client.response_id,
        chained_to=responses_recorded.chained_to,
        ending=responses_recorded.ending,
        stream_text_pieces=responses_recorded.stream_text_pieces,
        answer=responses_recorded.answer_from_wire,
        carried_forward=responses_recorded.carried_forward,
        chained=responses_recorded.chained,
        server=responses_protocol.server,
    ),
}
"""Each API's codec."""

ENDPOINTS = {api: codec.endpoint for api, codec in CODECS.items()}
"""The path each API posts to, after the base URL."""


def codec_for(path: str) -> Codec | None:
    """The codec of the API a request path posts to (any host's: OpenAI's, Azure's, a compatible one)."""
    trimmed = path.rstrip("/")
    return next((codec for codec in CODECS.values() if trimmed.endswith(codec.endpoint)), None)


def api_asked(path: str) -> Api | None:
    """The API a request path asks: the one it posts to (`codec_for`), or, below the Responses API's
    endpoint, a response it stored (`/v1/responses/{id}`, its `input_items`)."""
    codec = codec_for(path)
    if codec is not None:
        return codec.api
    return Api.responses if f"{responses.ENDPOINT}/" in path else None
