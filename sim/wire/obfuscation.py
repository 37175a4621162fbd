"""Stream obfuscation as both APIs send it: an `obfuscation` field of random-looking characters on each
streamed delta (every Responses event whose type ends in `.delta`, every Chat Completions chunk), whose
length pads the delta's text so that events are about the same size, unless the request says
`stream_options: {include_obfuscation: false}`.

Real recordings show the padding: a Responses delta's text and its `obfuscation` are 16 characters
together (a longer text still gets some), a Chat chunk's text and its padding about 11. sim pads the same
way, deterministically: the characters come from one fixed pool, from where the request's number says.
"""

from __future__ import annotations

import random
import string
from collections.abc import Iterable, Mapping
from typing import Any

from sim.wire.requests import Refused, wrong_type

RESPONSES_WIDTH = 16
"""What a Responses delta's text and its padding come to together, in characters."""
CHAT_WIDTH = 11
"""What a Chat chunk's text and its padding come to together, in characters."""
_POOL = "".join(random.Random("sim-obfuscation").choices(string.ascii_letters + string.digits, k=4096))
_SPAN = len(_POOL) - max(RESPONSES_WIDTH, CHAT_WIDTH)


def wanted(body: Mapping[str, Any]) -> bool:
    """Whether the request leaves obfuscation on (the default): not `include_obfuscation: false`."""
    options = body.get("stream_options")
    return not (isinstance(options, Mapping) and options.get("include_obfuscation") is False)


def refused_option(body: Mapping[str, Any]) -> Refused | None:
    """`stream_options.include_obfuscation` that is not a boolean, refused as a wrong type."""
    options = body.get("stream_options")
    value = options.get("include_obfuscation") if isinstance(options, Mapping) else None
    if value is None or isinstance(value, bool):
        return None
    return wrong_type("stream_options.include_obfuscation", "a boolean", value)


class Padding:
    """The padding of one stream: each call the next run of the pool (starting where `seed` says), as long
    as `width` less the text it pads (at least one character)."""

    __slots__ = ("_at", "_width")

    def __init__(self, seed: int, width: int) -> None:
        self._at = (seed * 7919) % _SPAN
        self._width = width

    def __call__(self, text: str) -> str:
        size = len(text)
        length = self._width - size if size < self._width else 1 + size % 4
        start = self._at
        end = start + length
        self._at = end + 1 if end < _SPAN else 0
        return _POOL[start:end]


def padded_events(events: Iterable[dict[str, Any]], seed: int) -> None:
    """Each Responses delta event of `events` given its `obfuscation` (in place)."""
    pad = Padding(seed, RESPONSES_WIDTH)
    for event in events:
        if event["type"].endswith(".delta"):
            delta = event.get("delta")
            event["obfuscation"] = pad(delta if type(delta) is str else "")


def padded_chunks(chunks: Iterable[dict[str, Any]], seed: int) -> None:
    """Each Chat chunk of `chunks` given its `obfuscation` (in place), padding the text it carries."""
    pad = Padding(seed, CHAT_WIDTH)
    for chunk in chunks:
        choices = chunk.get("choices")
        delta = (choices[0].get("delta") or {}) if choices else {}
        calls = delta.get("tool_calls")
        if calls:
            text = calls[0].get("function", {}).get("arguments") or ""
        elif "function_call" in delta:
            text = delta["function_call"].get("arguments") or ""
        else:
            text = delta.get("content") or delta.get("refusal") or ""
        chunk["obfuscation"] = pad(text)
