"""`Simulator`: answers `POST /v1/chat/completions` and `POST /v1/responses` from a scenario's replies, in
order, like the real API.

It validates each request as the API does (HTTP 400 with the API's error shape), applies the scenario's
`expect_request` checks, plays scripted errors, malformed bodies, cut streams and latency, and keeps what
it was asked so a run can be judged afterwards. Both protocols share one script: a conversation may even
change API between requests. Any other path gets a JSON 404 naming the paths served. Mount
`simulator.app` in any ASGI server, or use it in process through `httpx2.ASGITransport`.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, MutableSequence
from typing import Any

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from sim.core.errors import MessageContractError
from sim.core.json_text import loads
from sim.core.model import ModelReply, ModelRequest
from sim.scenario.expectations import check_request
from sim.scenario.schema import Latency, Scenario, ScriptedReplySpec
from sim.scenario.world import scripted_reply
from sim.server.protocols import (
    CREATED,
    Asked,
    ChatProtocol,
    Refused,
    RefusedError,
    ResponsesProtocol,
    WireProtocol,
)
from sim.server.response_store import STORE_LIMIT_BYTES
from sim.server.tool_choice import contradicts_tool_choice

__all__ = ["CREATED", "Simulator", "api_error"]


def api_error(
    status: int,
    message: str,
    *,
    error_type: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """An error response shaped like the real API's."""
    body = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    return JSONResponse(body, status_code=status, headers=headers)


class Simulator:
    """One scenario being served: what comes next, what was asked, and what went wrong."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        cycle: bool = False,
        on_consumed: Callable[[], Any] | None = None,
        store_limit: int = STORE_LIMIT_BYTES,
        keep_requests: bool = True,
    ) -> None:
        self.scenario = scenario
        self.cycle = cycle
        self.on_consumed = on_consumed
        self.steps: list[tuple[ScriptedReplySpec, ModelReply]] = [
            (spec, scripted_reply(spec, ids))
            for spec, ids in zip(scenario.replies, scenario.call_ids(), strict=True)
        ]
        self.requests: MutableSequence[ModelRequest] = (
            [] if keep_requests and not cycle else deque(maxlen=len(self.steps) if keep_requests else 0)
        )
        """The requests answered, for the checks of a run in process (in cycle mode only the latest round,
        and none without `keep_requests`, so that a long session served stays bounded)."""
        self.received = 0
        """Every request received, answered or not."""
        self.received_by: Counter[str] = Counter()
        """Requests received per API (`chat`, `responses`)."""
        self.problems: list[str] = []
        self.answered = 0
        self.served: MutableSequence[tuple[int, ScriptedReplySpec]] = (
            deque(maxlen=len(self.steps)) if cycle else []
        )
        """Each request answered from the script (by its number) with the reply it got."""
        self.responses = ResponsesProtocol(store_limit)
        """The Responses API as served (its store of responses)."""
        protocols: list[WireProtocol] = [ChatProtocol(), self.responses]
        routes = [Route(path, self._endpoint(p), methods=["POST"]) for p in protocols for path in p.paths]
        self.paths = [route.path for route in routes]
        self.app = Starlette(
            routes=[
                *routes,
                Route("/v1/models", self.models, methods=["GET"]),
                Route("/models", self.models, methods=["GET"]),
            ],
            exception_handlers={HTTPException: self._not_served},
        )

    @property
    def consumed(self) -> bool:
        """Whether every scripted reply has been sent."""
        return self.answered >= len(self.steps)

    def unused(self) -> list[str]:
        """A line for replies never requested, if any."""
        left = len(self.steps) - self.answered
        if left > 0 and not self.cycle:
            return [
                f"simulator for {self.scenario.name} has {left} unused of {len(self.steps)} scripted replies"
            ]
        return []

    async def _not_served(self, request: Request, error: Exception) -> Response:
        status = error.status_code if isinstance(error, HTTPException) else 500
        served = ", ".join(f"POST {path}" for path in self.paths) + ", GET /v1/models"
        message = f"sim does not serve {request.method} {request.url.path}; it serves {served}"
        return api_error(status, message, code="not_found" if status == 404 else None)

    async def models(self, request: Request) -> Response:
        """`GET /v1/models`: the scenario's model."""
        model = {"id": self.scenario.model, "object": "model", "created": CREATED, "owned_by": "sim"}
        return JSONResponse({"object": "list", "data": [model]})

    def _endpoint(self, protocol: WireProtocol) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            return await self._serve(request, protocol)

        return endpoint

    def _refuse(self, number: int, refused: Refused) -> JSONResponse:
        where = f"{refused.param}: " if refused.param else ""
        said = "not simulated" if refused.unsimulated else "invalid request"
        self.problems.append(f"request {number}: {said}: {where}{refused.message}")
        return api_error(refused.status, refused.message, code=refused.code, param=refused.param)

    async def _serve(self, request: Request, protocol: WireProtocol) -> Response:
        """The next scripted reply, or the error the API would send."""
        try:
            body = loads(await request.body(), strict=True)  # no lone surrogate: it could not be answered
        except ValueError:
            return api_error(400, "We could not parse the JSON body of your request.")
        self.received += 1
        self.received_by[protocol.name] += 1
        number = self.received
        if not isinstance(body, dict):
            return api_error(400, "The request body must be a JSON object.")
        if (refused := protocol.refused(body)) is not None:
            return self._refuse(number, refused)
        try:
            decoded = protocol.decode(body)
        except RefusedError as error:
            return self._refuse(number, error.refused)
        except MessageContractError as error:
            self.problems.append(f"request {number}: invalid request: {error}")
            return api_error(400, f"Invalid request: {error}")
        if (refused := protocol.check(body, decoded)) is not None:
            return self._refuse(number, refused)
        asked = Asked(body, decoded, number, protocol.terms(body))
        step = await self.next_step(asked)
        if isinstance(step, Response):
            return step
        self.requests.append(decoded)
        self.served.append((number, step[0]))
        index = self.answered % len(self.steps)
        self.answered += 1
        response = await self._answer(protocol, index, step, asked)
        if self.on_consumed is not None and self.consumed:  # whatever the last answer was
            response.background = BackgroundTask(self.on_consumed)
        return response

    async def next_step(self, asked: Asked) -> tuple[ScriptedReplySpec, ModelReply] | Response:
        """The scripted reply that answers `asked`, or the error response when the script is used up (a
        subclass may draw it instead)."""
        if self.consumed and not self.cycle:
            problem = (
                f"scenario {self.scenario.name} has no reply left for request {asked.number}"
                f" (it scripts {len(self.steps)})"
            )
            self.problems.append(problem)
            return api_error(400, problem, code="sim_script_exhausted")
        return self.steps[self.answered % len(self.steps)]

    async def _answer(
        self, protocol: WireProtocol, index: int, step: tuple[ScriptedReplySpec, ModelReply], asked: Asked
    ) -> Response:
        """The response to scripted reply `index`: an expectation failure, an error, or the reply."""
        spec, reply = step
        decoded, body, number = asked.decoded, asked.body, asked.number
        if spec.expect_request is not None and not self.cycle:
            differences = check_request(f"replies[{index}].expect_request", spec.expect_request, decoded)
            if differences:
                self.problems += differences
                return api_error(400, "; ".join(differences), code="sim_expectation_failed")
        if spec.error is None and not spec.malformed:
            contradiction = contradicts_tool_choice(body.get("tool_choice"), reply)
            if contradiction is not None:
                problem = f"request {number}: script and request disagree: {contradiction}"
                self.problems.append(problem)
                return api_error(400, problem, code="sim_script_mismatch")
        latency = spec.latency or self.scenario.latency
        stream = bool(body.get("stream"))
        if not stream and latency.first_byte:
            await asyncio.sleep(latency.first_byte)
        if spec.error is not None and spec.error.in_stream and stream:
            error = {"message": spec.error.message, "type": spec.error.type or "server_error",
                     "param": None, "code": spec.error.code}  # fmt: skip
            return StreamingResponse(
                _events(protocol.failed(error, asked), b"", None, latency), media_type="text/event-stream"
            )
        if spec.error is not None:
            headers = (
                {"retry-after": f"{spec.error.retry_after:g}"} if spec.error.retry_after is not None else None
            )
            return api_error(
                spec.error.status,
                spec.error.message,
                error_type=spec.error.type or "api_error",
                code=spec.error.code,
                headers=headers,
            )
        if spec.malformed:
            kind = "text/event-stream" if stream else "application/json"
            return Response(protocol.broken(stream), media_type=kind)
        if not stream:
            wire = protocol.reply(reply, asked, refusal=spec.refusal is not None)
            if spec.cut_after_chunks is not None:  # not streamed: the body itself is cut short
                encoded = json.dumps(wire).encode()
                return Response(encoded[: len(encoded) // 2], media_type="application/json")
            return JSONResponse(wire)
        frames = protocol.stream(reply, asked, refusal=spec.refusal is not None)
        return StreamingResponse(
            _events(frames, protocol.closing, spec.cut_after_chunks, latency), media_type="text/event-stream"
        )


async def _events(
    frames: list[bytes], closing: bytes, cut_after: int | None, latency: Latency
) -> AsyncIterator[bytes]:
    if latency.first_byte:
        await asyncio.sleep(latency.first_byte)
    for number, frame in enumerate(frames):
        if cut_after is not None and number >= cut_after:
            return
        if number and latency.between_chunks:
            await asyncio.sleep(latency.between_chunks)
        yield frame
    if closing:
        yield closing
