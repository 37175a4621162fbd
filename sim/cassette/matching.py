"""Matching requests to recorded ones: canonical JSON bodies, and the first difference between two."""

from __future__ import annotations

import json
from typing import Any

from sim.core.json_text import loads


def _by_value(value: Any) -> Any:
    """`value` with numbers written by value: `0.0` and `1e2` are `0` and `100`, as the API reads them."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _by_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_by_value(item) for item in value]
    return value


_HINTS = frozenset({"prompt_cache_key"})
"""Request fields that never change what the model says and that clients fill with a fresh random value per
run (openai-agents sends `prompt_cache_key: "agents-sdk:run:<uuid>"` to OpenAI's own endpoint only)."""


def _without_hints(value: Any) -> Any:
    if isinstance(value, dict) and _HINTS.intersection(value):
        return {key: item for key, item in value.items() if key not in _HINTS}
    return value


def canonical(body: bytes | str | None) -> str:
    """A body as canonical JSON (keys sorted, no spaces, numbers by value, caching hints left out), or its
    text when it is not JSON. Ids the server minted (`previous_response_id`, item ids, encrypted reasoning)
    are kept as they are: a client sends back what it was served, which is what was recorded, and the id
    is what tells two chains that say the same apart."""
    if body is None:
        return ""
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    try:
        value = _by_value(_without_hints(loads(text)))
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except ValueError:
        return text


def _same(recorded: Any, now: Any) -> bool:
    """Equal JSON values: numbers by value (`0` is `0.0`), everything else by type and value."""
    numbers = (int, float)
    if isinstance(recorded, numbers) and isinstance(now, numbers) and bool not in (type(recorded), type(now)):
        return recorded == now
    return type(recorded) is type(now) and recorded == now


def first_difference(recorded: Any, now: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The JSON path of the first place where `now` differs from `recorded`, with both values there."""
    if isinstance(recorded, dict) and isinstance(now, dict):
        for key in sorted(set(recorded) | set(now), key=lambda k: (k not in recorded, str(k))):
            where = f"{path}.{key}" if path else str(key)
            if key not in now:
                return where, recorded[key], "(missing)"
            if key not in recorded:
                return where, "(missing)", now[key]
            found = first_difference(recorded[key], now[key], where)
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(now, list):
        for index, (old, new) in enumerate(zip(recorded, now, strict=False)):
            found = first_difference(old, new, f"{path}[{index}]")
            if found:
                return found
        if len(recorded) != len(now):
            return f"{path}.length", len(recorded), len(now)
        return None
    if not _same(recorded, now):
        return path or "(body)", recorded, now
    return None


def body_difference(recorded_body: bytes | None, now_body: bytes) -> tuple[str, str] | None:
    """Where two request bodies first differ, and `path: recorded X != now Y` (JSON values shown as JSON);
    None when they are equal."""

    def parse(body: bytes | None) -> Any:
        try:
            return _without_hints(loads(body or b""))
        except ValueError:
            return (body or b"").decode("utf-8", errors="replace")

    found = first_difference(parse(recorded_body), parse(now_body))
    if found is None:
        return None
    where, old, new = found
    return where, f"{where}: recorded {_shown(old)} != now {_shown(new)}"


def describe_difference(recorded_body: bytes | None, now_body: bytes) -> str:
    """`path: recorded X != now Y` for two request bodies, or that they are equal."""
    found = body_difference(recorded_body, now_body)
    return "bodies are equal" if found is None else found[1]


def _shown(value: Any) -> str:
    return value if value == "(missing)" else json.dumps(value, ensure_ascii=False)
