"""Server-sent events as both APIs stream them: one JSON event per frame, named or not."""

from __future__ import annotations

import json
from typing import Any


def frame(data: dict[str, Any], event: str | None = None) -> bytes:
    """One complete SSE frame carrying `data` (with an `event:` line when `event` names it)."""
    named = f"event: {event}\n".encode() if event else b""
    return named + b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"
