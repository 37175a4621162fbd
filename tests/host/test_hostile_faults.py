"""Hostile use of scripted network faults over a real server: a client that gives up during a stall must
not leave `sim serve --once` waiting for nothing."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from openai import AsyncOpenAI, OpenAI

from sim.host.transport import transport
from tests.host.in_process import simulator
from tests.host.processes import served

STALLED = """
prompt: p
replies:
  - content: Late, but here.
    fault: stall
    stall_seconds: 30
"""


@pytest.mark.parametrize("stream", [False, True])
def test_serve_once_ends_when_the_client_gives_up_on_a_stalled_last_reply(
    tmp_path: Path, stream: bool
) -> None:
    scenario = tmp_path / "stalled.yaml"
    scenario.write_text(STALLED)
    with served(scenario, "--once", "--quiet") as (process, url):
        client = OpenAI(base_url=url, api_key="sk-test", max_retries=0, timeout=1.0)
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "p"}], stream=stream
            )
        try:
            process.wait(timeout=10)  # well before the stall's 30 s
        except subprocess.TimeoutExpired:
            pytest.fail("sim serve --once still serving after its last reply's client gave up")


def test_a_stall_given_up_on_in_process_is_logged_at_once(tmp_path: Path) -> None:
    sim = simulator(tmp_path, STALLED)
    told: list[Any] = []
    sim.on_answered = told.append

    async def run() -> None:
        http = httpx2.AsyncClient(transport=transport(sim))
        client = AsyncOpenAI(base_url="http://sim.test/v1", api_key="sk", http_client=http, max_retries=0)
        async with client:
            with pytest.raises(openai.APITimeoutError):
                await client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "p"}], stream=True, timeout=0.2
                )
            assert [answered.said for answered in told] != []  # before anything is collected

    asyncio.run(run())
