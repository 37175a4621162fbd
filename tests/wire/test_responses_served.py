"""The simulator's `/v1/responses`, through the real SDK's typed client and its own stream helper; the
simulator is mounted in process (an httpx2 ASGI transport is the only stand-in for the network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from openai import AsyncOpenAI

from sim.core.errors import ScenarioError
from tests.host.in_process import messages, simulator, talk

TOOL = {"type": "function", "name": "lookup", "description": "Looks up.", "strict": False,
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}  # fmt: skip
SCRIPT = """
prompt: p
tools: [{name: lookup}]
results: {call_1: sunny}
replies:
  - tool_calls: [{name: lookup, arguments: {city: Paris}}]
    reasoning: The user wants the weather; look it up.
  - content: It is sunny in Paris.
"""


def test_a_stateless_conversation_with_reasoning_sent_back(tmp_path: Path) -> None:
    sim = simulator(tmp_path, SCRIPT)

    async def conversation(client: AsyncOpenAI) -> Any:
        # the API serves a summary only when asked (`summary: []` otherwise)
        first = await client.responses.create(
            model="m", input="Weather in Paris?", tools=[TOOL], store=False,
            include=["reasoning.encrypted_content"], reasoning={"summary": "auto"},
        )  # fmt: skip
        reasoning, call = first.output
        assert reasoning.type == "reasoning" and call.type == "function_call"
        assert reasoning.encrypted_content and reasoning.summary[0].text.startswith("The user wants")
        history: list[Any] = [
            {"role": "user", "content": "Weather in Paris?"},
            reasoning.model_dump(exclude_none=True),
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"},
        ]
        second = await client.responses.create(model="m", input=history, tools=[TOOL], store=False)
        return first, second

    first, second = talk(sim, conversation)
    assert first.status == "completed" and first.output[1].arguments == '{"city":"Paris"}'
    assert second.output_text == "It is sunny in Paris."
    assert messages(sim.answerer.problems) == []


def test_reasoning_that_does_not_come_back_unchanged_is_refused(tmp_path: Path) -> None:
    sim = simulator(tmp_path, SCRIPT)

    async def conversation(client: AsyncOpenAI) -> Any:
        first = await client.responses.create(
            model="m",
            input="Weather?",
            tools=[TOOL],
            include=["reasoning.encrypted_content"],
        )
        reasoning, call = first.output
        altered = {**reasoning.model_dump(exclude_none=True), "encrypted_content": "tampered"}
        history = [{"role": "user", "content": "Weather?"}, altered,
                   {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": "{}"},
                   {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}]  # fmt: skip
        with pytest.raises(openai.BadRequestError) as caught:
            await client.responses.create(model="m", input=history, tools=[TOOL])
        return caught.value

    error = talk(sim, conversation)
    assert error.code == "sim_reasoning_changed"
    assert messages(sim.answerer.problems) == [
        "request 2: invalid request: The reasoning item rs_sim000001_1 did not come back as it was served."
    ]


def test_a_chain_through_previous_response_id(tmp_path: Path) -> None:
    sim = simulator(tmp_path, SCRIPT)

    async def conversation(client: AsyncOpenAI) -> Any:
        first = await client.responses.create(model="m", input="Weather?", tools=[TOOL], store=True)
        call = first.output[-1]
        return await client.responses.create(
            model="m", previous_response_id=first.id, tools=[TOOL],
            input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
        )  # fmt: skip

    second = talk(sim, conversation)
    assert second.previous_response_id == "resp_sim000001"
    assert second.output_text == "It is sunny in Paris."
    (_, request) = sim.answerer.requests
    assert [m.role for m in request.messages] == ["user", "assistant", "tool"]  # the whole conversation


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"input": [{"type": "function_call_output", "call_id": "nope", "output": "x"}]}, 400,
         "No tool call found for function call output with call_id nope."),
        ({"input": [{"role": "user", "content": "hi"},
                    {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"},
                    {"role": "user", "content": "and?"}]}, 400, "No tool output found for function call c1."),
        ({"input": "hi", "tools": [{"type": "function", "function": {"name": "lookup"}}]}, 400,
         "not Chat's {function: {...}}"),
        ({"input": "hi", "previous_response_id": "resp_unknown"}, 400, "Previous response with id"),
        ({"input": "hi", "tools": [{"type": "computer_use_preview", "display_width": 1024,
                                    "display_height": 768, "environment": "browser"}]}, 400,
         "sim does not simulate built-in tools"),
    ],
    ids=["orphan output", "unanswered call", "chat-shaped tools", "unknown previous", "built-in tool"],
)  # fmt: skip
def test_requests_the_api_refuses(tmp_path: Path, body: dict[str, Any], status: int, says: str) -> None:
    sim = simulator(tmp_path, SCRIPT)

    async def conversation(client: AsyncOpenAI) -> httpx2.Response:
        return await client.post("/responses", cast_to=httpx2.Response, body={"model": "m", **body})

    with pytest.raises(openai.BadRequestError) as caught:
        talk(sim, conversation)
    assert caught.value.status_code == status
    assert says in caught.value.message
    assert sim.answerer.answered == 0


def test_the_sdks_stream_helper_accumulates_the_events(tmp_path: Path) -> None:
    sim = simulator(tmp_path, "prompt: p\nreplies:\n  - content: A streamed answer in several pieces.\n")

    async def conversation(client: AsyncOpenAI) -> Any:
        async with client.responses.stream(model="m", input="hi") as stream:
            kinds = [event.type async for event in stream]
            return kinds, await stream.get_final_response()

    kinds, final = talk(sim, conversation)
    assert final.output_text == "A streamed answer in several pieces."
    assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]  # fmt: skip
    assert kinds[-4:] == ["response.output_text.done", "response.content_part.done",
                          "response.output_item.done", "response.completed"]  # fmt: skip
    assert kinds.count("response.output_text.delta") == 5


def test_streamed_calls_and_sequence_numbers(tmp_path: Path) -> None:
    sim = simulator(tmp_path, SCRIPT)

    async def conversation(client: AsyncOpenAI) -> Any:
        stream = await client.responses.create(model="m", input="Weather?", tools=[TOOL], stream=True)
        return [event async for event in stream]

    events = talk(sim, conversation)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    arguments = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert arguments == '{"city":"Paris"}'
    assert events[-1].type == "response.completed"


@pytest.mark.parametrize(
    ("finish", "reason"), [("length", "max_output_tokens"), ("content_filter", "content_filter")]
)
def test_length_and_content_filter_are_incomplete_responses(tmp_path: Path, finish: str, reason: str) -> None:
    sim = simulator(tmp_path, f"prompt: p\nreplies:\n  - {{content: cut, finish_reason: {finish}}}\n")

    async def conversation(client: AsyncOpenAI) -> Any:
        return await client.responses.create(model="m", input="hi")

    response = talk(sim, conversation)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None and response.incomplete_details.reason == reason


@pytest.mark.parametrize("path", ["/v1/embeddings", "/v1/responses/resp_1/steps", "/v2/chat"])
def test_paths_not_served_get_a_json_404_naming_what_is_served(tmp_path: Path, path: str) -> None:
    sim = simulator(tmp_path, SCRIPT)

    async def conversation(client: AsyncOpenAI) -> httpx2.Response:
        return await client.post(path.removeprefix("/v1"), cast_to=httpx2.Response, body={})

    with pytest.raises(openai.NotFoundError) as caught:
        talk(sim, conversation)
    assert caught.value.code == "not_found"
    assert (
        "POST /v1/chat/completions" in caught.value.message and "POST /v1/responses" in caught.value.message
    )


def test_a_refusal_reaches_the_sdk_as_each_api_sends_one(tmp_path: Path) -> None:
    async def conversation(client: AsyncOpenAI) -> Any:
        chat = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        async with client.chat.completions.stream(
            model="m", messages=[{"role": "user", "content": "x"}]
        ) as s:
            streamed_chat = await s.get_final_completion()
        response = await client.responses.create(model="m", input="x")
        async with client.responses.stream(model="m", input="x") as events:
            kinds = [event.type async for event in events]
            streamed = await events.get_final_response()
        return chat, streamed_chat, response, kinds, streamed

    sim = simulator(tmp_path, "prompt: p\nreplies:\n" + "  - refusal: I can't help with that request.\n" * 4)
    chat, streamed_chat, response, kinds, streamed = talk(sim, conversation)
    for completion in (chat, streamed_chat):
        message = completion.choices[0].message
        assert (message.content, message.refusal) == (None, "I can't help with that request.")
    for answer in (response, streamed):
        (part,) = answer.output[0].content
        assert (part.type, part.refusal) == ("refusal", "I can't help with that request.")
    assert "response.refusal.delta" in kinds and "response.refusal.done" in kinds
    assert messages(sim.answerer.problems) == []


def test_a_refusal_cannot_also_carry_text(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="refusal"):
        simulator(tmp_path, "prompt: p\nreplies:\n  - {refusal: No., content: Yes.}\n")
