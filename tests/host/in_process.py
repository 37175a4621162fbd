"""The simulator spoken to in process through the real SDK: an httpx2 ASGI transport stands where the
network would be."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TypeVar

import httpx2
from openai import AsyncOpenAI

from sim.core.problems import Problem
from sim.host.app import Host
from sim.scenario import load_scenario
from sim.scenario.answerer import ScriptAnswerer, scenario_host

T = TypeVar("T")


def simulator(tmp_path: Path, text: str) -> Host[ScriptAnswerer]:
    """A simulator playing the scenario `text` (dedented), written into `tmp_path`."""
    path = tmp_path / "scenario.yaml"
    path.write_text(textwrap.dedent(text))
    return scenario_host(load_scenario(path))


def messages(problems: Iterable[Problem]) -> list[str]:
    """What each problem says to people."""
    return [problem.message for problem in problems]


def talk(sim: Host[ScriptAnswerer], conversation: Callable[[AsyncOpenAI], Awaitable[T]]) -> T:
    """`conversation` run with an SDK client whose requests `sim` answers, no retries."""

    async def run() -> T:
        http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=sim.app))
        client = AsyncOpenAI(
            base_url="http://sim.test/v1", api_key="sk-test", max_retries=0, http_client=http
        )
        async with client:
            return await conversation(client)

    return asyncio.run(run())
