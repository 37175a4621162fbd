"""Running commands: the `CommandRunner` protocol, its result, and the output budget."""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

DEFAULT_TIMEOUT_SECONDS = 120.0
DEFAULT_MAX_CHARS = 50_000


@dataclass(frozen=True, slots=True)
class CommandOutput:
    """What a command printed (stdout and stderr merged, earliest kept) and how it ended."""

    output: str
    exit_code: int | None
    timed_out: bool = False
    truncated: bool = False


class CommandRunner(Protocol):
    """Runs one shell command; raises `OSError` when the process cannot be started."""

    async def run(self, command: str, *, cwd: Path, timeout: float, max_chars: int) -> CommandOutput:
        """Run `command` in `cwd`; stop it after `timeout` s; keep at most `max_chars` chars."""
        ...


class OutputBudget:
    """Keeps the first `max_chars` characters of a stream of bytes or text and drops the rest."""

    __slots__ = ("_decoder", "_parts", "_room", "truncated")

    def __init__(self, max_chars: int) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._parts: list[str] = []
        self._room = max_chars
        self.truncated = False

    def feed_bytes(self, data: bytes) -> None:
        """Add raw output; bytes that are not UTF-8 become U+FFFD."""
        if not self.truncated:
            self.feed_text(self._decoder.decode(data))

    def feed_text(self, text: str) -> None:
        """Add decoded output."""
        if self.truncated or not text:
            return
        if len(text) > self._room:
            text = text[: self._room]
            self.truncated = True
        self._parts.append(text)
        self._room -= len(text)

    def text(self) -> str:
        """Everything kept, with any incomplete trailing byte sequence flushed."""
        self.feed_text(self._decoder.decode(b"", final=True))
        return "".join(self._parts)
