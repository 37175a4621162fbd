"""The simulator app, spoken to over a plain HTTP client (in process); shapes checked with the SDK's types."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from sim import ModelAPIError, ModelRequest, SystemMessage, UserMessage
from sim.adapters.openai_chat import OpenAIChatModel
from sim.core.errors import ModelConnectionError, ModelReplyError
from sim.core.problems import ProblemKind
from sim.host.transport import transport
from sim.wire.replies import REPLY_NOT_JSON, STREAM_CHUNK_NOT_JSON
from tests.host.in_process import bundled, messages, post, simulator, talk

SYSTEM = {"role": "system", "content": "You are a coding agent."}
USER = {"role": "user", "content": "Run `echo 42` and tell me the result."}
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "shell", "arguments": '{"command":"echo 42"}'},
}
TOOLS = [
    {
        "type": "function",
        "function": {"name": "shell", "description": "Runs.", "parameters": {"type": "object"}},
    }
]
OTHER_TOOLS = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]


def events(response: httpx2.Response) -> list[str]:
    return [line[6:] for line in response.text.split("\n") if line.startswith("data: ")]


def read_until_broken(sim: Any, body: dict[str, Any]) -> tuple[bytes, Exception | None]:
    """`body` posted through the in-process transport and its stream read: what came before the connection
    broke, and what broke it."""

    async def run() -> tuple[bytes, Exception | None]:
        client = httpx2.AsyncClient(transport=transport(sim), base_url="http://sim.test")
        request = client.build_request("POST", "/v1/chat/completions", json=body)
        parts: list[bytes] = []
        response = await client.send(request, stream=True)
        try:
            async for part in response.aiter_raw():
                parts.append(part)
        except httpx2.TransportError as error:
            return b"".join(parts), error
        finally:
            await response.aclose()
        return b"".join(parts), None

    return asyncio.run(run())


FIRST = {"model": "sim-model", "messages": [SYSTEM, USER], "tools": TOOLS}
SECOND = {
    "model": "sim-model",
    "messages": [SYSTEM, USER, {"role": "assistant", "content": None, "tool_calls": [CALL]},
                 {"role": "tool", "tool_call_id": "call_1", "content": "42"}],
    "tools": TOOLS,
}  # fmt: skip


class TestReplies:
    def test_json_completions_shaped_like_the_api(self) -> None:
        sim = bundled()
        first, second = post(sim, FIRST, SECOND)
        assert first.status_code == second.status_code == 200
        one = ChatCompletion.model_validate(first.json())
        assert one.object == "chat.completion"
        assert one.model == "sim-model"
        assert one.choices[0].finish_reason == "tool_calls"
        assert one.choices[0].message.tool_calls is not None
        assert one.choices[0].message.tool_calls[0].id == "call_1"
        assert one.usage is not None
        assert one.usage.total_tokens > 0
        two = ChatCompletion.model_validate(second.json())
        assert two.choices[0].message.content == "The command printed 42."
        assert sim.answerer.consumed
        assert messages(sim.answerer.problems) == []
        assert [len(r.messages) for r in sim.answerer.requests] == [2, 4]

    def test_replies_are_byte_stable(self) -> None:
        assert post(bundled(), FIRST)[0].content == post(bundled(), FIRST)[0].content

    @pytest.mark.parametrize("include_usage", [True, False])
    def test_sse_stream_shaped_like_the_api(self, include_usage: bool) -> None:
        body = {**FIRST, "stream": True, "stream_options": {"include_usage": include_usage}}
        (response,) = post(bundled(), body)
        assert response.headers["content-type"].startswith("text/event-stream")
        data = events(response)
        assert data[-1] == "[DONE]"
        chunks = [ChatCompletionChunk.model_validate(json.loads(d)) for d in data[:-1]]
        assert chunks[0].choices[0].delta.role == "assistant"
        opening = chunks[1].choices[0].delta.tool_calls
        assert opening is not None
        assert (opening[0].index, opening[0].id, opening[0].function.name) == (0, "call_1", "shell")  # type: ignore[union-attr]
        arguments = "".join(
            c.choices[0].delta.tool_calls[0].function.arguments or ""  # type: ignore[index,union-attr]
            for c in chunks[2:]
            if c.choices and c.choices[0].delta.tool_calls
        )
        assert arguments == '{"command":"echo 42"}'
        assert len([c for c in chunks[2:] if c.choices and c.choices[0].delta.tool_calls]) > 1, (
            "arguments in pieces"
        )
        finishing = [c for c in chunks if c.choices and c.choices[0].finish_reason]
        assert [c.choices[0].finish_reason for c in finishing] == ["tool_calls"]
        usage_only = [c for c in chunks if not c.choices]
        assert len(usage_only) == (1 if include_usage else 0)
        if include_usage:
            assert chunks[-1].usage is not None

    def test_text_is_streamed_in_pieces(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, "prompt: p\nreplies: [{content: A longer answer in several pieces.}]\n")
        (response,) = post(
            sim, {"model": "m", "messages": [{"role": "user", "content": "p"}], "stream": True}
        )
        chunks = [json.loads(d) for d in events(response)[:-1]]
        texts = [c["choices"][0]["delta"].get("content") for c in chunks[1:-1]]
        assert len(texts) > 2
        assert "".join(texts) == "A longer answer in several pieces."

    def test_models_lists_the_scenarios_model(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, "prompt: p\nmodel: my-model\nreplies: [{content: x}]\n")

        async def get() -> httpx2.Response:
            async with httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app=sim.app), base_url="http://s"
            ) as c:
                return await c.get("/v1/models")

        assert [m["id"] for m in asyncio.run(get()).json()["data"]] == ["my-model"]


class TestScriptedFaults:
    def test_error_as_the_api_sends_it_with_retry_after(self, tmp_path: Path) -> None:
        text = """
        prompt: p
        replies:
          - error:
              status: 429
              message: Slow down
              type: rate_limit_error
              code: rate_limit_exceeded
              retry_after: 20
        """
        (response,) = post(simulator(tmp_path, text), {"messages": [{"role": "user", "content": "p"}]})
        assert response.status_code == 429
        assert response.headers["retry-after"] == "20"
        assert response.json() == {
            "error": {
                "message": "Slow down",
                "type": "rate_limit_error",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        }

    @pytest.mark.parametrize("stream", [False, True])
    def test_malformed_body(self, tmp_path: Path, stream: bool) -> None:
        sim = simulator(tmp_path, "prompt: p\nreplies: [{malformed: true}]\n")
        (response,) = post(sim, {"messages": [{"role": "user", "content": "p"}], "stream": stream})
        assert response.status_code == 200
        with pytest.raises(ValueError, match=r"."):
            json.loads(events(response)[0] if stream else response.text)

    def test_cut_stream_stops_before_the_finish(self, tmp_path: Path) -> None:
        script = "prompt: p\nreplies: [{content: hello there friend, cut_after_chunks: 2}]\n"
        body = {"messages": [{"role": "user", "content": "p"}], "stream": True}
        with pytest.raises(httpx2.RemoteProtocolError, match="incomplete chunked read"):  # as live: dropped
            post(simulator(tmp_path, script), body)
        read, broken = read_until_broken(simulator(tmp_path, script), body)
        assert isinstance(broken, httpx2.RemoteProtocolError)
        data = [line[6:] for line in read.decode().split("\n") if line.startswith("data: ")]
        assert len(data) == 2
        assert "[DONE]" not in data
        assert all(json.loads(d)["choices"][0]["finish_reason"] is None for d in data)

    def test_latency_before_the_reply(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, "prompt: p\nlatency: {first_byte: 0.2}\nreplies: [{content: x}]\n")
        started = time.monotonic()
        post(sim, {"messages": [{"role": "user", "content": "p"}]})
        assert time.monotonic() - started >= 0.2


class TestValidation:
    @pytest.mark.parametrize(
        ("messages", "tools", "problem"),
        [
            ([USER, {"role": "assistant", "content": None, "tool_calls": [CALL]}], None,
             "did not have response messages: call_1"),
            ([USER, {"role": "assistant", "content": None, "tool_calls": [CALL, CALL]},
              {"role": "tool", "tool_call_id": "call_1", "content": "x"}], None, "ids must be unique"),
            ([USER, {"role": "tool", "tool_call_id": "nope", "content": "x"}], None,
             "must be a response to a preceeding message with 'tool_calls'"),
            ([USER], [{"type": "function", "function": {"name": "bad name!"}}],
             "invalid function name"),
            ([USER], [{"type": "function", "function": {"name": "f", "parameters": {"type": "array"}}}],
             "Invalid schema for function 'f'"),
            ([USER], [{"type": "retrieval"}], "each tool must be"),
            ([], None, "messages: must be a non-empty array"),
            ([{"role": "robot", "content": "x"}], None, "unsupported role"),
        ],
        ids=["unpaired", "duplicate ids", "unknown id", "tool name", "tool schema", "tool type",
             "no messages", "bad role"],
    )  # fmt: skip
    def test_bad_requests_get_the_apis_400(self, messages: list[Any], tools: Any, problem: str) -> None:
        sim = bundled()
        body: dict[str, Any] = {"model": "m", "messages": messages}
        if tools is not None:
            body["tools"] = tools
        (response,) = post(sim, body)
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["type"] == "invalid_request_error"
        assert problem in error["message"]
        assert sim.answerer.answered == 0

    def test_body_that_is_not_json(self) -> None:
        (response,) = post(bundled(), b"{nope")
        assert response.status_code == 400
        assert "parse the JSON body" in response.json()["error"]["message"]

    def test_expect_request_failure_is_a_400_and_a_problem(self) -> None:
        sim = bundled()
        (response,) = post(sim, {**FIRST, "tools": OTHER_TOOLS})
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "sim_expectation_failed"
        assert messages(sim.answerer.problems) == [
            "replies[0].expect_request.tools: expected ['shell'], got ['search']"
        ]

    def test_request_after_the_script_names_the_scenario(self) -> None:
        sim = bundled()
        *_, extra = post(sim, FIRST, SECOND, SECOND)
        assert extra.status_code == 400
        assert extra.json()["error"]["code"] == "sim_script_exhausted"
        assert (
            "scenario echo-42 has no reply left for request 3 (it scripts 2)"
            in extra.json()["error"]["message"]
        )
        assert messages(sim.answerer.problems)[-1].startswith("scenario echo-42 has no reply left")

    def test_problems_are_typed_with_the_request_they_are_about(self) -> None:
        sim = bundled()
        post(sim, {**FIRST, "tools": OTHER_TOOLS}, {**FIRST, "n": 3}, SECOND, SECOND)
        problems = [(problem.kind, problem.number, problem.code) for problem in sim.answerer.problems]
        assert problems == [
            (ProblemKind.expectation_failed, 1, "sim_expectation_failed"),
            (ProblemKind.not_simulated, 2, "unsupported_value"),
            (ProblemKind.script_exhausted, 4, "sim_script_exhausted"),
        ]
        assert sim.answerer.unused() == []

    def test_unused_replies_are_a_problem_of_the_run_not_of_a_request(self) -> None:
        sim = bundled()
        post(sim, FIRST)
        (unused,) = sim.answerer.unused()
        assert (unused.kind, unused.number) == (ProblemKind.unused, None)

    def test_unused_replies(self) -> None:
        sim = bundled()
        post(sim, FIRST)
        assert messages(sim.answerer.unused()) == ["simulator for echo-42 has 1 unused of 2 scripted replies"]

    def test_cycle_starts_again(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, "prompt: p\nreplies: [{content: a}, {content: b}]\n", cycle=True)
        body = {"messages": [{"role": "user", "content": "p"}]}
        texts = [r.json()["choices"][0]["message"]["content"] for r in post(sim, body, body, body)]
        assert texts == ["a", "b", "a"]
        assert messages(sim.answerer.unused()) == []

    def test_cycle_checks_expect_request_in_every_round(self, tmp_path: Path) -> None:
        """`sim serve --cycle` as the SDK meets it: a call the client denied in the second round is refused
        as `--once` refuses it (it was answered 200 when cycling)."""
        sim = simulator(
            tmp_path,
            "replies:\n  - tool_calls: [{id: call_1, name: shell, arguments: {command: echo 42}}]\n"
            "  - content: It printed 42.\n    expect_request: {last_message: {role: tool, content: '42'}}\n",
            cycle=True,
        )

        async def two_rounds(client: AsyncOpenAI) -> list[str]:
            said = []
            for result in ("42", "Error [permission_denied]: the user denied this call"):
                first = await client.chat.completions.create(model="m", messages=[USER], tools=TOOLS)
                call = first.choices[0].message.model_dump(exclude_none=True)
                tool = {"role": "tool", "tool_call_id": "call_1", "content": result}
                try:
                    done = await client.chat.completions.create(
                        model="m", messages=[USER, call, tool], tools=TOOLS
                    )
                    said.append(done.choices[0].message.content or "")
                except openai.BadRequestError as error:
                    said.append(f"{error.code}: {error.body['message']}")  # type: ignore[index]
            return said

        answered, refused = talk(sim, two_rounds)
        assert answered == "It printed 42."
        assert refused.startswith("sim_expectation_failed: replies[1].expect_request.last_message.content:")
        assert "permission_denied" in refused and messages(sim.answerer.problems) == [
            refused.split(": ", 1)[1]
        ]


class TestThroughTheAdapter:
    """Each scripted fault reaches the loop's side as the typed error the real endpoint's would."""

    @pytest.mark.parametrize(
        ("reply", "stream", "error_type", "message"),
        [
            (
                "{error: {status: 500, message: Boom, type: server_error}}",
                False,
                ModelAPIError,
                "HTTP 500: Boom",
            ),
            (
                "{error: {status: 401, message: Bad key, code: invalid_api_key}}",
                True,
                ModelAPIError,
                "HTTP 401: Bad key",
            ),
            ("{malformed: true}", False, ModelReplyError, REPLY_NOT_JSON),
            ("{malformed: true}", True, ModelReplyError, STREAM_CHUNK_NOT_JSON),
            (
                "{content: partial answer, cut_after_chunks: 2}",
                True,
                ModelConnectionError,  # as live: the connection dropped (buffered by the ASGI transport)
                "Could not reach the model endpoint: peer closed connection without sending complete message"
                " body (incomplete chunked read)",
            ),
        ],
        ids=["500", "401 streamed", "malformed", "malformed streamed", "cut stream"],
    )
    def test_typed_errors(
        self, tmp_path: Path, reply: str, stream: bool, error_type: type, message: str
    ) -> None:
        sim = simulator(tmp_path, f"prompt: p\nreplies: [{reply}]\n")
        model = OpenAIChatModel.connect(
            base_url="http://sim.test/v1",
            api_key="sk-x",
            model="sim-model",
            stream=stream,
            http_client=httpx2.AsyncClient(transport=httpx2.ASGITransport(app=sim.app)),
        )
        request = ModelRequest([SystemMessage(content="s"), UserMessage(content="p")])
        with pytest.raises(error_type) as caught:
            asyncio.run(model.complete(request))
        assert type(caught.value) is error_type
        assert str(caught.value) == message


def test_cut_reply_that_is_not_streamed_is_a_body_cut_short(tmp_path: Path) -> None:
    sim = simulator(tmp_path, "prompt: p\nreplies: [{content: hello, cut_after_chunks: 2}]\n")
    read, broken = read_until_broken(sim, {"messages": [{"role": "user", "content": "p"}]})
    assert read.startswith(b'{"id":"chatcmpl-sim')  # half the body, its whole length announced, then dropped
    assert isinstance(broken, httpx2.RemoteProtocolError)
    assert "peer closed connection without sending complete message body (received" in str(broken)


class TestHonesty:
    """Malformed requests get the API's 4xx; what sim cannot honour is refused, never silently faked."""

    @pytest.mark.parametrize(
        ("extra", "param"),
        [
            ({"stream_options": "x", "stream": True}, "stream_options"),
            ({"stream_options": {"include_usage": True}}, "stream_options"),
            ({"stream": "yes"}, "stream"),
            ({"n": "2"}, "n"),
            ({"n": 2}, "n"),
            ({"n": 5}, "n"),
            ({"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
            ({"logprobs": True, "top_logprobs": -1}, "top_logprobs"),
            ({"model": 7}, "model"),
            ({"tool_choice": "sometimes"}, "tool_choice"),
            ({"tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice"),
        ],
    )
    def test_refused_with_a_400_naming_the_parameter(self, extra: dict[str, Any], param: str) -> None:
        sim = bundled()
        (response,) = post(sim, {"messages": [SYSTEM, USER], "tools": TOOLS, **extra})
        assert response.status_code == 400, response.text
        assert response.json()["error"]["param"] == param
        assert sim.answerer.answered == 0  # the script is not consumed by a refused request
        limit = "sim serves one choice" in response.json()["error"]["message"]  # sim's own, not the API's
        said = "not simulated" if limit else "invalid request"
        assert messages(sim.answerer.problems)[0].startswith(f"request 1: {said}: {param}: ")

    def test_n_1_and_logprobs_false_are_served(self) -> None:
        body = {"messages": [SYSTEM, USER], "tools": TOOLS, "n": 1, "logprobs": False}
        (response,) = post(bundled(), body)
        assert response.status_code == 200

    def test_json_nested_100k_deep_is_a_400(self) -> None:
        body = '{"messages":' + "[" * 100_000 + "]" * 100_000 + "}"
        (response,) = post(bundled(), body.encode())
        assert response.status_code == 400
        assert response.json()["error"]["type"] == "invalid_request_error"

    @pytest.mark.parametrize(
        ("tool_choice", "problem"),
        [
            ("required", "the request says tool_choice 'required', but the scripted reply calls no tool"),
            (
                {"type": "function", "function": {"name": "shell"}},
                "the request says tool_choice 'shell', but the scripted reply calls no tool",
            ),
        ],
    )
    def test_a_text_reply_contradicting_tool_choice_is_a_mismatch(
        self, tmp_path: Path, tool_choice: Any, problem: str
    ) -> None:
        sim = simulator(tmp_path, "prompt: p\nreplies:\n  - content: Just text.\n")
        body = {"messages": [USER], "tools": TOOLS, "tool_choice": tool_choice}
        (response,) = post(sim, body)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "sim_script_mismatch"
        assert messages(sim.answerer.problems) == [f"request 1: script and request disagree: {problem}"]

    def test_calls_contradicting_tool_choice_none_are_a_mismatch(self) -> None:
        sim = bundled()
        (response,) = post(sim, {"messages": [SYSTEM, USER], "tools": TOOLS, "tool_choice": "none"})
        assert response.status_code == 400
        assert messages(sim.answerer.problems) == [
            "request 1: script and request disagree: the request says tool_choice 'none', but the scripted"
            " reply calls shell"
        ]

    def test_replies_that_honour_tool_choice_are_served(self) -> None:
        sim = bundled()
        (response,) = post(sim, {"messages": [SYSTEM, USER], "tools": TOOLS, "tool_choice": "required"})
        assert response.status_code == 200
        assert messages(sim.answerer.problems) == []

    def test_cycle_mode_keeps_a_bounded_number_of_requests(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, "prompt: p\nreplies:\n  - content: a\n  - content: b\n", cycle=True)
        big = {"role": "user", "content": "x" * 100_000}
        responses = post(sim, *({"messages": [big]} for _ in range(40)))
        assert all(r.status_code == 200 for r in responses)
        assert (sim.received, sim.answerer.answered, len(sim.answerer.requests)) == (40, 40, 2)


@pytest.mark.parametrize(
    ("path", "body", "says"),
    [
        ("/v1/chat/completions", b'{"model": "\\ud800", "messages": [{"role": "user", "content": "p"}]}',
         "We could not parse the JSON body"),
        ("/v1/responses", b'{"model": "\\ud800", "input": "p"}', "We could not parse the JSON body"),
        ("/v1/responses", b'{"model": "m", "input": [{"type": "reasoning", "id": "rs_1", "summary": "x"}]}',
         "input[0]: reasoning summary must be a list"),
    ],
    ids=["chat lone surrogate model", "responses lone surrogate model", "reasoning summary not a list"],
)  # fmt: skip
def test_what_cannot_be_answered_is_a_400_in_the_apis_shape_not_a_500(
    path: str, body: bytes, says: str
) -> None:
    json_type = {"content-type": "application/json"}
    (response,) = post(bundled(), body, path=path, headers=json_type, raise_app_exceptions=False)
    assert response.status_code == 400, response.text
    assert says in response.json()["error"]["message"]
