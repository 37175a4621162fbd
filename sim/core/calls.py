"""Naming a tool call across a run: ids are unique within one assistant message, not across a session
(some endpoints send `call_0` every turn), so a call is its id and the turn whose reply made it.

Written as a key, `call_0` names the call with that id when only one turn has it, and `call_0@2` names
turn 2's `call_0` whatever other turns do.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TypeVar

from sim.core.messages import AssistantMessage, ChatMessage, ToolMessage

_KEY = re.compile(r"^(?P<id>.+)@(?P<turn>[1-9][0-9]*)$")

_T = TypeVar("_T")

CallRef = tuple[str, int]
"""A call as `(id, turn)`; turn 1 is the reply to the run's first request."""


def call_key(call_id: str, turn: int) -> str:
    """The key that names turn `turn`'s call `call_id`: `call_0@2`."""
    return f"{call_id}@{turn}"


def parse_call_key(key: str) -> tuple[str, int | None]:
    """`("call_0", 2)` for `call_0@2`; `("call_0", None)` for a plain id (any turn)."""
    found = _KEY.match(key)
    return (found["id"], int(found["turn"])) if found else (key, None)


def turns_by_id(calls: Iterable[CallRef]) -> dict[str, list[int]]:
    """The turns in which each id was used."""
    used: dict[str, list[int]] = {}
    for call_id, turn in calls:
        used.setdefault(call_id, []).append(turn)
    return used


def ambiguity(key: str, used: Mapping[str, list[int]]) -> str | None:
    """Why `key` does not name one call of `used` (a plain id used in several turns), if it does not."""
    call_id, turn = parse_call_key(key)
    turns = sorted(set(used.get(call_id, [])))
    if turn is None and len(turns) > 1:
        choices = " or ".join(call_key(call_id, t) for t in turns)
        listed = ", ".join(map(str, turns))
        return f"the call id {call_id} is used in turns {listed}: write {choices}"
    return None


def find(results: Mapping[CallRef, _T], key: str) -> _T | None:
    """What `results` holds for the call `key` names: `call_0@2` exactly, or a plain id's only call."""
    call_id, turn = parse_call_key(key)
    if turn is not None:
        return results.get((call_id, turn))
    matches = [value for (found_id, _), value in results.items() if found_id == call_id]
    return matches[0] if len(matches) == 1 else None


def keyed(results: Mapping[CallRef, _T]) -> dict[str, _T]:
    """`results` by key: plain ids where the id is used in one turn only, `id@turn` where it repeats."""
    used = turns_by_id(results)
    return {
        call_id if len(used[call_id]) == 1 else call_key(call_id, turn): value
        for (call_id, turn), value in results.items()
    }


def results_in_history(messages: Iterable[ChatMessage], first_turn: int = 1) -> dict[CallRef, str]:
    """The tool results a history holds, each paired with the call it answers: a result answers the
    latest assistant message's call of that id (the n-th assistant message made turn `first_turn + n - 1`).
    """
    found: dict[CallRef, str] = {}
    turn = first_turn - 1
    for message in messages:
        if isinstance(message, AssistantMessage):
            turn += 1
        elif isinstance(message, ToolMessage):
            found[(message.tool_call_id, turn)] = message.content
    return found
