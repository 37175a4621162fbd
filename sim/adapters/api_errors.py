"""What a model endpoint's failures become for the loop, in one place for every client: an API error (its
status, message, type, code and retry-after headers) as `ModelAPIError`, a reply that cannot be read as
the `ModelReplyError` a client raises for it, and a dropped connection as `ModelConnectionError`. The SDK
adapters and the in-process `AnswererModel` both map through here, so that a scripted failure reaches the
loop as the same error whichever way it came."""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping

from sim.core.errors import ModelAPIError, ModelConnectionError, ModelReplyError
from sim.wire.replies import REPLY_NOT_JSON, STREAM_CHUNK_NOT_JSON


def status_error(
    status: int,
    message: str,
    *,
    error_type: str | None,
    code: str | None,
    headers: Mapping[str, str],
) -> ModelAPIError:
    """The error for an HTTP error answer (`HTTP 429: Rate limited`), with the wait its headers ask for."""
    return ModelAPIError.from_status(
        status, message, error_type=error_type, code=code, retry_after=retry_after(headers)
    )


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait, from `retry-after-ms`, or `retry-after` as seconds or an HTTP date (`headers`'
    names lower-case, or a mapping that ignores case)."""
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


def connection_error(cause: BaseException) -> ModelConnectionError:
    """A connection that failed before a reply came (`cause`: what the HTTP library raised)."""
    return ModelConnectionError(f"Could not reach the model endpoint: {_worded(cause)}")


def stream_broken(cause: BaseException) -> ModelConnectionError:
    """A stream whose connection broke while it was read (`cause`: what the HTTP library raised)."""
    return ModelConnectionError(f"The model endpoint's stream broke off: {_worded(cause)}")


def _worded(cause: BaseException) -> str:
    """What happened, as httpx says it: without the byte counts it adds to a body cut short (they depend on
    the API's body, not on what happened), and by its name where it says nothing (a reset, a timeout)."""
    return _COUNTS.sub("", str(cause)) or type(cause).__name__


_COUNTS = re.compile(r" \(received \d+ bytes, expected \d+\)$")


def reply_not_json() -> ModelReplyError:
    """A reply body that is not JSON (malformed, or cut short)."""
    return ModelReplyError(REPLY_NOT_JSON)


def stream_chunk_not_json() -> ModelReplyError:
    """A stream event whose data is not JSON."""
    return ModelReplyError(STREAM_CHUNK_NOT_JSON)
