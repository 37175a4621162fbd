"""The headers every answer sim makes carries, as every real recording has them: `x-request-id` (`req_` and 32
hex digits, one of its own per answer) and `openai-processing-ms`; the real SDK reads the id as
`response._request_id` and `APIStatusError.request_id` (sync over a real `sim serve`, async in process,
streamed and not); a relayed reply (recorded, upstream) keeps its own."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletionMessageParam

from sim.host.answers import RawReply, Received
from sim.host.app import Host
from sim.host.transport import transport
from tests.host.in_process import simulator
from tests.host.processes import served

REQUEST_ID = re.compile(r"req_[0-9a-f]{32}")
REAL_CASSETTES = Path(__file__).resolve().parents[3] / "shared" / "real-cassettes"
SCENARIO = """
name: headers
replies:
  - content: ok
  - error: {status: 400, message: Scripted refusal, code: invalid_value}
  - error: {status: 429, message: Slow down, code: rate_limit_exceeded, retry_after: 1}
"""
USER: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]


def assert_sim_headers(headers: Any) -> str:
    """The answer's request id, once its headers were checked."""
    request_id = headers["x-request-id"]
    assert REQUEST_ID.fullmatch(request_id), request_id
    assert headers["openai-processing-ms"].isdigit()
    return str(request_id)


def test_the_recordings_show_these_headers_shaped_so() -> None:
    if not REAL_CASSETTES.is_dir():
        pytest.skip("the real recordings (../shared/real-cassettes) are not in this checkout")
    # Azure's recordings carry Azure's ids (UUIDs); the API's are sim's model
    text = "\n".join(path.read_text() for path in REAL_CASSETTES.rglob("*.yaml") if "azure" not in path.name)
    ids = re.findall(r"x-request-id:\s*\n\s*- (\S+)", text)
    assert ids and all(REQUEST_ID.fullmatch(found) for found in ids)
    millis = re.findall(r"openai-processing-ms:\s*\n\s*- '?(\w+)'?", text)
    assert millis and all(found.isdigit() for found in millis)


# --- sync, over a real `sim serve` ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    scenario = tmp_path_factory.mktemp("headers") / "scenario.yaml"
    scenario.write_text(SCENARIO)
    with served(scenario, "--cycle", "--quiet") as (_, url):
        yield url


def test_sync_replies_errors_and_streams_carry_a_request_id(base_url: str) -> None:
    client = OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    seen: list[str] = []
    for _ in range(2):  # the script cycles: a reply, a refusal, a rate limit
        raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=USER)
        completion = raw.parse()
        assert completion._request_id == assert_sim_headers(raw.headers)
        seen.append(completion._request_id)
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(model="gpt-4o", messages=USER, stream=True)
        assert refused.value.request_id == assert_sim_headers(refused.value.response.headers)
        seen.append(refused.value.request_id)
        with pytest.raises(openai.RateLimitError) as limited:
            client.responses.create(model="gpt-4o", input="hi")
        assert limited.value.request_id == assert_sim_headers(limited.value.response.headers)
        assert limited.value.response.headers["retry-after"] == "1"  # the scripted header kept
        seen.append(limited.value.request_id)
    stream = client.responses.create(model="gpt-4o", input="hi", stream=True)
    seen.append(assert_sim_headers(stream.response.headers))
    assert [event.type for event in stream][-1] == "response.completed"
    assert len(set(seen)) == len(seen)  # one id per answer


def test_sync_models_resources_and_404s_carry_a_request_id(base_url: str) -> None:
    client = OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    models = client.models.with_raw_response.list()
    assert_sim_headers(models.headers)
    with pytest.raises(openai.NotFoundError) as unknown:
        client.responses.retrieve("resp_nowhere")  # a resource endpoint, or a 404 where none serves it
    assert REQUEST_ID.fullmatch(unknown.value.request_id or "")
    with pytest.raises(openai.NotFoundError) as nowhere:
        client.get("/nothing/here", cast_to=object)
    assert REQUEST_ID.fullmatch(nowhere.value.request_id or "")


def test_malformed_and_hostile_requests_still_get_a_request_id(base_url: str) -> None:
    root = base_url.removesuffix("/v1")
    with httpx2.Client(base_url=root) as http:
        for method, path, body in [
            ("POST", "/v1/chat/completions", b"{not json"),
            ("POST", "/v1/chat/completions", b"[" * 50_000),
            ("POST", "/v1/responses", b'{"model": "m", "input": "\\ud800"}'),
            ("GET", "/v1/chat/completions", b""),
            ("DELETE", "/v1/models", b""),
            ("PATCH", "/" + "a/" * 500, b""),
        ]:
            answer = http.request(method, path, content=body)
            assert answer.status_code >= 400
            assert_sim_headers(answer.headers)


# --- async, in process ------------------------------------------------------------------------------------


def test_async_replies_streams_and_errors_carry_a_request_id(tmp_path: Path) -> None:
    host = simulator(tmp_path, SCENARIO, cycle=True)

    async def run() -> list[str]:
        http = httpx2.AsyncClient(transport=transport(host))
        async with AsyncOpenAI(
            base_url="http://sim.test/v1", api_key="k", max_retries=0, http_client=http
        ) as c:
            response = await c.responses.create(model="gpt-4o", input="hi")
            with pytest.raises(openai.BadRequestError) as refused:
                await c.responses.create(model="gpt-4o", input="hi")
            with pytest.raises(openai.RateLimitError) as limited:
                await c.chat.completions.create(model="gpt-4o", messages=USER)
            stream = await c.chat.completions.create(model="gpt-4o", messages=USER, stream=True)
            assert isinstance(stream, openai.AsyncStream)
            chunks = [chunk async for chunk in stream]
            assert chunks[-1].choices[-1].finish_reason == "stop"
            return [
                response._request_id or "",
                refused.value.request_id or "",
                limited.value.request_id or "",
                assert_sim_headers(stream.response.headers),
            ]

    ids = asyncio.run(run())
    assert all(REQUEST_ID.fullmatch(found) for found in ids)
    assert len(set(ids)) == 4


def test_many_concurrent_answers_each_have_their_own_id(tmp_path: Path) -> None:
    host = simulator(tmp_path, "replies: [{content: ok}]", cycle=True)

    async def run() -> list[httpx2.Response]:
        async with httpx2.AsyncClient(transport=transport(host), base_url="http://sim.test") as client:
            body = {"model": "m", "messages": USER}
            return list(
                await asyncio.gather(*(client.post("/v1/chat/completions", json=body) for _ in range(200)))
            )

    ids = [assert_sim_headers(answer.headers) for answer in asyncio.run(run())]
    assert len(set(ids)) == 200


class Relayed:
    """Answers every request with a reply relayed as it came, its own headers with it."""

    finished = False

    async def answer(self, request: Received) -> RawReply:
        headers = (("content-type", "application/json"), ("x-request-id", "req_recorded"))
        return RawReply(200, headers, b'{"object": "list", "data": []}')


def test_a_relayed_reply_keeps_its_own_headers() -> None:
    host = Host(Relayed(), every_path=True)

    async def run() -> httpx2.Response:
        async with httpx2.AsyncClient(transport=transport(host), base_url="http://sim.test") as client:
            return await client.get("/v1/models")

    answer = asyncio.run(run())
    assert answer.headers.get_list("x-request-id") == ["req_recorded"]
    assert "openai-processing-ms" not in answer.headers
