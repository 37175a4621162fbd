"""Errors in the API's words, as the official SDK (sync over a real server on 127.0.0.1, async in process)
raises them: the `type` the live API gives each status and code (scripted errors without one), and a
broken tool-call pairing refused with the API's message and `param` over both APIs, while a run's problems
keep sim's own words. Sources of each wording: docs/errors.md."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from openai import AsyncOpenAI, OpenAI

from sim.host.app import Host
from sim.host.transport import transport
from sim.scenario.answerer import ScriptAnswerer
from sim.wire.chat.growing import GrowingConversation
from sim.wire.chat.protocol import ChatProtocol
from sim.wire.error_types import error_type
from sim.wire.requests import Refused
from tests.host.in_process import messages, simulator
from tests.served import Served, serving

INVALID = "invalid_request_error"
USER: Any = {"role": "user", "content": "Weather in Paris?"}


def chat_call(call_id: str, name: str = "lookup") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def asked(*call_ids: str) -> Any:
    return {"role": "assistant", "content": None, "tool_calls": [chat_call(i) for i in call_ids]}


def answer(call_id: Any) -> Any:
    return {"role": "tool", "tool_call_id": call_id, "content": "sunny"}


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    yield from serving()


Call = Callable[[Any], Any]
"""Requests made with a sync client, the last expected to raise."""

AsyncCall = Callable[[AsyncOpenAI], Awaitable[Any]]
"""Requests made with an async client, the last expected to raise."""


def raised_sync(served: Served, host: Host[ScriptAnswerer], call: Call) -> openai.APIError:
    served.host = host
    client = OpenAI(base_url=served.url, api_key="sk-test", max_retries=0)
    with client, pytest.raises(openai.APIError) as caught:
        call(client)
    return caught.value


def said(error: openai.APIError) -> dict[str, Any]:
    """The error object the API sent."""
    assert isinstance(error.body, dict)
    return error.body


def raised_async(host: Host[ScriptAnswerer], call: AsyncCall) -> openai.APIError:
    async def run() -> openai.APIError:
        http = httpx2.AsyncClient(transport=transport(host))
        async with AsyncOpenAI(base_url="http://sim.test/v1", api_key="sk-test", max_retries=0,
                               http_client=http) as client:  # fmt: skip
            with pytest.raises(openai.APIError) as caught:
                await call(client)
            return caught.value

    return asyncio.run(run())


def script(tmp_path: Path, reply: str = "content: hi") -> Host[ScriptAnswerer]:
    return simulator(tmp_path, f"prompt: p\nreplies:\n  - {reply}\n")


# -- the type of each status ---------------------------------------------------------------------------

TPM = "Rate limit reached for m in organization org-x on tokens per min (TPM): Limit 30000, Used 29937."
RPM = "Rate limit reached for m in organization org-x on requests per min (RPM): Limit 3, Used 3."
SCRIPTED: list[tuple[int, str, str | None, type[openai.APIStatusError], str]] = [
    (400, "This model's maximum context length is 128000 tokens.", "context_length_exceeded",
     openai.BadRequestError, INVALID),
    (401, "Incorrect API key provided: sk-***.", "invalid_api_key", openai.AuthenticationError, INVALID),
    (403, "Country, region, or territory not supported", "unsupported_country_region_territory",
     openai.PermissionDeniedError, "request_forbidden"),
    (403, "Project `proj_x` does not have access to model `m`", "model_not_found",
     openai.PermissionDeniedError, INVALID),
    (404, "The model `m` does not exist or you do not have access to it.", "model_not_found",
     openai.NotFoundError, INVALID),
    (409, "Conflict.", None, openai.ConflictError, INVALID),
    (422, "Unprocessable.", None, openai.UnprocessableEntityError, INVALID),
    (429, TPM, "rate_limit_exceeded", openai.RateLimitError, "tokens"),
    (429, RPM, "rate_limit_exceeded", openai.RateLimitError, "requests"),
    (429, "You exceeded your current quota, please check your plan and billing details.",
     "insufficient_quota", openai.RateLimitError, "insufficient_quota"),
    (500, "The server had an error while processing your request. Sorry about that!", None,
     openai.InternalServerError, "server_error"),
    (502, "Bad gateway.", None, openai.InternalServerError, "server_error"),
    (503, "That model is currently overloaded with other requests.", None, openai.InternalServerError,
     "server_error"),
]  # fmt: skip
SCRIPTED_IDS = [f"{status}-{kind}-{code}" for status, _, code, _, kind in SCRIPTED]


def scripted_error(tmp_path: Path, status: int, message: str, code: str | None) -> Host[ScriptAnswerer]:
    said = {"status": status, "message": message, **({"code": code} if code else {})}
    return script(tmp_path, f"error: {json.dumps(said)}")


@pytest.mark.parametrize(("status", "message", "code", "raised", "kind"), SCRIPTED, ids=SCRIPTED_IDS)
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_scripted_error_without_a_type_gets_the_apis_type_for_its_status(
    served: Served, tmp_path: Path, api: str, status: int, message: str, code: str | None,
    raised: type[openai.APIStatusError], kind: str,
) -> None:  # fmt: skip
    def sync(client: OpenAI) -> Any:
        if api == "chat":
            return client.chat.completions.create(model="m", messages=[USER])
        return client.responses.create(model="m", input="hi")

    async def in_process(client: AsyncOpenAI) -> Any:
        if api == "chat":
            return await client.chat.completions.create(model="m", messages=[USER], stream=True)
        return await client.responses.create(model="m", input="hi", stream=True)

    for error in (raised_sync(served, scripted_error(tmp_path, status, message, code), sync),
                  raised_async(scripted_error(tmp_path, status, message, code), in_process)):  # fmt: skip
        assert type(error) is raised
        assert (error.type, error.code, error.param) == (kind, code, None)
        assert error.body == {"message": message, "type": kind, "param": None, "code": code}
        assert error.message == f"Error code: {status} - {message}"


def test_a_scripted_type_is_sent_as_it_is(tmp_path: Path) -> None:
    host = script(tmp_path, "error: {status: 429, message: Slow down, type: rate_limit_error}")
    error = raised_async(host, lambda c: c.chat.completions.create(model="m", messages=[USER]))
    assert isinstance(error, openai.RateLimitError) and error.type == "rate_limit_error"


def test_a_scripted_failure_in_a_stream_without_a_type_is_a_server_error(tmp_path: Path) -> None:
    host = script(tmp_path, "error: {status: 500, message: The server had an error., in_stream: true}")

    async def streamed(client: AsyncOpenAI) -> None:
        async for _ in await client.chat.completions.create(model="m", messages=[USER], stream=True):
            pass

    error = raised_async(host, streamed)
    assert error.type == "server_error" and error.message == "The server had an error."


@pytest.mark.parametrize(
    ("status", "code", "message", "kind"),
    [
        (400, None, "", INVALID), (401, "invalid_api_key", "", INVALID), (403, None, "", INVALID),
        (403, "unsupported_country_region_territory", "", "request_forbidden"), (404, None, "", INVALID),
        (408, None, "", INVALID), (409, None, "", INVALID), (422, None, "", INVALID),
        (429, "rate_limit_exceeded", "on requests per min (RPM)", "requests"),
        (429, "rate_limit_exceeded", "on Tokens Per Min (TPM)", "tokens"), (429, None, "", "requests"),
        (429, "insufficient_quota", "on tokens per min", "insufficient_quota"),
        (500, None, "", "server_error"),
        (502, "sim_upstream_error", "", "server_error"), (503, None, "", "server_error"),
        (504, None, "", "server_error"),
    ],
)  # fmt: skip
def test_the_table_of_types(status: int, code: str | None, message: str, kind: str) -> None:
    assert error_type(status, code, message) == kind


def test_sims_own_errors_carry_the_apis_type_for_their_status(served: Served, tmp_path: Path) -> None:
    served.host = script(tmp_path)
    response = httpx2.get(f"{served.url}/nothing-here", timeout=10)
    assert response.status_code == 404 and response.json()["error"]["type"] == INVALID
    host = script(tmp_path, "content: hi")
    error = raised_async(host, lambda c: c.chat.completions.create(model="m", messages=[], n=2))
    assert isinstance(error, openai.BadRequestError) and error.type == INVALID


# -- pairing in the API's words: Chat ------------------------------------------------------------------

UNANSWERED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each"
    " 'tool_call_id'. The following tool_call_ids did not have response messages: "
)
NO_CALLS = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with"
    " 'tool_calls'."
)
CHAT_PAIRING = [
    ([USER, asked("call_9")], UNANSWERED + "call_9", "messages.[1].role",
     'missing tool results for ids: ["call_9"]'),
    ([USER, asked("call_1", "call_9"), answer("call_1"), USER], UNANSWERED + "call_9", "messages.[1].role",
     'missing tool results for ids: ["call_9"]'),
    ([USER, asked("call_b", "call_a"), USER], UNANSWERED + "call_b, call_a", "messages.[1].role",
     'missing tool results for ids: ["call_a","call_b"]'),
    ([USER, answer("call_9")], NO_CALLS, "messages.[1].role", "orphan tool result id: call_9"),
    ([answer("call_9")], NO_CALLS, "messages.[0].role", "orphan tool result id: call_9"),
    ([USER, asked("call_1"), answer("call_9")],
     "Invalid parameter: 'tool_call_id' of 'call_9' not found in 'tool_calls' of previous message.",
     "messages.[2].tool_call_id", "orphan tool result id: call_9"),
    ([USER, asked("call_1", "call_2"), answer("call_1"), answer("call_1")],
     "Invalid parameter: Duplicate value for 'tool_call_id' of 'call_1', in messages[2] and messages[3].",
     "messages.[3].tool_call_id", "unexpected tool result id: call_1"),
    ([USER, asked("call_1", "call_1"), answer("call_1")],
     "Invalid request: assistant tool call ids must be unique", "messages.[1].tool_calls",
     "assistant tool call ids must be unique"),
]  # fmt: skip
CHAT_IDS = ["unanswered", "one-of-two-unanswered", "two-unanswered-in-call-order", "tool-after-user",
            "tool-first", "id-not-among-calls", "answered-twice", "call-ids-repeated"]  # fmt: skip


@pytest.mark.parametrize(("conversation", "message", "param", "problem"), CHAT_PAIRING, ids=CHAT_IDS)
def test_a_chat_conversation_with_broken_pairing_is_refused_in_the_apis_words(
    served: Served, tmp_path: Path, conversation: list[Any], message: str, param: str, problem: str
) -> None:
    sync_host, async_host = script(tmp_path), script(tmp_path)
    errors = [
        raised_sync(served, sync_host, lambda c: c.chat.completions.create(model="m", messages=conversation)),
        raised_async(async_host, lambda c: c.chat.completions.create(model="m", messages=conversation,
                                                                     stream=True)),
    ]  # fmt: skip
    for error in errors:
        assert isinstance(error, openai.BadRequestError)
        assert error.body == {"message": message, "type": INVALID, "param": param, "code": None}
        assert (error.type, error.param, error.code) == (INVALID, param, None)
    for host in (sync_host, async_host):
        assert messages(host.answerer.problems) == [f"request 1: invalid request: {problem}"]
        assert host.answerer.answered == 0


@pytest.mark.parametrize(("conversation", "message", "param", "problem"), CHAT_PAIRING, ids=CHAT_IDS)
def test_a_growing_conversation_is_refused_as_a_whole_one_is(
    conversation: list[Any], message: str, param: str, problem: str
) -> None:
    body = {"model": "m", "messages": conversation}
    whole, grown = ChatProtocol().parse(body, 1), GrowingConversation(ChatProtocol()).parse(body, 1)
    assert whole == grown == Refused(message, param, detail=problem)


def test_a_legacy_function_history_keeps_sims_words(tmp_path: Path) -> None:
    functions: Any = [{"name": "lookup", "parameters": {"type": "object", "properties": {}}}]
    result: Any = {"role": "function", "name": "lookup", "content": "sunny"}
    host = script(tmp_path)
    error = raised_async(host, lambda c: c.chat.completions.create(
        model="m", messages=[USER, result], functions=functions))  # fmt: skip
    assert error.message.startswith("Error code: 400 - Invalid request: ") and error.param is None


def test_a_tool_message_without_its_id_is_a_missing_parameter(served: Served, tmp_path: Path) -> None:
    conversation = [USER, asked("call_1"), {"role": "tool", "content": "sunny"}]
    host = script(tmp_path)
    error = raised_sync(served, host, lambda c: c.chat.completions.create(model="m", messages=conversation))
    assert isinstance(error, openai.BadRequestError)
    param = "messages.[2].tool_call_id"
    assert said(error) == {"message": f"Missing required parameter: '{param}'.", "type": INVALID,
                           "param": param, "code": "missing_required_parameter"}  # fmt: skip
    assert messages(host.answerer.problems) == [
        "request 1: invalid request: messages[2].tool_call_id: a tool message must answer a tool_call_id"
    ]
    body = {"model": "m", "messages": conversation}
    assert ChatProtocol().parse(body, 1) == GrowingConversation(ChatProtocol()).parse(body, 1)


# -- pairing in the API's words: Responses -------------------------------------------------------------

FUNCTION_CALL = {"type": "function_call", "call_id": "call_9", "name": "lookup", "arguments": "{}"}
CUSTOM_CALL = {"type": "custom_tool_call", "call_id": "call_9", "name": "note", "input": "x"}
RESPONSES_PAIRING = [
    ([USER, FUNCTION_CALL], "No tool output found for function call call_9."),
    ([USER, FUNCTION_CALL, USER], "No tool output found for function call call_9."),
    ([USER, CUSTOM_CALL], "No tool output found for custom tool call call_9."),
    ([USER, {"type": "function_call_output", "call_id": "call_9", "output": "sunny"}],
     "No tool call found for function call output with call_id call_9."),
    ([USER, {"type": "custom_tool_call_output", "call_id": "call_9", "output": "sunny"}],
     "No tool call found for custom tool call output with call_id call_9."),
]  # fmt: skip


RESPONSES_IDS = ["unanswered", "unanswered-then-user", "custom-unanswered", "output-without-call",
                 "custom-output-without-call"]  # fmt: skip


@pytest.mark.parametrize(("items", "message"), RESPONSES_PAIRING, ids=RESPONSES_IDS)
def test_a_responses_input_with_broken_pairing_is_refused_in_the_apis_words(
    served: Served, tmp_path: Path, items: list[Any], message: str
) -> None:
    sync_host, async_host = script(tmp_path), script(tmp_path)
    errors = [
        raised_sync(served, sync_host, lambda c: c.responses.create(model="m", input=items)),
        raised_async(async_host, lambda c: c.responses.create(model="m", input=items, stream=True)),
    ]
    for error in errors:
        assert isinstance(error, openai.BadRequestError)
        assert error.body == {"message": message, "type": INVALID, "param": "input", "code": None}
        assert (error.type, error.param, error.code) == (INVALID, "input", None)
    assert async_host.answerer.answered == 0


def test_an_output_without_its_call_id_is_a_missing_parameter(tmp_path: Path) -> None:
    items = [USER, FUNCTION_CALL, {"type": "function_call_output", "output": "sunny"}]
    error = raised_async(script(tmp_path), lambda c: c.responses.create(model="m", input=items))
    assert isinstance(error, openai.BadRequestError)
    assert said(error) == {"message": "Missing required parameter: 'input[2].call_id'.", "type": INVALID,
                           "param": "input[2].call_id", "code": "missing_required_parameter"}  # fmt: skip


def test_a_call_continued_by_previous_response_id_without_its_output_is_refused(tmp_path: Path) -> None:
    host = simulator(tmp_path, """
        prompt: p
        tools: [{name: lookup}]
        replies:
          - tool_calls: [{name: lookup, arguments: {city: Paris}}]
          - content: It is sunny.
    """)  # fmt: skip

    async def chained(client: AsyncOpenAI) -> Any:
        first = await client.responses.create(model="m", input="Weather in Paris?")
        assert [item.type for item in first.output] == ["function_call"]
        return await client.responses.create(model="m", previous_response_id=first.id, input="and?")

    error = raised_async(host, chained)
    assert isinstance(error, openai.BadRequestError) and error.param == "input"
    assert said(error)["message"] == "No tool output found for function call call_1."


# -- hostile --------------------------------------------------------------------------------------------

HUGE_ID = "call_" + "\u202e</script>'\"\n\U0001f600\x00" * 500 + "x" * 50_000


def test_a_huge_unicode_call_id_is_named_whole(served: Served, tmp_path: Path) -> None:
    chat = raised_sync(
        served,
        script(tmp_path),
        lambda c: c.chat.completions.create(model="m", messages=[USER, asked(HUGE_ID)]),
    )
    items = [USER, {**FUNCTION_CALL, "call_id": HUGE_ID}]
    responses = raised_async(script(tmp_path), lambda c: c.responses.create(model="m", input=items))
    assert said(chat)["message"] == UNANSWERED + HUGE_ID
    assert said(responses)["message"] == f"No tool output found for function call {HUGE_ID}."
    orphan = raised_async(script(tmp_path), lambda c: c.chat.completions.create(
        model="m", messages=[USER, asked("call_1"), answer(HUGE_ID)]))  # fmt: skip
    assert HUGE_ID in said(orphan)["message"] and orphan.param == "messages.[2].tool_call_id"


def test_many_missing_outputs_are_all_named_in_call_order(tmp_path: Path) -> None:
    ids = [f"call_{n:04d}_\u00e9" for n in range(400, 0, -1)]
    error = raised_async(script(tmp_path), lambda c: c.chat.completions.create(
        model="m", messages=[USER, asked(*ids), answer(ids[7])]))  # fmt: skip
    assert said(error)["message"] == UNANSWERED + ", ".join(i for i in ids if i != ids[7])
    items = [USER, *({**FUNCTION_CALL, "call_id": i} for i in ids)]
    error = raised_async(script(tmp_path), lambda c: c.responses.create(model="m", input=items))
    assert said(error)["message"] == f"No tool output found for function call {ids[0]}."


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": [value]}
    return value


@pytest.mark.parametrize(
    "conversation",
    [
        [USER, {"role": "assistant", "content": None, "tool_calls": [{"id": nested(20), "type": "function",
                                                                      "function": {"name": "f"}}]}],
        [USER, asked("call_1"), answer(nested(20))],
        [USER, {"role": "assistant", "content": None, "tool_calls": nested(20)}],
        [USER, {"role": "tool", "tool_call_id": ["call_1"], "content": nested(20)}],
    ],
    ids=["nested-call-id", "nested-tool-call-id", "nested-tool-calls", "list-tool-call-id"],
)  # fmt: skip
def test_nested_garbage_is_a_400_not_a_crash(tmp_path: Path, conversation: list[Any]) -> None:
    host = script(tmp_path)
    error = raised_async(host, lambda c: c.chat.completions.create(model="m", messages=conversation))
    assert isinstance(error, openai.BadRequestError) and error.type == INVALID
    assert error.message.startswith("Error code: 400 - Invalid request: ")


def test_concurrent_refusals_each_name_their_own_call(tmp_path: Path) -> None:
    host = script(tmp_path)

    async def run() -> list[BaseException | Any]:
        http = httpx2.AsyncClient(transport=transport(host))
        async with AsyncOpenAI(base_url="http://sim.test/v1", api_key="sk-test", max_retries=0,
                               http_client=http) as client:  # fmt: skip
            asks = [client.chat.completions.create(model="m", messages=[USER, asked(f"call_{n}")])
                    for n in range(40)]  # fmt: skip
            return await asyncio.gather(*asks, return_exceptions=True)

    errors = asyncio.run(run())
    for n, error in enumerate(errors):
        assert isinstance(error, openai.BadRequestError)
        assert said(error)["message"] == UNANSWERED + f"call_{n}"
