"""The clients a fuzzed target is given: the SDK's own classes, retrying what the SDK retries as often, with
its backoff cut to `BACKOFF_SCALE`. The transport raising connection errors is a fake at the outermost
boundary: what the network does is the only part replaced."""

from __future__ import annotations

import asyncio
import time

import httpx2
import openai
import openai._base_client as base_client
import pytest
from openai._models import FinalRequestOptions

from sim.fuzz.clients import BACKOFF_SCALE, QuickAsyncOpenAI, QuickOpenAI

MODELS = {"object": "list", "data": []}
DISCONNECTED = "Server disconnected without sending a response."


def _dropping(drops: int, seen: list[float]) -> httpx2.MockTransport:
    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(time.monotonic())
        if len(seen) <= drops:
            raise httpx2.RemoteProtocolError(
                "Server disconnected without sending a response.", request=request
            )
        return httpx2.Response(200, json=MODELS)

    return httpx2.MockTransport(answer)


def test_they_are_the_sdks_classes() -> None:
    assert issubclass(QuickOpenAI, openai.OpenAI) and issubclass(QuickAsyncOpenAI, openai.AsyncOpenAI)


def test_the_wait_is_the_sdks_scaled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base_client, "random", lambda: 0.0)  # no jitter: the SDK's wait is exact
    options = FinalRequestOptions(method="get", url="/models")
    sdk = openai.OpenAI(api_key="k", base_url="http://127.0.0.1:9/v1")
    quick = QuickOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1")
    for remaining in (2, 1, 0):
        expected = sdk._calculate_retry_timeout(remaining, options, None) * BACKOFF_SCALE
        assert quick._calculate_retry_timeout(remaining, options, None) == pytest.approx(expected)
    assert expected > 0


def test_a_dropped_connection_is_retried_as_often_and_quickly(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float] = []
    waits: list[float] = []
    monkeypatch.setattr(base_client.time, "sleep", waits.append)  # the waits asked for, not slept
    client = QuickOpenAI(
        api_key="k", base_url="http://sim.test/v1", http_client=httpx2.Client(transport=_dropping(2, seen))
    )
    client.models.list()
    assert len(seen) == 3  # the SDK's two retries, no more
    assert len(waits) == 2 and all(0 < wait <= 2 * BACKOFF_SCALE for wait in waits)  # the SDK's: 0.5 s, 1 s
    with pytest.raises(openai.APIConnectionError):
        QuickOpenAI(
            api_key="k", base_url="http://sim.test/v1",
            http_client=httpx2.Client(transport=_dropping(5, [])),
        ).models.list()  # fmt: skip


def test_the_async_client_retries_as_often_and_quickly(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float] = []
    waits: list[float] = []

    async def wait(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(base_client.anyio, "sleep", wait)  # the waits asked for, not slept
    client = QuickAsyncOpenAI(
        api_key="k",
        base_url="http://sim.test/v1",
        http_client=httpx2.AsyncClient(transport=_dropping(2, seen)),
    )

    async def listed() -> None:
        await client.models.list()

    asyncio.run(listed())
    assert len(seen) == 3
    assert len(waits) == 2 and all(0 < seconds <= 2 * BACKOFF_SCALE for seconds in waits)
