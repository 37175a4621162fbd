"""The two ways a recording answers, in process (`sim replay`: the host's in-process transport) and served
(`sim serve CASSETTE`: the host on 127.0.0.1), give a client the same status, headers and body for the
same recording: every recorded request of every bundled and real cassette, and a request that matches
nothing. One server serves the whole module; each cassette gets a fresh answerer on each side."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from sim.cassette.reader import read_cassette
from sim.cassette.recording_answerer import RecordingAnswerer, recording_host
from sim.core.problems import ProblemKind
from sim.host.transport import transport
from tests.corpus import CORPUS, needs_corpus, real_cassettes
from tests.scripts import chat_cassette
from tests.served import Served, serving

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = sorted((ROOT / "cassettes").rglob("*.yaml"))

CONNECTION_HEADERS = frozenset({"date", "server", "transfer-encoding", "connection", "keep-alive"})
"""What a server on a port adds about the connection (uvicorn's date and name, chunked framing), which an
in-process transport has no connection to say: everything else must be the same."""

Reply = tuple[int, list[tuple[str, str]], bytes]


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    yield from serving("")


def _reply(response: httpx2.Response) -> Reply:
    headers = [(k, v) for k, v in response.headers.multi_items() if k not in CONNECTION_HEADERS]
    if "openai-processing-ms" not in response.headers:  # a recorded reply: its own headers, exactly
        return response.status_code, headers, response.content
    return response.status_code, [(k, _shape(k, v)) for k, v in headers], response.content


def _shape(name: str, value: str) -> str:
    """The values an answer sim makes has of its own (its request id, its time), shown by their shape."""
    if name == "x-request-id" and re.fullmatch(r"req_[0-9a-f]{32}", value):
        return "<req_ and 32 hex digits>"
    if name == "openai-processing-ms" and value.isdigit():
        return "<whole milliseconds>"
    return value


async def _ask_each(client: httpx2.AsyncClient, requests: list[tuple[str, str, bytes]]) -> list[Reply]:
    return [_reply(await client.request(method, path, content=body)) for method, path, body in requests]


def _requests(path: Path) -> list[tuple[str, str, bytes]]:
    """Each recorded request once, then one that matches nothing (its first request, changed)."""
    interactions = read_cassette(path).interactions
    asked = [(i.request.method, i.request.path, i.request.body or b"") for i in interactions]
    method, route, body = asked[0]
    try:
        changed = json.dumps({**json.loads(body), "sim-test": "matches nothing"}).encode()
    except ValueError:
        changed = body + b" matches nothing"
    return [*asked, (method, route, changed)]


def assert_the_same_both_ways(path: Path, served: Served) -> None:
    requests = _requests(path)
    in_process = RecordingAnswerer(read_cassette(path).interactions)
    on_a_port = RecordingAnswerer(read_cassette(path).interactions)
    served.host = recording_host(on_a_port)

    async def both() -> tuple[list[Reply], list[Reply]]:
        local = httpx2.AsyncClient(transport=transport(recording_host(in_process)), base_url="http://sim")
        remote = httpx2.AsyncClient(base_url=served.url)
        async with local, remote:
            return await _ask_each(local, requests), await _ask_each(remote, requests)

    here, there = asyncio.run(both())
    for number, (one, other) in enumerate(zip(here, there, strict=True), start=1):
        assert one == other, (path.name, number)
    *answered, (status, _, body) = here
    recorded = [(i.response.status, i.response.body) for i in read_cassette(path).interactions]
    assert [(s, b) for s, _, b in answered] == recorded, path.name
    assert status == 400 and json.loads(body)["error"]["code"] == "sim_replay_mismatch", path.name
    assert in_process.problems == on_a_port.problems
    (problem,) = in_process.problems  # typed: its kind and the request's number, not text to parse
    assert (problem.kind, problem.number, problem.status) == (ProblemKind.replay_mismatch, len(requests), 400)
    assert in_process.consumed and on_a_port.consumed


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_bundled_cassette_answers_the_same_in_process_and_served(path: Path, served: Served) -> None:
    assert_the_same_both_ways(path, served)


@needs_corpus
@pytest.mark.parametrize("folder", ["", "responses"])
def test_every_real_cassette_answers_the_same_in_process_and_served(folder: str, served: Served) -> None:
    paths = real_cassettes(folder)
    assert paths, f"no cassettes in {CORPUS / folder}"
    for path in paths:
        assert_the_same_both_ways(path, served)


RECORDED_HEADERS = {
    "x-request-id": ["req_1"],
    "x-should-retry": ["false"],
    "openai-processing-ms": ["12"],
    "via": ["one", "two"],
    "openai-organization": ["org-secret"],
    "set-cookie": ["s=1"],
    "content-length": ["999"],
    "content-type": ["application/json"],
}


def test_recorded_headers_reach_the_client_both_ways(tmp_path: Path, served: Served) -> None:
    """Not only equal: the recorded headers a client of the live API read are there, each value of a
    repeated one, and credentials and what described the recorded body are not."""
    path = tmp_path / "headers.yaml"
    asked = '{"model": "m", "messages": []}'
    said = '{"error": {"message": "x", "type": "server_error"}}'
    chat_cassette(
        path, asked, said, status=500, reason="Internal Server Error", response_headers=RECORDED_HEADERS
    )
    assert_the_same_both_ways(path, served)
    served.host = recording_host(RecordingAnswerer(read_cassette(path).interactions))

    async def ask() -> httpx2.Response:
        async with httpx2.AsyncClient(base_url=served.url) as client:
            return await client.post("/v1/chat/completions", content=asked)

    headers = asyncio.run(ask()).headers
    assert headers["x-request-id"] == "req_1" and headers["x-should-retry"] == "false"
    assert headers.get_list("via") == ["one", "two"] and headers["content-length"] == "51"
    assert "openai-organization" not in headers and "set-cookie" not in headers
