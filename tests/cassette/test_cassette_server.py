"""`sim serve CASSETTE` in process (the host's app over a `RecordingAnswerer`, through
`httpx2.ASGITransport`): every bundled and real cassette answers its own recorded requests, in recorded
order, byte for byte; `--once` as a process."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

import httpx2
import openai
import pytest

from sim.cassette import compact
from sim.cassette.reader import read_cassette
from sim.cassette.recording_answerer import RecordingAnswerer
from sim.cassette.writer import to_yaml
from sim.host.access_log import Answered
from sim.host.app import Host
from tests.cassette.hosted import answers_its_recording, hosting
from tests.cassette.test_compact import many_references
from tests.corpus import needs_corpus, real_cassettes
from tests.host.in_process import messages
from tests.host.processes import ROOT, SIM, served
from tests.scripts import chat_cassette

BUNDLED = sorted((ROOT / "cassettes").rglob("*.yaml"))


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_bundled_cassette_answers_its_recorded_requests(path: Path) -> None:
    asyncio.run(answers_its_recording(path))


@needs_corpus
@pytest.mark.parametrize("folder", ["", "responses"])
def test_every_real_cassette_answers_its_recorded_requests(folder: str) -> None:
    paths = real_cassettes(folder)
    assert paths
    for path in paths:
        asyncio.run(answers_its_recording(path))


def test_concurrent_identical_requests_each_get_their_own_recorded_answer() -> None:
    cassette = read_cassette(ROOT / "cassettes" / "echo-42.yaml")
    first = cassette.interactions[0]
    doubled = type(cassette)(cassette.path, (first, type(first)(1, first.request, first.response)))
    for repeat, statuses in ((False, [200, 200, 400]), (True, [200, 200, 200])):
        server = hosting(doubled, repeat=repeat)

        async def ask_three_times(server: Host[RecordingAnswerer] = server) -> list[int]:
            transport = httpx2.ASGITransport(app=server.app)
            async with httpx2.AsyncClient(transport=transport, base_url="http://sim") as client:
                asked = [client.post(first.request.path, content=first.request.body or b"") for _ in range(3)]
                return [response.status_code for response in await asyncio.gather(*asked)]

        assert sorted(asyncio.run(ask_three_times())) == statuses
        assert server.answerer.consumed


def recorded_error(tmp_path: Path) -> Path:
    """A recorded 500 that tells the SDK not to retry, with a credential header that must not be served."""
    path = tmp_path / "error.yaml"
    error = {"message": "The server had an error", "type": "server_error", "param": None, "code": None}
    body = json.dumps({"error": error})
    request = '{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
    headers = {
        "x-should-retry": ["false"],
        "x-request-id": ["req_1"],
        "set-cookie": ["s=1"],
        "content-type": ["application/json"],
        "content-length": ["999"],
    }
    chat_cassette(path, request, body, status=500, reason="Internal Server Error", response_headers=headers)
    return path


def test_recorded_headers_are_served_so_a_recorded_500_is_not_retried(tmp_path: Path) -> None:
    server = hosting(read_cassette(recorded_error(tmp_path)))

    async def ask() -> tuple[openai.InternalServerError, httpx2.Response]:
        http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=server.app))
        client = openai.AsyncOpenAI(
            base_url="http://sim/v1", api_key="sk-test", http_client=http
        )  # retries on
        async with client:
            with pytest.raises(openai.InternalServerError) as caught:
                await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        return caught.value, caught.value.response

    error, response = asyncio.run(ask())
    assert server.received == 1  # the recorded x-should-retry: false was obeyed
    assert error.request_id == "req_1" and response.headers["x-should-retry"] == "false"
    assert "set-cookie" not in response.headers
    assert response.headers["content-length"] == str(len(response.content))


def test_a_program_run_again_against_a_served_cassette_is_answered_again() -> None:
    cassette = read_cassette(ROOT / "cassettes" / "echo-42.yaml")
    server = hosting(cassette)

    async def run_twice() -> None:
        transport = httpx2.ASGITransport(app=server.app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://sim") as client:
            for _ in range(2):
                for interaction in cassette.interactions:
                    request = interaction.request
                    response = await client.post(request.path, content=request.body or b"")
                    assert response.content == interaction.response.body
            changed = cassette.interactions[0].request.body.replace(b"echo 42", b"echo 43")  # type: ignore[union-attr]
            miss = await client.post(cassette.interactions[0].request.path, content=changed)
            assert miss.status_code == 400
            assert "messages[1].content" in miss.json()["error"]["message"]

    asyncio.run(run_twice())
    assert server.answerer.answers.rounds == 2


@pytest.mark.skipif(sys.platform == "win32", reason="uses POSIX signals")
def test_once_exits_1_listing_what_was_never_played(tmp_path: Path) -> None:
    with served(ROOT / "cassettes" / "echo-42.yaml", "--once") as (server, base_url):
        assert base_url.endswith("/v1")
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=20) == 1
        assert server.stderr is not None
        said = server.stderr.read()
    assert "interaction 1 never requested: POST /v1/chat/completions" in said
    assert "0 of 2 interactions played" in said


def test_interactions_are_counted_from_1_as_the_requests_and_the_simulators_replies_are() -> None:
    """The second recorded interaction is interaction 2 in the access log and in the unplayed list, as the
    request that asks for it is request 1 and the turn a miss names is turn 2."""
    cassette = read_cassette(ROOT / "cassettes" / "echo-42.yaml")
    told: list[Answered] = []
    server = hosting(cassette, on_answered=told.append)
    second = cassette.interactions[1].request

    async def ask() -> None:
        transport = httpx2.ASGITransport(app=server.app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://sim") as client:
            await client.post(second.path, content=second.body or b"")
            await client.post(second.path, content=(second.body or b"").replace(b"42", b"43"))

    asyncio.run(ask())
    count = len(cassette.interactions)
    assert [(t.number, t.said) for t in told[:1]] == [(1, f"interaction 2 of {count} (a body)")]
    assert told[1].said.startswith("sim_replay_mismatch: turn 2: ")
    first = cassette.interactions[0].request.path
    assert server.answerer.unplayed() == [f"interaction 1 never requested: POST {first}"]


def test_a_cassette_with_cycle_or_nothing_to_serve_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("interactions: []\nversion: 1\n")
    for args, code, said in (
        ([str(ROOT / "cassettes" / "echo-42.yaml"), "--cycle"], 2, "--cycle serves scenarios only"),
        ([str(empty)], 1, "no interactions to serve"),
    ):
        command = [*SIM, "serve", *args, "--port", "0"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == code and said in done.stderr, done.stderr


def test_a_file_whose_compact_bodies_rebuild_past_its_limit_is_a_500_in_the_apis_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request that matches nothing is compared with the recorded ones, which rebuilds them: past the
    file's limit (lowered here from 1 GiB) that is an error response and a problem, not a traceback."""
    monkeypatch.setattr(compact, "MAX_REBUILT_BYTES", 64 * 1024 * 1024)
    path = tmp_path / "references.yaml"
    path.write_text(to_yaml(many_references(100, 1024 * 1024, appended=False)))
    cassette = read_cassette(path)
    server = hosting(cassette)

    async def ask() -> list[httpx2.Response]:
        transport = httpx2.ASGITransport(app=server.app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://sim") as client:
            first = cassette.interactions[0].request.body or b""
            other = json.dumps({"model": "m", "messages": [{"role": "user", "content": "not recorded"}]})
            return [
                await client.post("/v1/chat/completions", content=first),
                await client.post("/v1/chat/completions", content=other),
            ]

    answered, refused = asyncio.run(ask())
    assert answered.status_code == 200
    assert refused.status_code == 500
    assert refused.json()["error"]["code"] == "sim_cassette_unreadable"
    assert "rebuild to more than 64 MiB in all" in refused.json()["error"]["message"]
    assert messages(server.answerer.problems) == [
        f"{path}: interaction 64: the compact request bodies rebuild to more than 64 MiB in all"
    ]
