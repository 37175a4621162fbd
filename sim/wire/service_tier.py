"""The service tier a request asks for (`service_tier`, both APIs): refused as the API refuses a value it
does not know, and the tier a reply says served it (the one asked for; `auto`, or none, served `default`;
`fast`, which the API documents as shown `priority`, served `priority`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sim.wire.requests import Refused, wrong_type

SERVICE_TIERS = ("auto", "default", "flex", "scale", "priority", "fast")
"""The tiers a request may ask for, as the API (and the SDK's types) list them."""
_SHOWN = {"auto": "default", "fast": "priority"}


def _listed(values: tuple[str, ...]) -> str:
    quoted = [f"'{value}'" for value in values]
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}"


def refused_service_tier(body: Mapping[str, Any]) -> Refused | None:
    """A `service_tier` the API does not know, refused in its words."""
    tier = body.get("service_tier")
    if tier is None or tier in SERVICE_TIERS:
        return None
    if not isinstance(tier, str):
        return wrong_type("service_tier", "a string", tier)
    message = f"Invalid value: '{tier}'. Supported values are: {_listed(SERVICE_TIERS)}."
    return Refused(message, "service_tier", "invalid_value")


def asked_tier(body: Mapping[str, Any]) -> str:
    """The tier a response says while it is not yet served (streamed `response.created` and
    `response.in_progress`): the one asked for, `auto` when none; `served_tier` once it is done."""
    tier = body.get("service_tier")
    if not isinstance(tier, str) or tier not in SERVICE_TIERS or tier == "auto":
        return "auto"
    return _SHOWN.get(tier, tier)


def served_tier(body: Mapping[str, Any]) -> str:
    """The tier a reply says served the request: the one it asked for (`auto` or none: `default`; `fast`:
    `priority`)."""
    tier = body.get("service_tier")
    if not isinstance(tier, str) or tier not in SERVICE_TIERS:
        return "default"
    return _SHOWN.get(tier, tier)
