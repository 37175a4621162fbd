"""The Responses store: each response a view of a list shared along its chain (each message held once);
bounded in bytes of memory, the least recently used forgotten first, a list let go with its last view (a
conversation past the limit whole)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2
import openai
import yaml
from openai import AsyncOpenAI

from sim.core.messages import (
    AssistantMessage,
    HistoryView,
    SharedPrefix,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from sim.wire import Api
from sim.wire.response_store import ResponseStore
from tests.host.in_process import messages, simulator, talk

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
    """Its messages are held while any response of it is kept, so forgetting only its oldest responses
    would free nothing: past the limit it goes whole, its newest response too, and a smaller conversation
    kept beside it stays. Within the limit, each message is counted once."""
    store = ResponseStore(limit_bytes=32_000)
    store.put("other", [UserMessage(content="y" * 5_000)])
    store.put("r0", [UserMessage(content="x" * 8_000)])
    for n in range(1, 3):
        store.put(f"r{n}", _continued(store, f"r{n - 1}", "x" * 8_000))
    assert len(store) == 4 and store.messages_held == 4 and store.bytes == 5_500 + 3 * 8_500
    store.put("r3", _continued(store, "r2", "x" * 8_000))
    assert [r for r in ("other", "r0", "r1", "r2", "r3") if store.conversation(r) is not None] == ["other"]
    assert store.bytes == 5_500 and store.messages_held == 1


def test_one_response_larger_than_the_limit_is_not_kept_and_text_counts_what_it_weighs() -> None:
    """Text is counted as Python holds it: a character outside Latin-1 weighs 2 or 4 bytes, so 8,000 emoji
    are past a 16,000-byte limit where 8,000 ASCII letters are not."""
    store = ResponseStore(limit_bytes=16_000)
    store.put("ascii", [UserMessage(content="x" * 8_000)])
    store.put("emoji", [UserMessage(content="\U0001f600" * 8_000)])
    assert store.conversation("emoji") is None and store.conversation("ascii") is not None
    assert store.bytes == 8_500 and len(store) == 1


def test_a_long_chain_holds_each_message_once(tmp_path: Path) -> None:
    """Each request and each stored response is a view of one list, grown by what each request adds: a chain
    of 400 requests holds 2 messages a request (a result and a reply), not the whole conversation again for
    each; and a request refused in between (a result for no call) adds nothing to it. With instructions, as
    agents send them, so that the system prompt stands in front of the shared list."""
    requests = 400
    replies = [CALL] * (requests - 1) + [{"content": "done"}]
    script = yaml.safe_dump({"tools": [{"name": "lookup"}], "replies": replies})
    sim = simulator(tmp_path, script, file="chain.yaml")

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
    assert (
        len(messages(sim.answerer.problems)) == 1
        and "orphan tool result id: call_nobody" in messages(sim.answerer.problems)[0]
    )
    store = sim.servers[Api.responses].store
    assert len(store) == requests
    assert store.messages_held == 2 * requests  # the first request's input, then a result and
    # a reply each time: 1 + 1 + 2 * (requests - 1)
    views = [request.messages for request in sim.answerer.requests]
    assert all(isinstance(view, HistoryView) for view in views)
    assert len({id(view.dialogue.shared) for view in views if isinstance(view, HistoryView)}) == 1
    last = views[-1]
    assert len(last) == 1 + 2 * requests - 1 and last[0] == SystemMessage(content="Be brief.")
    assert not any(isinstance(m, ToolMessage) and m.tool_call_id == "call_nobody" for m in last)


def test_a_chain_past_the_limit_is_forgotten_and_its_continuation_gets_the_apis_error(tmp_path: Path) -> None:
    """A store limit (256 KiB here, `sim serve --store-limit` in MiB) and a client chaining requests of 25 kB,
    starting a new chain when the one it continues is forgotten: the store never holds more than its limit
    (it held every turn of one chain, past any limit), and a request reaching a forgotten turn gets the
    API's error."""
    limit, requests, size = 2**18, 30, 25_000
    script = yaml.safe_dump({"replies": [{"content": "ok"}] * requests})
    sim = simulator(tmp_path, script, file="chain.yaml", store_limit=limit, keep_requests=False)
    store = sim.servers[Api.responses].store

    async def chain(client: AsyncOpenAI) -> tuple[list[tuple[int, int]], list[tuple[str, Any]]]:
        held, refused, previous = [], [], None
        for number in range(requests):
            text = f"{number} " + "x" * size
            try:
                response = await client.responses.create(model="m", input=text, previous_response_id=previous)
            except openai.BadRequestError as error:
                assert previous is not None
                refused.append((previous, error))
                response = await client.responses.create(model="m", input=text)
            previous = response.id
            held.append((store.bytes, store.messages_held))
        return held, refused

    held, refused = talk(sim, chain)
    assert max(weight for weight, _ in held) <= limit
    assert max(messages for _, messages in held) <= 2 * limit // size
    assert refused, "the chain outgrew the limit and was never forgotten"
    for previous, error in refused:
        assert error.status_code == 400 and error.body == {
            "message": f"Previous response with id '{previous}' not found.",
            "type": "invalid_request_error",
            "param": "previous_response_id",
            "code": "previous_response_not_found",
        }


def test_what_is_kept_beside_a_response_counts_against_the_limit_and_goes_with_it() -> None:
    from sim.core.messages import UserMessage
    from sim.wire.response_store import ResponseStore

    store = ResponseStore(limit_bytes=10_000)
    store.put("resp_1", [UserMessage(content="a")])
    store.keep("resp_1", "body one", 4_000)
    store.keep("resp_gone", "never kept", 4_000)  # nothing is kept beside a response not kept
    assert store.record("resp_1") == "body one" and store.record("resp_gone") is None
    before = store.bytes
    store.put("resp_2", [UserMessage(content="b")])
    store.keep("resp_2", "body two", 4_000)
    store.record("resp_1")  # used: resp_2 is now the least recently used
    store.put("resp_3", [UserMessage(content="c")])
    store.keep("resp_3", "body three", 4_000)
    assert store.record("resp_2") is None and store.length("resp_2") is None  # forgotten whole
    assert store.record("resp_1") == "body one" and store.bytes <= 10_000
    assert store.forget("resp_1") and not store.forget("resp_1")
    assert store.record("resp_1") is None and store.bytes == before  # resp_3 alone weighs what resp_1 did
