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
from dataclasses import dataclass
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
from sim.scenario.outline import summary
from sim.scenario.schema import Latency, Scenario, ScriptedReplySpec
from sim.scenario.world import scripted_reply
from sim.server.access_log import Answered, why_refused
from sim.wire.chat import ChatProtocol
from sim.wire.requests import CREATED, Asked, Refused, RefusedError, WireProtocol
from sim.wire.response_store import STORE_LIMIT_BYTES
from sim.wire.responses import ResponsesProtocol
from sim.wire.tool_choice import contradicts_tool_choice

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
        on_finished: Callable[[], Any] | None = None,
        store_limit: int = STORE_LIMIT_BYTES,
        keep_requests: bool = True,
        on_answered: Callable[[Answered], None] | None = None,
    ) -> None:
        self.scenario = scenario
        self.on_answered = on_answered
        """Told of each request as it is answered (the access log)."""
        self.cycle = cycle
        self.on_finished = on_finished
        """Called once, after the answer that finished the scenario (see `finished`); from then on every
        request is answered `sim_scenario_finished` (what `sim serve --once` does in its grace period)."""
        self.told_finished = False
        self._erred: _ErrorServed | None = None
        """The last request answered with a scripted error that says how many retries it expects."""
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

    @property
    def finished(self) -> bool:
        """Whether the scenario is over: every reply sent (and every retry it expects made), or it failed."""
        if self.cycle:
            return bool(self.problems)
        waiting = self._erred is not None and self._erred.left > 0
        return bool(self.problems) or (self.consumed and not waiting)

    def unused(self) -> list[str]:
        """A line for replies never requested, and for retries a scripted error expected and never got."""
        left = len(self.steps) - self.answered
        lines = []
        if left > 0 and not self.cycle:
            lines.append(
                f"simulator for {self.scenario.name} has {left} unused of {len(self.steps)} scripted replies"
            )
        if self._erred is not None and self._erred.left > 0:
            lines.append(self._erred.too_few())
        return lines

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
        """The answer to one request; the first answer after which the scenario is finished says so."""
        answered = self.answered
        if self.told_finished:
            response = self._after_the_end(self._is_retry(request, await request.body()))
        else:
            response = await self._respond(request, protocol)
        if self.on_answered is not None:
            said = self._said(response, answered)
            self.on_answered(Answered(protocol.name, self.received, response.status_code, said))
        if self.on_finished is not None and self.finished and not self.told_finished:
            self.told_finished = True
            response.background = BackgroundTask(self.on_finished)
        return response

    def _said(self, response: Response, answered: int) -> str:
        """What `response` served (the scripted reply it sent, an error the script says included), or why it
        served none."""
        if self.answered > answered:
            index = answered % len(self.steps)
            spec = self.steps[index][0]
            if response.status_code < 400 or (
                spec.error is not None and spec.error.status == response.status_code
            ):
                return f"reply {index + 1} of {len(self.steps)}: {summary(spec)}"
        return why_refused(bytes(response.body)) if hasattr(response, "body") else "an error"

    def _is_retry(self, request: Request, raw: bytes) -> bool:
        """Whether `request` retries the last one a scripted error with `retries` answered: as the SDKs say
        (`x-stainless-retry-count` above 0), or for a client that does not say, by sending the same body."""
        if self._erred is None:
            return False
        said = request.headers.get("x-stainless-retry-count", "")
        return int(said) > 0 if said.isdigit() else raw == self._erred.body

    def _after_the_end(self, again: bool) -> Response:
        """A request after the scenario finished: never answered from the script, never worth retrying (a
        retry of a scripted error that expects no more is said to be one)."""
        self.received += 1
        number = self.received
        erred = self._erred
        if not self.problems and erred is not None and erred.left == 0 and again:
            retried = self._retried(again, number)  # one retry more than it expects: said as that
            if retried is not None:
                return retried
        if self.problems:
            why = f"it failed: {self.problems[0]}"
        else:
            why = f"its {len(self.steps)} replies were sent"
            self.problems.append(
                f"request {number} came after scenario {self.scenario.name} finished (a retry it did not"
                " expect? a scripted error says how many it expects with `retries: N`)"
            )
        message = f"sim: scenario {self.scenario.name} is finished ({why}); request {number} gets no reply"
        return api_error(400, message, code="sim_scenario_finished", headers={"x-should-retry": "false"})

    async def _respond(self, request: Request, protocol: WireProtocol) -> Response:
        """The next scripted reply, or the error the API would send."""
        raw = await request.body()
        try:
            body = loads(raw, strict=True)  # no lone surrogate: it could not be answered
        except ValueError:
            return api_error(400, "We could not parse the JSON body of your request.")
        self.received += 1
        self.received_by[protocol.name] += 1
        number = self.received
        if (retried := self._retried(self._is_retry(request, raw), number)) is not None:
            return retried
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
        scripted = step[0].error
        retrying = self._erred is not None and self._erred.left > 0  # this answers a retry it expects
        if scripted is not None and scripted.retries is not None and not retrying:
            self._erred = _ErrorServed(raw, number, index, scripted.retries, scripted.retries)
        return await self._answer(protocol, index, step, asked)

    def _retried(self, again: bool, number: int) -> Response | None:
        """Whether this request is the retry the last scripted error with `retries: N` expects: a retry past
        them, or another request while one is expected, is an expectation failure; None otherwise (a retry
        it expects takes the next scripted reply)."""
        erred = self._erred
        if erred is None:
            return None
        if not again:
            self._erred = None
            if erred.left == 0:
                return None
            self.problems.append(erred.too_few())
            return api_error(400, erred.too_few(), code="sim_expectation_failed")
        if erred.left == 0:
            problem = (
                f"request {number} retries request {erred.number}, but replies[{erred.index}] expects"
                f" {_retries(erred.expected)}"
            )
            self.problems.append(problem)
            return api_error(400, problem, code="sim_unexpected_retry", headers={"x-should-retry": "false"})
        erred.left -= 1
        return None

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
        if spec.expect_request is not None:  # in every round of a cycle too
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


def _retries(count: int) -> str:
    return "no retry" if count == 0 else "1 retry" if count == 1 else f"{count} retries"


@dataclass(slots=True)
class _ErrorServed:
    """A request answered with a scripted error that expects `expected` retries (each answered by the next
    scripted reply): its body (a retry sends the same), its number, the reply's index, and how many
    retries are still expected."""

    body: bytes
    number: int
    index: int
    expected: int
    left: int

    def too_few(self) -> str:
        made = self.expected - self.left
        expected = _retries(self.expected)
        return (
            f"replies[{self.index}] expects {expected} of request {self.number}, but the client made {made}"
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
