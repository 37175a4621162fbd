"""The Responses store: each response kept once, by reference to the one it continues; bounded in bytes,
the least recently used forgotten first."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2
import yaml

from sim.core.messages import AssistantMessage, UserMessage
from sim.scenario import load_scenario
from sim.server import Simulator
from sim.server.response_store import ResponseStore

CALL = {"tool_calls": [{"name": "lookup", "arguments": {"city": "Paris"}}]}


def test_a_chain_holds_each_message_once() -> None:
    store = ResponseStore()
    store.put("r1", None, [UserMessage(content="hi"), AssistantMessage(content="a")])
    store.put("r2", "r1", [UserMessage(content="more"), AssistantMessage(content="b")])
    conversation = store.conversation("r2")
    assert conversation is not None and [m.content for m in conversation] == ["hi", "a", "more", "b"]
    assert store.length("r2") == 4 and store.conversation("missing") is None


def test_the_least_recently_used_is_forgotten_past_the_limit_and_a_chain_to_it_is_not_found() -> None:
    big = "x" * 10_000
    store = ResponseStore(limit_bytes=25_000)
    store.put("old", None, [UserMessage(content=big)])
    store.put("used", None, [UserMessage(content=big)])
    assert store.conversation("old") is not None  # used again: now the newest
    store.put("new", None, [UserMessage(content=big)])
    assert store.conversation("used") is None and store.conversation("old") is not None
    assert store.bytes <= 25_000


def test_a_long_chain_holds_each_message_once(tmp_path: Path) -> None:
    """Each stored response holds only what it added to the one it continues: a chain of 400 requests keeps
    about 3 messages a request (input, call, result), not the whole conversation again for each."""
    requests = 400
    path = tmp_path / "chain.yaml"
    replies = [CALL] * (requests - 1) + [{"content": "done"}]
    path.write_text(yaml.safe_dump({"tools": [{"name": "lookup"}], "replies": replies}))
    sim = Simulator(load_scenario(path))

    async def chain() -> None:
        transport = httpx2.ASGITransport(app=sim.app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://sim.test") as client:
            body: dict[str, Any] = {
                "model": "m",
                "input": "go",
                "tools": [{"type": "function", "name": "lookup"}],
            }
            for _ in range(requests):
                response = (await client.post("/v1/responses", json=body)).json()
                calls = [item for item in response["output"] if item["type"] == "function_call"]
                outputs = [
                    {"type": "function_call_output", "call_id": c["call_id"], "output": "sunny"}
                    for c in calls
                ]
                body = {**body, "previous_response_id": response["id"], "input": outputs}

    asyncio.run(chain())
    assert sim.problems == [] and len(sim.responses.store) == requests
    assert sim.responses.store.messages_held == 2 * requests  # the first request's input, then a result and
    # a reply each time: 1 + 1 + 2 * (requests - 1)
