"""The access log's lines: what each request was answered, as text for people (untrusted text written out,
long text cut) or JSON lines, and what the simulator and the cassette server tell it, in process."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx2

from sim.cassette.reader import read_cassette
from sim.cassette.recording_answerer import RecordingAnswerer, recording_host
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
    assert told[2].said.startswith("invalid_request_error: Invalid request:")
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
