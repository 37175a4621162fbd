"""The Responses store: each response a view of a list shared along its chain (each message held once);
bounded in bytes, the least recently used forgotten first, a list let go with its last view."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2
import yaml

from sim.core.messages import (
    AssistantMessage,
    HistoryView,
    SharedPrefix,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from sim.scenario import load_scenario
from sim.server import Simulator
from sim.server.response_store import ResponseStore

CALL = {"tool_calls": [{"name": "lookup", "arguments": {"city": "Paris"}}]}


def _continued(store: ResponseStore, parent: str, *messages: str) -> SharedPrefix:
    found = store.conversation(parent)
    assert found is not None
    return found.extended(UserMessage(content=m) if n % 2 == 0 else AssistantMessage(content=m)
                          for n, m in enumerate(messages))  # fmt: skip


def test_a_chain_holds_each_message_once_in_one_list() -> None:
    store = ResponseStore()
    store.put("r1", [UserMessage(content="hi"), AssistantMessage(content="a")])
    store.put("r2", _continued(store, "r1", "more", "b"))
    conversation, first = store.conversation("r2"), store.conversation("r1")
    assert conversation is not None and [m.content for m in conversation] == ["hi", "a", "more", "b"]
    assert first is not None and [m.content for m in first] == ["hi", "a"]
    assert conversation.shared is first.shared and store.messages_held == 4
    assert store.length("r2") == 4 and store.conversation("missing") is None


def test_a_branch_from_an_older_response_leaves_the_other_branch_as_it_was() -> None:
    store = ResponseStore()
    store.put("r1", [UserMessage(content="hi"), AssistantMessage(content="a")])
    store.put("r2", _continued(store, "r1", "left", "b"))
    store.put("r3", _continued(store, "r1", "right", "c"))
    left, right = store.conversation("r2"), store.conversation("r3")
    assert left is not None and [m.content for m in left] == ["hi", "a", "left", "b"]
    assert right is not None and [m.content for m in right] == ["hi", "a", "right", "c"]
    assert left.shared is not right.shared


def test_the_least_recently_used_is_forgotten_past_the_limit_and_a_chain_to_it_is_not_found() -> None:
    big = "x" * 10_000
    store = ResponseStore(limit_bytes=25_000)
    store.put("old", [UserMessage(content=big)])
    store.put("used", [UserMessage(content=big)])
    assert store.conversation("old") is not None  # used again: now the newest
    store.put("new", [UserMessage(content=big)])
    assert store.conversation("used") is None and store.conversation("old") is not None
    assert store.bytes <= 25_000


def test_a_conversation_that_outgrows_the_limit_is_let_go_whole() -> None:
    """Its messages are held while any response of it is kept: forgetting only its oldest responses frees
    nothing, so the store goes on, least recently used first, down to the newest response (always kept),
    and lets the list go with that one."""
    store = ResponseStore(limit_bytes=32_000)
    store.put("other", [UserMessage(content="y" * 5_000)])
    store.put("r0", [UserMessage(content="x" * 8_000)])
    for n in range(1, 4):
        store.put(f"r{n}", _continued(store, f"r{n - 1}", "x" * 8_000))
    assert len(store) == 1 and store.conversation("r3") is not None
    assert store.bytes == 4 * 8_500 and store.messages_held == 4  # each message counted once
    store.put("after", [UserMessage(content="z")])
    assert len(store) == 1 and store.conversation("r3") is None and store.bytes == 501


def test_a_long_chain_holds_each_message_once(tmp_path: Path) -> None:
    """Each request and each stored response is a view of one list, grown by what each request adds: a chain
    of 400 requests holds 2 messages a request (a result and a reply), not the whole conversation again for
    each; and a request refused in between (a result for no call) adds nothing to it. With instructions, as
    agents send them, so that the system prompt stands in front of the shared list."""
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
                "instructions": "Be brief.",
                "input": "go",
                "tools": [{"type": "function", "name": "lookup"}],
            }
            for number in range(requests):
                if number == 200:
                    orphan = [{"type": "function_call_output", "call_id": "call_nobody", "output": "?"}]
                    refused = await client.post("/v1/responses", json={**body, "input": orphan})
                    assert refused.status_code == 400, refused.text
                response = (await client.post("/v1/responses", json=body)).json()
                calls = [item for item in response["output"] if item["type"] == "function_call"]
                outputs = [
                    {"type": "function_call_output", "call_id": c["call_id"], "output": "sunny"}
                    for c in calls
                ]
                body = {**body, "previous_response_id": response["id"], "input": outputs}

    asyncio.run(chain())
    assert len(sim.problems) == 1 and "orphan tool result id: call_nobody" in sim.problems[0]
    assert len(sim.responses.store) == requests
    assert sim.responses.store.messages_held == 2 * requests  # the first request's input, then a result and
    # a reply each time: 1 + 1 + 2 * (requests - 1)
    views = [request.messages for request in sim.requests]
    assert all(isinstance(view, HistoryView) for view in views)
    assert len({id(view.dialogue.shared) for view in views if isinstance(view, HistoryView)}) == 1
    last = views[-1]
    assert len(last) == 1 + 2 * requests - 1 and last[0] == SystemMessage(content="Be brief.")
    assert not any(isinstance(m, ToolMessage) and m.tool_call_id == "call_nobody" for m in last)
