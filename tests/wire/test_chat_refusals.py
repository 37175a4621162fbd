"""Chat Completions requests the API refuses, refused in its words, `param` and `code` (issue item 7):
`tool_choice` or `parallel_tool_calls` with no tools (or an empty `tools` list), `max_tokens` on a reasoning
model, an unknown `service_tier` (both APIs); and the tier a reply says served it (`flex` echoed `flex`).
Spoken to through the real SDK against the simulator in process; every error and reply judged by the
official spec."""

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
  - content: Sunny.
"""
TOOLS: Any = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
ASK: Any = [{"role": "user", "content": "p"}]


def sim(tmp_path: Path) -> Host[ScriptAnswerer]:
    return simulator(tmp_path, SCRIPT)


def refused(tmp_path: Path, **fields: Any) -> openai.BadRequestError:
    """What the SDK raises for a Chat request with `fields`."""

    async def ask(client: AsyncOpenAI) -> Any:
        return await client.chat.completions.create(
            model=fields.pop("model", "gpt-4o"), messages=ASK, **fields
        )

    with pytest.raises(openai.BadRequestError) as raised:
        talk(sim(tmp_path), ask)
    return raised.value


def error_body(tmp_path: Path, body: dict[str, Any], path: str = "/v1/chat/completions") -> dict[str, Any]:
    """The 400 body the simulator answers `body` with, checked against the spec's `ErrorResponse`."""
    (response,) = post(sim(tmp_path), body, path=path)
    assert response.status_code == 400, response.text
    payload = response.json()
    assert untolerated("ErrorResponse", payload) == []
    return payload["error"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("fields", "message", "param", "code"),
    [
        (
            {"tool_choice": "auto"},
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
            "tool_choice",
            None,
        ),
        (
            {"tool_choice": "required"},
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
            "tool_choice",
            None,
        ),
        (
            {"tool_choice": {"type": "function", "function": {"name": "lookup"}}},
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
            "tool_choice",
            None,
        ),
        (
            {"parallel_tool_calls": True},
            "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are"
            " specified.",
            "parallel_tool_calls",
            None,
        ),
        (
            {"parallel_tool_calls": False},
            "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are"
            " specified.",
            "parallel_tool_calls",
            None,
        ),
        (
            {"tools": [], "tool_choice": "auto"},  # tools dropped, the list kept
            "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array"
            " instead.",
            "tools",
            "empty_array",
        ),
        (
            {"tools": [{"type": "function", "function": {"name": f"f{n}"}} for n in range(129)]},
            "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array"
            " with length 129 instead.",
            "tools",
            "array_above_max_length",
        ),
    ],
    ids=["auto", "required", "named", "parallel-true", "parallel-false", "empty-tools", "too-many-tools"],
)
def test_what_only_tools_allow_is_refused_without_tools(
    tmp_path: Path, fields: dict[str, Any], message: str, param: str, code: str | None
) -> None:
    """A framework that drops its tools on the last turn but keeps `tool_choice` (or
    `parallel_tool_calls`) gets the API's 400, not a reply."""
    error = refused(tmp_path, **fields)
    assert (error.body, error.param, error.code) == (
        {"message": message, "type": "invalid_request_error", "param": param, "code": code},
        param,
        code,
    )
    assert error_body(tmp_path, {"model": "m", "messages": ASK, **fields})["message"] == message


def test_tool_choice_none_without_tools_is_still_answered(tmp_path: Path) -> None:
    async def ask(client: AsyncOpenAI) -> Any:
        return await client.chat.completions.create(model="m", messages=ASK, tool_choice="none")

    assert talk(sim(tmp_path), ask).choices[0].message.content == "Sunny."


MAX_TOKENS = (
    "Unsupported parameter: 'max_tokens' is not supported with this model."
    " Use 'max_completion_tokens' instead."
)


@pytest.mark.parametrize("model", ["o1", "o1-mini", "o3-mini-2025-01-31", "o4-mini", "gpt-5", "gpt-5.1-mini"])
def test_max_tokens_is_refused_on_reasoning_models(tmp_path: Path, model: str) -> None:
    error = refused(tmp_path, model=model, max_tokens=100)
    assert error.body == {
        "message": MAX_TOKENS,
        "type": "invalid_request_error",
        "param": "max_tokens",
        "code": "unsupported_parameter",
    }


@pytest.mark.parametrize(
    ("model", "fields"),
    [
        ("gpt-4o", {"max_tokens": 100}),
        ("gpt-4.1-mini", {"max_tokens": 100}),
        ("o3", {"max_completion_tokens": 100}),
        ("gpt-5", {"max_completion_tokens": 100}),
        ("omni-search", {"max_tokens": 100}),  # not an o-series name
    ],
)
def test_the_token_limit_each_model_takes_is_answered(
    tmp_path: Path, model: str, fields: dict[str, Any]
) -> None:
    async def ask(client: AsyncOpenAI) -> Any:
        return await client.chat.completions.create(model=model, messages=ASK, **fields)

    assert talk(sim(tmp_path), ask).choices[0].message.content == "Sunny."


TIERS = "Supported values are: 'auto', 'default', 'flex', 'scale', 'priority', and 'fast'."


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("tier", ["turbo", "FLEX", "", "x" * 10_000], ids=["turbo", "FLEX", "empty", "huge"])
def test_an_unknown_service_tier_is_refused_in_both_apis(tmp_path: Path, api: str, tier: str) -> None:
    body: dict[str, Any] = {"model": "m", "service_tier": tier}
    body |= {"messages": ASK} if api == "chat" else {"input": "p"}
    path = "/v1/chat/completions" if api == "chat" else "/v1/responses"
    error = error_body(tmp_path, body, path)
    assert error == {
        "message": f"Invalid value: '{tier}'. {TIERS}",
        "type": "invalid_request_error",
        "param": "service_tier",
        "code": "invalid_value",
    }


@pytest.mark.parametrize("tier", [3, ["flex"], {"tier": "flex"}, True])
def test_a_service_tier_that_is_not_a_string_is_refused(tmp_path: Path, tier: Any) -> None:
    error = error_body(tmp_path, {"model": "m", "messages": ASK, "service_tier": tier})
    assert (error["param"], error["code"]) == ("service_tier", "invalid_type")


@pytest.mark.parametrize(
    ("asked", "served"),
    [
        (None, "default"),
        ("auto", "default"),
        ("default", "default"),
        ("flex", "flex"),
        ("priority", "priority"),
        ("fast", "priority"),  # the API documents fast mode as shown `priority`
    ],
)
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_the_reply_says_the_tier_that_served_it(
    tmp_path: Path, asked: str | None, served: str, stream: bool
) -> None:
    body: dict[str, Any] = {"model": "m", "messages": ASK, "stream": stream}
    if asked is not None:
        body["service_tier"] = asked
    (response,) = post(sim(tmp_path), body)
    assert response.status_code == 200, response.text
    if not stream:
        assert response.json()["service_tier"] == served
        assert untolerated("CreateChatCompletionResponse", response.json()) == []
        return
    chunks = [json.loads(line[6:]) for line in response.text.split("\n") if line.startswith("data: {")]
    assert chunks and {chunk["service_tier"] for chunk in chunks} == {served}
    for chunk in chunks:
        assert untolerated("CreateChatCompletionStreamResponse", chunk) == []


def test_the_sdk_reads_the_tier_a_flex_request_was_served(tmp_path: Path) -> None:
    async def ask(client: AsyncOpenAI) -> Any:
        return await client.chat.completions.create(model="o4-mini", messages=ASK, service_tier="flex")

    assert talk(sim(tmp_path), ask).service_tier == "flex"


@pytest.mark.parametrize(("asked", "served"), [("flex", "flex"), ("auto", "default"), ("fast", "priority")])
def test_a_responses_request_is_served_the_tier_it_asked_for(tmp_path: Path, asked: str, served: str) -> None:
    body = {"model": "m", "input": "p", "service_tier": asked}
    (response,) = post(sim(tmp_path), body, path="/v1/responses")
    assert response.json()["service_tier"] == served
    assert untolerated("Response", response.json()) == []


def test_hostile_tool_choice_without_tools_is_refused_not_crashed(tmp_path: Path) -> None:
    nested: Any = "auto"
    for _ in range(40):
        nested = {"type": "function", "function": nested}
    assert (
        error_body(tmp_path, {"model": "m", "messages": ASK, "tool_choice": nested})["param"] == "tool_choice"
    )
    deep = '{"type": "function", "function": ' * 5_000 + '"auto"' + "}" * 5_000
    text = f'{{"model": "m", "messages": {json.dumps(ASK)}, "tool_choice": {deep}}}'
    (response,) = post(sim(tmp_path), text.encode())
    assert response.status_code == 400 and response.json()["error"]["param"] is None  # too deep to read
