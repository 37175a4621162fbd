"""What the API guarantees a reply, checked on a reply a script (or a drawer) means to send: each check
says how the reply would break one guarantee the request sets (its `tool_choice`, a strict schema, a custom
tool's grammar), or None. A reply that breaks one is something the live API could never have sent."""

from __future__ import annotations

from collections.abc import Callable

from sim.core.model import ModelReply
from sim.wire.requests import Asked
from sim.wire.tool_choice import contradicts_tool_choice

Check = Callable[[Asked, ModelReply], str | None]
"""One guarantee: how `reply` breaks it for `asked`, in words for people, or None."""


def _tool_choice(asked: Asked, reply: ModelReply) -> str | None:
    return contradicts_tool_choice(asked.body, reply)


CHECKS: tuple[Check, ...] = (_tool_choice,)
"""Every guarantee, in the order they are judged."""


def broken_guarantee(asked: Asked, reply: ModelReply) -> str | None:
    """How `reply` breaks the first guarantee of `asked` it breaks, or None when the API could send it."""
    for check in CHECKS:
        if (broken := check(asked, reply)) is not None:
            return broken
    return None
