"""A forced named `tool_choice` is answered as the API answers it (issue item 8): the call, with
`finish_reason: "stop"`, JSON and streamed (`required` and `allowed_tools` still end `tool_calls`); the
SDK's stream accumulator reassembles it, and every body and chunk conforms to the official spec."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI

from sim.core.messages import AssistantMessage, ToolCall
from sim.core.model import ModelReply
from sim.wire.chat.served import served_finish
from sim.wire.tool_choice import ReplyTerms, ToolChoice
from tests.host.in_process import post, simulator, talk
from tests.spec import untolerated

SCRIPT = """
prompt: p
tools: [{name: lookup}, {name: clock}]
replies:
  - {tool_calls: [{name: lookup, arguments: {city: Paris}}]}
  - content: Sunny.
"""
TOOLS: Any = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("lookup", "clock")
]
ASK: Any = [{"role": "user", "content": "p"}]
NAMED: Any = {"type": "function", "function": {"name": "lookup"}}
ALLOWED = {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [NAMED]}}


@pytest.mark.parametrize(
    ("choice", "finish"),
    [(NAMED, "stop"), ("required", "tool_calls"), ("auto", "tool_calls"), (ALLOWED, "tool_calls")],
    ids=["named", "required", "auto", "allowed_tools"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_forced_named_call_ends_stop(tmp_path: Path, choice: Any, finish: str, stream: bool) -> None:
    body = {"model": "m", "messages": ASK, "tools": TOOLS, "tool_choice": choice, "stream": stream}
    (response,) = post(simulator(tmp_path, SCRIPT), body)
    assert response.status_code == 200, response.text
    if not stream:
        completion = response.json()
        assert untolerated("CreateChatCompletionResponse", completion) == []
        (choice_served,) = completion["choices"]
        assert choice_served["finish_reason"] == finish
        assert [call["function"]["name"] for call in choice_served["message"]["tool_calls"]] == ["lookup"]
        return
    chunks = [json.loads(line[6:]) for line in response.text.split("\n") if line.startswith("data: {")]
    for chunk in chunks:
        assert untolerated("CreateChatCompletionStreamResponse", chunk) == []
    finishes = [c["finish_reason"] for chunk in chunks for c in chunk["choices"] if c["finish_reason"]]
    assert finishes == [finish]


def test_the_sdk_stream_accumulator_reassembles_the_forced_call(tmp_path: Path) -> None:
    async def forced(client: AsyncOpenAI) -> Any:
        async with client.chat.completions.stream(
            model="m",
            messages=ASK,
            tools=TOOLS,
            tool_choice=NAMED,
        ) as stream:
            async for _ in stream:
                pass
            return await stream.get_final_completion()

    completion = talk(simulator(tmp_path, SCRIPT), forced)
    (choice,) = completion.choices
    assert choice.finish_reason == "stop"
    (call,) = choice.message.tool_calls or []
    assert (call.function.name, json.loads(call.function.arguments)) == ("lookup", {"city": "Paris"})


def test_a_loop_that_reads_calls_whatever_the_finish_reason_answers_the_forced_call(tmp_path: Path) -> None:
    """The whole round trip through the SDK: forced on the first request, answered, then the text."""

    async def loop(client: AsyncOpenAI) -> tuple[str | None, str | None]:
        messages: list[Any] = list(ASK)
        first = await client.chat.completions.create(
            model="m", messages=messages, tools=TOOLS, tool_choice=NAMED
        )
        choice = first.choices[0]
        messages.append(choice.message.model_dump(exclude_none=True))
        for call in choice.message.tool_calls or []:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny"})
        second = await client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        return choice.finish_reason, second.choices[0].message.content

    assert talk(simulator(tmp_path, SCRIPT), loop) == ("stop", "Sunny.")


def test_only_a_call_the_named_choice_forced_ends_stop() -> None:
    named = ReplyTerms(choice=ToolChoice(required=True, allowed=frozenset({"lookup"}), named="lookup"))
    call = ToolCall(id="call_1", name="lookup", arguments="{}")
    assert served_finish(ModelReply.calling(call), named) == "stop"
    assert served_finish(ModelReply.calling(call), ReplyTerms()) == "tool_calls"
    cut = ModelReply(message=AssistantMessage(tool_calls=(call,)), finish_reason="length")
    assert served_finish(cut, named) == "length"  # cut at the token limit: still `length`
