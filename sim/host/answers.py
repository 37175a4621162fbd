"""Who answers a request: the one interface between the HTTP host and every source of answers (a scenario's
script, a recording, drawn replies, an upstream), and the values an answer may be.

The interface, whole:

- `Answerer` (a Protocol): `async def answer(self, request: Received) -> Answer`, and `finished: bool`
  (whether it has nothing more to answer: `sim serve --once` stops after the answer that makes it true).
- `Received`: one HTTP request as the host received it: `number` (counted from 1, in the order requests
  came), `method`, `path` (without the query), `query` (the raw query string), `headers` (names lower-cased),
  `body` (bytes, read once), `api` (`chat`, `responses`, or None: the API its path names), and `parsed`:
  the typed request (`Asked`, read once by the API's wire module) or its `Refusal`, computed by the host on
  first use and never again (an answerer that answers before reading it, a retry say, never pays for it).
  `tell(Ended(...))` is how an answerer tells the host how an answer it relays ended (`Ending`: whole,
  broken off, cut) once that is known: after the reply's last chunk, or when it is cut before its head.
- `Refusal`: what the API answers a request it refuses (`error`, an `ApiError`), and the `Problem` it is for
  the run (None for a body that is not a JSON object: the API refuses it, and no run is judged by it).
- `Answer` = `ModelAnswer | ApiError | RawReply | Problem`:
  - `ModelAnswer`: a model reply the host writes in the API's shape through its wire module, as JSON or as
    the stream's events (as the request asks): `reply` (a `ModelReply`), `refusal` (its text sent as the
    API sends a refusal), `cut_after_chunks` (a stream cut after N events; a JSON body cut in half),
    `malformed` (a body that is not JSON, a stream whose first event is cut), `pacing`, `fault` (a network
    fault on the way: `sim.host.faults`).
  - `ApiError`: an error in the API's shape: `status`, `message`, `type`, `code`, `param`, `headers`,
    `in_stream` (to a request that streams: the stream starts, then fails with it), `pacing`, `fault`.
  - `RawReply`: an HTTP reply sent as it is (recordings, upstreams): `status`, `headers`, `body` (bytes, or an
    async iterator of chunks relayed as they come).
  - `Problem` (from `sim.core.problems`): what went wrong, sent as the HTTP error it says.
  Each but `Problem` has `said`: what the access log line says was served (None: the host says it from the
  answer, an error's `code: message`).
- `Pacing`: latency, `first_byte` and `between_chunks` (seconds).
- `Ended`: how an answer ended (`ending`, an `Ending`) and what that says to people (`said`), told by its
  answerer through `Received.tell`; the access log says it in place of the answer's `said`.

The host serves any answerer: `sim.host.app.Host(answerer, model=, every_path=, store_limit=, on_finished=,
on_answered=, api_of=)`, its ASGI app `Host.app`, in process through `sim.host.transport.transport(host)`,
on a port through `sim.host.serve`. What an answerer served is what its answers' `said` says, or what it
told of how the answer ended (the access log, written by the host alone, once a streamed reply ends);
`finished` is asked after each answer, and `on_finished` called once when it first says so.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Protocol

from sim.core.problems import Problem, ProblemKind
from sim.host.faults import Fault
from sim.wire.error_types import error_type

if TYPE_CHECKING:
    from sim.core.model import ModelReply
    from sim.wire.requests import Asked

__all__ = [
    "Answer",
    "Answerer",
    "ApiError",
    "Ended",
    "Ending",
    "ModelAnswer",
    "Pacing",
    "Problem",
    "ProblemKind",
    "RawReply",
    "Received",
    "Refusal",
]


@dataclass(frozen=True, slots=True)
class Pacing:
    """How slowly an answer is sent: before its first byte, and between a stream's events (seconds)."""

    first_byte: float = 0.0
    between_chunks: float = 0.0


NO_PACING = Pacing()


@dataclass(frozen=True, slots=True)
class ApiError:
    """An error in the API's shape: `{"error": {"message", "type", "param", "code"}}` with `status`."""

    status: int
    message: str
    type: str | None = None
    """The error's `type`; None: the one the API gives `status` and `code` (`sim.wire.error_types`)."""
    code: str | None = None
    param: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    in_stream: bool = False
    """To a request that streams: the stream starts, then fails with this error (as the API fails)."""
    pacing: Pacing = NO_PACING
    said: str | None = None
    """What the access log says was served (None: `code: message`)."""
    fault: Fault | None = None
    """A network fault the error meets on its way (`sim.host.faults`): dropped, reset or stalled."""

    def __post_init__(self) -> None:
        if self.type is None:
            object.__setattr__(self, "type", error_type(self.status, self.code, self.message))

    @property
    def fields(self) -> dict[str, str | None]:
        """The API's error object (a body's `error`, a failed stream's): message, type, param, code."""
        return {"message": self.message, "type": self.type, "param": self.param, "code": self.code}

    @classmethod
    def of(cls, problem: Problem) -> ApiError:
        """The error a problem is answered with."""
        return cls(
            problem.status,
            problem.error_message,
            code=problem.code,
            param=problem.param,
            headers=problem.headers,
        )


@dataclass(frozen=True, slots=True)
class ModelAnswer:
    """A model reply, written in the API's shape by its wire module (as JSON or the stream's events)."""

    reply: ModelReply
    refusal: bool = False
    """Its text sent as the API sends a refusal."""
    cut_after_chunks: int | None = None
    """The connection drops after this many events of a stream, or halfway through a JSON body (its whole
    `Content-Length` announced): `Fault.cut(cut_after_chunks)`."""
    malformed: bool = False
    """Instead of the reply: a body that is not JSON, or a stream whose first event is cut."""
    pacing: Pacing = NO_PACING
    said: str | None = None
    """What the access log says was served (`reply 2 of 3: calls shell`)."""
    fault: Fault | None = None
    """A network fault the reply meets on its way (`sim.host.faults`): dropped, reset or stalled."""

    @property
    def fault_met(self) -> Fault | None:
        """The fault the reply meets: its `fault`, or the drop its `cut_after_chunks` says."""
        if self.fault is not None or self.cut_after_chunks is None:
            return self.fault
        return Fault.cut(self.cut_after_chunks)


@dataclass(frozen=True, slots=True)
class RawReply:
    """An HTTP reply sent as it is: a recorded one, or an upstream's."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes | AsyncIterator[bytes]
    """The whole body, or its chunks relayed as they come."""
    said: str | None = None


Answer = ModelAnswer | ApiError | RawReply | Problem
"""What an answerer may answer a request with."""


class Ending(Enum):
    """How an answer relayed chunk by chunk ended."""

    whole = "whole"
    broken_off = "broken_off"
    """Its source broke off mid-answer (the client's connection is broken off too)."""
    cut = "cut"
    """Cut off on this side (a stop whose grace ran out), maybe before its head was sent."""


@dataclass(frozen=True, slots=True)
class Ended:
    """How an answer ended, as its answerer tells the host (`Received.tell`)."""

    ending: Ending
    said: str
    """What happened, for people (`POST /chat/completions: recorded (42 bytes)`); the access log says it."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request the API refuses before anything answers it: the error it sends, and the problem that is
    for the run (None: a body that is not a JSON object, refused with no run judged by it)."""

    error: ApiError
    problem: Problem | None


class Received:
    """One HTTP request as the host received it; `parsed` is read on first use, once."""

    __slots__ = ("_parse", "_parsed", "api", "body", "ended", "headers", "method", "number", "path", "query")

    def __init__(
        self,
        number: int,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: bytes,
        api: str | None,
        parse: Callable[[Received], Asked | Refusal] | None = None,
    ) -> None:
        self.number = number
        """Counted from 1, in the order requests came."""
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        """Names lower-cased."""
        self.body = body
        self.api = api
        """The API the path names (`chat`, `responses`), or None."""
        self._parse = parse
        self._parsed: Asked | Refusal | None = None
        self.ended: Ended | None = None
        """How its answer ended, as the answerer told (`tell`); None: as the answer says."""

    def tell(self, ended: Ended) -> None:
        """Tell the host how the answer to this request ended (its access log line says so)."""
        self.ended = ended

    @property
    def parsed(self) -> Asked | Refusal:
        """The typed request, read by its API's wire module, or the API's refusal of it (computed once)."""
        if self._parsed is None:
            if self._parse is None:
                error = ApiError(404, f"sim reads no API request at {self.method} {self.path}")
                self._parsed = Refusal(error, None)
            else:
                self._parsed = self._parse(self)
        return self._parsed

    def retries(self, body: bytes) -> bool:
        """Whether this request is another attempt at one that sent `body`: as the SDKs say
        (`x-stainless-retry-count` above 0), or for a client that does not say, by sending the same body."""
        said = self.retry_count
        return said > 0 if said is not None else self.body == body

    @property
    def retry_count(self) -> int | None:
        """The retry this request says it is (`x-stainless-retry-count`, as the SDKs send it), if it says."""
        said = self.headers.get("x-stainless-retry-count", "")
        return int(said) if said.isdigit() else None


class Answerer(Protocol):
    """A source of answers: a scenario's script, a recording, drawn replies, an upstream."""

    async def answer(self, request: Received) -> Answer:
        """The answer to `request`."""
        ...

    @property
    def finished(self) -> bool:
        """Whether it has nothing more to answer (`sim serve --once` stops after the answer that says so)."""
        ...
