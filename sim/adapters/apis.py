"""The two wire protocols by name: the one place where `--api chat|responses` (or `OPENAI_API`) becomes
an adapter."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any

import httpx2

from sim.adapters import chat_wire, responses_wire
from sim.adapters.openai_chat import OpenAIChatModel
from sim.adapters.openai_responses import OpenAIResponsesModel
from sim.core.errors import ConfigurationError
from sim.core.messages import ChatMessage
from sim.core.model import ModelClient


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


ENDPOINTS = {Api.chat: "/chat/completions", Api.responses: "/responses"}
"""The path each API posts to, after the base URL."""

HISTORIES: dict[Api, Callable[[Any], list[ChatMessage]]] = {
    Api.chat: lambda body: chat_wire.messages_from_wire(body.get("messages")),
    Api.responses: lambda body: responses_wire.messages_from_items(body.get("input")),
}
"""How each API's request body holds the conversation (pairing unchecked; `MessageContractError`)."""


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
