"""One POST through the official OpenAI SDK, shared by both adapters: the body sent as the bytes we hold,
the reply returned as JSON (or a stream's events), and the SDK's errors mapped to the typed errors.

The SDK keeps what it is good at (auth, base URL, timeouts, retries when asked, SSE decoding, HTTP
errors); SDK objects never leave this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx2
import openai
from openai import AsyncOpenAI, AsyncStream

from sim.adapters.api_errors import (
    connection_error,
    reply_not_json,
    status_error,
    stream_broken,
    stream_chunk_not_json,
)
from sim.core.errors import ModelAPIError, ModelTimeoutError

_JSON_HEADERS = {"Content-Type": "application/json"}


def connect(
    *,
    base_url: str,
    api_key: str,
    max_retries: int,
    timeout: float,
    http_client: httpx2.AsyncClient | None,
    headers: Mapping[str, str] | None = None,
    query: Mapping[str, str] | None = None,
) -> AsyncOpenAI:
    """A new SDK client; SDK retries are off unless `max_retries` says otherwise; `headers` and `query` go
    with every request (Azure OpenAI's `api-key` and `api-version`)."""
    return AsyncOpenAI(
        base_url=base_url,
        api_key=api_key,
        max_retries=max_retries,
        timeout=timeout,
        http_client=http_client,
        default_headers=headers,
        default_query=query,
    )


async def post_json(client: AsyncOpenAI, path: str, body: bytes) -> Any:
    """POST `body` and return the reply's JSON; typed errors for HTTP errors, timeouts, lost connections."""
    with _typed_errors():
        response = await client.post(path, cast_to=httpx2.Response, content=body, options=_OPTIONS)
        try:
            return response.json()
        except ValueError as error:
            raise reply_not_json() from error


async def post_stream(client: AsyncOpenAI, path: str, body: bytes) -> list[Any]:
    """POST `body` asking for a stream and return the JSON of every event, in order."""
    with _typed_errors():
        events = await client.post(
            path,
            cast_to=dict,
            content=body,
            options=_OPTIONS,
            stream=True,
            stream_cls=AsyncStream[dict[str, Any]],
        )
        try:
            return [event async for event in events]
        except ValueError as error:
            raise stream_chunk_not_json() from error


_OPTIONS: Any = {"headers": _JSON_HEADERS}


class _typed_errors:
    """Maps the SDK's errors to sim's typed ones (`ModelAPIError` and below), without the SDK's objects."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, _: object) -> None:
        if isinstance(error, openai.APIStatusError):
            raise _status_error(error) from None
        if isinstance(error, openai.APITimeoutError):
            raise ModelTimeoutError("The model endpoint did not answer in time") from None
        if isinstance(error, openai.APIConnectionError):
            raise connection_error(error.__cause__ or error) from None
        if isinstance(error, httpx2.TimeoutException):  # a stream stalled while it was read
            raise ModelTimeoutError("The model endpoint did not answer in time") from None
        if isinstance(error, httpx2.TransportError):  # a stream dropped while read: the SDK raises it as is
            raise stream_broken(error) from None
        if isinstance(error, openai.APIError):
            raise ModelAPIError(f"Model API error: {_error_message(error.body, error.message)}") from None


def _status_error(error: openai.APIStatusError) -> ModelAPIError:
    body = error.body if isinstance(error.body, Mapping) else {}
    return status_error(
        error.status_code,
        _error_message(body, error.message),
        error_type=_text(body.get("type")),
        code=_text(body.get("code")),
        headers=error.response.headers,
    )


def _error_message(body: object, fallback: str) -> str:
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        return str(body["message"])
    return fallback


def _text(value: object) -> str | None:
    return None if value is None else str(value)
