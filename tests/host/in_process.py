"""The simulator spoken to in process, through the real SDK or a plain HTTP client: an httpx2 ASGI transport
stands where the network would be."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import httpx2
from openai import AsyncOpenAI

from sim.core.problems import Problem
from sim.host.app import Host
from sim.scenario import load_scenario
from sim.scenario.answerer import ScriptAnswerer, scenario_host

T = TypeVar("T")

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def simulator(
    tmp_path: Path, text: str, *, file: str = "scenario.yaml", **options: Any
) -> Host[ScriptAnswerer]:
    """A simulator playing the scenario `text` (dedented), written into `tmp_path` as `file`; `options` go to
    `scenario_host` (`cycle`, `on_finished`, `store_limit`, ...)."""
    path = tmp_path / file
    path.write_text(textwrap.dedent(text))
    return scenario_host(load_scenario(path), **options)


def bundled(name: str = "echo-42", **options: Any) -> Host[ScriptAnswerer]:
    """A simulator playing the bundled scenario `scenarios/NAME.yaml`; `options` go to `scenario_host`."""
    return scenario_host(load_scenario(SCENARIOS / f"{name}.yaml"), **options)


def messages(problems: Iterable[Problem]) -> list[str]:
    """What each problem says to people."""
    return [problem.message for problem in problems]


def talk(
    sim: Host[ScriptAnswerer], conversation: Callable[[AsyncOpenAI], Awaitable[T]], *, retries: int = 0
) -> T:
    """`conversation` run with an SDK client whose requests `sim` answers, retrying up to `retries` times."""

    async def run() -> T:
        http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=sim.app))
        client = AsyncOpenAI(
            base_url="http://sim.test/v1", api_key="sk-test", max_retries=retries, http_client=http
        )
        async with client:
            return await conversation(client)

    return asyncio.run(run())


def post(
    host: Host[Any],
    *bodies: dict[str, Any] | bytes,
    path: str = "/v1/chat/completions",
    headers: dict[str, str] | None = None,
    raise_app_exceptions: bool = True,
) -> list[httpx2.Response]:
    """Each of `bodies` posted to `path` in turn (data as JSON, bytes as they are) by a plain HTTP client that
    `host` answers; with `raise_app_exceptions` off, an exception in the app is a 500 instead."""

    async def send() -> list[httpx2.Response]:
        transport = httpx2.ASGITransport(app=host.app, raise_app_exceptions=raise_app_exceptions)
        async with httpx2.AsyncClient(transport=transport, base_url="http://sim.test") as client:
            return [
                await client.post(path, content=body, headers=headers)
                if isinstance(body, bytes)
                else await client.post(path, json=body, headers=headers)
                for body in bodies
            ]

    return asyncio.run(send())
