"""Each framework's weather agent recorded once and replayed offline by sim's pytest marker.

Replay, offline, no key (the default, `--sim-record=none`):  pytest examples/frameworks/test_weather.py
Record again, in one process (here `sim serve examples/frameworks/weather.yaml --cycle --port 8000` stands in
for the live API):
  OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=... pytest examples/frameworks --sim-record=all -n 0
Cassettes are kept in `cassettes/test_weather/`, one per test; the key is never written.
"""

from __future__ import annotations

import asyncio
import os

import pytest
from openai import AsyncOpenAI, OpenAI

from examples.frameworks import agents_weather, langchain_weather, pydantic_ai_weather, raw_sdk_weather

PROMPT = "What is the weather in Paris?"
ANSWER = "It is sunny in Paris."


RECORDED_AT = "http://127.0.0.1:8000/v1"
"""Where the cassettes were recorded. A replay uses it too: frameworks send some fields only to OpenAI's own
endpoint (openai-agents adds `store` and `prompt_cache_key`), so the requests must go where they went."""


def _where() -> dict[str, str]:
    """The endpoint: the one recorded from when replaying (the key is the SDK's to read: a replay without
    one has the marker's placeholder)."""
    return {"base_url": os.environ.get("OPENAI_BASE_URL", RECORDED_AT)}


@pytest.mark.sim_cassette
@pytest.mark.parametrize("responses", [False, True], ids=["chat", "responses"])
def test_raw_sdk(responses: bool) -> None:
    run = raw_sdk_weather.run_responses if responses else raw_sdk_weather.run_chat
    with OpenAI(max_retries=0, **_where()) as client:
        assert run(client, PROMPT) == ANSWER


@pytest.mark.sim_cassette
@pytest.mark.parametrize("chat", [False, True], ids=["responses", "chat"])
def test_openai_agents(chat: bool) -> None:
    async def go() -> str:
        async with AsyncOpenAI(max_retries=0, **_where()) as client:
            return await (agents_weather.run_chat if chat else agents_weather.run)(client, PROMPT)

    assert asyncio.run(go()) == ANSWER


@pytest.mark.sim_cassette
def test_pydantic_ai() -> None:
    async def go() -> str:
        async with AsyncOpenAI(max_retries=0, **_where()) as client:
            return await pydantic_ai_weather.run(client, PROMPT)

    assert asyncio.run(go()) == ANSWER


@pytest.mark.sim_cassette
def test_langchain() -> None:
    with OpenAI(max_retries=0, **_where()) as client:
        assert langchain_weather.run(client, PROMPT) == ANSWER
