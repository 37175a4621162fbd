"""A scenario as the recording it stands for, so that `sim drift` can ask it again: played through the real
loop and SDK against its own simulator (as `sim play --via sdk` plays it), the traffic kept, and written
as a cassette whose replies are the scenario's scripted ones. Its scripted latency is left out: the waits
stand for a model, and drift asks the live one."""

from __future__ import annotations

from pathlib import Path

import httpx2

from sim.cassette.writer import HttpExchange, write_cassette
from sim.core.errors import ScenarioError
from sim.player import play_scenario
from sim.scenario.loader import load_scenario
from sim.scenario.schema import Latency, Scenario
from sim.wire import Api


class _Keeping(httpx2.AsyncBaseTransport):
    """A transport that keeps each request and response that passes through it."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, kept: list[HttpExchange]) -> None:
        self.inner = inner
        self.kept = kept

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        body = await response.aread()
        self.kept.append(
            HttpExchange(
                method=request.method,
                uri=str(request.url),
                request_headers={"content-type": ["application/json"]},
                request_body=request.content,
                status=response.status_code,
                reason=response.reason_phrase,
                response_headers={
                    k.lower(): [v] for k, v in response.headers.items() if k.lower() == "content-type"
                },
                response_body=body,
            )
        )
        return httpx2.Response(response.status_code, headers=response.headers, content=body)


async def recording_of(scenario_path: Path, cassette: Path, *, api: Api = Api.chat) -> None:
    """Write at `cassette` the recording `scenario_path` stands for, over `api`; `ScenarioError` when the
    scenario cannot be played (no prompt, or it does not pass)."""
    scenario = _without_latency(load_scenario(scenario_path))
    kept: list[HttpExchange] = []
    report = await play_scenario(
        scenario, path=scenario_path, via="sdk", api=api, wrap=lambda inner: _Keeping(inner, kept)
    )
    if not report.passed:
        raise ScenarioError(
            f"{scenario_path}: it does not pass, so it stands for no recording: {report.problems[0]}"
        )
    write_cassette(cassette, kept, sim=None, secrets=())


def _without_latency(scenario: Scenario) -> Scenario:
    """`scenario` answering at once: no latency of its own or of any reply."""
    replies = [reply.model_copy(update={"latency": None}) for reply in scenario.replies]
    return scenario.model_copy(update={"latency": Latency(), "replies": replies})
