"""What reading a model's reply means in both APIs: the words of a reply the loop cannot take, text made
well-formed, and a tool call checked before the loop sees it."""

from __future__ import annotations

from typing import Any

from sim.core.errors import ModelReplyError
from sim.core.messages import ToolCall

STREAM_ENDED_EARLY = "Stream ended without a finish reason"
REPLY_NOT_JSON = "Reply body is not JSON"
STREAM_CHUNK_NOT_JSON = "Stream chunk is not JSON"


def well_formed(text: str) -> str:
    """`text` as UTF-8 can carry it: a surrogate pair split across stream chunks (each chunk's JSON
    escape decoded alone) joined again, and a lone surrogate replaced by U+FFFD, so that the next request
    can be encoded."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def checked_call(call_id: Any, name: Any, arguments: Any, naming: str, arguing: str) -> ToolCall:
    """A tool call read from a reply as a `ToolCall`, its arguments `well_formed`; `ModelReplyError` when its
    id or name is not a non-empty string (`naming` says what they are called in the API: "tool call id and
    function name") or its arguments not a string (`arguing`: "tool call arguments")."""
    if not (isinstance(call_id, str) and call_id and isinstance(name, str) and name):
        raise ModelReplyError(f"{naming} must be non-empty strings")
    if not isinstance(arguments, str):
        raise ModelReplyError(f"{arguing} must be a string")
    return ToolCall(id=call_id, name=name, arguments=well_formed(arguments))
