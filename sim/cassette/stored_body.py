"""How a cassette stores a body: as text, bytes (gzip or zlib data too, whatever the headers say) or
vcrpy's `parsed_body`; and how an event stream's text splits into lines."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Mapping
from typing import Any

from sim.core.json_text import require_depth

_GZIP_MAGIC = b"\x1f\x8b"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def sse_lines(text: str) -> list[str]:
    """The lines of an event stream, split on `\\n`, `\\r\\n` and `\\r` only, as the SDK splits them
    (`str.splitlines` would also split text holding U+2028 or U+0085)."""
    return _LINE_BREAK.split(text)


def body_bytes(raw: Any) -> bytes | None:
    """A body as the file holds it (text, bytes, `{string: ...}`, `{parsed_body: ...}`) as bytes."""
    if isinstance(raw, Mapping):
        if "string" in raw:
            raw = raw["string"]
        elif "parsed_body" in raw:
            raw = raw["parsed_body"]
    if raw is None:
        return None
    if isinstance(raw, bytes):
        return raw
    if isinstance(raw, str):
        return raw.encode("utf-8")
    require_depth(raw)  # a `parsed_body` is written back as JSON, and the encoder recurses
    return json.dumps(raw, ensure_ascii=False).encode("utf-8")


MAX_BODY_BYTES = 64 * 1024 * 1024
"""The largest body sim decompresses (a gzip bomb stops there); real bodies are a small part of it."""


class BodyTooLarge(ValueError):
    """A compressed body that unpacks, or a compact one that rebuilds, to more than `MAX_BODY_BYTES`."""

    def __init__(self, how: str = "decompresses") -> None:
        super().__init__(f"the body {how} to more than {MAX_BODY_BYTES // (1024 * 1024)} MiB")


def _inflate(body: bytes, wbits: int) -> bytes:
    inflater = zlib.decompressobj(wbits)
    data = inflater.decompress(body, MAX_BODY_BYTES)
    if inflater.unconsumed_tail:
        raise BodyTooLarge()
    return data + inflater.flush()


def decompress(body: bytes) -> bytes:
    """`body` unzipped when it is gzip or zlib data (whatever the headers claim), else as it is (a body
    that merely starts like gzip, such as audio, is not one); `BodyTooLarge` past `MAX_BODY_BYTES`."""
    if body.startswith(_GZIP_MAGIC):
        try:
            return _inflate(body, 16 + zlib.MAX_WBITS)
        except zlib.error:
            return body
    if body[:1] == b"\x78":
        try:
            return _inflate(body, zlib.MAX_WBITS)
        except zlib.error:
            return body
    return body
