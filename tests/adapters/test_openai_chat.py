from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from sim import (
    AgentRunner,
    AllowAllApprover,
    AssistantMessage,
    ConfigurationError,
    MessageContractError,
    ModelAPIError,
    ModelReply,
    ModelRequest,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolRegistry,
    UserMessage,
)
from sim.core.errors import ModelConnectionError, ModelReplyError, ModelTimeoutError
from sim.core.model import ToolSpec
from tests.adapters.endpoint import Endpoint, completion, function_call, sse

REQUEST = ModelRequest([SystemMessage(content="sys"), UserMessage(content="hi")])


def first_message(body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = body["choices"][0]["message"]
    return message


def complete(endpoint: Endpoint, request: ModelRequest = REQUEST, **options: Any) -> ModelReply:
    return asyncio.run(endpoint.model(**options).complete(request))


def json_reply(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(status, json=body, headers=headers)


class TestRequest:
    def test_body_on_the_wire(self) -> None:
        endpoint = Endpoint(json_reply(completion("done")))
        call = ToolCall(id="c1", name="shell", arguments='{"command":"ls"}')
        request = ModelRequest(
            [
                SystemMessage(content="sys"),
                UserMessage(content="hi"),
                AssistantMessage(content=None, tool_calls=(call,)),
                ToolMessage(tool_call_id="c1", content="a.txt"),
            ],
            (ToolSpec("shell", "Runs.", {"type": "object"}),),
        )
        complete(endpoint, request, max_completion_tokens=64)
        (sent,) = endpoint.requests
        assert sent.method == "POST"
        assert str(sent.url) == "http://endpoint.test/v1/chat/completions"
        assert sent.headers["authorization"] == "Bearer sk-test-key-0123456789"
        assert sent.headers["content-type"] == "application/json"
        assert json.loads(sent.content) == {
            "model": "gpt-test",
            "max_completion_tokens": 64,
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "shell", "arguments": '{"command":"ls"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
            ],
            "tools": [
                {
                    "type": "function",
                    "function": {"name": "shell", "description": "Runs.", "parameters": {"type": "object"}},
                }
            ],
        }

    def test_tools_and_token_limit_are_left_out_when_absent(self) -> None:
        endpoint = Endpoint(json_reply(completion()))
        complete(endpoint)
        assert set(endpoint.bodies()[0]) == {"model", "messages"}

    def test_stream_asks_for_usage(self) -> None:
        endpoint = Endpoint(
            sse({"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}]})
        )
        complete(endpoint, stream=True)
        body = endpoint.bodies()[0]
        assert (body["stream"], body["stream_options"]) == (True, {"include_usage": True})

    @pytest.mark.parametrize("limit", [0, -1, True, 1.5])
    def test_token_limit_is_checked_before_any_request(self, limit: Any) -> None:
        endpoint = Endpoint()
        with pytest.raises(ConfigurationError, match="max_completion_tokens must be a positive integer"):
            endpoint.model(max_completion_tokens=limit)
        assert endpoint.requests == []

    def test_pairing_is_checked_before_any_request(self) -> None:
        endpoint = Endpoint(json_reply(completion()))
        orphan = ModelRequest([UserMessage(content="hi"), ToolMessage(tool_call_id="zz", content="?")])
        with pytest.raises(MessageContractError, match="orphan tool result id: zz"):
            complete(endpoint, orphan)
        assert endpoint.requests == []

    def test_sdk_retries_are_off_by_default_and_configurable(self) -> None:
        endpoint = Endpoint(json_reply({"error": {"message": "busy"}}, 503), json_reply(completion()))
        with pytest.raises(ModelAPIError):
            complete(endpoint)
        assert len(endpoint.requests) == 1
        retried = Endpoint(
            json_reply({"error": {"message": "busy"}}, 503, {"retry-after-ms": "1"}),
            json_reply(completion("second")),
        )
        assert complete(retried, max_retries=1).message.content == "second"
        assert len(retried.requests) == 2


class TestReplyChecks:
    def test_plain_reply_and_usage(self) -> None:
        reply = complete(Endpoint(json_reply(completion("Hello"))))
        assert reply.message == AssistantMessage(content="Hello")
        assert reply.finish_reason == "stop"
        assert reply.usage is not None
        assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens) == (
            3,
            2,
            5,
        )

    def test_tool_calls_keep_ids_names_and_raw_arguments_in_order(self) -> None:
        calls = [function_call("a", "shell", '{"command": "ls"}'), function_call("b", "shell", "{")]
        reply = complete(Endpoint(json_reply(completion(None, tool_calls=calls, finish_reason="tool_calls"))))
        assert [(c.id, c.name, c.arguments) for c in reply.message.tool_calls] == [
            ("a", "shell", '{"command": "ls"}'),
            ("b", "shell", "{"),
        ]

    def test_fields_real_servers_send_are_accepted(self) -> None:
        body = completion("x", refusal=None, annotations=[], audio=None)
        body.update(system_fingerprint="fp_1", service_tier="default")
        body["choices"][0]["logprobs"] = {"content": []}
        body["usage"]["prompt_tokens_details"] = {"cached_tokens": 0, "audio_tokens": 0}
        body["usage"]["completion_tokens_details"] = {"reasoning_tokens": 0}
        assert complete(Endpoint(json_reply(body))).message.content == "x"

    def test_refusal_becomes_the_content_when_content_is_null(self) -> None:
        reply = complete(Endpoint(json_reply(completion(None, refusal="I can't help with that."))))
        assert reply.message.content == "I can't help with that."

    def test_content_filter_choice_without_a_message(self) -> None:
        body = completion()
        del body["choices"][0]["message"]
        body["choices"][0]["finish_reason"] = "content_filter"
        reply = complete(Endpoint(json_reply(body)))
        assert (reply.finish_reason, reply.message.content) == ("content_filter", None)

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            (lambda b: b.update(choices=[]), "Reply must have exactly one choice, got 0"),
            (lambda b: b.update(choices=b["choices"] * 2), "Reply must have exactly one choice, got 2"),
            (lambda b: b["choices"][0].update(finish_reason="function_call"),
             "Legacy function_call finish reason"),
            (lambda b: b["choices"][0].update(finish_reason="eos"), "Unsupported finish_reason: eos"),
            (lambda b: b["choices"][0].update(finish_reason=None), "Unsupported finish_reason: None"),
            (lambda b: first_message(b).update(role="user"), "role must be assistant"),
            (lambda b: first_message(b).update(content=42), "content must be a string or null"),
            (
                lambda b: first_message(b).update(tool_calls=[{"id": "a", "type": "custom", "custom": {}}]),
                "Unsupported tool call type: custom",
            ),
            (lambda b: b["usage"].update(prompt_tokens=-1), "usage counts must be non-negative integers"),
            (lambda b: b["usage"].update(total_tokens=1.5), "usage counts must be non-negative integers"),
        ],
        ids=[
            "no choice", "two choices", "function_call", "unknown reason", "null reason",
            "wrong role", "content not text", "non-function call", "negative usage", "fractional usage",
        ],
    )  # fmt: skip
    def test_bad_replies_are_typed_errors(self, change: Any, message: str) -> None:
        body = completion()
        change(body)
        with pytest.raises(ModelReplyError) as caught:
            complete(Endpoint(json_reply(body)))
        assert str(caught.value) == message

    def test_body_that_is_not_json(self) -> None:
        with pytest.raises(ModelReplyError, match="not JSON"):
            complete(
                Endpoint(
                    httpx2.Response(200, content=b"<html>", headers={"content-type": "application/json"})
                )
            )


class TestHttpErrors:
    @pytest.mark.parametrize(
        ("status", "error_type", "code"),
        [
            (400, "invalid_request_error", "invalid_value"),
            (401, "invalid_request_error", "invalid_api_key"),
            (404, "invalid_request_error", "model_not_found"),
            (429, "rate_limit_error", "rate_limit_exceeded"),
            (500, "server_error", None),
            (503, "server_error", None),
        ],
    )
    def test_status_errors_carry_status_type_code_and_message(
        self, status: int, error_type: str, code: str | None
    ) -> None:
        body = {"error": {"message": f"failure {status}", "type": error_type, "param": None, "code": code}}
        with pytest.raises(ModelAPIError) as caught:
            complete(Endpoint(json_reply(body, status)))
        error = caught.value
        assert type(error) is ModelAPIError
        assert (error.status, error.error_type, error.code) == (status, error_type, code)
        assert str(error) == f"HTTP {status}: failure {status}"
        assert "sk-test-key" not in str(error)

    @pytest.mark.parametrize(
        ("headers", "seconds"), [({"retry-after": "20"}, 20.0), ({"retry-after-ms": "1500"}, 1.5), ({}, None)]
    )
    def test_retry_after(self, headers: dict[str, str], seconds: float | None) -> None:
        body = {"error": {"message": "Rate limited", "type": "rate_limit_error", "code": None}}
        with pytest.raises(ModelAPIError) as caught:
            complete(Endpoint(json_reply(body, 429, headers)))
        assert caught.value.retry_after == seconds

    def test_connection_failure(self) -> None:
        with pytest.raises(ModelConnectionError) as caught:
            complete(Endpoint(httpx2.ConnectError("connection refused")))
        assert type(caught.value) is ModelConnectionError
        assert "connection refused" in str(caught.value)

    def test_timeout(self) -> None:
        with pytest.raises(ModelTimeoutError, match="did not answer in time"):
            complete(Endpoint(httpx2.ReadTimeout("slow")))


def chunk(
    delta: dict[str, Any] | None = None, finish_reason: str | None = None, **extra: Any
) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    return {"id": "c", "object": "chat.completion.chunk", "choices": choices, **extra}


class TestStreaming:
    def test_text_pieces_and_usage_only_chunk(self) -> None:
        reply = complete(
            Endpoint(
                sse(
                    chunk({"role": "assistant", "content": ""}),
                    chunk({"content": "Hel"}),
                    chunk({"content": "lo"}),
                    chunk({}, "stop"),
                    chunk(None, usage={"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}),
                )
            ),
            stream=True,
        )
        assert (reply.message.content, reply.finish_reason) == ("Hello", "stop")
        assert reply.usage is not None
        assert reply.usage.total_tokens == 9

    def test_tool_call_deltas_merge_by_index(self) -> None:
        def piece(index: int, **fields: Any) -> dict[str, Any]:
            return {"tool_calls": [{"index": index, **fields}]}

        reply = complete(
            Endpoint(
                sse(
                    chunk(
                        {
                            "role": "assistant",
                            **piece(0, id="a", type="function", function={"name": "plus", "arguments": ""}),
                        }
                    ),
                    chunk(piece(1, id="b", type="function", function={"name": "minus", "arguments": '{"x"'})),
                    chunk(piece(0, function={"arguments": '{"x":'})),
                    chunk(piece(0, function={"arguments": " 1}"})),
                    chunk(piece(1, function={"arguments": ": 2}"})),
                    chunk({}, "tool_calls"),
                )
            ),
            stream=True,
        )
        assert [(c.id, c.name, c.arguments) for c in reply.message.tool_calls] == [
            ("a", "plus", '{"x": 1}'),
            ("b", "minus", '{"x": 2}'),
        ]
        assert reply.message.content is None

    def test_stream_without_a_finish_reason_is_a_typed_error(self) -> None:
        with pytest.raises(ModelReplyError, match="Stream ended without a finish reason"):
            complete(Endpoint(sse(chunk({"content": "cut"}))), stream=True)

    def test_stream_error_status(self) -> None:
        with pytest.raises(ModelAPIError) as caught:
            complete(Endpoint(json_reply({"error": {"message": "nope", "type": "x"}}, 400)), stream=True)
        assert caught.value.status == 400


class TestThroughTheLoop:
    def test_a_run_sends_the_growing_history_exactly(self, tmp_path: Path) -> None:
        """The incremental encoder's bodies equal a from-scratch encoding of each request."""
        from pydantic import BaseModel

        from sim import ToolDefinition, ToolResult

        class Echo(BaseModel):
            text: str

        tool = ToolDefinition("echo", "Echoes.", Echo, "read", lambda a, c: ToolResult.ok(a.text))
        calls = [
            json_reply(
                completion(
                    None,
                    tool_calls=[function_call(f"c{i}", "echo", json.dumps({"text": f"t{i}"}))],
                    finish_reason="tool_calls",
                )
            )
            for i in range(3)
        ]
        endpoint = Endpoint(*calls, json_reply(completion("done")))
        runner = AgentRunner(endpoint.model(), ToolRegistry([tool]), AllowAllApprover(), tmp_path)
        assert runner.run_sync("go").final_text == "done"
        bodies = endpoint.bodies()
        assert [len(b["messages"]) for b in bodies] == [2, 4, 6, 8]
        for earlier, later in itertools.pairwise(bodies):
            assert later["messages"][: len(earlier["messages"])] == earlier["messages"]
        assert bodies[-1]["messages"][-1] == {"role": "tool", "tool_call_id": "c2", "content": "t2"}
        assert all(body["tools"][0]["function"]["name"] == "echo" for body in bodies)


def test_a_surrogate_pair_split_across_chunks_does_not_break_the_next_request() -> None:
    """Each chunk's JSON is decoded alone, so `\\ud83d` and `\\ude00` arrive as two lone halves."""
    from sim import AgentRunner, AllowAllApprover, ToolRegistry, shell_tool
    from tests.adapters.endpoint import sse

    def chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
        return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip

    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "shell", "arguments": ""}}
    split = sse(
        chunk({"role": "assistant", "content": "smile \ud83d"}),
        chunk({"content": "\ude00 and \ud800 alone"}),
        chunk({"tool_calls": [call]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"command": "echo \ud83d'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '\ude01"}'}}]}),
        chunk({}, "tool_calls"),
    )
    endpoint = Endpoint(split, sse(chunk({"role": "assistant", "content": "done"}), chunk({}, "stop")))
    runner = AgentRunner(
        endpoint.model(stream=True), ToolRegistry([shell_tool()]), AllowAllApprover(), workspace="."
    )
    assert runner.run_sync("smile").final_text == "done"
    assistant = endpoint.bodies()[1]["messages"][2]
    assert assistant["content"] == "smile \U0001f600 and \ufffd alone"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"command": "echo \U0001f601"}
