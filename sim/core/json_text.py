"""JSON from untrusted sources (the wire, cassettes, tool arguments): one parser, with bounded nesting."""

from __future__ import annotations

import json
from typing import Any

MAX_JSON_DEPTH = 128
"""The deepest nesting of arrays and objects accepted; real API traffic stays far below it."""


class JsonTooDeep(ValueError):
    """JSON nested deeper than `MAX_JSON_DEPTH`: refused before anything walks it recursively."""

    def __init__(self) -> None:
        super().__init__(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_STRICT = json.JSONDecoder(parse_constant=_no_constant)
"""One decoder for every strict parse (`json.loads` with a keyword builds a new one each call)."""


def _parse(data: str | bytes | bytearray, strict: bool) -> Any:
    return json.loads(data, parse_constant=_no_constant) if strict else json.loads(data)


def loads(data: str | bytes | bytearray, *, strict: bool = False) -> Any:
    """Parse JSON; `ValueError` when it is not JSON, `JsonTooDeep` (a `ValueError`) when nested too deep.

    `strict` also refuses what only Python's parser takes: `NaN`/`Infinity`, and lone surrogate escapes
    (`"\\ud800"`), which no UTF-8 encoder (pydantic's parser, the next request's body) accepts."""
    try:
        value = _STRICT.decode(data) if strict and isinstance(data, str) else _parse(data, strict)
    except RecursionError:
        raise JsonTooDeep() from None
    if _may_be_deep(data):
        require_depth(value)
    if strict and _may_hold_surrogates(data):
        _require_encodable(value)
    return value


def _may_hold_surrogates(data: str | bytes | bytearray) -> bool:
    """Whether the text may decode to a lone surrogate: it escapes one (`\\u` is rare in arguments), or
    holds one raw (then it is not UTF-8); both found at C speed, as this runs on every tool call."""
    if not isinstance(data, str):
        return b"\\u" in data
    if "\\u" in data:
        return True
    try:
        data.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _require_encodable(value: Any) -> None:
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("a string holds a lone surrogate (not UTF-8 text)") from None
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


def _may_be_deep(data: str | bytes | bytearray) -> bool:
    # Nesting needs an opening bracket per level: fewer brackets than the limit cannot be too deep.
    if isinstance(data, str):
        return data.count("[") + data.count("{") > MAX_JSON_DEPTH
    return data.count(b"[") + data.count(b"{") > MAX_JSON_DEPTH


def require_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> None:
    """`JsonTooDeep` when `value` nests lists and dicts deeper than `limit` (walked a level at a time,
    without recursion: it runs on every body read, so each level is one flat loop)."""
    level = [value] if isinstance(value, dict | list) else []
    depth = 1
    while level:
        if depth > limit:
            raise JsonTooDeep()
        deeper: list[Any] = []
        keep = deeper.append
        for item in level:
            for child in item.values() if isinstance(item, dict) else item:
                if isinstance(child, dict | list):
                    keep(child)
        level, depth = deeper, depth + 1
