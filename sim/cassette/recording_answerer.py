"""`RecordingAnswerer`: a recording as an answerer (`sim.host.answers`), the one source of answers behind
in-process replay (`sim replay`, through the host's in-process transport) and `sim serve CASSETTE` (the host
on a port), so that both give a client the same bytes, headers and errors.

Each request gets the recorded response to the same request (method, path, canonical JSON body; see
`RecordedAnswers`): its status, its headers as the API sent them (less credentials, and those that describe
the recorded connection or the body as it was sent), and its body, a stream as recorded. A request that
matches nothing gets a 400 in the API's error shape (`sim_replay_mismatch`) naming the first differing JSON
path against the nearest recorded request; one that cannot be compared because the file's compact bodies
rebuild past its limit gets a 500 (`sim_cassette_unreadable`). Each is a `Problem` of kind
`replay_mismatch`, kept in `problems`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from sim.cassette.answering import Miss, RecordedAnswers
from sim.cassette.reader import RecordedInteraction, RecordedResponse
from sim.cassette.secrets import SECRET_HEADERS, STALE_HEADERS
from sim.core.errors import CassetteError
from sim.core.problems import Problem, ProblemKind
from sim.host.answers import Answer, ApiError, RawReply, Received
from sim.host.app import Host
from sim.wire.registry import codec_for

_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "te", "trailer", "upgrade"})
_NOT_SERVED = SECRET_HEADERS | STALE_HEADERS | _HOP_BY_HOP | {"content-type", "date", "server"}
"""Recorded headers not served again: credentials, what describes the recorded connection or the body as it
was sent (the host writes its own), and the content type (served from the body's kind)."""

MISMATCH = "sim_replay_mismatch"
"""The error type and code of a request the recording has no answer for."""
UNREADABLE = "sim_cassette_unreadable"
"""The error type and code of a request the file cannot be read to answer (its compact bodies' limit)."""
UNMATCHED = "unmatched"
"""What the access log and the count per API call a request that matched nothing."""


def served_headers(response: RecordedResponse) -> tuple[tuple[str, str], ...]:
    """The headers a recorded response is served with: its content type (from the body's kind), then each
    recorded header a client of the live API saw that still describes the body served."""
    recorded = response.headers
    kind = "text/event-stream" if response.is_event_stream else (recorded.get("content-type") or [""])[0]
    kept = [(name, value) for name, values in recorded.items() if name not in _NOT_SERVED for value in values]
    return (("content-type", kind or "application/json"), *kept)


def base_path(interactions: Sequence[RecordedInteraction]) -> str:
    """The path clients put in `OPENAI_BASE_URL`: the recorded one before the API's endpoint (`/v1`)."""
    for interaction in interactions:
        if (codec := interaction.codec) is not None:
            return interaction.request.path.rstrip("/").removesuffix(codec.endpoint) or ""
    return "/v1"


class RecordingAnswerer:
    """A recording's interactions, each answered once a round to the request that matches it; with
    `repeat`, a program run again is answered again (a new round), as `sim serve` does unless `--once`."""

    def __init__(self, interactions: Sequence[RecordedInteraction], *, repeat: bool = False) -> None:
        self.answers = RecordedAnswers(interactions, repeat=repeat)
        self.problems: list[Problem] = []
        """A problem per request that matched nothing or could not be answered from the file."""
        self.answered_by: Counter[str] = Counter()
        """Requests answered per API (`chat`, `responses`, `other`, or `unmatched`)."""
        self._unmatched: set[int] = set()
        """The numbers of the requests that matched nothing, until the access log names them."""

    @property
    def interactions(self) -> list[RecordedInteraction]:
        """The recorded interactions, in recorded order."""
        return self.answers.interactions

    @property
    def consumed(self) -> bool:
        """Whether every recorded interaction has been played (in some round)."""
        return len(self.answers.ever_played) == len(self.answers.interactions)

    @property
    def finished(self) -> bool:
        """Whether the recording is over: every interaction played, or a request met a problem."""
        return self.consumed or bool(self.problems)

    def unplayed(self) -> list[str]:
        """A line per recorded interaction never requested, numbered from 1."""
        return [
            f"interaction {item.index + 1} never requested: {item.request.method} {item.request.path}"
            for item in self.answers.unplayed()
        ]

    def first_miss(self) -> Miss | None:
        """The first request that matched nothing, and how it differs from the nearest recorded one."""
        return self.answers.misses[0] if self.answers.misses else None

    async def answer(self, request: Received) -> Answer:
        """The recorded response to `request`, or the error saying why there is none."""
        try:
            found = self.answers.match(request.method, request.path, request.body)
        except CassetteError as error:  # a compact body rebuilt to compare with: the file's limit was met
            message = f"sim serve: the cassette cannot be read to answer this request: {error}"
            return self._refuse(request, 500, UNREADABLE, message, str(error))
        if isinstance(found, Miss):
            return self._refuse(request, 400, MISMATCH, f"sim serve: {found}", str(found))
        self.answered_by[_api_of(found)] += 1
        recorded = found.response
        sent = "a stream" if recorded.is_event_stream else "a body"
        number = found.index + 1  # counted from 1, as the requests are
        said = f"interaction {number} of {len(self.interactions)} ({sent})"
        return RawReply(recorded.status, served_headers(recorded), recorded.body, said=said)

    def _refuse(self, request: Received, status: int, code: str, message: str, why: str) -> ApiError:
        self.problems.append(
            Problem(ProblemKind.replay_mismatch, request.number, why, status=status, code=code, said=message)
        )
        self.answered_by[UNMATCHED] += 1
        self._unmatched.add(request.number)
        return ApiError(status, message, code=code, said=f"{code}: {why}")

    def api_of(self, request: Received) -> str:
        """What the access log names as the API `request` asked (its answer given): its recorded
        interaction's (`other` for one that is no model call), or `unmatched`."""
        if request.number in self._unmatched:
            self._unmatched.discard(request.number)
            return UNMATCHED
        codec = codec_for(request.path) if request.method.upper() == "POST" else None
        return codec.api.value if codec is not None else "other"


def _api_of(interaction: RecordedInteraction) -> str:
    return interaction.codec.api.value if interaction.codec is not None else "other"


def recording_host(answerer: RecordingAnswerer, **options: Any) -> Host[RecordingAnswerer]:
    """The host serving `answerer` (every path and method a recording may hold, each request's API named
    as its recorded interaction names it); `options` are `Host`'s."""
    return Host(answerer, every_path=True, api_of=answerer.api_of, **options)
