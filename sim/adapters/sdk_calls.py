"""One POST through the official OpenAI SDK, shared by both adapters: the body sent as the bytes we hold,
the reply returned as JSON (or a stream's events), and the SDK's errors mapped to the typed errors.

The SDK keeps what it is good at (auth, base URL, timeouts, retries when asked, SSE decoding, HTTP
errors); SDK objects never leave this module.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import Any

import httpx2
import openai
from openai import AsyncOpenAI, AsyncStream

from sim.core.errors import ModelAPIError, ModelConnectionError, ModelReplyError, ModelTimeoutError
from sim.wire.chat import REPLY_NOT_JSON, STREAM_CHUNK_NOT_JSON

_JSON_HEADERS = {"Content-Type": "application/json"}


def connect(
    *, base_url: str, api_key: str, max_retries: int, timeout: float, http_client: httpx2.AsyncClient | None
) -> AsyncOpenAI:
    """A new SDK client; SDK retries are off unless `max_retries` says otherwise."""
    return AsyncOpenAI(
        base_url=base_url, api_key=api_key, max_retries=max_retries, timeout=timeout, http_client=http_client
    )


async def post_json(client: AsyncOpenAI, path: str, body: bytes) -> Any:
    """POST `body` and return the reply's JSON; typed errors for HTTP errors, timeouts, lost connections."""
    with _typed_errors():
        response = await client.post(path, cast_to=httpx2.Response, content=body, options=_OPTIONS)
        try:
            return response.json()
        except ValueError as error:
            raise ModelReplyError(REPLY_NOT_JSON) from error


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
            raise ModelReplyError(STREAM_CHUNK_NOT_JSON) from error


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
            cause = error.__cause__ or error
            raise ModelConnectionError(f"Could not reach the model endpoint: {cause}") from None
        if isinstance(error, openai.APIError):
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
