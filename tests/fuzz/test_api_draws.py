"""What the api profile draws since issue 37, item 6, and what the guarantees then allow: a failure
mid-stream (as the API fails a stream: `response.failed`, Chat's error frame), `context_length_exceeded`
in each API's words and with its `param`, and, where `parallel_tool_calls` is not false, parallel calls
whose arguments miss a strict schema (which OpenAI says can happen: `PARALLEL_STRICT`). A scripted reply
doing it is served, through the official SDK; a loop that trusts strict arguments with parallel calls on
is found by a short campaign, one that asks for one call at a time is not."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI, OpenAI

from sim.core.messages import UserMessage
from sim.core.model import ModelRequest, ToolSpec
from sim.fuzz.replies import ReplyDrawer
from sim.fuzz.target import fuzz_target
from sim.fuzz.terms import Profile
from sim.host.transport import transport
from sim.wire.guarantees import PARALLEL_STRICT
from sim.wire.tool_choice import ReplyTerms
from tests.fuzz import targets
from tests.host.in_process import simulator
from tests.host.processes import served

PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
              "additionalProperties": False}  # fmt: skip
WEATHER = ToolSpec("get_weather", "The weather.", PARAMETERS)
REQUEST = ModelRequest([UserMessage(content="Weather?")], (WEATHER,))
STRICT = ReplyTerms(strict={"get_weather": PARAMETERS})
CHAT_BODY = {"model": "m", "messages": [{"role": "user", "content": "Weather?"}]}
RESPONSES_BODY = {"model": "m", "input": "Weather?"}
CHAT_WORDS = "This model's maximum context length is 128000 tokens. However, your messages resulted in"
RESPONSES_WORDS = (
    "Your input exceeds the context window of this model. Please adjust your input and try again."
)


def _off_schema(arguments: Any) -> bool:
    return not (
        isinstance(arguments, dict) and set(arguments) == {"city"} and isinstance(arguments["city"], str)
    )


def test_the_api_profile_draws_each_new_trouble_as_the_api_sends_it() -> None:
    seen: set[str] = set()

    @settings(max_examples=400, deadline=None, database=None)
    @given(st.data(), st.sampled_from(["chat", "responses"]), st.booleans())
    def collect(data: st.DataObject, api: str, parallel: bool) -> None:
        drawer = ReplyDrawer(data, Profile.api)
        body = CHAT_BODY if api == "chat" else RESPONSES_BODY
        terms = ReplyTerms(strict=STRICT.strict, parallel=parallel)
        for _ in range(4):
            reply = drawer.draw(REQUEST, terms, body)
            error = reply.error
            if error is not None and error.in_stream:
                assert (error.status, error.type, error.code) == (500, "server_error", "server_error")
                seen.add("in_stream")
            if error is not None and error.code == "context_length_exceeded":
                assert (error.status, error.type) == (400, "invalid_request_error")
                assert error.param == ("messages" if api == "chat" else "input")
                assert error.message.startswith(CHAT_WORDS if api == "chat" else RESPONSES_WORDS)
                seen.add(f"context {api}")
            missed = [call for call in reply.tool_calls if _off_schema(call.arguments)]
            if missed and reply.finish_reason != "length":
                assert parallel and len(reply.tool_calls) > 1, (
                    reply
                )  # one call at a time: always the schema's
                seen.add("parallel strict miss")

    collect()
    assert seen == {"in_stream", "context chat", "context responses", "parallel strict miss"}


def test_without_the_body_no_context_error_is_drawn() -> None:
    """The error's words depend on the API: a drawer not told the request's body draws none."""

    @settings(max_examples=150, deadline=None, database=None)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        drawer = ReplyDrawer(data, Profile.api)
        for _ in range(4):
            error = drawer.draw(REQUEST).error
            assert error is None or error.code != "context_length_exceeded"

    check()


STRICT_TOOL: Any = {"name": "get_weather", "parameters": PARAMETERS, "strict": True}
PARALLEL_MISS = """
prompt: Weather?
tools: [{name: get_weather}]
replies:
  - tool_calls:
      - {name: get_weather, arguments: {city: Paris}}
      - {name: get_weather, arguments: {town: Rome}}
"""
SINGLE_MISS = """
prompt: Weather?
tools: [{name: get_weather}]
replies:
  - tool_calls: [{name: get_weather, arguments: {town: Rome}}]
"""


def _talk(sim: Any, conversation: Any) -> Any:
    async def go() -> Any:
        http = httpx2.AsyncClient(transport=transport(sim))
        async with AsyncOpenAI(base_url="http://sim.test/v1", api_key="sk-test", max_retries=0,
                               http_client=http) as client:  # fmt: skip
            return await conversation(client)

    return asyncio.run(go())


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_scripted_parallel_call_off_a_strict_schema_is_served(tmp_path: Path, api: str) -> None:
    assert "may not match supplied schemas" in PARALLEL_STRICT
    assert (
        "may not match supplied schemas"
        in (Path(__file__).parents[2] / "docs/beyond-functions.md").read_text()
    )

    async def conversation(client: AsyncOpenAI) -> Any:
        if api == "chat":
            tools: Any = [{"type": "function", "function": STRICT_TOOL}]
            completion = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "Weather?"}], tools=tools
            )
            return [call.function.arguments for call in completion.choices[0].message.tool_calls or ()]
        response = await client.responses.create(
            model="m", input="Weather?", tools=[{"type": "function", **STRICT_TOOL}]
        )
        return [item.arguments for item in response.output if item.type == "function_call"]

    arguments = _talk(simulator(tmp_path, PARALLEL_MISS), conversation)
    assert [json.loads(text) for text in arguments] == [{"city": "Paris"}, {"town": "Rome"}]


@pytest.mark.parametrize(("script", "parallel"), [(SINGLE_MISS, None), (PARALLEL_MISS, False)],
                         ids=["one call", "parallel_tool_calls false"])  # fmt: skip
def test_where_the_strict_guarantee_holds_a_miss_is_still_a_script_mismatch(
    tmp_path: Path, script: str, parallel: bool | None
) -> None:
    extra = {} if parallel is None else {"parallel_tool_calls": parallel}

    async def conversation(client: AsyncOpenAI) -> Any:
        tools: Any = [{"type": "function", "function": STRICT_TOOL}]
        await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Weather?"}], tools=tools, **extra
        )

    with pytest.raises(openai.BadRequestError) as raised:
        _talk(simulator(tmp_path, script), conversation)
    assert isinstance(raised.value.body, dict) and raised.value.body["code"] == "sim_script_mismatch"


CONTEXT = """
prompt: Weather?
replies:
  - error: {status: 400, code: context_length_exceeded, param: PARAM, message: "WORDS"}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """`sim serve` on 127.0.0.1 answering every request with Chat's context error, again and again."""
    file = tmp_path_factory.mktemp("draws") / "scenario.yaml"
    file.write_text(CONTEXT.replace("PARAM", "messages").replace("WORDS", CHAT_WORDS + " 130000 tokens."))
    with served(file, "--cycle") as (_, base_url):
        yield base_url


def test_a_scripted_context_error_reaches_the_sync_sdk_with_its_param(server: str) -> None:
    client = OpenAI(base_url=server, api_key="sk-test", max_retries=2)
    with client, pytest.raises(openai.BadRequestError) as raised:  # a 400: never retried
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Weather?"}])
    error = raised.value
    assert error.code == "context_length_exceeded" and error.param == "messages"
    assert isinstance(error.body, dict) and error.body["message"].startswith(CHAT_WORDS)
    assert error.type == "invalid_request_error"


def test_a_scripted_context_error_reaches_the_async_sdk_streaming(tmp_path: Path) -> None:
    text = CONTEXT.replace("PARAM", "input").replace("WORDS", RESPONSES_WORDS)

    async def conversation(client: AsyncOpenAI) -> Any:
        async with client.responses.stream(model="m", input="Weather?") as stream:
            async for _ in stream:
                pass

    with pytest.raises(openai.BadRequestError) as raised:
        _talk(simulator(tmp_path, text), conversation)
    body = raised.value.body
    assert isinstance(body, dict) and (body["code"], body["param"], body["message"]) == (
        "context_length_exceeded", "input", RESPONSES_WORDS)  # fmt: skip


def test_a_loop_trusting_strict_arguments_with_parallel_calls_on_is_found() -> None:
    """The API does not guarantee a strict schema to parallel calls: the api profile now sends what it may,
    and the loop's trust is a crash; the same loop asking for one call at a time passes (test_target)."""
    campaign = fuzz_target(targets.trusts_strict_arguments_in_parallel, examples=40, seed=0)
    assert "crash" in {violation.invariant for violation in campaign.violations}
    assert not any("disagree" in violation.detail for violation in campaign.violations)


def test_a_careful_loop_meets_the_new_draws_and_passes() -> None:
    """Context errors and failed streams end a careful loop's run with the SDK's exception, counted as the
    API's behaviour, never a finding."""
    wanted = {"context_length_exceeded", "server_error"}
    codes: set[str | None] = set()
    raised = 0
    # which troubles one seed's 40 runs draw can differ with the process a suite runs this in (seen under
    # xdist): campaigns go on, each one judged, until every wanted draw has met the loop
    for seed in range(1, 5):
        drawn: list[Any] = []
        campaign = fuzz_target(
            targets.careful, examples=40, seed=seed, on_draw=lambda _, spec, kept=drawn: kept.append(spec)
        )
        assert campaign.violations == [] and campaign.failure is None
        codes |= {spec.error.code for spec in drawn if spec.error is not None}
        raised += campaign.raised["BadRequestError"]
        if wanted <= codes:
            break
    assert wanted <= codes
    assert raised > 0
