"""`OpenAIChatModel`: the loop's `ModelClient` on the official OpenAI SDK's Chat Completions.

The body is the one we already hold in wire form, sent as bytes (`sdk_calls`), so a turn's cost does not
grow with re-transforming the whole history (`chat.completions.create()` does that on every call).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx2
from openai import AsyncOpenAI

from sim.adapters.sdk_calls import connect, post_json, post_stream
from sim.core.checks import require_positive_int, require_text
from sim.core.messages import RequestPairing
from sim.core.model import ModelReply, ModelRequest
from sim.wire.chat import ENDPOINT
from sim.wire.chat.client import (
    REPLY_LIMIT,
    RequestEncoder,
    reply_from_events,
    reply_from_wire,
    request_fields,
)


class OpenAIChatModel:
    """Sends each `ModelRequest` to `/chat/completions` through `client` and checks the reply."""

    def __init__(
        self,
        client: AsyncOpenAI,
        model: str,
        *,
        stream: bool = False,
        max_completion_tokens: int | None = None,
    ) -> None:
        if max_completion_tokens is not None:
            require_positive_int(REPLY_LIMIT, max_completion_tokens)
        require_text("model", model)
        self.client = client
        self.model = model
        self.stream = stream
        self.max_completion_tokens = max_completion_tokens
        self._pairing = RequestPairing()
        self._encoder = RequestEncoder()

    @classmethod
    def connect(
        cls,
        *,
        base_url: str,
        api_key: str,
        model: str,
        stream: bool = False,
        max_completion_tokens: int | None = None,
        max_retries: int = 0,
        timeout: float = 600.0,
        http_client: httpx2.AsyncClient | None = None,
        headers: Mapping[str, str] | None = None,
        query: Mapping[str, str] | None = None,
    ) -> OpenAIChatModel:
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
        return cls(client, model, stream=stream, max_completion_tokens=max_completion_tokens)

    def request_fields(self) -> dict[str, Any]:
        """The body's fields besides `messages` and `tools`."""
        return request_fields(self.model, max_tokens=self.max_completion_tokens, stream=self.stream)

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Check pairing, send the request, and return the checked reply or raise a typed error."""
        self._pairing.check(request.messages)
        body = self._encoder.body(request, self.request_fields())
        if self.stream:
            return reply_from_events(await post_stream(self.client, ENDPOINT, body))
        return reply_from_wire(await post_json(self.client, ENDPOINT, body))
