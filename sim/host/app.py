"""The one HTTP host: `Host.respond` hands a request, given as plain values, to an answerer and writes its
answer back as the API does; its ASGI app (`Host.app`) and the in-process transport both call it.

It routes the APIs' paths (`POST /v1/chat/completions`, `POST /v1/responses`, and the same without `/v1`)
and `GET /v1/models` (the model it is told), and answers any other path with a JSON 404 naming what it
serves; with `every_path`, every request goes to the answerer (a recording, an upstream). It reads each body
once, numbers requests from 1, has the API's wire module parse a body once (when the answerer first asks for
`Received.parsed`), writes model replies as JSON or as the stream's events, and sends latency, cut streams,
malformed bodies, errors in the API's shape and recorded replies. It tells `on_answered` of each answer
(the access log: the only place its lines come from), a streamed reply once it ends (whole, broken off or
cut, as its answerer may tell through `Received.tell`), and calls `on_finished` once, after the answer that
finishes the answerer.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import replace
from functools import partial
from time import perf_counter
from typing import Any, Generic, TypeVar

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Content, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from sim.core.json_text import loads
from sim.host.access_log import Answered, why_refused
from sim.host.answers import (
    NO_PACING,
    Answer,
    Answerer,
    ApiError,
    ModelAnswer,
    Pacing,
    Problem,
    ProblemKind,
    RawReply,
    Received,
    Refusal,
)
from sim.host.faults import Faulted, FaultKind, Where, faulted
from sim.host.rate_limit import Limiter, RateLimit
from sim.wire import STORE_LIMIT_BYTES, Api, models
from sim.wire.azure_paths import (
    AZURE_SERVED,
    has_api_version,
    served_as,
    unsupported_version,
    unversioned_error,
)
from sim.wire.error_types import error_type as type_for_status
from sim.wire.rate_estimate import Estimate, estimate
from sim.wire.registry import CODECS
from sim.wire.requests import Asked, Refused, WireProtocol
from sim.wire.resources import API_ROOT, Called, EventBody, Resource, routed

__all__ = ["Host", "api_error", "refusal"]

_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
_POST = frozenset({"POST"})
_GET = frozenset({"GET", "HEAD"})
_NOT_SENT = 499
"""The status the access log gives an answer cut off before its head was sent (nginx's "client gone")."""


def api_error(
    status: int,
    message: str,
    *,
    error_type: str | None = None,
    code: str | None = None,
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """An error response shaped like the real API's (its `type`, when not given, the one the API gives
    `status` and `code`)."""
    said = error_type if error_type is not None else type_for_status(status, code, message)
    body = {"error": {"message": message, "type": said, "param": param, "code": code}}
    return JSONResponse(body, status_code=status, headers=headers)


def _error_response(error: ApiError) -> JSONResponse:
    headers = dict(error.headers) if error.headers else None
    return JSONResponse({"error": error.fields}, status_code=error.status, headers=headers)


def refusal(refused: Refused, number: int) -> Refusal:
    """The API's refusal of request `number`, and the problem it is for the run: the request is invalid, or
    asks for what sim does not simulate."""
    where = f"{refused.param}: " if refused.param and refused.detail is None else ""
    kind = ProblemKind.not_simulated if refused.unsimulated else ProblemKind.invalid_request
    said = "not simulated" if refused.unsimulated else "invalid request"
    problem = Problem(
        kind,
        number,
        f"request {number}: {said}: {where}{refused.problem}",
        status=refused.status,
        code=refused.code,
        param=refused.param,
        said=refused.message,
    )
    return Refusal(ApiError(refused.status, refused.message, code=refused.code, param=refused.param), problem)


def parse(protocol: WireProtocol, request: Received) -> Asked | Refusal:
    """`request`'s body read once by its API's wire module: the request being answered, or the refusal."""
    try:
        body = loads(request.body, strict=True)  # no lone surrogate: it could not be answered
    except ValueError:
        return Refusal(ApiError(400, "We could not parse the JSON body of your request."), None)
    if not isinstance(body, dict):
        return Refusal(ApiError(400, "The request body must be a JSON object."), None)
    parsed = protocol.parse(body, request.number)
    if isinstance(parsed, Refused):
        return refusal(parsed, request.number)
    return replace(parsed, size=len(request.body))  # what keeping it weighs beside its conversation


A = TypeVar("A", bound=Answerer)


class Host(Generic[A]):
    """An answerer served over HTTP: `app` is the ASGI app."""

    def __init__(
        self,
        answerer: A,
        *,
        model: str = "sim-model",
        every_path: bool = False,
        store_limit: int = STORE_LIMIT_BYTES,
        on_finished: Callable[[], Any] | None = None,
        on_answered: Callable[[Answered], None] | None = None,
        api_of: Callable[[Received], str] | None = None,
        rate_limit: RateLimit | None = None,
    ) -> None:
        self.answerer = answerer
        self.limiter = None if rate_limit is None else Limiter(rate_limit)
        """The rate limits simulated (None: none): each model request spends from them or is answered 429
        without reaching the answerer, and every answer sim makes says where they stand."""
        self.api_of = api_of
        """What the access log names as a request's API, asked once it is answered (None: the API its path
        names, or the path; a recording names its interaction's, or `unmatched`)."""
        self.model = model
        """The model `GET /v1/models` lists."""
        self.on_finished = on_finished
        """Called once, after the answer that finished the answerer (`Answerer.finished`)."""
        self.on_answered = on_answered
        """Told of each request as it is answered (the access log)."""
        self.told_finished = False
        self.servers: dict[Api, WireProtocol] = {
            api: codec.server(store_limit) for api, codec in CODECS.items()
        }
        """Each API as served, made by its `Codec` (the Responses API's holds its store of responses)."""
        self.protocols: dict[str, WireProtocol] = {
            path: protocol for protocol in self.servers.values() for path in protocol.paths
        }
        self.paths = list(self.protocols)
        """The API paths served."""
        self.received = 0
        """Requests numbered: handed to the answerer, or throttled by the rate limit."""
        self.received_by: Counter[str] = Counter()
        """Requests received per API (`chat`, `responses`)."""
        self.every_path = every_path
        """Every request, whatever its path and method, goes to the answerer."""
        self.routes: dict[str, tuple[frozenset[str], Callable[..., Awaitable[Response]]]] = {
            **dict.fromkeys(self.paths, (_POST, self._api)),
            **dict.fromkeys(models.PATHS, (_GET, self._models)),
        }
        """What serves each path, and the methods it takes (without `every_path`)."""
        self.resources: list[tuple[Resource, WireProtocol]] = [
            (resource, protocol) for protocol in self.servers.values() for resource in protocol.resources
        ]
        """Each API's endpoints beyond asking the model (retrieve, delete, cancel ...), and its API."""
        every_method = [*_METHODS, "TRACE", "CONNECT"]  # any other comes to `_unrouted`
        routes = [Route("/{path:path}", self._asgi, methods=every_method)]
        self.app = Starlette(routes=routes, exception_handlers={HTTPException: self._unrouted})
        """The ASGI app: each request's body read once, and answered by `respond`."""

    async def respond(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes
    ) -> Response:
        """The response to one request given as plain values (`path` decoded, `query` as sent, `headers` with
        names lower-cased and repeated ones kept); the ASGI app and the in-process transport both answer
        through it. Every answer sim makes (not a relayed one, which keeps its own) carries an
        `x-request-id` and `openai-processing-ms`, and with a rate limit the `x-ratelimit-*` headers (a
        model request past the limit is answered 429 before any answerer sees it: `_serve`)."""
        started = perf_counter()
        response = await self._routed(method, path, query, headers, body)
        if not isinstance(response, _RELAYED):
            millis = int((perf_counter() - started) * 1000)
            response.raw_headers += (
                (b"x-request-id", b"req_" + os.urandom(16).hex().encode()),
                (b"openai-processing-ms", str(millis).encode()),
            )
            if self.limiter is not None:
                response.raw_headers += self.limiter.headers()
        return response

    def _throttled(self, limiter: Limiter, received: Received) -> Response | None:
        """The API's 429 when a model request is past the rate limit (logged; the answerer never sees it),
        else None, its request and estimated tokens spent (from the body parsed once: the answerer reads
        the same parse)."""
        asked = received.parsed
        said = estimate(asked.body) if isinstance(asked, Asked) else Estimate(0, None)
        past = limiter.take(said.tokens)
        if past is None:
            return None
        message = past.message(said.model)
        self._log(received, 429, f"rate_limit_exceeded: {message}")
        return api_error(
            429, message, error_type=past.kind, code="rate_limit_exceeded", headers=past.retry_headers()
        )

    async def _routed(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes
    ) -> Response:
        """The response to one request, from what its path and method route to."""
        if self.every_path:
            if method not in _METHODS:
                return self._not_served(405, method, path)
            return await self._serve(method, path, query, headers, body, self.protocols.get(path))
        azure = served_as(path)
        if azure is not None:  # an Azure OpenAI client's path: served as the OpenAI path it stands for
            if azure.versioned and not has_api_version(query):
                return JSONResponse(unversioned_error(method, path), status_code=404)  # Azure's shape
            refused = unsupported_version(path, query)
            path = azure.path
            if refused is not None and self._serves(method, path):
                return JSONResponse(refused, status_code=400)
        route = self.routes.get(path)
        if route is None:
            return await self._resource(method, path, query, headers, body)
        methods, serve = route
        if method not in methods:
            return self._not_served(405, method, path)
        return await serve(method, path, query, headers, body)

    async def _asgi(self, request: Request) -> Response:
        scope = request.scope
        query = scope["query_string"].decode("latin-1")
        try:
            body = await request.body()
        except ClientDisconnect:  # gone before its request was whole (killed, crashed): nobody to answer
            return Response(status_code=400)
        return await self.respond(request.method, scope["path"], query, request.headers, body)

    async def _unrouted(self, request: Request, error: Exception) -> Response:
        status = error.status_code if isinstance(error, HTTPException) else 500
        return self._not_served(status, request.method, request.scope["path"])

    def _serves(self, method: str, path: str) -> bool:
        """Whether `method path` is one of the API's that this host answers."""
        route = self.routes.get(path)
        if route is not None:
            return method in route[0]
        return isinstance(routed([resource for resource, _ in self.resources], method, path), tuple)

    async def _resource(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes
    ) -> Response:
        """The answer of the endpoint `method path` names (a 404 when none has it)."""
        found = routed([resource for resource, _ in self.resources], method, path)
        if found is True:  # the live API answers a method a path does not take as any URL it does not know
            return api_error(404, f"Invalid URL ({method} {path})")
        if found is False:
            return self._not_served(404, method, path)
        resource, params = found
        api = next(protocol.name for known, protocol in self.resources if known is resource)
        self.received += 1
        self.received_by[api] += 1
        number = self.received
        answered = await resource.answer(Called.of(params, query, body, number, headers))
        if isinstance(answered, Refused):
            response: Response = api_error(
                answered.status, answered.message, code=answered.code, param=answered.param
            )
            said = f"{answered.code or 'invalid_request_error'}: {answered.message}"
        elif isinstance(answered, EventBody):
            response = StreamingResponse(answered.frames, media_type="text/event-stream")
            said = resource.name
        else:
            response = JSONResponse(answered.body, status_code=answered.status)
            said = resource.name
        if self.on_answered is not None:
            self.on_answered(Answered(api, number, response.status_code, said))
        return response

    def _not_served(self, status: int, method: str, path: str) -> Response:
        endpoints = [f"{resource.method} {API_ROOT}{resource.template}" for resource, _ in self.resources]
        served = ", ".join(
            [*(f"POST {api_path}" for api_path in self.paths), f"GET {models.PATHS[0]}", *endpoints]
        )
        message = f"sim does not serve {method} {path}; it serves {served} ({AZURE_SERVED})"
        return api_error(status, message, code="not_found" if status == 404 else None)

    async def _models(self, *request: object) -> Response:
        return JSONResponse(models.model_list(self.model))

    async def _api(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes
    ) -> Response:
        return await self._serve(method, path, query, headers, body, self.protocols[path])

    async def _serve(
        self,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: bytes,
        protocol: WireProtocol | None,
    ) -> Response:
        """The answer to one request; the first answer after which the answerer is finished says so."""
        self.received += 1
        if protocol is not None:
            self.received_by[protocol.name] += 1
        received = Received(
            self.received,
            method,
            path,
            query,
            headers,
            body,
            None if protocol is None else protocol.name,
            None if protocol is None else partial(parse, protocol),
        )
        if self.limiter is not None and protocol is not None:
            throttled = self._throttled(self.limiter, received)
            if throttled is not None:
                return throttled
        try:
            answer = await self.answerer.answer(received)
        except asyncio.CancelledError:
            if received.ended is not None:  # the answerer said how it was cut off
                self._log(received, _NOT_SENT, received.ended.said)
            raise
        response = await self._render(answer, received, protocol)
        if self.on_answered is not None:
            said = _said(answer, response)
            status = response.status_code
            if isinstance(response, Faulted):
                said = f"{said}; {response.fault.said()}"
                fault = response.fault
                if fault.where is Where.before_headers and fault.kind is not FaultKind.stall:
                    status = _NOT_SENT
            if isinstance(response, StreamingResponse):  # told once it ends, when its outcome is known
                response.body_iterator = self._logged_at_end(response.body_iterator, received, status, said)
            else:
                self._log(received, response.status_code, said)
        if self.on_finished is not None and not self.told_finished and self.answerer.finished:
            self.told_finished = True
            response.background = BackgroundTask(self.on_finished)
        return response

    def _log(self, received: Received, status: int, said: str) -> None:
        """Tell `on_answered` of `received`'s answer: what it said, or how its answerer told it ended."""
        if self.on_answered is not None:
            api = self.api_of(received) if self.api_of is not None else received.api or received.path
            told = received.ended
            self.on_answered(Answered(api, received.number, status, told.said if told is not None else said))

    async def _logged_at_end(
        self, chunks: AsyncIterable[Content], received: Received, status: int, said: str
    ) -> AsyncIterator[Content]:
        """`chunks` sent on, and the access log told once they end: whole, broken off or cut."""
        try:
            async for chunk in chunks:
                yield chunk
        finally:
            self._log(received, status, said)

    async def _render(self, answer: Answer, request: Received, protocol: WireProtocol | None) -> Response:
        # a reply meets its fault on the way; without an API there is no reply, and its error goes whole
        if isinstance(answer, ModelAnswer) and protocol is not None and answer.fault_met is not None:
            plain = replace(answer, fault=None, cut_after_chunks=None)
            return faulted(await self._render(plain, request, protocol), answer.fault_met)
        if isinstance(answer, ApiError) and answer.fault is not None:
            return faulted(await self._render(replace(answer, fault=None), request, protocol), answer.fault)
        if isinstance(answer, Problem):
            return _error_response(ApiError.of(answer))
        if isinstance(answer, RawReply):
            return _raw(answer)
        if isinstance(answer, ApiError) and not (answer.in_stream or answer.pacing.first_byte):
            return _error_response(answer)  # as it is, whatever the request: it need not be read
        asked = request.parsed
        if not isinstance(asked, Asked) or protocol is None:
            if isinstance(answer, ApiError):
                await _wait(answer.pacing.first_byte)
                return _error_response(answer)
            return _error_response(asked.error if isinstance(asked, Refusal) else _NO_REQUEST)
        stream = bool(asked.body.get("stream"))
        if isinstance(answer, ApiError):
            if answer.in_stream and stream:
                events = _events(protocol.failed(answer.fields, asked), b"", None, answer.pacing)
                return StreamingResponse(events, media_type="text/event-stream")
            if not stream:
                await _wait(answer.pacing.first_byte)
            return _error_response(answer)
        if asked.deferred:  # run in the background: answered at once, the reply ready once its latency passed
            asked = replace(asked, latency=answer.pacing.first_byte)
        elif not stream:
            await _wait(answer.pacing.first_byte)
        if answer.malformed:
            kind = "text/event-stream" if stream else "application/json"
            return Response(protocol.broken(stream), media_type=kind)
        if not stream:
            wire = protocol.reply(answer.reply, asked, refusal=answer.refusal)
            if answer.cut_after_chunks is not None:  # not streamed: the body itself is cut short
                encoded = json.dumps(wire).encode()
                return Response(encoded[: len(encoded) // 2], media_type="application/json")
            return JSONResponse(wire)
        frames = protocol.stream(answer.reply, asked, refusal=answer.refusal)
        events = _events(frames, protocol.closing, answer.cut_after_chunks, answer.pacing)
        return StreamingResponse(events, media_type="text/event-stream")


_NO_REQUEST = ApiError(404, "sim has no API request here to answer with a model reply")


class _Relayed(Response):
    """A recorded or upstream reply sent as it came: it keeps its own headers (its request id too)."""


class _RelayedStream(StreamingResponse):
    """A recorded or upstream stream relayed as it comes, with its own headers."""


_RELAYED = (_Relayed, _RelayedStream)


def _raw(reply: RawReply) -> Response:
    if isinstance(reply.body, bytes):
        response: Response = _Relayed(reply.body, status_code=reply.status)
    else:
        response = _RelayedStream(reply.body, status_code=reply.status)
    for name, value in reply.headers:  # each value of a repeated header, as it came
        response.headers.append(name, value)
    return response


def _said(answer: Answer, response: Response) -> str:
    """What the access log says was served: what the answer says, or the error's `code: message`."""
    if isinstance(answer, Problem):
        return f"{answer.code or 'invalid_request_error'}: {answer.error_message}"
    if answer.said is not None:
        return answer.said
    if isinstance(answer, ApiError) and not (answer.in_stream and response.status_code < 400):
        return f"{answer.code or answer.type or 'error'}: {answer.message}"
    if isinstance(answer, RawReply) and isinstance(answer.body, bytes) and answer.status >= 400:
        return why_refused(answer.body)
    if isinstance(answer, ModelAnswer | RawReply) and response.status_code < 400:
        return "a reply"
    return why_refused(bytes(response.body)) if hasattr(response, "body") else "an error"


async def _wait(seconds: float) -> None:
    if seconds:
        await asyncio.sleep(seconds)


async def _events(
    frames: list[bytes], closing: bytes, cut_after: int | None, pacing: Pacing = NO_PACING
) -> AsyncIterator[bytes]:
    await _wait(pacing.first_byte)
    for number, frame in enumerate(frames):
        if cut_after is not None and number >= cut_after:
            return
        if number and pacing.between_chunks:
            await asyncio.sleep(pacing.between_chunks)
        yield frame
    if closing:
        yield closing
