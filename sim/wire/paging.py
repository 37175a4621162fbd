"""The API's cursor pages, as its list endpoints give them (a response's input items, a conversation's
items): `limit` (1 to 100, 20 when not given), `order` (`desc` when not given) and `after` read from the
query, and a page written as the `list` object with `first_id`, `last_id` and `has_more`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sim.wire.requests import Refused
from sim.wire.resources import Called, JsonBody

LIMIT = 20
"""How many items a page gives when `limit` is not said."""
MOST = 100
"""The most items a page gives."""
_SHOWN = 100
"""The most characters of a value sent back in a refusal."""


@dataclass(frozen=True, slots=True)
class PageAsked:
    """Which page a call asks for."""

    limit: int
    descending: bool
    after: str | None


def page_asked(called: Called) -> PageAsked | Refused:
    """The page `called` asks for, or the API's refusal of its `limit` or `order`."""
    limit = _limit(called.first("limit"))
    if isinstance(limit, Refused):
        return limit
    order = called.first("order") or "desc"
    if order not in ("asc", "desc"):
        message = f"Invalid value: '{order[:_SHOWN]}'. Supported values are: 'asc' and 'desc'."
        return Refused(message, "order", "invalid_value")
    return PageAsked(limit, order == "desc", called.first("after"))


def _limit(said: str | None) -> int | Refused:
    if said is None:
        return LIMIT
    try:
        limit = int(said)
    except ValueError:
        message = ("Invalid type for 'limit': expected an integer, but got a string value that could not be"
                   " converted into an integer.")  # fmt: skip
        return Refused(message, "limit", "invalid_type")
    if limit < 1:
        return _out_of_range(limit, "below minimum", ">= 1", "integer_below_min_value")
    if limit > MOST:
        return _out_of_range(limit, "above maximum", f"<= {MOST}", "integer_above_max_value")
    return limit


def _out_of_range(limit: int, bound: str, expected: str, code: str) -> Refused:
    message = f"Invalid 'limit': integer {bound} value. Expected a value {expected}, but got {limit} instead."
    return Refused(message, "limit", code)


def page(
    items: Sequence[dict[str, Any]], asked: PageAsked, unknown_after: Callable[[str], Refused]
) -> JsonBody | Refused:
    """The page of `items` (oldest first, each with an `id`) `asked` says, or `unknown_after(after)` when
    `after` names none of them."""
    ordered = list(reversed(items)) if asked.descending else list(items)
    start = 0
    if asked.after:
        ids = [item["id"] for item in ordered]
        if asked.after not in ids:
            return unknown_after(asked.after)
        start = ids.index(asked.after) + 1
    return JsonBody(listed(ordered[start : start + asked.limit], has_more=start + asked.limit < len(ordered)))


def listed(items: list[dict[str, Any]], *, has_more: bool) -> dict[str, Any]:
    """Items as the API's `list` object (an empty page's `first_id` and `last_id` null)."""
    return {
        "object": "list",
        "data": items,
        "first_id": items[0]["id"] if items else None,
        "last_id": items[-1]["id"] if items else None,
        "has_more": has_more,
    }
