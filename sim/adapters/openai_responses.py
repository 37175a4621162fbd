"""`OpenAIResponsesModel`: the loop's `ModelClient` on the official OpenAI SDK's Responses API.

Stateless by default, as the frameworks use it: every request sends the whole input with `store: false`
and asks for encrypted reasoning, which the next request sends back. With `chain=True` the server keeps
the conversation: `store: true`, and each request names the previous response and sends only the items
added since (falling back to the whole input when the history did not simply grow).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2
from openai import AsyncOpenAI

from sim.adapters.sdk_calls import connect, post_json, post_stream
from sim.core.checks import require_positive_int, require_text
from sim.core.messages import AssistantMessage, ChatMessage, HistoryView, RequestPairing
from sim.core.model import ModelReply, ModelRequest
from sim.wire.responses import ENDPOINT
from sim.wire.responses.client import (
    REPLY_LIMIT,
    ItemEncoder,
    reply_from_events,
    reply_from_wire,
    request_fields,
    response_id,
)


@dataclass(frozen=True, slots=True)
class _Stored:
    """The last response the server keeps: its id, the request it answered, and the reply it gave."""

    response_id: str
    messages: Sequence[ChatMessage]
    reply: AssistantMessage


class OpenAIResponsesModel:
    """Sends each `ModelRequest` to `/responses` through `client` and checks the reply."""

    def __init__(
        self,
        client: AsyncOpenAI,
        model: str,
        *,
        stream: bool = False,
        max_output_tokens: int | None = None,
        chain: bool = False,
    ) -> None:
        if max_output_tokens is not None:
            require_positive_int(REPLY_LIMIT, max_output_tokens)
        require_text("model", model)
        self.client = client
        self.model = model
        self.stream = stream
        self.max_output_tokens = max_output_tokens
        self.chain = chain
        self._pairing = RequestPairing()
        self._encoder = ItemEncoder()
        self._stored: _Stored | None = None

    @classmethod
    def connect(
        cls,
        *,
        base_url: str,
        api_key: str,
        model: str,
        stream: bool = False,
        max_output_tokens: int | None = None,
        chain: bool = False,
        max_retries: int = 0,
        timeout: float = 600.0,
        http_client: httpx2.AsyncClient | None = None,
        headers: Mapping[str, str] | None = None,
        query: Mapping[str, str] | None = None,
    ) -> OpenAIResponsesModel:
        """A model on a new SDK client; SDK retries are off unless `max_retries` says otherwise; `headers`
        and `query` go with every request."""
        client = connect(
            base_url=base_url,
            api_key=api_key,
            max_retries=max_retries,
            timeout=timeout,
            http_client=http_client,
            headers=headers,
            query=query,
        )
        return cls(client, model, stream=stream, max_output_tokens=max_output_tokens, chain=chain)

    def request_fields(self, previous_response_id: str | None) -> dict[str, Any]:
        """The body's fields besides `instructions`, `input` and `tools`."""
        return request_fields(
            self.model,
            chain=self.chain,
            previous_response_id=previous_response_id,
            max_tokens=self.max_output_tokens,
            stream=self.stream,
        )

    def _continues(self, messages: Sequence[ChatMessage]) -> tuple[str | None, int]:
        """The response this request continues and how many history messages the server already holds
        (the previous request's and its reply); `(None, 0)` to send the whole input."""
        stored = self._stored
        if stored is None or not isinstance(messages, HistoryView):
            return None, 0
        if messages.new_since(stored.messages) is None:
            return None, 0
        held = len(stored.messages)  # its history plus the reply, without the system prompt
        if len(messages) <= held or messages[held] != stored.reply:
            return None, 0
        return stored.response_id, held

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Check pairing, send the request, and return the checked reply or raise a typed error."""
        self._pairing.check(request.messages)
        previous, start = self._continues(request.messages) if self.chain else (None, 0)
        body = self._encoder.body(request, self.request_fields(previous), start=start)
        if self.stream:
            events = await post_stream(self.client, ENDPOINT, body)
            reply, served_id = reply_from_events(events), response_id(events)
        else:
            response = await post_json(self.client, ENDPOINT, body)
            reply, served_id = reply_from_wire(response), response_id(response)
        if self.chain and served_id is not None:
            self._stored = _Stored(served_id, request.messages, reply.message)
        return reply
