"""`OpenAIChatModel`: the loop's `ModelClient` on the official OpenAI SDK's Chat Completions.

The SDK keeps what it is good at (auth, base URL, timeouts, SSE decoding, HTTP errors); the body is the
one we already hold in wire form, sent as bytes, so a turn's cost does not grow with re-transforming the
whole history (`chat.completions.create()` does that on every call). SDK objects never leave this module.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import Any

import httpx2
import openai
from openai import AsyncOpenAI, AsyncStream

from sim.adapters.chat_wire import (
    REPLY_NOT_JSON,
    STREAM_CHUNK_NOT_JSON,
    RequestEncoder,
    reply_from_events,
    reply_from_wire,
)
from sim.core.checks import require_positive_int, require_text
from sim.core.errors import (
    ModelAPIError,
    ModelConnectionError,
    ModelReplyError,
    ModelTimeoutError,
)
from sim.core.messages import RequestPairing
from sim.core.model import ModelReply, ModelRequest

_JSON_HEADERS = {"Content-Type": "application/json"}


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
            require_positive_int("max_completion_tokens", max_completion_tokens)
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
    ) -> OpenAIChatModel:
        """A model on a new SDK client; SDK retries are off unless `max_retries` says otherwise."""
        client = AsyncOpenAI(
            base_url=base_url,
            api_key=api_key,
            max_retries=max_retries,
            timeout=timeout,
            http_client=http_client,
        )
        return cls(client, model, stream=stream, max_completion_tokens=max_completion_tokens)

    def request_fields(self) -> dict[str, Any]:
        """The body's fields besides `messages` and `tools`."""
        fields: dict[str, Any] = {"model": self.model}
        if self.max_completion_tokens is not None:
            fields["max_completion_tokens"] = self.max_completion_tokens
        if self.stream:
            fields["stream"] = True
            fields["stream_options"] = {"include_usage": True}
        return fields

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Check pairing, send the request, and return the checked reply or raise a typed error."""
        self._pairing.check(request.messages)
        body = self._encoder.body(request, self.request_fields())
        options: Any = {"headers": _JSON_HEADERS}
        try:
            if self.stream:
                chunks = await self.client.post(
                    "/chat/completions",
                    cast_to=dict,
                    content=body,
                    options=options,
                    stream=True,
                    stream_cls=AsyncStream[dict[str, Any]],
                )
                try:
                    events = [chunk async for chunk in chunks]
                except ValueError as error:
                    raise ModelReplyError(STREAM_CHUNK_NOT_JSON) from error
                return reply_from_events(events)
            response = await self.client.post(
                "/chat/completions", cast_to=httpx2.Response, content=body, options=options
            )
            try:
                completion = response.json()
            except ValueError as error:
                raise ModelReplyError(REPLY_NOT_JSON) from error
            return reply_from_wire(completion)
        except openai.APIStatusError as error:
            raise _status_error(error) from None
        except openai.APITimeoutError:
            raise ModelTimeoutError("The model endpoint did not answer in time") from None
        except openai.APIConnectionError as error:
            cause = error.__cause__ or error
            raise ModelConnectionError(f"Could not reach the model endpoint: {cause}") from None
        except openai.APIError as error:
            raise ModelAPIError(f"Model API error: {_error_message(error.body, error.message)}") from None


def _status_error(error: openai.APIStatusError) -> ModelAPIError:
    body = error.body if isinstance(error.body, Mapping) else {}
    return ModelAPIError.from_status(
        error.status_code,
        _error_message(body, error.message),
        error_type=_text(body.get("type")),
        code=_text(body.get("code")),
        retry_after=_retry_after(error.response.headers),
    )


def _error_message(body: object, fallback: str) -> str:
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        return str(body["message"])
    return fallback


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _retry_after(headers: httpx2.Headers) -> float | None:
    """Seconds to wait, from `retry-after-ms`, or `retry-after` as seconds or an HTTP date."""
    if (milliseconds := headers.get("retry-after-ms")) is not None:
        try:
            return float(milliseconds) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        when = email.utils.parsedate_tz(value)
        return None if when is None else max(0.0, email.utils.mktime_tz(when) - time.time())
