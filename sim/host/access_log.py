"""The access log of `sim serve` and `sim proxy`: a line per request as it is answered (the time, the API, the
request's number, the status, and what was served or why not), as text for people or as JSON lines."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from sim.core.json_text import loads
from sim.core.untrusted import json_text, visible

_SHOWN = 300
"""The most characters of what was served (or why not) a text line shows."""
_JSON_SHOWN = 4096
"""The most a JSON line carries (a mismatch quoting a huge request must not flood the log)."""


@dataclass(frozen=True, slots=True)
class Answered:
    """One request as it was answered."""

    api: str
    """`chat`, `responses`, or what else was asked for (`models`, `unmatched`, a path)."""
    number: int
    """The request's number, counted from 1 in the order requests came."""
    status: int
    said: str
    """What was served (`reply 2 of 3: calls shell`), or why not (`sim_expectation_failed: ...`)."""


def why_refused(body: bytes) -> str:
    """What an API-shaped error body says: its code (or type) and message."""
    try:
        error = loads(body).get("error") or {}
    except (ValueError, AttributeError):
        return "an error"
    return f"{error.get('code') or error.get('type') or 'error'}: {error.get('message')}"


class AccessLog:
    """Writes each answered request with `write`: a text line, or a JSON object a line (`as_json`)."""

    def __init__(
        self, write: Callable[[str], None], *, as_json: bool = False, clock: Callable[[], float] = time.time
    ) -> None:
        self.write = write
        self.as_json = as_json
        self.clock = clock

    def __call__(self, answered: Answered) -> None:
        """Log one answered request."""
        now = self.clock()
        if self.as_json:
            fields = {**asdict(answered), "said": answered.said[:_JSON_SHOWN]}
            self.write(json_text({"time": round(now, 3), **fields}))
            return
        said = " ".join(answered.said[: _SHOWN * 2].split())
        said = said if len(said) <= _SHOWN else said[: _SHOWN - 3] + "..."
        shown = time.strftime("%H:%M:%S", time.localtime(now))
        self.write(visible(f"{shown} {answered.api:<9} #{answered.number:<4} {answered.status} {said}"))
