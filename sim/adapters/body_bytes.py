"""JSON request bodies assembled from parts already encoded, so that a growing history is not encoded
again on every request (both codecs build their bodies this way)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sim.core.model import ToolSpec


def dumps(value: Any) -> bytes:
    """Compact JSON bytes, text as it is (not escaped to ASCII)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def assemble(fields: Mapping[str, Any], key: str, items: Iterable[bytes], tools: bytes) -> bytes:
    """`{**fields, key: [items...], "tools": tools}`; tools left out when empty."""
    parts = [dumps(dict(fields))[:-1], f',"{key}":['.encode() if fields else f'"{key}":['.encode()]
    parts += [b",".join(filter(None, items)), b"]"]  # a message may encode to no item at all
    if tools:
        parts += [b',"tools":', tools]
    parts.append(b"}")
    return b"".join(parts)


class EncodedTools:
    """The tools of the latest request, encoded once for as long as the snapshot stays the same."""

    __slots__ = ("_encode", "_encoded", "_tools")

    def __init__(self, encode: Callable[[ToolSpec], dict[str, Any]]) -> None:
        self._encode = encode
        self._tools: tuple[ToolSpec, ...] | None = None
        self._encoded = b""

    def of(self, tools: tuple[ToolSpec, ...]) -> bytes:
        """`tools` as a JSON array, or nothing when there are none."""
        if tools is not self._tools:
            self._tools = tools
            self._encoded = dumps([self._encode(spec) for spec in tools]) if tools else b""
        return self._encoded
