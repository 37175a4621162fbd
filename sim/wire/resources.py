"""The endpoints of an API beyond asking the model (retrieve, delete and cancel a response, list its input
items, count tokens, the Conversations API): each a method and a path template that its wire module answers
from what it keeps, as plain values the host writes (`Resource`, `Called`, `JsonBody`, `EventBody`, or the
API's refusal, a `Refused`)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from sim.wire.requests import Refused

__all__ = ["API_ROOT", "Called", "EventBody", "JsonBody", "Resource", "ResourceAnswer", "routed"]

API_ROOT = "/v1"
"""The root the API's paths sit under; a server also answers them without it (as it does the APIs' own)."""

_PARAMETER = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True, slots=True)
class Called:
    """One call of a resource endpoint: the path's parameters, the query (each name's values in order), the
    body (bytes, as sent; empty for a GET) and the request's number (counted with every request the host
    answers)."""

    params: Mapping[str, str]
    query: Mapping[str, list[str]]
    body: bytes
    number: int
    headers: Mapping[str, str] = field(default_factory=dict)
    """Names lower-cased."""

    @classmethod
    def of(
        cls, params: Mapping[str, str], query: str, body: bytes, number: int, headers: Mapping[str, str]
    ) -> Called:
        """A call with its raw query string read (`include[]=a&include[]=b` kept under `include[]`)."""
        return cls(params, parse_qs(query, keep_blank_values=True), body, number, headers)

    def first(self, name: str) -> str | None:
        """The first value the query gives `name` (or `name[]`), if any."""
        values = self.query.get(name) or self.query.get(f"{name}[]")
        return values[0] if values else None

    def every(self, name: str) -> list[str]:
        """Every value the query gives `name` and `name[]`, in order."""
        return [*self.query.get(name, []), *self.query.get(f"{name}[]", [])]


@dataclass(frozen=True, slots=True)
class JsonBody:
    """A JSON answer: its body and status."""

    body: Any
    status: int = 200


@dataclass(frozen=True, slots=True)
class EventBody:
    """A stream of server-sent events: each chunk a complete frame, sent as it comes."""

    frames: AsyncIterator[bytes]


ResourceAnswer = JsonBody | EventBody | Refused
"""What a resource endpoint answers: a JSON body, a stream of events, or the API's refusal (its status,
message, `param` and `code`)."""


@dataclass(frozen=True, slots=True)
class Resource:
    """One endpoint: `method` at `template` (after `API_ROOT`, e.g. `/responses/{response_id}/cancel`),
    answered by `answer`; `name` is what the access log calls the API it belongs to."""

    method: str
    template: str
    answer: Callable[[Called], Awaitable[ResourceAnswer]]
    name: str
    _pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parts = _PARAMETER.split(self.template)
        # split() alternates literal text and parameter names: even places literal, odd places names
        regex = "".join(re.escape(part) if index % 2 == 0 else f"(?P<{part}>[^/]+)"
                        for index, part in enumerate(parts))  # fmt: skip
        object.__setattr__(self, "_pattern", re.compile(f"(?:{re.escape(API_ROOT)})?{regex}"))

    def match(self, path: str) -> dict[str, str] | None:
        """The path's parameters when `path` (decoded, with or without `API_ROOT`) is this endpoint's."""
        found = self._pattern.fullmatch(path)
        return None if found is None else found.groupdict()

    @property
    def literal(self) -> bool:
        """Whether its template has no parameter (matched before those that have, at the same path)."""
        return _PARAMETER.search(self.template) is None


def routed(resources: list[Resource], method: str, path: str) -> tuple[Resource, dict[str, str]] | bool:
    """The endpoint `method path` calls and its parameters; False when no endpoint has the path, True when
    some have it but not with this method (a 405). Endpoints without parameters win over templates."""
    ordered = sorted(resources, key=lambda resource: not resource.literal)
    has_path = False
    for resource in ordered:
        params = resource.match(path)
        if params is None:
            continue
        if resource.method == method or (method == "HEAD" and resource.method == "GET"):
            return resource, params
        has_path = True
    return has_path
