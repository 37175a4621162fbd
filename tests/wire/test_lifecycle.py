"""The Responses API's stored responses and background mode, driven by the official SDK (async over the
in-process transport; sync and streaming against `sim serve` on 127.0.0.1, started once for the module):
retrieve (with `include`, and a background stream resumed after a sequence number), delete, cancel, input
items (paged), input token counts as the reported usage counts them, `background: true` polled forward,
and the store's limit over all of it; hostile ids, pages and concurrent polls."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from openai import AsyncOpenAI, OpenAI

from sim.cassette.reader import read_cassette
from sim.host.app import Host
from sim.host.transport import transport
from sim.scenario.answerer import ScriptAnswerer
from sim.wire import Api
from tests.cassette.test_proxy import proxied
from tests.host.in_process import simulator
from tests.host.processes import served, served_to

TOOL: Any = {"type": "function", "name": "lookup", "description": "Looks up.", "strict": False,
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}  # fmt: skip
SCRIPT = """
prompt: p
tools: [{name: lookup}]
replies:
  - content: The command printed 42.
"""
REASONING = """
prompt: p
tools: [{name: lookup}]
replies:
  - content: Sunny in Paris.
    reasoning: The user wants the weather.
"""
SLOW = """
prompt: p
replies:
  - content: Done at last.
    latency: {first_byte: 0.4}
"""


def talk(sim: Host[ScriptAnswerer], conversation: Any) -> Any:
    """`conversation(client)` with an async SDK client whose requests `sim` answers in process."""

    async def run() -> Any:
        http = httpx2.AsyncClient(transport=transport(sim))
        async with AsyncOpenAI(base_url="http://sim.test/v1", api_key="sk-test", http_client=http) as client:
            return await conversation(client)

    return asyncio.run(run())


def raw(sim: Host[ScriptAnswerer], *requests: tuple[str, str, Any]) -> list[httpx2.Response]:
    """Each `(method, path, json body or None)` sent in turn by a plain HTTP client, answered in process."""

    async def run() -> list[httpx2.Response]:
        async with httpx2.AsyncClient(transport=transport(sim), base_url="http://sim.test") as client:
            return [await client.request(method, path, json=body) for method, path, body in requests]

    return asyncio.run(run())


def test_a_stored_response_is_retrieved_as_it_was_sent(tmp_path: Path) -> None:
    async def conversation(client: AsyncOpenAI) -> Any:
        created = await client.responses.create(model="m", input="p", tools=[TOOL], metadata={"k": "v"})
        return created, await client.responses.retrieve(created.id)

    created, retrieved = talk(simulator(tmp_path, SCRIPT), conversation)
    assert retrieved.model_dump() == created.model_dump()
    assert retrieved.output_text == "The command printed 42." and retrieved.metadata == {"k": "v"}


def test_include_is_honoured_on_retrieve_as_on_create(tmp_path: Path) -> None:
    async def conversation(client: AsyncOpenAI) -> Any:
        created = await client.responses.create(
            model="m", input="p", tools=[TOOL], reasoning={"summary": "auto"}
        )
        plain = await client.responses.retrieve(created.id)
        included = await client.responses.retrieve(
            created.id, include=["reasoning.encrypted_content", "message.output_text.logprobs"]
        )
        return created, plain, included

    created, plain, included = talk(simulator(tmp_path, REASONING), conversation)
    assert created.output[0].type == "reasoning" and created.output[0].encrypted_content is None
    assert plain.model_dump() == created.model_dump()
    reasoning = included.output[0]
    assert reasoning.id == created.output[0].id and reasoning.encrypted_content
    assert included.output[1].content[0].logprobs is not None  # asked for with top_logprobs 0: a token each
    assert included.output_text == created.output_text and included.usage == created.usage


def test_reasoning_retrieved_with_its_encrypted_content_can_be_sent_back(tmp_path: Path) -> None:
    sim = simulator(tmp_path, REASONING + "  - content: Again.\n", cycle=True)

    async def conversation(client: AsyncOpenAI) -> Any:
        created = await client.responses.create(model="m", input="p", tools=[TOOL])
        included = await client.responses.retrieve(created.id, include=["reasoning.encrypted_content"])
        reasoning = included.output[0].model_dump(exclude_none=True)
        history: Any = [{"role": "user", "content": "p"}, reasoning, {"role": "user", "content": "and?"}]
        return reasoning, await client.responses.create(model="m", input=history, tools=[TOOL], store=False)

    reasoning, again = talk(sim, conversation)
    assert reasoning["encrypted_content"] and "summary" in reasoning
    assert again.status == "completed"


def test_an_unknown_deleted_or_unstored_response_is_not_found(tmp_path: Path) -> None:
    async def conversation(client: AsyncOpenAI) -> Any:
        kept = await client.responses.create(model="m", input="p")
        unstored = await client.responses.create(model="m", input="p", store=False)
        await client.responses.delete(kept.id)  # the SDK reads no body: it returns None
        errors = []
        for response_id in (kept.id, unstored.id, "resp_never"):
            for call in (client.responses.retrieve, client.responses.delete, client.responses.cancel,
                         client.responses.input_items.list):  # fmt: skip
                with pytest.raises(openai.NotFoundError) as caught:
                    await call(response_id)
                errors.append(caught.value)
        with pytest.raises(openai.BadRequestError) as chained:
            await client.responses.create(model="m", input="again", previous_response_id=kept.id)
        return kept, errors, chained.value

    kept, errors, chained = talk(simulator(tmp_path, SCRIPT, cycle=True), conversation)
    assert {error.body["message"] for error in errors[:4]} == {f"Response with id '{kept.id}' not found."}
    assert {(error.type, error.code, error.param) for error in errors} == {
        ("invalid_request_error", None, None)
    }
    assert chained.code == "previous_response_not_found"


def test_delete_answers_the_deleted_object(tmp_path: Path) -> None:
    sim = simulator(tmp_path, SCRIPT)
    created, deleted, again = raw(sim, ("POST", "/v1/responses", {"model": "m", "input": "p"}),
                                  ("DELETE", f"/v1/responses/resp_sim{1:06d}", None),
                                  ("DELETE", "/responses/resp_sim000001", None))  # fmt: skip
    assert created.status_code == 200
    assert (deleted.status_code, deleted.json()) == (200, {"id": "resp_sim000001", "object": "response",
                                                           "deleted": True})  # fmt: skip
    assert again.status_code == 404


def test_a_background_response_is_queued_then_polled_to_its_end(tmp_path: Path) -> None:
    async def conversation(client: AsyncOpenAI) -> Any:
        created = await client.responses.create(model="m", input="p", background=True)
        polls = [await client.responses.retrieve(created.id) for _ in range(3)]
        return created, polls

    created, polls = talk(simulator(tmp_path, SCRIPT), conversation)
    assert (created.status, created.background, created.output, created.usage) == ("queued", True, [], None)
    assert [poll.status for poll in polls] == ["in_progress", "completed", "completed"]
    assert polls[0].output == [] and polls[1].output_text == "The command printed 42."
    assert polls[1].usage is not None and polls[1].completed_at is not None


def test_a_scripted_latency_holds_a_background_response_in_progress(tmp_path: Path) -> None:
    async def conversation(client: AsyncOpenAI) -> Any:
        started = asyncio.get_running_loop().time()
        created = await client.responses.create(model="m", input="p", background=True)
        answered_in = asyncio.get_running_loop().time() - started
        statuses = [created.status]
        while statuses[-1] in ("queued", "in_progress"):
            statuses.append((await client.responses.retrieve(created.id)).status)
            await asyncio.sleep(0.05)
        return answered_in, statuses, asyncio.get_running_loop().time() - started

    answered_in, statuses, took = talk(simulator(tmp_path, SLOW), conversation)
    assert answered_in < 0.3  # answered at once: the latency is the response's, not the request's
    assert statuses[0] == "queued" and statuses[-1] == "completed" and took >= 0.4
    assert statuses.count("in_progress") >= 3  # held there while the latency ran


def test_cancel_a_background_response_and_cancel_again(tmp_path: Path) -> None:
    async def conversation(client: AsyncOpenAI) -> Any:
        created = await client.responses.create(model="m", input="p", background=True)
        cancelled = await client.responses.cancel(created.id)
        again = await client.responses.cancel(created.id)
        polled = await client.responses.retrieve(created.id)
        return cancelled, again, polled

    cancelled, again, polled = talk(simulator(tmp_path, SCRIPT), conversation)
    assert (cancelled.status, cancelled.output, cancelled.usage) == ("cancelled", [], None)
    assert again.model_dump() == cancelled.model_dump() == polled.model_dump()


def test_a_finished_background_response_is_cancelled_as_it_is(tmp_path: Path) -> None:
    async def conversation(client: AsyncOpenAI) -> Any:
        created = await client.responses.create(model="m", input="p", background=True)
        while (done := await client.responses.retrieve(created.id)).status != "completed":
            pass
        return done, await client.responses.cancel(created.id)

    done, cancelled = talk(simulator(tmp_path, SCRIPT), conversation)
    assert cancelled.model_dump() == done.model_dump()


def test_only_a_background_response_can_be_cancelled(tmp_path: Path) -> None:
    async def conversation(client: AsyncOpenAI) -> Any:
        created = await client.responses.create(model="m", input="p")
        with pytest.raises(openai.BadRequestError) as caught:
            await client.responses.cancel(created.id)
        return caught.value

    error = talk(simulator(tmp_path, SCRIPT), conversation)
    assert (
        error.body["message"] == "Cannot cancel a synchronous response."
        and error.type == "invalid_request_error"
    )


def test_background_without_store_is_refused(tmp_path: Path) -> None:
    async def conversation(client: AsyncOpenAI) -> Any:
        with pytest.raises(openai.BadRequestError) as caught:
            await client.responses.create(model="m", input="p", background=True, store=False)
        return caught.value

    error = talk(simulator(tmp_path, SCRIPT), conversation)
    assert error.param == "background" and "store" in error.body["message"]


def test_a_streamed_background_response_resumes_after_a_sequence_number(tmp_path: Path) -> None:
    async def conversation(client: AsyncOpenAI) -> Any:
        stream = await client.responses.create(model="m", input="p", background=True, stream=True)
        first: list[Any] = [event async for event in stream]
        response_id = first[0].response.id
        resumed = await client.responses.retrieve(response_id, stream=True, starting_after=4)
        rest = [event async for event in resumed]
        async with client.responses.stream(response_id=response_id, starting_after=4) as helper:
            helped = [event async for event in helper]
            final = await helper.get_final_response()
        return first, rest, helped, final

    first, rest, helped, final = talk(simulator(tmp_path, SCRIPT), conversation)
    assert [event.type for event in first[:3]] == [
        "response.created",
        "response.queued",
        "response.in_progress",
    ]
    assert first[0].response.status == "queued" and first[-1].type == "response.completed"
    assert [event.sequence_number for event in first] == list(range(len(first)))
    assert [event.model_dump() for event in rest] == [event.model_dump() for event in first[5:]]
    assert [event.sequence_number for event in helped] == [event.sequence_number for event in first[5:]]
    assert final.output_text == "The command printed 42." and final.status == "completed"


def test_only_a_streamed_background_response_streams_again(tmp_path: Path) -> None:
    async def conversation(client: AsyncOpenAI) -> Any:
        refused = []
        choices: list[Any] = [{}, {"background": True}, {"stream": True}]
        for options in choices:
            created: Any = await client.responses.create(model="m", input="p", **options)
            response_id = created.id if hasattr(created, "id") else [e async for e in created][0].response.id  # noqa: RUF015
            with pytest.raises(openai.BadRequestError) as caught:
                await client.responses.retrieve(response_id, stream=True)
            refused.append(caught.value)
        return refused

    refused = talk(simulator(tmp_path, SCRIPT, cycle=True), conversation)
    assert {error.param for error in refused} == {"stream"}


def test_input_items_are_listed_in_the_apis_shapes_and_paged(tmp_path: Path) -> None:
    history: Any = [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
        {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        {"role": "assistant", "content": "It is sunny."},
        {"role": "user", "content": "Thanks."},
    ]

    async def conversation(client: AsyncOpenAI) -> Any:
        created = await client.responses.create(model="m", input=history, tools=[TOOL])
        newest = await client.responses.input_items.list(created.id)
        oldest: Any = await client.responses.input_items.list(created.id, order="asc", limit=2)
        after = await client.responses.input_items.list(
            created.id, order="asc", limit=2, after=oldest.last_id
        )
        every = [item async for item in client.responses.input_items.list(created.id, order="asc", limit=1)]
        return newest, oldest, after, every

    newest, oldest, after, every = talk(simulator(tmp_path, SCRIPT), conversation)
    assert [item.type for item in every] == ["message", "message", "function_call", "function_call_output",
                                             "message", "message"]  # fmt: skip
    assert [item.id for item in newest.data] == [item.id for item in reversed(every)]
    assert newest.has_more is False and newest.first_id == every[-1].id and newest.last_id == every[0].id
    assert [item.id for item in oldest.data] == [item.id for item in every[:2]] and oldest.has_more
    assert [item.id for item in after.data] == [item.id for item in every[2:4]]
    assert every[0].role == "developer" and every[0].content[0].text == "Be brief."
    assert (
        every[2].call_id == "call_1"
        and every[3].output == "sunny"
        and every[4].content[0].text == "It is sunny."
    )
    assert len({item.id for item in every}) == 6


def test_input_tokens_count_as_the_reported_usage_counts(tmp_path: Path) -> None:
    bodies: list[Any] = [
        {"model": "m", "input": "What is the weather in Paris today?"},
        {"model": "m", "input": [{"role": "user", "content": "x" * 401}], "instructions": "Be brief."},
        {"model": "m", "tools": [TOOL], "input": [
            {"role": "user", "content": "Weather?"},
            {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "sunny " * 50}]},
    ]  # fmt: skip

    async def conversation(client: AsyncOpenAI) -> Any:
        pairs = []
        for body in bodies:
            counted = await client.responses.input_tokens.count(**body)
            created = await client.responses.create(**body)
            pairs.append((counted.input_tokens, created.usage.input_tokens, counted.object))
        first = await client.responses.create(model="m", input="First question, rather long " * 10)
        chained: Any = {"model": "m", "input": "And then?", "previous_response_id": first.id}
        counted = await client.responses.input_tokens.count(**chained)
        pairs.append((counted.input_tokens, (await client.responses.create(**chained)).usage.input_tokens,
                      counted.object))  # fmt: skip
        return pairs

    pairs = talk(simulator(tmp_path, SCRIPT, cycle=True), conversation)
    assert all(counted == used and kind == "response.input_tokens" for counted, used, kind in pairs), pairs
    assert len({counted for counted, _, _ in pairs}) == len(pairs)  # each counted as its own


def test_input_tokens_refuses_what_create_refuses(tmp_path: Path) -> None:
    sim = simulator(tmp_path, SCRIPT)
    unknown, bad_json, not_object = raw(sim, ("POST", "/v1/responses/input_tokens",
                                              {"input": "x", "previous_response_id": "resp_none"}),
                                        ("POST", "/v1/responses/input_tokens", None),
                                        ("POST", "/v1/responses/input_tokens", [1]))  # fmt: skip
    assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "previous_response_not_found"
    assert not_object.status_code == 400
    assert bad_json.status_code == 200 and bad_json.json()["input_tokens"] == 0  # no body: nothing to count


# --- hostile ---


@pytest.mark.parametrize(
    "response_id", ["resp_x/../../etc", "résp_ü_\u202e", "resp_" + "9" * 20_000, "%00", "resp_sim000001 "]
)
def test_hostile_ids_are_not_found(tmp_path: Path, response_id: str) -> None:
    async def conversation(client: AsyncOpenAI) -> Any:
        await client.responses.create(model="m", input="p")
        for call in (client.responses.retrieve, client.responses.cancel, client.responses.delete,
                     client.responses.input_items.list):  # fmt: skip
            with pytest.raises((openai.NotFoundError, openai.BadRequestError)) as caught:
                await call(response_id)
            assert caught.value.status_code in (404, 405)  # a slash makes it another path, never this one
        return (await client.responses.retrieve("resp_sim000001")).status

    assert talk(simulator(tmp_path, SCRIPT), conversation) == "completed"


@pytest.mark.parametrize(
    ("query", "param", "code"),
    [("limit=0", "limit", "integer_below_min_value"), ("limit=101", "limit", "integer_above_max_value"),
     ("limit=ten", "limit", "invalid_type"), ("order=sideways", "order", "invalid_value"),
     ("after=msg_none", "after", None), ("include[]=everything", "include", "invalid_value")],
)  # fmt: skip
def test_pages_asked_out_of_range_are_refused(
    tmp_path: Path, query: str, param: str, code: str | None
) -> None:
    sim = simulator(tmp_path, SCRIPT)
    _, listed = raw(sim, ("POST", "/v1/responses", {"model": "m", "input": "p"}),
                    ("GET", f"/v1/responses/resp_sim000001/input_items?{query}", None))  # fmt: skip
    assert listed.status_code == 400
    assert (listed.json()["error"]["param"], listed.json()["error"]["code"]) == (param, code)


@pytest.mark.parametrize("query", ["stream=maybe", "stream=true&starting_after=x"])
def test_a_malformed_stream_query_is_refused(tmp_path: Path, query: str) -> None:
    sim = simulator(tmp_path, SCRIPT)
    body = {"model": "m", "input": "p", "background": True, "stream": True}
    _, refused = raw(
        sim, ("POST", "/v1/responses", body), ("GET", f"/v1/responses/resp_sim000001?{query}", None)
    )
    assert refused.status_code == 400


def test_a_starting_after_past_the_end_streams_nothing(tmp_path: Path) -> None:
    sim = simulator(tmp_path, SCRIPT)
    body = {"model": "m", "input": "p", "background": True, "stream": True}
    resume = "/v1/responses/resp_sim000001?stream=true&starting_after=999999"
    _, resumed = raw(sim, ("POST", "/v1/responses", body), ("GET", resume, None))
    assert resumed.status_code == 200 and resumed.text == ""


def test_concurrent_polls_advance_one_step_each_and_agree(tmp_path: Path) -> None:
    async def conversation(client: AsyncOpenAI) -> Any:
        created = await client.responses.create(model="m", input="p", background=True)
        polls = await asyncio.gather(*(client.responses.retrieve(created.id) for _ in range(20)))
        return [poll.status for poll in polls]

    statuses = talk(simulator(tmp_path, SCRIPT), conversation)
    assert statuses[0] == "in_progress" and set(statuses[1:]) == {"completed"}


def test_the_store_limit_forgets_the_oldest_responses_first(tmp_path: Path) -> None:
    async def conversation(client: AsyncOpenAI) -> Any:
        ids = [
            (await client.responses.create(model="m", input="x" * 3_000, background=True)).id
            for _ in range(30)
        ]
        kept = []
        for response_id in ids:
            try:
                await client.responses.retrieve(response_id)
                await client.responses.input_items.list(response_id)
                kept.append(response_id)
            except openai.NotFoundError:
                pass
        return ids, kept

    sim = simulator(tmp_path, SCRIPT, cycle=True, store_limit=60_000)
    ids, kept = talk(sim, conversation)
    store = sim.servers[Api.responses].store  # type: ignore[attr-defined]
    assert 0 < len(kept) < len(ids) and kept == ids[-len(kept) :]  # the newest kept, the oldest forgotten
    assert store.bytes <= 60_000


def test_a_response_larger_than_the_store_is_not_kept(tmp_path: Path) -> None:
    async def conversation(client: AsyncOpenAI) -> Any:
        created = await client.responses.create(model="m", input="y" * 50_000)
        with pytest.raises(openai.NotFoundError):
            await client.responses.retrieve(created.id)
        return created

    assert talk(simulator(tmp_path, SCRIPT, store_limit=20_000), conversation).status == "completed"


# --- the sync SDK and streaming against a real server ---


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    scenario = tmp_path_factory.mktemp("lifecycle") / "scenario.yaml"
    scenario.write_text(SCRIPT)
    with served(scenario, "--cycle", "--quiet") as (_, url):
        yield url


def test_the_sync_sdk_drives_every_endpoint_over_http(base_url: str) -> None:
    client = OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    created = client.responses.create(model="m", input="p", tools=[TOOL])
    assert created.usage is not None
    assert client.responses.retrieve(created.id).model_dump() == created.model_dump()
    assert [item.type for item in client.responses.input_items.list(created.id)] == ["message"]
    assert (
        client.responses.input_tokens.count(model="m", input="p").input_tokens == created.usage.input_tokens
    )
    background = client.responses.create(model="m", input="p", background=True)
    assert background.status == "queued"
    assert client.responses.cancel(background.id).status == "cancelled"
    with client.responses.stream(model="m", input="p", background=True) as stream:
        events = list(stream)
    response_id = events[0].response.id  # type: ignore[union-attr]
    resumed = list(client.responses.retrieve(response_id, stream=True, starting_after=2))
    assert [event.sequence_number for event in resumed] == [event.sequence_number for event in events[3:]]
    assert resumed[-1].type == "response.completed"
    client.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(created.id)


def test_a_dropped_background_stream_resumes_where_it_broke(base_url: str) -> None:
    client = OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    seen = []
    with client.responses.create(model="m", input="p", background=True, stream=True) as stream:
        for event in stream:
            seen.append(event)
            if len(seen) == 4:
                break  # the connection goes: the client resumes from its cursor
    cursor = seen[-1].sequence_number
    rest = list(client.responses.retrieve(seen[0].response.id, stream=True, starting_after=cursor))  # type: ignore[union-attr]
    whole = [*seen, *rest]
    assert [event.sequence_number for event in whole] == list(range(len(whole)))
    assert whole[-1].type == "response.completed"
    text = "".join(event.delta for event in whole if event.type == "response.output_text.delta")
    assert text == "The command printed 42."


def test_the_input_items_body_is_a_list_object(tmp_path: Path) -> None:
    sim = simulator(tmp_path, SCRIPT)
    _, listed = raw(sim, ("POST", "/v1/responses", {"model": "m", "input": "p"}),
                    ("GET", "/v1/responses/resp_sim000001/input_items?limit=1&order=asc", None))  # fmt: skip
    body = listed.json()
    assert set(body) == {"object", "data", "first_id", "last_id", "has_more"}
    assert body["object"] == "list" and json.dumps(body["data"][0]["content"]) == json.dumps(
        [{"type": "input_text", "text": "p"}]
    )


LOOP = """
import openai
client = openai.OpenAI(max_retries=0)
created = client.responses.create(model="m", input="p", background=True)
while created.status in ("queued", "in_progress"):
    created = client.responses.retrieve(created.id)
items = client.responses.input_items.list(created.id)
counted = client.responses.input_tokens.count(model="m", input="p")
client.responses.delete(created.id)
print(created.status, created.output_text, [item.type for item in items], counted.input_tokens)
"""


def test_a_recording_of_the_lifecycle_endpoints_replays(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCRIPT)
    cassette = tmp_path / "lifecycle.yaml"
    with served(scenario, "--cycle", "--quiet") as (_, upstream):
        done = proxied(cassette, upstream, sys.executable, "-c", LOOP)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "completed The command printed 42. ['message'] 1"
    paths = [(i.request.method, i.request.path) for i in read_cassette(cassette).interactions]
    assert ("DELETE", "/v1/responses/resp_sim000001") in paths and len(paths) == 6
    again = served_to(cassette, sys.executable, "-c", LOOP, options=["--once"])
    assert again.returncode == 0, again.stderr
    assert again.stdout == done.stdout


def test_input_tokens_of_huge_and_deeply_nested_bodies(tmp_path: Path) -> None:
    sim = simulator(tmp_path, SCRIPT)
    huge = {"model": "m", "input": "word " * 400_000}
    nested: Any = "x"
    for _ in range(200):
        nested = [nested]
    count = "/v1/responses/input_tokens"
    bodies = [huge, {"input": nested}, {"input": [{"role": "user", "content": 7}]}]
    counted, deep, wrong = raw(sim, *(("POST", count, body) for body in bodies))
    assert counted.status_code == 200 and counted.json()["input_tokens"] == 2_000_000 // 4 + 1
    assert deep.status_code == 400 and wrong.status_code == 400
    assert sim.servers[Api.responses].store.bytes == 0  # type: ignore[attr-defined]  # counting keeps nothing


def test_a_cancelled_response_is_continued_from_its_input(tmp_path: Path) -> None:
    sim = simulator(tmp_path, SCRIPT, cycle=True)

    async def conversation(client: AsyncOpenAI) -> Any:
        created = await client.responses.create(model="m", input="first question", background=True)
        await client.responses.cancel(created.id)
        return await client.responses.create(model="m", input="second", previous_response_id=created.id)

    continued = talk(sim, conversation)
    store = sim.servers[Api.responses].store  # type: ignore[attr-defined]
    assert continued.status == "completed" and store.length(continued.id) == 3  # two questions, one reply
    assert [type(message).__name__ for message in store.conversation(continued.id)] == [
        "UserMessage", "UserMessage", "AssistantMessage"
    ]  # fmt: skip


CUT = """
prompt: p
replies:
  - content: The command printed 42, in the end.
    cut_after_chunks: 5
"""


def test_a_background_stream_cut_by_the_network_is_resumed_from_its_cursor(tmp_path: Path) -> None:
    """The connection drops mid-stream (a scripted cut): the SDK raises as it reads; the loop resumes the
    response's events from the last sequence number it saw and gets the whole reply."""
    scenario = tmp_path / "cut.yaml"
    scenario.write_text(CUT)
    with served(scenario, "--quiet") as (_, url):
        client = OpenAI(base_url=url, api_key="sk-test", max_retries=0)
        seen: list[Any] = []
        with pytest.raises((openai.APIError, httpx2.HTTPError)):  # noqa: PT012
            for event in client.responses.create(model="m", input="p", background=True, stream=True):
                seen.append(event)
        assert len(seen) == 5
        rest = list(
            client.responses.retrieve(
                seen[0].response.id, stream=True, starting_after=seen[-1].sequence_number
            )
        )
        whole = [*seen, *rest]
        assert [event.sequence_number for event in whole] == list(range(len(whole)))
        assert whole[-1].type == "response.completed"
        assert whole[-1].response.output_text == "The command printed 42, in the end."
        assert client.responses.retrieve(seen[0].response.id).status == "completed"
