"""Hostile use of what the Responses API keeps: requests whose weight lies outside the conversation's text
(huge tool schemas, images, metadata) must still count against the store limit, so the limit bounds memory."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2
import pytest
from openai import AsyncOpenAI

from sim.host.transport import transport
from sim.wire import Api
from tests.host.in_process import simulator

SCRIPT = """
prompt: p
replies:
  - content: ok
"""
LIMIT = 1_000_000
HUGE = 200_000


def _tool(number: int) -> Any:
    return {"type": "function", "name": "lookup", "description": f"{number}" + "d" * HUGE, "strict": False,
            "parameters": {"type": "object", "properties": {}}}  # fmt: skip


def _image(number: int) -> Any:
    url = f"data:image/png;base64,{number}" + "A" * HUGE
    parts = [{"type": "input_text", "text": "p"}, {"type": "input_image", "image_url": url, "detail": "auto"}]
    return [{"role": "user", "content": parts}]


@pytest.mark.parametrize("what", ["tools", "image"])
def test_what_a_request_carries_beside_its_text_counts_against_the_store_limit(
    tmp_path: Path, what: str
) -> None:
    sim = simulator(tmp_path, SCRIPT, cycle=True, store_limit=LIMIT)

    async def run() -> None:
        http = httpx2.AsyncClient(transport=transport(sim))
        async with AsyncOpenAI(
            base_url="http://sim.test/v1", api_key="sk", http_client=http, max_retries=0
        ) as c:
            for number in range(40):
                if what == "tools":
                    await c.responses.create(model="m", input="p", tools=[_tool(number)])
                else:
                    await c.responses.create(model="m", input=_image(number))

    asyncio.run(run())
    store = sim.servers[Api.responses].store  # type: ignore[attr-defined]
    assert store.bytes <= LIMIT
    assert 0 < len(store) <= LIMIT // HUGE  # each kept response holds its request's 200 KB
