"""How Chat Completions serves a reply to the request it answers (`Serving`): the finish reason the API
gives it (`stop` for the call a named `tool_choice` forced, `function_call` for a legacy call), whether its
call is sent the legacy way (`message.function_call`), and the service tier it says served it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sim.core.model import ModelReply
from sim.wire.chat.legacy import FUNCTION_CALL
from sim.wire.service_tier import served_tier
from sim.wire.tool_choice import ReplyTerms


@dataclass(frozen=True, slots=True)
class Serving:
    """What a reply looks like on the wire besides its message: `finish_reason` (None: the reply's own),
    whether its call goes in `function_call` (`legacy`), and the `service_tier` it reports."""

    finish_reason: str | None = None
    legacy: bool = False
    service_tier: str = "default"

    def finish(self, reply: ModelReply) -> str:
        """The finish reason sent for `reply`."""
        return self.finish_reason or reply.finish_reason


AS_IS = Serving()
"""A reply served as it is: its own finish reason, tool calls, the `default` tier."""


def served_finish(reply: ModelReply, terms: ReplyTerms) -> str:
    """The finish reason the API gives `reply` under `terms`: a reply that calls what a named choice (a named
    `tool_choice` or `function_call`) forced ends `stop`; a legacy call otherwise ends `function_call`."""
    if reply.finish_reason != "tool_calls" or not reply.message.tool_calls:
        return reply.finish_reason
    if terms.choice.named is not None:
        return "stop"
    return FUNCTION_CALL if terms.legacy_call_id is not None else reply.finish_reason


def serving(reply: ModelReply, body: Mapping[str, Any], terms: ReplyTerms) -> Serving:
    """How `reply` is served to the request `body` that set `terms`."""
    return Serving(served_finish(reply, terms), terms.legacy_call_id is not None, served_tier(body))
