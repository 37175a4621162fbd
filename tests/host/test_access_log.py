"""The access log's lines: what each request was answered, as text for people (untrusted text written out,
long text cut) or JSON lines, and what the simulator, the cassette server and the proxy tell it (every line
from the host; a streamed reply's once it ends), in process."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Coroutine, MutableMapping
from pathlib import Path
from typing import Any

import httpx2
import pytest

from sim.cassette.journal import Journal
from sim.cassette.reader import read_cassette
from sim.cassette.recording_answerer import RecordingAnswerer, recording_host
from sim.cassette.recording_proxy import RecordingProxy, proxy_host
from sim.cassette.upstream import UpstreamUrl
from sim.host.access_log import AccessLog, Answered
from tests.host.in_process import simulator

ROOT = Path(__file__).resolve().parents[2]
NOON = 1_700_000_000.0


def test_a_text_line_writes_out_control_characters_and_cuts_long_text() -> None:
    lines: list[str] = []
    log = AccessLog(lines.append, clock=lambda: NOON)
    log(Answered("chat", 3, 400, "sim_script_mismatch: \x1b]52;c;bad\x07 said\nthat" + "x" * 10_000))
    (line,) = lines
    assert "\x1b" not in line and "\\x1b]52" in line and "\n" not in line
    assert " chat      #3    400 sim_script_mismatch: " in line and line.endswith("...")
    assert len(line) < 400


def test_a_json_line_is_one_object_with_the_time() -> None:
    lines: list[str] = []
    AccessLog(lines.append, as_json=True, clock=lambda: NOON)(
        Answered("responses", 1, 200, "reply 1 of 1: x" * 1000)
    )
    (line,) = lines
    shown = json.loads(line)
    assert shown["time"] == NOON and shown["api"] == "responses" and shown["status"] == 200
    assert len(shown["said"]) == 4096


def post(app: object, path: str, body: dict[str, object]) -> httpx2.Response:
    async def send() -> httpx2.Response:
        async with httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app), base_url="http://sim.test"
        ) as http:
            return await http.post(path, json=body)

    return asyncio.run(send())


def test_the_simulator_tells_what_each_request_got(tmp_path: Path) -> None:
    sim = simulator(
        tmp_path,
        "replies:\n  - content: hi\n  - error: {status: 503, message: Busy.}\n"
        "  - content: x\n    expect_request: {message_count: 9}\n",
    )
    told: list[Answered] = []
    sim.on_answered = told.append
    chat = {"model": "m", "messages": [{"role": "user", "content": "p"}]}
    post(sim.app, "/v1/chat/completions", chat)
    post(sim.app, "/v1/responses", {"model": "m", "input": "p"})
    post(sim.app, "/v1/chat/completions", {"model": "m", "messages": [{"role": "tool", "content": "?"}]})
    post(sim.app, "/v1/chat/completions", chat)
    assert [(t.api, t.number, t.status) for t in told] == [
        ("chat", 1, 200), ("responses", 2, 503), ("chat", 3, 400), ("chat", 4, 400)
    ]  # fmt: skip
    assert told[0].said == "reply 1 of 3: text 'hi'"
    assert told[1].said == "reply 2 of 3: error 503: Busy."
    missing = "Missing required parameter: 'messages.[0].tool_call_id'."  # the API's words
    assert told[2].said == f"missing_required_parameter: {missing}"
    assert told[3].said.startswith("sim_expectation_failed: replies[2].expect_request.message_count")


def test_the_cassette_server_tells_what_each_request_matched() -> None:
    cassette = read_cassette(ROOT / "cassettes" / "echo-42.yaml")
    told: list[Answered] = []
    served = recording_host(RecordingAnswerer(cassette.interactions), on_answered=told.append)
    post(served.app, "/v1/chat/completions", json.loads(cassette.interactions[0].request.body or b"{}"))
    post(
        served.app, "/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "other"}]}
    )
    assert [(t.api, t.number, t.status) for t in told] == [("chat", 1, 200), ("unmatched", 2, 400)]
    assert told[0].said == "interaction 1 of 2 (a body)"
    assert told[1].said.startswith("sim_replay_mismatch: ")


def test_a_streamed_reply_is_told_of_once_it_ends(tmp_path: Path) -> None:
    """The host tells the access log of a streamed reply after its last event, not when it sends the head:
    only then is it known how it ended. Spoken to at the ASGI level, to see when each message goes."""
    sim = simulator(tmp_path, "replies:\n  - content: hello there\n")
    told: list[Answered] = []
    sim.on_answered = told.append
    body = json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "p"}]}).encode()
    told_by_message: list[tuple[str, bool, int]] = []

    async def receive() -> MutableMapping[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        told_by_message.append((str(message["type"]), bool(message.get("more_body")), len(told)))

    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/v1/chat/completions", "raw_path": b"",
             "query_string": b"", "root_path": "", "headers": [(b"content-type", b"application/json")],
             "server": ("sim.test", 80), "client": ("127.0.0.1", 1)}  # fmt: skip
    asyncio.run(sim.app(scope, receive, send))
    assert told_by_message[0] == ("http.response.start", False, 0)
    first_event = next(
        count for kind, more, count in told_by_message if kind == "http.response.body" and more
    )
    assert first_event == 0
    assert told_by_message[-1] == ("http.response.body", False, 1)
    assert [(t.api, t.number, t.status, t.said) for t in told] == [
        ("chat", 1, 200, "reply 1 of 1: text 'hello there'")
    ]


def _proxy(
    tmp_path: Path, answer: Callable[[httpx2.Request], Coroutine[Any, Any, httpx2.Response]]
) -> RecordingProxy:
    """A proxy recording into `tmp_path`, whose upstream (an httpx2 MockTransport: where the real API would
    be) answers with `answer`."""
    proxy = RecordingProxy(
        UpstreamUrl.parse("https://api.example.com/v1"),
        {"authorization": "Bearer sk-upstream-key-0123456789"},
        Journal(tmp_path / "cassette.yaml", ("sk-upstream-key-0123456789",)),
        grace=5,
    )
    proxy.client = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    return proxy


def test_the_proxy_tells_the_host_how_each_forwarded_request_ended(tmp_path: Path) -> None:
    """Every line of the proxy's access log comes from the host: an exchange recorded whole (its size), a
    path refused, an upstream that breaks off mid-answer, and one cut off before its head was sent."""

    async def broken_off() -> AsyncIterator[bytes]:
        yield b'data: {"choices": []}\n\n'
        raise httpx2.ReadError("the upstream went away")

    async def answer(request: httpx2.Request) -> httpx2.Response:
        if request.url.path.endswith("/responses"):
            await asyncio.sleep(60)  # never answers: the client gives up first
        if json.loads(request.content).get("stream"):
            return httpx2.Response(200, content=broken_off(), headers={"content-type": "text/event-stream"})
        return httpx2.Response(200, json={"ok": True})

    proxy = _proxy(tmp_path, answer)
    told: list[Answered] = []

    async def send() -> None:
        transport = httpx2.ASGITransport(app=proxy_host(proxy, on_answered=told.append).app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://proxy.test") as client:
            assert (await client.post("/v1/chat/completions", json={"model": "m"})).status_code == 200
            assert (await client.post("/v1/%2e%2e/admin", json={})).status_code == 400
            with pytest.raises(Exception, match="went away"):
                await client.post("/v1/chat/completions", json={"model": "m", "stream": True})
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(client.post("/v1/responses", json={"model": "m"}), 0.5)

    asyncio.run(send())
    assert [(t.api, t.number, t.status) for t in told] == [
        ("chat", 1, 200), ("/v1/../admin", 2, 400), ("chat", 3, 200), ("responses", 4, 499)
    ]  # fmt: skip
    assert told[0].said == "POST /chat/completions: recorded (11 bytes)"
    assert told[1].said.startswith("sim_path_refused: sim proxy: the request path leaves the upstream's base")
    assert told[2].said == "the upstream broke off: ReadError"
    assert told[3].said == "POST /responses: cut off by the stop after 5 s (--grace); not recorded"
    assert proxy.finish() == 1


def test_an_unreachable_upstream_is_told_as_the_502_it_is(tmp_path: Path) -> None:
    async def answer(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused")

    told: list[Answered] = []
    response = post(proxy_host(_proxy(tmp_path, answer), on_answered=told.append).app, "/v1/responses", {})
    assert response.status_code == 502
    assert [(t.api, t.number, t.status) for t in told] == [("responses", 1, 502)]
    assert told[0].said == (
        "sim_upstream_error: sim proxy: cannot reach the upstream https://api.example.com/v1/responses:"
        " ConnectError"
    )
