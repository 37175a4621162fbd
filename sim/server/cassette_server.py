"""`CassetteServer`: `sim serve CASSETTE`, a recorded session answered over HTTP to any client, in any
language.

Each request gets the recorded response to the same request (method, path, canonical JSON body; see
`RecordedAnswers`): its status, headers (less credentials and those of the recorded connection) and body,
streams as recorded; a program run again is answered again (a new round), unless the server plays the
recording once; a request that matches nothing gets a 400 in the API's error shape
naming the first differing JSON path against the nearest recorded request.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from sim.cassette.answering import Miss, RecordedAnswers
from sim.cassette.reader import Cassette, Headers
from sim.cassette.secrets import SECRET_HEADERS, STALE_HEADERS
from sim.core.errors import CassetteError
from sim.host.access_log import Answered
from sim.host.app import api_error

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "te", "trailer", "upgrade"})
_NOT_SERVED = SECRET_HEADERS | STALE_HEADERS | _HOP_BY_HOP | {"content-type", "date", "server"}
"""Recorded headers not served again: credentials, what describes the recorded connection or the body as it
was sent (the server writes its own), and the content type (served from the body's kind)."""


class CassetteServer:
    """One cassette being served: which interactions were played, and which requests matched nothing."""

    def __init__(
        self, cassette: Cassette, *, on_finished: Callable[[], Any] | None = None, repeat: bool = True
    ) -> None:
        self.cassette = cassette
        self.answers = RecordedAnswers(cassette.interactions, repeat=repeat)
        self.on_finished = on_finished
        """Called once, after the answer that played the last interaction or met the first problem."""
        self.on_answered: Callable[[Answered], None] | None = None
        """Told of each request as it is answered (the access log)."""
        self._told = False
        self.received = 0
        self.received_by: Counter[str] = Counter()
        """Requests received per API (`chat`, `responses`, or `other`)."""
        self.unreadable: list[str] = []
        """Why requests could not be answered from the file (a compact body past the file's limit)."""
        self.app = Starlette(routes=[Route("/{path:path}", self._serve, methods=_METHODS)])

    @property
    def base_path(self) -> str:
        """The path clients put in `OPENAI_BASE_URL`: the recorded one before the endpoint (`/v1`)."""
        for interaction in self.cassette.interactions:
            if (codec := interaction.codec) is not None:
                return interaction.request.path.rstrip("/").removesuffix(codec.endpoint) or ""
        return "/v1"

    @property
    def consumed(self) -> bool:
        """Whether every recorded interaction has been played (in some round)."""
        return len(self.answers.ever_played) == len(self.answers.interactions)

    def problems(self) -> list[str]:
        """A line per request that matched nothing, or could not be answered from the file."""
        return [str(miss) for miss in self.answers.misses] + self.unreadable

    def unplayed(self) -> list[str]:
        """A line per recorded interaction never requested."""
        return [
            f"interaction {item.index + 1} never requested: {item.request.method} {item.request.path}"
            for item in self.answers.unplayed()
        ]

    async def _serve(self, request: Request) -> Response:
        response, api, said = await self._answer(request)
        if self.on_answered is not None:
            self.on_answered(Answered(api, self.received, response.status_code, said))
        if self.on_finished is not None and not self._told and (self.consumed or self.problems()):
            self._told = True
            response.background = BackgroundTask(self.on_finished)
        return response

    async def _answer(self, request: Request) -> tuple[Response, str, str]:
        """The response, the API it was asked of, and what it served (or why not)."""
        body = await request.body()
        self.received += 1
        try:
            found = self.answers.match(request.method, request.url.path, body)
        except CassetteError as error:  # a compact body rebuilt to compare with: the file's limit was met
            self.unreadable.append(str(error))
            self.received_by["unmatched"] += 1
            message = f"sim serve: the cassette cannot be read to answer this request: {error}"
            unreadable = api_error(
                500, message, error_type="sim_cassette_unreadable", code="sim_cassette_unreadable"
            )
            return unreadable, "unmatched", f"sim_cassette_unreadable: {error}"
        if isinstance(found, Miss):
            self.received_by["unmatched"] += 1
            missed = api_error(
                400, f"sim serve: {found}", error_type="sim_replay_mismatch", code="sim_replay_mismatch"
            )
            return missed, "unmatched", f"sim_replay_mismatch: {found}"
        api = found.codec.api.value if found.codec is not None else "other"
        self.received_by[api] += 1
        recorded = found.response
        kind = "text/event-stream" if recorded.is_event_stream else _content_type(recorded.headers)
        response = Response(recorded.body, status_code=recorded.status, media_type=kind)
        for name, values in recorded.headers.items():
            if name not in _NOT_SERVED:
                for value in values:
                    response.headers.append(name, value)
        sent = "a stream" if recorded.is_event_stream else "a body"
        number = found.index + 1  # counted from 1, as the simulator's replies and the requests are
        return response, api, f"interaction {number} of {len(self.cassette.interactions)} ({sent})"


def _content_type(headers: Headers) -> str:
    return (headers.get("content-type") or ["application/json"])[0]
