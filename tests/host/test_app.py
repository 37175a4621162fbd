"""The host over answerers written for the test: what it hands an answerer, and how it sends each kind of
answer back."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import pytest

from sim.core.messages import AssistantMessage
from sim.core.model import ModelReply
from sim.core.problems import Problem, ProblemKind
from sim.host.access_log import Answered
from sim.host.answers import Answer, ApiError, ModelAnswer, RawReply, Received, Refusal
from sim.host.app import Host
from sim.host.transport import InProcess, transport
from sim.wire.requests import Asked

CHAT = {"model": "m", "messages": [{"role": "user", "content": "p"}]}


class Fixed:
    """Answers every request with what `answer_of` makes of it; keeps each request received."""

    def __init__(self, answer_of: Callable[[Received], Answer], *, finish_after: int | None = None) -> None:
        self.answer_of = answer_of
        self.received: list[Received] = []
        self.finish_after = finish_after

    @property
    def finished(self) -> bool:
        return self.finish_after is not None and len(self.received) >= self.finish_after

    async def answer(self, request: Received) -> Answer:
        self.received.append(request)
        return self.answer_of(request)


def send(host: Host[Any], *requests: tuple[str, str, dict[str, Any] | bytes | None]) -> list[httpx2.Response]:
    async def run() -> list[httpx2.Response]:
        async with httpx2.AsyncClient(transport=transport(host), base_url="http://sim.test") as client:
            responses = []
            for method, path, body in requests:
                if isinstance(body, bytes):
                    responses.append(await client.request(method, path, content=body))
                else:
                    responses.append(await client.request(method, path, json=body))
            return responses

    return asyncio.run(run())


def reply(text: str) -> ModelAnswer:
    return ModelAnswer(ModelReply(message=AssistantMessage(content=text), finish_reason="stop"))


def test_an_answerer_gets_the_request_as_received_numbered_with_the_api_its_path_names() -> None:
    answerer = Fixed(lambda request: reply("hi"))
    host = Host(answerer)
    send(
        host, ("POST", "/v1/chat/completions?x=1", CHAT), ("POST", "/responses", {"model": "m", "input": "p"})
    )
    first, second = answerer.received
    assert (first.number, first.method, first.path, first.query, first.api) == (
        1, "POST", "/v1/chat/completions", "x=1", "chat"
    )  # fmt: skip
    assert first.headers["content-type"] == "application/json" and b'"messages"' in first.body
    assert (second.number, second.path, second.api) == (2, "/responses", "responses")
    assert host.received == 2 and host.received_by == {"chat": 1, "responses": 1}


def test_the_request_is_parsed_once_and_only_when_asked_for() -> None:
    parsed: list[Asked | Refusal] = []

    def answer_of(request: Received) -> Answer:
        if request.number == 1:
            return ApiError(429, "Slow down.")  # never reads the body: nothing parsed
        parsed.extend([request.parsed, request.parsed])
        return reply("hi")

    send(
        Host(Fixed(answer_of)), ("POST", "/v1/chat/completions", CHAT), ("POST", "/v1/chat/completions", CHAT)
    )
    assert len(parsed) == 2 and parsed[0] is parsed[1] and isinstance(parsed[0], Asked)


def test_a_refused_request_says_so_in_the_apis_words_and_as_a_typed_problem() -> None:
    seen: list[Asked | Refusal] = []

    def answer_of(request: Received) -> Answer:
        seen.append(request.parsed)
        return reply("unused")

    body = {**CHAT, "n": 2}
    (response,) = send(Host(Fixed(answer_of)), ("POST", "/v1/chat/completions", body))
    (refusal,) = seen
    assert isinstance(refusal, Refusal) and refusal.problem is not None
    assert refusal.problem.kind is ProblemKind.not_simulated and refusal.problem.number == 1
    assert refusal.error.param == "n" and response.status_code == 400  # a model reply to a refused request


def test_a_body_that_is_not_json_is_refused_with_no_problem() -> None:
    seen: list[Asked | Refusal] = []

    def answer_of(request: Received) -> Answer:
        seen.append(request.parsed)
        return reply("unused")

    (response,) = send(Host(Fixed(answer_of)), ("POST", "/v1/chat/completions", b"{not json"))
    assert (
        response.status_code == 400 and "could not parse the JSON body" in response.json()["error"]["message"]
    )
    assert isinstance(seen[0], Refusal) and seen[0].problem is None


@pytest.mark.parametrize("stream", [False, True])
def test_a_model_reply_is_written_in_the_apis_shape(stream: bool) -> None:
    (response,) = send(
        Host(Fixed(lambda r: reply("hello"))), ("POST", "/v1/chat/completions", {**CHAT, "stream": stream})
    )
    assert response.status_code == 200
    if stream:
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.text.endswith("data: [DONE]\n\n") and '"content":"hello"' in response.text
    else:
        assert response.json()["choices"][0]["message"]["content"] == "hello"


def test_an_api_error_is_sent_with_its_headers_and_a_problem_as_the_error_it_says() -> None:
    answers: list[Answer] = [
        ApiError(503, "Busy.", type="api_error", code="busy", headers=(("retry-after", "2"),)),
        Problem(ProblemKind.script_exhausted, 2, "no reply left for request 2", code="sim_script_exhausted",
                said="said to the client", headers=(("x-should-retry", "false"),)),
    ]  # fmt: skip
    first, second = send(
        Host(Fixed(lambda request: answers[request.number - 1])),
        ("POST", "/v1/chat/completions", CHAT),
        ("POST", "/v1/chat/completions", CHAT),
    )
    assert first.status_code == 503 and first.headers["retry-after"] == "2"
    assert first.json() == {"error": {"message": "Busy.", "type": "api_error", "param": None, "code": "busy"}}
    assert second.status_code == 400 and second.headers["x-should-retry"] == "false"
    assert second.json()["error"]["message"] == "said to the client"
    assert second.json()["error"]["code"] == "sim_script_exhausted"


def test_an_error_in_the_stream_fails_a_streamed_responses_request_after_it_started() -> None:
    error = ApiError(500, "Broke.", type="server_error", in_stream=True)
    (streamed, plain) = send(
        Host(Fixed(lambda request: error)),
        ("POST", "/v1/responses", {"model": "m", "input": "p", "stream": True}),
        ("POST", "/v1/responses", {"model": "m", "input": "p"}),
    )
    assert streamed.status_code == 200 and "event: response.failed" in streamed.text
    assert plain.status_code == 500 and plain.json()["error"]["message"] == "Broke."


def test_cut_and_malformed_replies() -> None:
    answers = [
        ModelAnswer(reply("hello").reply, cut_after_chunks=1),
        ModelAnswer(reply("hello").reply, cut_after_chunks=1),
        ModelAnswer(reply("hello").reply, malformed=True),
    ]
    host = Host(Fixed(lambda request: answers[request.number - 1]))
    # a cut reply is a dropped connection, as live: the client reads what came, then httpx raises
    with pytest.raises(httpx2.RemoteProtocolError, match=r"\(incomplete chunked read\)"):
        send(host, ("POST", "/v1/chat/completions", {**CHAT, "stream": True}))
    with pytest.raises(httpx2.RemoteProtocolError, match=r"\(received \d+ bytes, expected \d+\)"):
        send(host, ("POST", "/v1/chat/completions", CHAT))
    (malformed,) = send(host, ("POST", "/v1/chat/completions", CHAT))
    assert malformed.content == b'{"id": "chatcmpl-'


def test_a_raw_reply_is_sent_as_it_is_whole_or_chunk_by_chunk() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b"data: one\n\n"
        yield b"data: two\n\n"

    answers: list[Answer] = [
        RawReply(418, (("content-type", "text/plain"), ("x-recorded", "yes")), b"teapot"),
        RawReply(200, (("content-type", "text/event-stream"),), chunks()),
    ]
    whole, chunked = send(
        Host(Fixed(lambda request: answers[request.number - 1]), every_path=True),
        ("GET", "/v1/anything", None),
        ("POST", "/v1/chat/completions", CHAT),
    )
    assert (whole.status_code, whole.headers["x-recorded"], whole.content) == (418, "yes", b"teapot")
    assert chunked.content == b"data: one\n\ndata: two\n\n"


def test_other_paths_get_a_json_404_naming_what_is_served_and_models_lists_the_model() -> None:
    answerer = Fixed(lambda request: reply("hi"))
    missing, models = send(
        Host(answerer, model="my-model"), ("GET", "/v1/nothing", None), ("GET", "/v1/models", None)
    )
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert "POST /v1/chat/completions, " in missing.json()["error"]["message"]
    assert "GET /v1/models" in missing.json()["error"]["message"]
    assert [model["id"] for model in models.json()["data"]] == ["my-model"]
    assert answerer.received == []


def test_the_access_log_hears_each_answer_and_on_finished_fires_once() -> None:
    told: list[Answered] = []
    fired: list[int] = []
    answers: list[Answer] = [
        ModelAnswer(reply("hi").reply, said="reply 1 of 1: says hi"),
        ApiError(400, "Late.", code="late"),
    ]
    host = Host(
        Fixed(lambda request: answers[min(request.number, 2) - 1], finish_after=1),
        on_answered=told.append,
        on_finished=lambda: fired.append(1),
    )
    send(host, *([("POST", "/v1/chat/completions", CHAT)] * 3))
    assert [(t.api, t.number, t.status, t.said) for t in told] == [
        ("chat", 1, 200, "reply 1 of 1: says hi"),
        ("chat", 2, 400, "late: Late."),
        ("chat", 3, 400, "late: Late."),
    ]
    assert fired == [1]


def served(host: Host[Any], method: str, path: str, body: bytes | None) -> httpx2.Response:
    """One request answered through the host's ASGI app."""

    async def run() -> httpx2.Response:
        asgi = httpx2.ASGITransport(app=host.app)
        async with httpx2.AsyncClient(transport=asgi, base_url="http://sim.test") as client:
            return await client.request(method, path, content=body)

    return asyncio.run(run())


def in_process(host: Host[Any], method: str, path: str, body: bytes | None) -> httpx2.Response:
    """One request answered through the in-process transport."""

    async def run() -> httpx2.Response:
        async with httpx2.AsyncClient(transport=transport(host), base_url="http://sim.test") as client:
            return await client.request(method, path, content=body)

    return asyncio.run(run())


def _answers() -> list[Answer]:
    async def chunks() -> AsyncIterator[bytes]:
        yield b"data: one\n\n"
        yield b"data: two\n\n"

    return [
        reply("hello"),
        reply("hello"),
        ApiError(503, "Busy.", type="api_error", code="busy", headers=(("retry-after", "2"),)),
        RawReply(418, (("set-cookie", "a=1"), ("set-cookie", "b=2"), ("content-type", "text/plain")), b"tea"),
        RawReply(200, (("content-type", "text/event-stream"),), chunks()),
        ModelAnswer(reply("hello").reply, cut_after_chunks=1),
        ModelAnswer(reply("hello").reply, malformed=True),
    ]


STREAMED = json.dumps({**CHAT, "stream": True}).encode()
REQUESTS: list[tuple[str, str, bytes | None, bool]] = [
    ("POST", "/v1/chat/completions", json.dumps(CHAT).encode(), False),
    ("POST", "/v1/chat/completions", STREAMED, False),
    ("POST", "/v1/responses", b'{"model": "m", "input": "p"}', False),
    ("POST", "/v1/chat/completions", b"{}", False),
    ("POST", "/v1/chat/completions", STREAMED, False),
    ("POST", "/v1/chat/completions", STREAMED, False),
    ("POST", "/v1/chat/completions", b"{not json", False),
    ("GET", "/v1/models", None, False),
    ("HEAD", "/v1/models", None, False),
    ("GET", "/v1/nothing", None, False),
    ("GET", "/v1/chat/completions", None, False),
    ("DELETE", "/v1/models", None, False),
    ("HEAD", "/v1/anything", None, True),
    ("OPTIONS", "/v1/anything", None, True),
    ("TRACE", "/v1/anything", None, True),
]


@pytest.mark.parametrize(("method", "path", "body", "every_path"), REQUESTS)
def test_the_in_process_transport_answers_as_the_served_app(
    method: str, path: str, body: bytes | None, every_path: bool
) -> None:
    def through(send_one: Callable[..., httpx2.Response]) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        answers = _answers()
        told: list[Answered] = []
        answerer = Fixed(lambda request: answers[(REQUESTS.index((method, path, body, every_path))) % 7])
        host = Host(answerer, every_path=every_path, on_answered=told.append)
        response = send_one(host, method, path, body)
        return response.status_code, _shapes(response.headers.raw), response.content + repr(told).encode()

    assert through(in_process) == through(served)


def _shapes(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """`headers` with the values each answer has its own (its request id, its time) shown by their shape."""
    shapes = {b"x-request-id": rb"req_[0-9a-f]{32}", b"openai-processing-ms": rb"\d+"}
    return [
        (name, b"<" + shapes[name] + b">" if re.fullmatch(shapes[name], value) else value)
        if name in shapes
        else (name, value)
        for name, value in headers
    ]


def test_the_in_process_transport_runs_on_finished_after_the_body_and_raises_or_sends_a_500() -> None:
    events: list[str] = []

    async def chunks() -> AsyncIterator[bytes]:
        yield b"data: one\n\n"
        events.append("body sent")

    host = Host(
        Fixed(lambda request: RawReply(200, (), chunks()), finish_after=1),
        every_path=True,
        on_finished=lambda: events.append("finished"),
    )
    assert in_process(host, "POST", "/v1/chat/completions", b"{}").content == b"data: one\n\n"
    assert events == ["body sent", "finished"]

    def broken(request: Received) -> Answer:
        raise RuntimeError("broke")

    with pytest.raises(RuntimeError, match="broke"):
        in_process(Host(Fixed(broken)), "POST", "/v1/chat/completions", b"{}")

    async def quiet() -> tuple[httpx2.Response, httpx2.Response]:
        results = []
        for through in (
            InProcess(Host(Fixed(broken)), raise_app_exceptions=False),
            httpx2.ASGITransport(app=Host(Fixed(broken)).app, raise_app_exceptions=False),
        ):
            async with httpx2.AsyncClient(transport=through, base_url="http://sim.test") as client:
                results.append(await client.post("/v1/chat/completions", content=b"{}"))
        return results[0], results[1]

    mine, theirs = asyncio.run(quiet())
    assert (mine.status_code, mine.headers.raw, mine.content) == (
        theirs.status_code, theirs.headers.raw, theirs.content
    )  # fmt: skip
    assert mine.status_code == 500
