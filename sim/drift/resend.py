"""Asking a recorded conversation again: the live reply read from its body or its stream, and the next
recorded request rebuilt to carry the live reply in place of the recorded one (its tool results, the
world's answers, kept as recorded, sent to the live call ids). What each API carries back, and how, is its
wire module's (`Codec.answer`, `Codec.carried_forward`, `Codec.chained`); this reads a recorded response
for it. What each request added is carried forward onto what was sent before it, so earlier live replies
stay in the conversation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.cassette.reader import RecordedResponse
from sim.wire.carrying import Answer
from sim.wire.registry import Codec


@dataclass(frozen=True, slots=True)
class Resender:
    """One API's way of asking a recorded conversation again."""

    codec: Codec

    def answer(self, response: RecordedResponse) -> Answer:
        """The reply in a response body or stream (`ModelReplyError` and friends when unreadable)."""
        if response.is_event_stream:
            return self.codec.answer(response.events(), True)
        return self.codec.answer(response.json(), False)

    def carried_forward(self, added: list[Any], was: Answer, now: Answer) -> list[Any]:
        """What a recorded request added to its conversation list after the request before it (the
        recorded answer `was` carried back, then the world's answers), with the live answer `now` in its
        place and the answers sent to the live call ids."""
        return self.codec.carried_forward(added, was, now)

    def chained(self, recorded: dict[str, Any], was: Answer, now: Answer) -> dict[str, Any] | None:
        """A recorded request that continues a stored response, naming the live one instead (its
        answers sent to the live call ids); None for a request that sends its whole conversation."""
        return self.codec.chained(recorded, was, now)


def resender(codec: Codec) -> Resender:
    """The way to ask again over `codec`'s API (chosen once, per recorded request)."""
    return Resender(codec)
