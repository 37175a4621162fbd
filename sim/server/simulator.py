"""`Simulator`: answers `POST /v1/chat/completions` from a scenario's replies, in order, like the real API.

It validates each request as the API does (HTTP 400 with the API's error shape), applies the scenario's
`expect_request` checks, plays scripted errors, malformed bodies, cut streams and latency, and keeps what
it was asked so a run can be judged afterwards. Mount `simulator.app` in any ASGI server, or use it in
process through `httpx2.ASGITransport`.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator, Callable, MutableSequence
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from sim.adapters.chat_wire import (
    chunks_to_wire,
    completion_to_wire,
    estimate_usage,
    request_from_wire,
)
from sim.core.errors import MessageContractError
from sim.core.json_text import loads
from sim.core.model import ModelReply, ModelRequest
from sim.scenario.expectations import check_request
from sim.scenario.schema import Latency, Scenario, ScriptedReplySpec
from sim.scenario.world import scripted_reply

CREATED = 1_700_000_000
"""The `created` time of every reply: fixed, so that replies are byte-stable."""


def api_error(
    status: int,
    message: str,
    *,
    error_type: str = "invalid_request_error",
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """An error response shaped like the real API's."""
    body = {"error": {"message": message, "type": error_type, "param": None, "code": code}}
    return JSONResponse(body, status_code=status, headers=headers)


@dataclass(frozen=True, slots=True)
class RefusedParameter:
    """A request parameter the API would refuse, or that sim does not honour."""

    param: str
    message: str
    code: str = "invalid_type"


_TYPED = (("model", str, "a string"), ("stream", bool, "a boolean"), ("stream_options", dict, "an object"),
          ("n", int, "an integer"), ("logprobs", bool, "a boolean"), ("max_tokens", int, "an integer"),
          ("max_completion_tokens", int, "an integer"))  # fmt: skip


def refused_parameter(body: dict[str, Any]) -> RefusedParameter | None:
    """What the API would answer with a 400, or what sim cannot honour (a simulator that answered one
    choice to `n: 2`, or null to `logprobs: true`, would pass tests that it should fail)."""
    for name, kind, label in _TYPED:
        value = body.get(name)
        if value is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
            return RefusedParameter(
                name, f"Invalid type for '{name}': expected {label}, but got {type(value).__name__}."
            )
    options = body.get("stream_options")
    if options is not None and not body.get("stream"):
        return RefusedParameter(
            "stream_options", "The 'stream_options' parameter is only allowed when 'stream' is enabled."
        )
    if options is not None and not isinstance(options.get("include_usage", False), bool):
        return RefusedParameter("stream_options.include_usage", "Invalid type for 'include_usage'.")
    if body.get("n") not in (None, 1):
        message = f"sim serves one choice per request: n must be 1, not {body['n']}."
        return RefusedParameter("n", message, "unsupported_value")
    for param in ("logprobs", "top_logprobs"):
        if body.get(param) not in (None, False):
            message = f"sim does not simulate log probabilities: '{param}' is not supported."
            return RefusedParameter(param, message, "unsupported_parameter")
    return _refused_tool_choice(body.get("tool_choice"), body.get("tools"))


def _refused_tool_choice(choice: Any, tools: Any) -> RefusedParameter | None:
    if choice is None or choice in ("none", "auto", "required"):
        return None
    name = _named_choice(choice)
    if name is None:
        return RefusedParameter(
            "tool_choice",
            "Invalid value for 'tool_choice': expected 'none', 'auto', 'required' or"
            " {'type': 'function', 'function': {'name': ...}}.",
        )
    offered = [
        tool["function"].get("name")
        for tool in tools or []
        if isinstance(tool, dict) and isinstance(tool.get("function"), dict)
    ]
    if name not in offered:
        return RefusedParameter(
            "tool_choice",
            f"Invalid value for 'tool_choice': no function named '{name}' was specified in 'tools'.",
            "invalid_value",
        )
    return None


def _named_choice(choice: Any) -> str | None:
    """The function a `tool_choice` names, if it names one."""
    if not isinstance(choice, dict) or choice.get("type") != "function":
        return None
    function = choice.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) else None


def contradicts_tool_choice(choice: Any, reply: ModelReply) -> str | None:
    """How a scripted reply contradicts the request's `tool_choice` (the real model could not answer so)."""
    calls = [call.name for call in reply.message.tool_calls]
    if choice == "required" and not calls:
        return "the request says tool_choice 'required', but the scripted reply calls no tool"
    if choice == "none" and calls:
        return f"the request says tool_choice 'none', but the scripted reply calls {', '.join(calls)}"
    name = _named_choice(choice)
    if name is not None and (not calls or any(call != name for call in calls)):
        return f"the request says tool_choice {name!r}, but the scripted reply calls {calls or 'no tool'}"
    return None


class Simulator:
    """One scenario being served: what comes next, what was asked, and what went wrong."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        cycle: bool = False,
        on_consumed: Callable[[], Any] | None = None,
    ) -> None:
        self.scenario = scenario
        self.cycle = cycle
        self.on_consumed = on_consumed
        self.steps: list[tuple[ScriptedReplySpec, ModelReply]] = [
            (spec, scripted_reply(spec, ids))
            for spec, ids in zip(scenario.replies, scenario.call_ids(), strict=True)
        ]
        self.requests: MutableSequence[ModelRequest] = deque(maxlen=len(self.steps)) if cycle else []
        """The requests answered (in cycle mode only the latest round, so memory stays bounded)."""
        self.received = 0
        """Every request received, answered or not."""
        self.problems: list[str] = []
        self.answered = 0
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat_completions, methods=["POST"]),
                Route("/chat/completions", self.chat_completions, methods=["POST"]),
                Route("/v1/models", self.models, methods=["GET"]),
                Route("/models", self.models, methods=["GET"]),
            ]
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

    async def models(self, request: Request) -> Response:
        """`GET /v1/models`: the scenario's model."""
        model = {"id": self.scenario.model, "object": "model", "created": CREATED, "owned_by": "sim"}
        return JSONResponse({"object": "list", "data": [model]})

    async def chat_completions(self, request: Request) -> Response:
        """`POST /v1/chat/completions`: the next scripted reply, or the error the API would send."""
        try:
            body = loads(await request.body())
        except ValueError:
            return api_error(400, "We could not parse the JSON body of your request.")
        self.received += 1
        number = self.received
        if not isinstance(body, dict):
            return api_error(400, "The request body must be a JSON object.")
        if (refused := refused_parameter(body)) is not None:
            self.problems.append(f"request {number}: invalid request: {refused.param}: {refused.message}")
            error = {"message": refused.message, "type": "invalid_request_error", "param": refused.param,
                     "code": refused.code}  # fmt: skip
            return JSONResponse({"error": error}, status_code=400)
        try:
            decoded = request_from_wire(body)
        except MessageContractError as error:
            self.problems.append(f"request {number}: invalid request: {error}")
            return api_error(400, f"Invalid request: {error}")
        if self.consumed and not self.cycle:
            problem = (
                f"scenario {self.scenario.name} has no reply left for request {number}"
                f" (it scripts {len(self.steps)})"
            )
            self.problems.append(problem)
            return api_error(400, problem, code="sim_script_exhausted")
        self.requests.append(decoded)
        index = self.answered % len(self.steps)
        self.answered += 1
        response = await self._answer(index, decoded, body, number)
        if self.on_consumed is not None and self.consumed:  # whatever the last answer was
            response.background = BackgroundTask(self.on_consumed)
        return response

    async def _answer(self, index: int, decoded: ModelRequest, body: dict[str, Any], number: int) -> Response:
        """The response to scripted reply `index`: an expectation failure, an error, or the reply."""
        spec, reply = self.steps[index]
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
        model = str(body.get("model") or self.scenario.model)
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
            broken = b'data: {"id": "chatcmpl-\n\n' if stream else b'{"id": "chatcmpl-'
            return Response(broken, media_type="text/event-stream" if stream else "application/json")
        completion_id = f"chatcmpl-sim{number:06d}"
        if not stream:
            usage = estimate_usage(decoded, reply)
            wire = completion_to_wire(
                reply, completion_id=completion_id, created=CREATED, model=model, usage=usage
            )
            if spec.cut_after_chunks is not None:  # not streamed: the body itself is cut short
                encoded = json.dumps(wire).encode()
                return Response(encoded[: len(encoded) // 2], media_type="application/json")
            return JSONResponse(wire)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunks = chunks_to_wire(
            reply,
            completion_id=completion_id,
            created=CREATED,
            model=model,
            usage=estimate_usage(decoded, reply) if include_usage else None,
        )
        return StreamingResponse(
            _events(chunks, spec.cut_after_chunks, latency), media_type="text/event-stream"
        )


async def _events(
    chunks: list[dict[str, Any]], cut_after: int | None, latency: Latency
) -> AsyncIterator[bytes]:
    if latency.first_byte:
        await asyncio.sleep(latency.first_byte)
    for number, chunk in enumerate(chunks):
        if cut_after is not None and number >= cut_after:
            return
        if number and latency.between_chunks:
            await asyncio.sleep(latency.between_chunks)
        yield b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"
    yield b"data: [DONE]\n\n"
