"""What sim answers where the live API's answer is known and sim once differed: each test names the live
behaviour it holds sim to (found in the spec, the SDK, real recordings or live bodies quoted in public
reports)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from openai import AsyncOpenAI

from sim.host.transport import transport
from tests.host.in_process import simulator

SCRIPT = """
prompt: p
replies:
  - content: Done.
"""


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/responses/resp_sim000001"),
        ("PUT", "/v1/responses/resp_sim000001"),
        ("GET", "/v1/responses/resp_sim000001/cancel"),
        ("PATCH", "/v1/conversations/conv_1"),
        ("PUT", "/responses/resp_sim000001/input_items"),
    ],
)
def test_another_method_on_an_endpoints_path_is_the_apis_invalid_url_404(
    tmp_path: Path, method: str, path: str
) -> None:
    """The live API answers a method an endpoint's path does not take as it answers any path it does not
    serve: 404 `Invalid URL (METHOD path)`, `invalid_request_error`, no param or code (never a 405), so the
    SDK raises `NotFoundError`."""
    sim = simulator(tmp_path, SCRIPT)

    async def call() -> httpx2.Response:
        async with httpx2.AsyncClient(transport=transport(sim), base_url="http://sim.test") as http:
            return await http.request(method, path, json={})

    answer = asyncio.run(call())
    assert answer.status_code == 404
    assert answer.json() == {
        "error": {
            "message": f"Invalid URL ({method} {path})",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }


def test_the_sdk_raises_not_found_for_a_post_to_a_response(tmp_path: Path) -> None:
    sim = simulator(tmp_path, SCRIPT)

    async def call() -> None:
        http = httpx2.AsyncClient(transport=transport(sim))
        async with AsyncOpenAI(base_url="http://sim.test/v1", api_key="sk-test", http_client=http) as client:
            await client.responses.create(model="m", input="p")
            await client.post("/responses/resp_sim000001", cast_to=object, body={})

    with pytest.raises(openai.NotFoundError) as caught:
        asyncio.run(call())
    assert caught.value.message.endswith("Invalid URL (POST /v1/responses/resp_sim000001)")
    assert caught.value.code is None


REASONING = """
prompt: p
replies:
  - content: Sunny in Paris.
    reasoning: The user wants the weather.
"""
RECORDED_REASONING = (
    Path(__file__).resolve().parents[2]
    / "../shared/real-cassettes/responses"
    / "pydantic-ai__responses_reasoning_tool_call__stream_reasoning_followup.yaml"
)


def _recorded_reasoning_keys() -> set[str]:
    if not RECORDED_REASONING.exists():
        pytest.skip("the real recordings (../shared/real-cassettes) are not here")
    for line in RECORDED_REASONING.read_text().splitlines():
        line = line.strip()
        if line.startswith("data: {") and '"response.output_item.done"' in line:
            item = json.loads(line.removeprefix("data: "))["item"]
            if item["type"] == "reasoning":
                return set(item)
    raise AssertionError("the recording has no reasoning item")


@pytest.mark.parametrize("stream", [False, True])
def test_a_reasoning_item_carries_an_empty_content_as_recorded(tmp_path: Path, stream: bool) -> None:
    """A real recording's reasoning item (no reasoning text asked) has `content: []` beside `summary: []`,
    in the response and in each streamed item event."""
    recorded = _recorded_reasoning_keys()
    assert {"content", "summary"} <= recorded
    sim = simulator(tmp_path, REASONING)

    async def call() -> list[dict[str, object]]:
        http = httpx2.AsyncClient(transport=transport(sim))
        async with AsyncOpenAI(base_url="http://sim.test/v1", api_key="sk-test", http_client=http) as client:
            include: list[Any] = ["reasoning.encrypted_content"]
            if not stream:
                made = await client.responses.create(model="m", input="p", include=include)
                return [item.model_dump(exclude_unset=True) for item in made.output]
            items = []
            async with await client.responses.create(
                model="m", input="p", include=include, stream=True
            ) as events:
                async for event in events:
                    if event.type in ("response.output_item.added", "response.output_item.done"):
                        items.append(event.item.model_dump(exclude_unset=True))
                    if event.type == "response.completed":
                        items += [item.model_dump(exclude_unset=True) for item in event.response.output]
            return items

    reasoning = [item for item in asyncio.run(call()) if item["type"] == "reasoning"]
    assert reasoning and all(item["content"] == [] and item["summary"] == [] for item in reasoning)
    assert all(recorded <= set(item) for item in reasoning)


WRONG_TYPES = [
    ("/v1/responses", {"background": "yes"}, "background", "a boolean", "a string"),
    ("/v1/responses", {"stream": "yes"}, "stream", "a boolean", "a string"),
    ("/v1/chat/completions", {"stream": 1}, "stream", "a boolean", "an integer"),
    ("/v1/responses", {"store": {}}, "store", "a boolean", "an object"),
    ("/v1/chat/completions", {"n": 1.5}, "n", "an integer", "a decimal number"),
    ("/v1/responses", {"service_tier": 1}, "service_tier", "a string", "an integer"),
    ("/v1/chat/completions", {"service_tier": ["auto"]}, "service_tier", "a string", "an array"),
    (
        "/v1/chat/completions",
        {"stream": True, "stream_options": {"include_obfuscation": "no"}},
        "stream_options.include_obfuscation",
        "a boolean",
        "a string",
    ),
    (
        "/v1/chat/completions",
        {"stream": True, "stream_options": {"include_usage": "yes"}},
        "stream_options.include_usage",
        "a boolean",
        "a string",
    ),
    (
        "/v1/responses",
        {"stream": True, "stream_options": {"include_obfuscation": 0}},
        "stream_options.include_obfuscation",
        "a boolean",
        "an integer",
    ),
]


@pytest.mark.parametrize(("path", "extra", "param", "expected", "got"), WRONG_TYPES)
def test_a_parameter_of_the_wrong_type_is_refused_in_the_apis_words(
    tmp_path: Path, path: str, extra: dict[str, Any], param: str, expected: str, got: str
) -> None:
    """The live API says the JSON kind it got, "Invalid type for 'stream': expected a boolean, but got a
    string instead." (quoted by clients and by parity tables measured against it), not Python's type name."""
    sim = simulator(tmp_path, SCRIPT)
    asked: dict[str, Any] = (
        {"model": "m", "messages": [{"role": "user", "content": "p"}]}
        if "chat" in path
        else {"model": "m", "input": "p"}
    )

    async def call() -> httpx2.Response:
        async with httpx2.AsyncClient(transport=transport(sim), base_url="http://sim.test") as http:
            return await http.post(path, json={**asked, **extra})

    answer = asyncio.run(call())
    assert answer.status_code == 400
    assert answer.json()["error"] == {
        "message": f"Invalid type for '{param}': expected {expected}, but got {got} instead.",
        "type": "invalid_request_error",
        "param": param,
        "code": "invalid_type",
    }


@pytest.mark.parametrize(("limit", "bound"), [(101, "above maximum value. Expected a value <= 100"),
                                              (0, "below minimum value. Expected a value >= 1")])  # fmt: skip
def test_a_page_limit_out_of_bounds_is_refused_in_the_apis_words(
    tmp_path: Path, limit: int, bound: str
) -> None:
    """Both list endpoints word a limit out of bounds as the API words any integer out of bounds ("... but
    got 101 instead.")."""
    sim = simulator(tmp_path, SCRIPT)

    async def call() -> list[httpx2.Response]:
        async with httpx2.AsyncClient(transport=transport(sim), base_url="http://sim.test") as http:
            made = (await http.post("/v1/responses", json={"model": "m", "input": "p"})).json()["id"]
            conversation = (await http.post("/v1/conversations", json={})).json()["id"]
            return [
                await http.get(f"/v1/responses/{made}/input_items", params={"limit": limit}),
                await http.get(f"/v1/conversations/{conversation}/items", params={"limit": limit}),
            ]

    for answer in asyncio.run(call()):
        assert answer.status_code == 400
        assert (
            answer.json()["error"]["message"] == f"Invalid 'limit': integer {bound}, but got {limit} instead."
        )


def test_an_unknown_include_on_retrieve_is_refused_as_on_create(tmp_path: Path) -> None:
    """Retrieving a response (or listing its input items) refuses an `include` value the API does not know
    in the words create refuses it with ("Supported values are: 'a', ..., and 'z'."), naming the query's
    parameter."""
    sim = simulator(tmp_path, SCRIPT)

    async def call() -> list[httpx2.Response]:
        async with httpx2.AsyncClient(transport=transport(sim), base_url="http://sim.test") as http:
            created = await http.post(
                "/v1/responses", json={"model": "m", "input": "p", "include": ["bogus"]}
            )
            made = (await http.post("/v1/responses", json={"model": "m", "input": "p"})).json()["id"]
            asked = {"include[]": "bogus"}
            return [
                created,
                await http.get(f"/v1/responses/{made}", params=asked),
                await http.get(f"/v1/responses/{made}/input_items", params=asked),
            ]

    created, *retrieved = asyncio.run(call())
    assert created.status_code == 400
    assert created.json()["error"]["message"].endswith(", and 'message.output_text.logprobs'.")
    for answer in retrieved:
        assert answer.status_code == 400
        assert answer.json()["error"] == {**created.json()["error"], "param": "include"}
