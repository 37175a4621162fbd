"""The two wire protocols by name: the one place where `--api chat|responses` (or `OPENAI_API`) becomes
an adapter."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import httpx2

from sim.core.errors import ConfigurationError
from sim.core.messages import ChatMessage, SystemMessage
from sim.core.model import ModelClient, ModelReply, ToolSpec
from sim.wire import chat as chat_wire
from sim.wire import responses as responses_wire


class Api(StrEnum):
    """Which OpenAI API a client speaks."""

    chat = "chat"
    responses = "responses"

    @classmethod
    def named(cls, name: str) -> Api:
        """The API called `name`; `ConfigurationError` naming the choices otherwise."""
        try:
            return cls(name.strip().lower())
        except ValueError:
            raise ConfigurationError(f"OPENAI_API must be chat or responses, not {name!r}") from None


@dataclass(frozen=True, slots=True)
class Codec:
    """What reading recorded traffic of one API needs: where it posts, and how its bodies map to the
    conversation."""

    api: Api
    endpoint: str
    """The path it posts to, after the base URL."""
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


def _chat_history(body: Mapping[str, Any]) -> list[ChatMessage]:
    return chat_wire.messages_from_wire(body.get("messages"))


def _responses_history(body: Mapping[str, Any]) -> list[ChatMessage]:
    instructions = body.get("instructions")
    system = [SystemMessage(content=instructions)] if isinstance(instructions, str) and instructions else []
    return [*system, *responses_wire.messages_from_items(body.get("input"))]


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _none(_: Any) -> None:
    return None


def _finish_reason(reply: ModelReply) -> str:
    return f"finish_reason: {reply.finish_reason}"


def _status(reply: ModelReply) -> str:
    reason = {v: k for k, v in responses_wire.INCOMPLETE_REASONS.items()}.get(reply.finish_reason)
    return f"status: incomplete ({reason})" if reason else "status: completed"


CODECS: dict[Api, Codec] = {
    Api.chat: Codec(
        Api.chat,
        "/chat/completions",
        "messages",
        _chat_history,
        chat_wire.tools_from_wire,
        chat_wire.reply_from_wire,
        chat_wire.reply_from_events,
        _none,
        _none,
        _finish_reason,
    ),
    Api.responses: Codec(
        Api.responses,
        "/responses",
        "input",
        _responses_history,
        responses_wire.tools_from_wire,
        responses_wire.reply_from_wire,
        responses_wire.reply_from_events,
        responses_wire.response_id,
        lambda body: _text(body.get("previous_response_id")),
        _status,
    ),
}
"""Each API's codec, for readers of recorded traffic."""

ENDPOINTS = {api: codec.endpoint for api, codec in CODECS.items()}
"""The path each API posts to, after the base URL."""


def codec_for(path: str) -> Codec | None:
    """The codec of the API a request path posts to (any host's: OpenAI's, Azure's, a compatible one)."""
    trimmed = path.rstrip("/")
    return next((codec for codec in CODECS.values() if trimmed.endswith(codec.endpoint)), None)


def connect_model(
    api: Api,
    *,
    base_url: str,
    api_key: str,
    model: str,
    stream: bool = False,
    max_tokens: int | None = None,
    chain: bool = False,
    http_client: httpx2.AsyncClient | None = None,
) -> ModelClient:
    """The adapter for `api` on a new SDK client; `max_tokens` is Chat's `max_completion_tokens` or the
    Responses API's `max_output_tokens`, and `chain` (previous_response_id) is for the Responses API only."""
    # the SDK is imported here, not above: it takes half a second, and readers of recorded traffic, the
    # simulator and `sim serve` never need it
    from sim.adapters.openai_chat import OpenAIChatModel
    from sim.adapters.openai_responses import OpenAIResponsesModel

    if api is Api.responses:
        return OpenAIResponsesModel.connect(
            base_url=base_url,
            api_key=api_key,
            model=model,
            stream=stream,
            max_output_tokens=max_tokens,
            chain=chain,
            http_client=http_client,
        )
    if chain:
        raise ConfigurationError("--chain is for the Responses API (--api responses)")
    return OpenAIChatModel.connect(
        base_url=base_url,
        api_key=api_key,
        model=model,
        stream=stream,
        max_completion_tokens=max_tokens,
        http_client=http_client,
    )
