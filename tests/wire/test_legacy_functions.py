"""Chat's deprecated `functions` / `function_call`, served as the API serves them (issue item 9): one call
in `message.function_call` with `finish_reason: "function_call"` (`stop` when `function_call` named it),
streamed as `delta.function_call` pieces the SDK's accumulator reassembles; `role: "function"` history read
back, paired with the call before it; and what the API refuses of it, refused. Through the real SDK against
the simulator in process, every body and chunk judged by the official spec."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI

from sim.host.app import Host
from sim.scenario.answerer import ScriptAnswerer
from tests.host.in_process import post, simulator, talk
from tests.spec import untolerated

SCRIPT = """
prompt: p
tools: [{name: lookup}]
replies:
  - {tool_calls: [{name: lookup, arguments: {city: Paris}}]}
  - content: Sunny.
"""
FUNCTIONS: Any = [
    {"name": "lookup", "description": "Looks a city up.",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
]  # fmt: skip
ASK: Any = [{"role": "user", "content": "p"}]


def sim(tmp_path: Path, script: str = SCRIPT) -> Host[ScriptAnswerer]:
    return simulator(tmp_path, script)


def chunks_of(text: str) -> list[Any]:
    return [json.loads(line[6:]) for line in text.split("\n") if line.startswith("data: {")]


@pytest.mark.parametrize(("function_call", "finish"), [(None, "function_call"), ("auto", "function_call"),
                                                       ({"name": "lookup"}, "stop")])  # fmt: skip
def test_a_legacy_request_is_answered_with_one_function_call(
    tmp_path: Path, function_call: Any, finish: str
) -> None:
    body: dict[str, Any] = {"model": "m", "messages": ASK, "functions": FUNCTIONS}
    if function_call is not None:
        body["function_call"] = function_call
    (response,) = post(sim(tmp_path), body)
    completion = response.json()
    assert untolerated("CreateChatCompletionResponse", completion) == []
    (choice,) = completion["choices"]
    assert choice["finish_reason"] == finish
    message = choice["message"]
    assert "tool_calls" not in message
    assert message["function_call"] == {"name": "lookup", "arguments": '{"city":"Paris"}'}


@pytest.mark.parametrize(("function_call", "finish"), [(None, "function_call"), ({"name": "lookup"}, "stop")])
def test_a_legacy_call_streams_as_function_call_pieces(
    tmp_path: Path, function_call: Any, finish: str
) -> None:
    body: dict[str, Any] = {"model": "m", "messages": ASK, "functions": FUNCTIONS, "stream": True}
    if function_call is not None:
        body["function_call"] = function_call
    (response,) = post(sim(tmp_path), body)
    chunks = chunks_of(response.text)
    for chunk in chunks:
        assert untolerated("CreateChatCompletionStreamResponse", chunk) == []
    deltas = [c["delta"] for chunk in chunks for c in chunk["choices"]]
    assert not any("tool_calls" in delta for delta in deltas)
    pieces = [delta["function_call"] for delta in deltas if "function_call" in delta]
    assert pieces[0] == {"name": "lookup", "arguments": ""}
    assert "".join(piece["arguments"] for piece in pieces) == '{"city":"Paris"}'
    assert [c["finish_reason"] for chunk in chunks for c in chunk["choices"] if c["finish_reason"]] == [
        finish
    ]


def test_the_sdk_stream_accumulator_reassembles_a_legacy_call(tmp_path: Path) -> None:
    async def ask(client: AsyncOpenAI) -> Any:
        async with client.chat.completions.stream(model="m", messages=ASK, functions=FUNCTIONS) as stream:
            async for _ in stream:
                pass
            return await stream.get_final_completion()

    (choice,) = talk(sim(tmp_path), ask).choices
    assert choice.finish_reason == "function_call" and not choice.message.tool_calls
    assert choice.message.function_call is not None
    assert (choice.message.function_call.name, choice.message.function_call.arguments) == (
        "lookup",
        '{"city":"Paris"}',
    )


def test_a_legacy_loop_sends_the_result_back_as_a_function_message(tmp_path: Path) -> None:
    """The whole loop through the SDK: the call read from `function_call`, its result sent back as a
    `role: "function"` message after the assistant message, the answer read."""

    async def loop(client: AsyncOpenAI) -> str | None:
        messages: list[Any] = list(ASK)
        for _ in range(3):
            message = await client.chat.completions.create(model="m", messages=messages, functions=FUNCTIONS)
            reply = message.choices[0].message
            messages.append(reply.model_dump(exclude_none=True))
            if reply.function_call is None:
                return reply.content
            messages.append({"role": "function", "name": reply.function_call.name, "content": "sunny"})
        return None

    host = sim(tmp_path)
    assert talk(host, loop) == "Sunny."
    assert host.answerer.problems == []


def answered(tmp_path: Path, messages: list[Any], **fields: Any) -> Any:
    (response,) = post(sim(tmp_path), {"model": "m", "messages": messages, "functions": FUNCTIONS, **fields})
    return response


CALLED = {"role": "assistant", "content": None, "function_call": {"name": "lookup", "arguments": "{}"}}
RESULT = {"role": "function", "name": "lookup", "content": "sunny"}


@pytest.mark.parametrize(
    "messages",
    [
        [*ASK, RESULT],  # a result with no call before it
        [*ASK, CALLED, {"role": "user", "content": "and?"}],  # a call never answered
        [*ASK, CALLED, RESULT, RESULT],  # one call answered twice
    ],
    ids=["orphan-result", "unanswered-call", "answered-twice"],
)
def test_legacy_history_keeps_the_pairing_rules(tmp_path: Path, messages: list[Any]) -> None:
    response = answered(tmp_path, messages)
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("Invalid request: ")


def test_legacy_history_is_read_back_as_calls_and_results(tmp_path: Path) -> None:
    response = answered(tmp_path, [*ASK, CALLED, {**RESULT, "content": None}])
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("fields", "messages", "message", "param", "code"),
    [
        ({"functions": None, "function_call": "auto"}, ASK,
         "Invalid value for 'function_call': 'function_call' is only allowed when 'functions' are specified.",
         "function_call", None),
        ({}, [*ASK, {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
              {"role": "tool", "tool_call_id": "c1", "content": "x"}],
         "Invalid parameter: messages with role 'tool' cannot be used when 'functions' are present."
         " Please use 'tools' instead of 'functions'.", "messages.[2].role", None),
        ({"model": "o3"}, [*ASK, CALLED, RESULT],
         "Unsupported value: 'messages[2].role' does not support 'function' with this model.",
         "messages[2].role", "unsupported_value"),
        ({"model": "gpt-5-mini"}, [*ASK, CALLED, RESULT],
         "Unsupported value: 'messages[2].role' does not support 'function' with this model.",
         "messages[2].role", "unsupported_value"),
    ],
    ids=["function_call-without-functions", "tool-message-with-functions", "o3-function-role", "gpt-5"],
)  # fmt: skip
def test_what_the_api_refuses_of_legacy_functions_is_refused(
    tmp_path: Path, fields: dict[str, Any], messages: list[Any], message: str, param: str, code: str | None
) -> None:
    async def ask(client: AsyncOpenAI) -> Any:
        options = {"model": "gpt-4o", "functions": FUNCTIONS, **fields}
        return await client.chat.completions.create(
            messages=messages, **{k: v for k, v in options.items() if v}
        )

    with pytest.raises(openai.BadRequestError) as raised:
        talk(sim(tmp_path), ask)
    assert raised.value.body == {
        "message": message,
        "type": "invalid_request_error",
        "param": param,
        "code": code,
    }


def test_functions_and_tools_together_are_not_simulated(tmp_path: Path) -> None:
    tools = [{"type": "function", "function": {"name": "lookup"}}]
    response = answered(tmp_path, ASK, tools=tools)
    error = response.json()["error"]
    assert response.status_code == 400 and (error["param"], error["code"]) == (
        "functions",
        "unsupported_value",
    )
    assert untolerated("ErrorResponse", response.json()) == []


def test_function_call_naming_a_function_not_offered_is_refused(tmp_path: Path) -> None:
    response = answered(tmp_path, ASK, function_call={"name": "other"})
    assert (response.status_code, response.json()["error"]["param"]) == (400, "function_call")


@pytest.mark.parametrize(
    ("script", "fields", "says"),
    [
        (SCRIPT, {"function_call": "none"}, "function_call 'none'"),
        ("prompt: p\ntools: [{name: lookup}]\nreplies:\n  - {tool_calls: [{name: lookup, arguments: {}},"
         " {name: lookup, arguments: {}}]}\n", {}, "one function_call at most"),
    ],
    ids=["none", "two-calls"],
)  # fmt: skip
def test_a_script_the_legacy_request_forbids_is_a_script_mismatch(
    tmp_path: Path, script: str, fields: dict[str, Any], says: str
) -> None:
    host = sim(tmp_path, script)
    (response,) = post(host, {"model": "m", "messages": ASK, "functions": FUNCTIONS, **fields})
    assert response.status_code >= 400
    assert says in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "message",
    [
        {"role": "function", "content": "x"},  # no name
        {"role": "function", "name": "lookup", "content": {"nested": ["x"] * 3}},
        {"role": "assistant", "content": None, "function_call": "lookup()"},
        {"role": "assistant", "content": None, "function_call": {"name": "lookup", "arguments": {"a": 1}}},
        {"role": "assistant", "content": None, "function_call": {"name": "", "arguments": "{}"}},
    ],
    ids=["unnamed", "content-object", "call-string", "arguments-object", "empty-name"],
)
def test_malformed_legacy_messages_are_refused_not_crashed(tmp_path: Path, message: Any) -> None:
    response = answered(tmp_path, [*ASK, message])
    assert response.status_code == 400 and response.json()["error"]["message"].startswith("Invalid request: ")


def test_huge_and_untrusted_legacy_text_is_carried_whole(tmp_path: Path) -> None:
    untrusted = "\u202e</script>\x00" + "x" * 200_000 + "\U0001f600"
    called = {**CALLED, "function_call": {"name": "lookup", "arguments": json.dumps({"q": untrusted})}}
    response = answered(tmp_path, [*ASK, called, {**RESULT, "content": untrusted}])
    assert response.status_code == 200, response.text[:300]
