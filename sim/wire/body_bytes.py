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


def assemble(fields: Mapping[str, Any], key: str, joined: bytes | bytearray, tools: bytes) -> bytes:
    """`{**fields, key: [joined], "tools": tools}`, `joined` being the list's items joined with commas; tools
    left out when empty."""
    parts: list[bytes | bytearray] = [dumps(dict(fields))[:-1]]
    parts += [f',"{key}":['.encode() if fields else f'"{key}":['.encode(), joined, b"]"]
    if tools:
        parts += [b',"tools":', tools]
    parts.append(b"}")
    return b"".join(parts)


class GrowingItems:
    """The encoded list items of a growing history, kept one by one and also joined with commas as they
    come, so that a body costs one copy of the history rather than a pass over each of its items."""

    __slots__ = ("_joined", "items")

    def __init__(self) -> None:
        self.items: list[bytes] = []
        self._joined = bytearray()

    def clear(self) -> None:
        """Start again from no item."""
        self.items = []
        self._joined = bytearray()

    def extend(self, encoded: Iterable[bytes]) -> None:
        """Add items; an empty one (a message with no item at all) is kept in `items` but not joined."""
        for item in encoded:
            self.items.append(item)
            if item:
                if self._joined:
                    self._joined += b","
                self._joined += item

    def joined(self, start: int = 0) -> bytes | bytearray:
        """The items from `start` on, joined with commas."""
        return self._joined if start == 0 else b",".join(filter(None, self.items[start:]))


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
