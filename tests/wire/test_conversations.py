"""The Conversations API as the official SDK drives it (sync over a real server on 127.0.0.1, async and
streamed in process): every endpoint, the `conversation` parameter of `POST /v1/responses` keeping a tool
loop's state (on the raw SDK and on openai-agents), and the API's refusals of hostile use (unknown and
malformed ids, wrong items, metadata past its bounds, too many items, a deleted conversation, one used with
`previous_response_id`, concurrent appends, a store past its limit)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from openai import AsyncOpenAI, OpenAI

from sim.host.app import Host
from sim.host.transport import transport
from sim.scenario.answerer import ScriptAnswerer
from tests.host.in_process import simulator
from tests.served import Served, serving

LOOKUP: Any = {
    "type": "function",
    "name": "lookup",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}
TEXT = "prompt: Hello\ntools: [{name: lookup}]\nreplies: [{content: Hi there.}]\n"
LOOP = """
prompt: What is the weather in Paris and in Rome?
tools: [{name: lookup}]
replies:
  - tool_calls: [{id: call_1, name: lookup, arguments: {city: Paris}}]
    expect_request:
      message_count: 2
      last_message: {role: user, content: What is the weather in Paris and in Rome?}
  - tool_calls: [{id: call_2, name: lookup, arguments: {city: Rome}}]
    expect_request:
      message_count: 4
      last_message: {role: tool, tool_call_id: call_1, content: "Paris: sunny"}
  - content: Sunny in both.
    expect_request:
      message_count: 6
      last_message: {role: tool, tool_call_id: call_2, content: "Rome: sunny"}
"""
"""A loop of two calls whose conversation starts with a system item the conversation was created with:
each request must carry the whole conversation so far (its count said by `message_count`)."""


def text(item: Any) -> str:
    """The text of a message item's first content part."""
    return str(item.content[0].text)


def role(item: Any) -> str:
    """A message item's role."""
    return str(item.role)


def host(tmp_path: Path, script: str = TEXT, **options: Any) -> Host[ScriptAnswerer]:
    return simulator(tmp_path, script, **options)


def client(sim: Host[Any]) -> AsyncOpenAI:
    http = httpx2.AsyncClient(transport=transport(sim))
    return AsyncOpenAI(base_url="http://sim.test/v1", api_key="sk-test", max_retries=0, http_client=http)


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    yield from serving()


def _client(served: Served, sim: Host[Any]) -> OpenAI:
    served.host = sim
    return OpenAI(base_url=served.url, api_key="sk-test", max_retries=0)


def test_every_endpoint_through_the_sync_sdk(tmp_path: Path, served: Served) -> None:
    sdk = _client(served, host(tmp_path))
    made = sdk.conversations.create(
        items=[{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        metadata={"topic": "demo"},
    )
    assert (
        made.id.startswith("conv_") and made.object == "conversation" and made.metadata == {"topic": "demo"}
    )
    assert sdk.conversations.retrieve(made.id).model_dump() == made.model_dump()
    updated = sdk.conversations.update(made.id, metadata={"topic": "changed", "user": "u1"})
    assert updated.metadata == {"topic": "changed", "user": "u1"}

    added = sdk.conversations.items.create(
        made.id, items=[{"type": "message", "role": "assistant", "content": "Hello."}]
    )
    assert [item.type for item in added.data] == ["message"] and added.has_more is False
    assert added.first_id == added.last_id == added.data[0].id
    newest_first = [str(item.id) for item in sdk.conversations.items.list(made.id)]
    assert len(newest_first) == 3 and newest_first[0] == added.data[0].id
    pages = sdk.conversations.items.list(made.id, order="asc", limit=1)
    assert [item.id for item in pages] == newest_first[::-1]  # paged one by one through `after`
    first: Any = sdk.conversations.items.retrieve(newest_first[-1], conversation_id=made.id)
    assert first.type == "message" and first.role == "developer"
    assert first.content[0].type == "input_text" and first.content[0].text == "Be brief."
    assert sdk.conversations.items.delete(newest_first[-1], conversation_id=made.id).id == made.id
    assert len(list(sdk.conversations.items.list(made.id))) == 2

    deleted = sdk.conversations.delete(made.id)
    assert (deleted.id, deleted.deleted, deleted.object) == (made.id, True, "conversation.deleted")
    with pytest.raises(openai.NotFoundError) as gone:
        sdk.conversations.retrieve(made.id)
    said = f"Conversation with id '{made.id}' not found."
    assert gone.value.body == {"message": said, "type": "invalid_request_error", "param": None, "code": None}


def test_every_endpoint_through_the_async_sdk(tmp_path: Path) -> None:
    async def run() -> None:
        sdk = client(host(tmp_path))
        made = await sdk.conversations.create()
        assert made.metadata == {}
        await sdk.conversations.items.create(
            made.id, items=[{"role": "user", "content": f"n{n}"} for n in range(20)]
        )
        listed = await sdk.conversations.items.list(made.id, order="asc", limit=7)
        assert len(listed.data) == 7 and listed.has_more is True
        texts = [text(item) async for item in listed]
        assert texts == [f"n{n}" for n in range(20)]
        one: Any = listed.data[3]
        assert (await sdk.conversations.items.retrieve(one.id, conversation_id=made.id)).id == one.id
        after = await sdk.conversations.items.list(made.id, order="asc", after=one.id, limit=2)
        assert [text(item) for item in after.data] == ["n4", "n5"]
        await sdk.conversations.items.delete(one.id, conversation_id=made.id)
        with pytest.raises(openai.NotFoundError):
            await sdk.conversations.items.retrieve(one.id, conversation_id=made.id)
        assert (await sdk.conversations.update(made.id, metadata={"k": "v"})).metadata == {"k": "v"}
        assert (await sdk.conversations.retrieve(made.id)).metadata == {"k": "v"}
        assert (await sdk.conversations.delete(made.id)).deleted is True

    asyncio.run(run())


def test_a_response_in_a_conversation_reads_it_adds_to_it_and_echoes_it(tmp_path: Path) -> None:
    sim = host(tmp_path, TEXT.replace("replies: [", "replies: [{content: First.}, "))

    async def run() -> None:
        sdk = client(sim)
        made = await sdk.conversations.create(items=[{"role": "user", "content": "Remember 7."}])
        first = await sdk.responses.create(model="m", conversation=made.id, input="Hello", tools=[LOOKUP])
        assert first.conversation is not None and first.conversation.id == made.id
        second = await sdk.responses.create(model="m", conversation={"id": made.id}, input="Again")
        assert second.output_text == "Hi there." and second.model_dump()["conversation"] == {"id": made.id}
        items = [item async for item in sdk.conversations.items.list(made.id, order="asc")]
        said = [(role(item), text(item)) for item in items]
        assert said == [("user", "Remember 7."), ("user", "Hello"), ("assistant", "First."),
                        ("user", "Again"), ("assistant", "Hi there.")]  # fmt: skip
        assert items[2].id == first.output[0].id

    asyncio.run(run())
    second = sim.answerer.requests[1]
    assert [message.content for message in second.messages] == ["Remember 7.", "Hello", "First.", "Again"]
    assert sim.answerer.problems == []


def test_a_response_without_a_conversation_says_none(tmp_path: Path) -> None:
    async def run() -> None:
        reply = await client(host(tmp_path)).responses.create(model="m", input="Hello")
        assert "conversation" not in reply.model_dump(exclude_unset=True)

    asyncio.run(run())


def test_a_streamed_response_in_a_conversation(tmp_path: Path) -> None:
    async def run() -> None:
        sdk = client(host(tmp_path))
        made = await sdk.conversations.create()
        async with sdk.responses.stream(model="m", conversation=made.id, input="Hello") as stream:
            events = [event async for event in stream]
            final = await stream.get_final_response()
        assert final.conversation is not None and final.conversation.id == made.id
        created = events[0].model_dump()
        assert created["type"] == "response.created" and created["response"]["conversation"] == {
            "id": made.id
        }
        items = (await sdk.conversations.items.list(made.id, order="asc")).data
        assert [role(item) for item in items] == ["user", "assistant"]
        assert items[1].id == final.model_dump()["output"][0]["id"]

    asyncio.run(run())


def test_a_streamed_response_in_a_conversation_through_the_sync_sdk(tmp_path: Path, served: Served) -> None:
    sdk = _client(served, host(tmp_path))
    made = sdk.conversations.create(items=[{"role": "user", "content": "Remember 7."}])
    with sdk.responses.stream(model="m", conversation={"id": made.id}, input="Hello") as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert final.model_dump()["conversation"] == {"id": made.id} and final.output_text == "Hi there."
    assert [text(item) for item in sdk.conversations.items.list(made.id, order="asc")] == [
        "Remember 7.",
        "Hello",
        "Hi there.",
    ]


def test_input_tokens_count_the_conversation_as_its_usage_does(tmp_path: Path) -> None:
    async def run() -> None:
        sdk = client(host(tmp_path))
        made = await sdk.conversations.create(items=[{"role": "user", "content": "many words " * 200}])
        alone = await sdk.responses.input_tokens.count(model="m", input="Hello")
        counted = await sdk.responses.input_tokens.count(model="m", input="Hello", conversation=made.id)
        assert counted.input_tokens > alone.input_tokens + 100
        reply = await sdk.responses.create(model="m", input="Hello", conversation=made.id)
        assert reply.usage is not None and reply.usage.input_tokens == counted.input_tokens
        assert len((await sdk.conversations.items.list(made.id)).data) == 3  # counting added nothing

    asyncio.run(run())


def weather(city: str) -> str:
    return f"{city}: sunny"


def test_a_raw_sdk_tool_loop_keeps_its_state_in_a_conversation(tmp_path: Path) -> None:
    """Each turn sends only what is new (the user's message, then the tool outputs): the conversation holds
    the rest, and each request the scenario sees is the whole conversation."""
    sim = host(tmp_path, LOOP)

    async def run() -> str:
        sdk = client(sim)
        conversation = await sdk.conversations.create(items=[{"role": "system", "content": "Use the tool."}])
        new: Any = "What is the weather in Paris and in Rome?"
        for _ in range(5):
            reply = await sdk.responses.create(
                model="m", conversation=conversation.id, input=new, tools=[LOOKUP]
            )
            calls = [item for item in reply.output if item.type == "function_call"]
            if not calls:
                return reply.output_text
            new = [{"type": "function_call_output", "call_id": call.call_id,
                    "output": weather(json.loads(call.arguments)["city"])} for call in calls]  # fmt: skip
        raise AssertionError("the loop did not end")

    assert asyncio.run(run()) == "Sunny in both."
    assert sim.answerer.problems == [] and sim.answerer.consumed


def test_openai_agents_runs_in_a_conversation(tmp_path: Path) -> None:
    agents = pytest.importorskip("agents")
    from agents.models.openai_responses import OpenAIResponsesModel

    agents.set_tracing_disabled(True)
    sim = host(tmp_path, LOOP)  # `instructions` stand where the raw loop's conversation has its system item

    @agents.function_tool  # type: ignore[untyped-decorator]
    def lookup(city: str) -> str:
        """The weather in a city."""
        return weather(city)

    async def run() -> str:
        sdk = client(sim)
        conversation = await sdk.conversations.create()
        model = OpenAIResponsesModel(model="gpt-4o", openai_client=sdk)
        agent = agents.Agent(name="weather", instructions="Use the tool.", tools=[lookup], model=model)
        result = await agents.Runner.run(
            agent, "What is the weather in Paris and in Rome?", conversation_id=conversation.id
        )
        kept = [item async for item in sdk.conversations.items.list(conversation.id, order="asc")]
        kinds = ["message", "function_call", "function_call_output", "function_call", "function_call_output",
                 "message"]  # fmt: skip
        assert [item.type for item in kept] == kinds
        return str(result.final_output)

    assert asyncio.run(run()) == "Sunny in both."
    assert sim.answerer.problems == [] and sim.answerer.consumed


# hostile use


def error(raised: pytest.ExceptionInfo[openai.APIStatusError]) -> tuple[int, str, str | None, str | None]:
    body = raised.value.body
    assert isinstance(body, dict)
    return raised.value.status_code, body["message"], body.get("param"), body.get("code")


def test_unknown_and_malformed_ids_are_refused_as_the_api_refuses_them(tmp_path: Path) -> None:
    async def run() -> None:
        sdk = client(host(tmp_path))
        made = await sdk.conversations.create()
        with pytest.raises(openai.NotFoundError) as unknown:
            await sdk.conversations.retrieve("conv_nope")
        assert error(unknown) == (404, "Conversation with id 'conv_nope' not found.", None, None)
        with pytest.raises(openai.NotFoundError) as unknown:
            await sdk.responses.create(model="m", conversation="conv_nope", input="Hello")
        assert error(unknown) == (404, "Conversation with id 'conv_nope' not found.", None, None)
        with pytest.raises(openai.BadRequestError) as malformed:
            await sdk.responses.create(model="m", conversation="thread_1", input="Hello")
        said = "Invalid 'conversation': 'thread_1'. Expected an ID that begins with 'conv'."
        assert error(malformed) == (400, said, "conversation", "invalid_value")
        with pytest.raises(openai.BadRequestError) as malformed:
            await sdk.conversations.items.list("thread_1")
        assert error(malformed)[2:] == ("conversation_id", "invalid_value")
        with pytest.raises(openai.NotFoundError) as no_item:
            await sdk.conversations.items.retrieve("msg_nope", conversation_id=made.id)
        assert error(no_item) == (404, "Item with id 'msg_nope' not found.", None, None)
        with pytest.raises(openai.NotFoundError):
            await sdk.conversations.items.delete("msg_nope", conversation_id=made.id)
        with pytest.raises(openai.NotFoundError):
            await sdk.conversations.items.list(made.id, after="msg_nope")
        wrongs: list[Any] = [5, {"name": "x"}, {"id": 5}]
        for wrong in wrongs:
            with pytest.raises(openai.BadRequestError):
                await sdk.responses.create(model="m", conversation=wrong, input="Hello")

    asyncio.run(run())


def test_a_conversation_with_previous_response_id_is_refused(tmp_path: Path) -> None:
    async def run() -> None:
        sdk = client(host(tmp_path))
        made = await sdk.conversations.create()
        first = await sdk.responses.create(model="m", input="Hello")
        with pytest.raises(openai.BadRequestError) as both:
            await sdk.responses.create(
                model="m", conversation=made.id, previous_response_id=first.id, input="x"
            )
        said = ("Mutually exclusive parameters: ''. Ensure you are only providing one of: 'pre..._id' or"
                " 'conversation'.")  # fmt: skip
        assert error(both) == (400, said, None, "mutually_exclusive_parameters")
        assert (await sdk.conversations.items.list(made.id)).data == []  # nothing was added

    asyncio.run(run())


def test_items_of_the_wrong_shape_and_too_many_are_refused(tmp_path: Path) -> None:
    async def run() -> None:
        sdk = client(host(tmp_path))
        made = await sdk.conversations.create()
        wrong: list[Any] = [
            ["not an object"],
            [{"type": "message", "role": "wizard", "content": "x"}],
            [{"type": "function_call_output", "output": "no call id"}],
            [{"type": "telepathy"}],
            [{"role": "user", "content": 5}],
            [{"role": "user", "content": "x", "id": 7}],
            "not a list",
        ]
        for items in wrong:
            with pytest.raises(openai.BadRequestError):
                await sdk.conversations.items.create(made.id, items=items)
            with pytest.raises(openai.BadRequestError):
                await sdk.conversations.create(items=items)
        with pytest.raises(openai.BadRequestError) as many:
            await sdk.conversations.create(items=[{"role": "user", "content": "x"}] * 21)
        said = ("Invalid 'items': array too long. Expected an array with maximum length 20, but got an array"
                " with length 21 instead.")  # fmt: skip
        assert error(many) == (400, said, "items", "array_above_max_length")
        with pytest.raises(openai.BadRequestError):
            await sdk.conversations.items.create(made.id, items=[{"role": "user", "content": "x"}] * 21)
        with pytest.raises(openai.BadRequestError) as unknown:
            await sdk.conversations.create(extra_body={"messages": []})
        assert error(unknown) == (400, "Unknown parameter: 'messages'.", "messages", "unknown_parameter")
        with pytest.raises(openai.BadRequestError) as missing:
            await sdk.conversations.update(made.id, metadata={"k": "v"}, extra_body={"x": 1})
        assert error(missing)[3] == "unknown_parameter"
        duplicate: Any = [{"type": "message", "id": "msg_1", "role": "user", "content": "x"}]
        await sdk.conversations.items.create(made.id, items=duplicate)
        with pytest.raises(openai.BadRequestError) as again:
            await sdk.conversations.items.create(made.id, items=duplicate)
        assert "Duplicate item found with id msg_1" in error(again)[1]
        with pytest.raises(openai.BadRequestError):
            await sdk.responses.create(model="m", conversation=made.id, input=duplicate)
        assert len((await sdk.conversations.items.list(made.id)).data) == 1  # nothing refused was added
        first = await sdk.responses.create(model="m", conversation=made.id, input="Hello")
        referenced: Any = [{"type": "item_reference", "id": first.output[0].id}]
        with pytest.raises(openai.BadRequestError):
            await sdk.responses.create(model="m", conversation=made.id, input=referenced)

    asyncio.run(run())


@pytest.mark.parametrize(
    ("metadata", "param", "code"),
    [
        ({f"k{n}": "v" for n in range(17)}, "metadata", "object_above_max_properties"),
        ({"k" * 65: "v"}, "metadata", "string_above_max_length"),
        ({"k": "v" * 513}, "metadata.k", "string_above_max_length"),
        ({"k": 5}, "metadata.k", "invalid_type"),
        ("a string", "metadata", "invalid_type"),
    ],
)
def test_metadata_past_the_api_bounds_is_refused(
    tmp_path: Path, metadata: Any, param: str, code: str
) -> None:
    async def run() -> None:
        sdk = client(host(tmp_path))
        with pytest.raises(openai.BadRequestError) as refused:
            await sdk.conversations.create(metadata=metadata)
        assert error(refused)[2:] == (param, code)
        made = await sdk.conversations.create(metadata={f"k{n}": "v" * 512 for n in range(16)})  # the bounds
        with pytest.raises(openai.BadRequestError) as refused:
            await sdk.conversations.update(made.id, metadata=metadata)
        assert error(refused)[2:] == (param, code)
        kept: Any = (await sdk.conversations.retrieve(made.id)).metadata
        assert len(kept) == 16

    asyncio.run(run())


def test_a_call_left_unanswered_in_a_conversation_is_refused_when_it_is_continued(tmp_path: Path) -> None:
    """Items added through the items endpoint are not paired when added (as the API takes them); a response
    continuing the conversation is refused until the call is answered."""

    async def run() -> None:
        sdk = client(host(tmp_path))
        call: Any = {"type": "function_call", "call_id": "call_9", "name": "lookup", "arguments": "{}"}
        made = await sdk.conversations.create(items=[{"role": "user", "content": "Weather?"}, call])
        with pytest.raises(openai.BadRequestError) as unanswered:
            await sdk.responses.create(model="m", conversation=made.id, input="Hello")
        assert "call_9" in error(unanswered)[1]
        answer: Any = [{"type": "function_call_output", "call_id": "call_9", "output": "sunny"}]
        reply = await sdk.responses.create(model="m", conversation=made.id, input=answer)
        assert reply.output_text == "Hi there."
        orphan: Any = [{"type": "function_call_output", "call_id": "call_7", "output": "x"}]
        await sdk.conversations.items.create(made.id, items=orphan)
        with pytest.raises(openai.BadRequestError):
            await sdk.responses.create(model="m", conversation=made.id, input="Again")

    asyncio.run(run())


def test_a_deleted_conversation_cannot_be_used(tmp_path: Path) -> None:
    async def run() -> None:
        sdk = client(host(tmp_path))
        made = await sdk.conversations.create(items=[{"role": "user", "content": "x"}])
        await sdk.conversations.delete(made.id)
        with pytest.raises(openai.NotFoundError):
            await sdk.responses.create(model="m", conversation=made.id, input="Hello")
        with pytest.raises(openai.NotFoundError):
            await sdk.conversations.items.create(made.id, items=[{"role": "user", "content": "x"}])
        with pytest.raises(openai.NotFoundError):
            await sdk.conversations.delete(made.id)
        with pytest.raises(openai.BadRequestError):
            await sdk.conversations.items.list(made.id, limit=101)

    asyncio.run(run())


def test_paging_parameters_are_checked(tmp_path: Path) -> None:
    async def run() -> None:
        sdk = client(host(tmp_path))
        made = await sdk.conversations.create()
        for query, param, code in (
            ({"limit": 0}, "limit", "integer_below_min_value"),
            ({"limit": 101}, "limit", "integer_above_max_value"),
            ({"order": "sideways"}, "order", "invalid_value"),
            ({"include": ["bogus.thing"]}, "include[0]", "invalid_value"),
        ):
            with pytest.raises(openai.BadRequestError) as refused:
                await sdk.conversations.items.list(made.id, **query)
            assert error(refused)[2:] == (param, code)
        with pytest.raises(openai.BadRequestError):
            await sdk.conversations.items.list(made.id, extra_query={"limit": "many"})

    asyncio.run(run())


def test_concurrent_responses_in_one_conversation_each_add_their_items(tmp_path: Path) -> None:
    """Ten requests in flight at once all read the conversation as it was, and each adds its input and
    reply; a request after them reads all of it (what a response reads is never a stale copy)."""
    script = "prompt: p\nreplies: [{content: Hi there., latency: {first_byte: 0.01}}]\n"
    sim = host(tmp_path, script, cycle=True)

    async def run() -> None:
        sdk = client(sim)
        made = await sdk.conversations.create()
        await asyncio.gather(
            *(sdk.responses.create(model="m", conversation=made.id, input=f"q{n}") for n in range(10))
        )
        items = [item async for item in sdk.conversations.items.list(made.id, order="asc")]
        assert len(items) == 20 and len({item.id for item in items}) == 20
        await sdk.responses.create(model="m", conversation=made.id, input="last")

    asyncio.run(run())
    last = sim.answerer.requests[-1]
    said = [str(message.content) for message in last.messages]
    assert (
        len(said) == 21 and sorted(said[:-1:2]) == sorted(f"q{n}" for n in range(10)) and said[-1] == "last"
    )


def test_concurrent_item_appends_each_keep_their_items(tmp_path: Path) -> None:
    async def run() -> None:
        sdk = client(host(tmp_path))
        made = await sdk.conversations.create()
        await asyncio.gather(
            *(
                sdk.conversations.items.create(
                    made.id, items=[{"role": "user", "content": f"{n}.{k}"} for k in (1, 2)]
                )
                for n in range(10)
            )
        )
        items = [item async for item in sdk.conversations.items.list(made.id, order="asc")]
        assert len({str(item.id) for item in items}) == 20
        said = [text(item) for item in items]
        assert all(
            said.index(f"{n}.1") + 1 == said.index(f"{n}.2") for n in range(10)
        )  # each call's in order

    asyncio.run(run())


def test_untrusted_text_is_kept_as_sent_and_what_cannot_be_encoded_is_refused(tmp_path: Path) -> None:
    sim = host(tmp_path)

    async def run() -> None:
        sdk = client(sim)
        odd = "naïve \u0000 \u202e<script>alert(1)</script> 🦜 \x1b[31m"
        made = await sdk.conversations.create(
            items=[{"role": "user", "content": odd}], metadata={"ключ 🔑": odd}
        )
        assert (await sdk.conversations.retrieve(made.id)).metadata == {"ключ 🔑": odd}
        assert [text(item) for item in (await sdk.conversations.items.list(made.id)).data] == [odd]
        http = httpx2.AsyncClient(transport=transport(sim), base_url="http://sim.test")
        async with http:
            lone = b'{"items": [{"role": "user", "content": "\\ud800"}]}'
            answered = await http.post(f"/v1/conversations/{made.id}/items", content=lone)
            assert answered.status_code == 400
        assert len((await sdk.conversations.items.list(made.id)).data) == 1

    asyncio.run(run())


def test_the_store_limit_bounds_conversations(tmp_path: Path) -> None:
    """Past `--store-limit` the least recently used conversations are forgotten (then not found, as any
    conversation the API does not have), and what is kept stays within the limit."""
    sim = host(tmp_path, store_limit=200_000)

    async def run() -> None:
        sdk = client(sim)
        made = [
            await sdk.conversations.create(items=[{"role": "user", "content": "x" * 5_000}] * 20)
            for _ in range(5)
        ]
        await sdk.conversations.retrieve(made[-1].id)
        with pytest.raises(openai.NotFoundError):
            await sdk.conversations.retrieve(made[0].id)

    asyncio.run(run())
    responses: Any = sim.protocols["/v1/responses"]
    store = responses.conversations.store
    assert 0 < len(store) < 5 and store.bytes <= 200_000


def test_a_huge_or_deeply_nested_body_is_refused_not_crashed(tmp_path: Path) -> None:
    sim = host(tmp_path)

    async def run() -> None:
        sdk = client(sim)
        made = await sdk.conversations.create()
        http = httpx2.AsyncClient(transport=transport(sim), base_url="http://sim.test")
        async with http:
            deep = '{"items": [{"role": "user", "content": ' + "[" * 100_000 + '"x"' + "]" * 100_000 + "}]}"
            answered = await http.post(f"/v1/conversations/{made.id}/items", content=deep)
            assert answered.status_code == 400
            answered = await http.post("/v1/conversations", content=b"{not json")
            assert answered.status_code == 400
            answered = await http.post("/v1/conversations", content=b"[1, 2]")
            assert answered.status_code == 400
        assert (await sdk.conversations.items.list(made.id)).data == []

    asyncio.run(run())
