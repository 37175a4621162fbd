"""The proxy's upstream URL and request paths: credentials in the URL never shown or recorded, a user or
password refused, an Azure-style upstream (a query on the base URL) joined properly, and paths that would
leave the upstream's base refused. The proxy runs in process; the upstream is an httpx2 MockTransport (the
only stand-in: it is where the real API would be)."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import httpx2
import pytest

from sim.cassette.journal import Journal
from sim.cassette.reader import read_cassette
from sim.cassette.recording_proxy import RecordingProxy, contained, proxy_host
from sim.cassette.upstream import UpstreamUrl
from tests.host.processes import SIM

KEY = "sk-upstream-REAL-key-0123456789"
QUERY_SECRET = "azure-query-secret-ABCDEF123456"
HEX_KEY = "9c4e1a7f03b62d58e1f0a9c7b3d2e486"
"""An upstream key shaped like Azure OpenAI's: nothing but the proxy's knowing it tells it from text."""
GLUED = ["token{}", "xx{}yy", "_{}_", "{}-", "{}0"]
"""The key glued to other text, each way issue 34 found it written whole."""


def recording(upstream: str, cassette: Path) -> RecordingProxy:
    """A proxy to `upstream` that records into `cassette`."""
    return RecordingProxy(
        UpstreamUrl.parse(upstream), {"authorization": f"Bearer {KEY}"}, Journal(cassette, (KEY,))
    )


def recorded_uris(proxy: RecordingProxy) -> list[str]:
    """The URIs of the exchanges the proxy wrote, once it finished."""
    proxy.finish()
    return [interaction.request.uri for interaction in read_cassette(proxy.journal.cassette).interactions]


def proxied(
    folder: Path, upstream: str, method: str, path: str, **options: Any
) -> tuple[RecordingProxy, list[httpx2.Request], httpx2.Response]:
    """One request through a proxy to `upstream`, which answers every request with a small JSON body; it
    records into a cassette in `folder`."""
    seen: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={"ok": True})

    proxy = recording(upstream, folder / "cassette.yaml")
    proxy.client = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))

    async def send() -> httpx2.Response:
        transport = httpx2.ASGITransport(app=proxy_host(proxy).app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://proxy.test") as client:
            response = await client.request(method, path, **options)
            await response.aread()
            return response

    return proxy, seen, asyncio.run(send())


def test_an_azure_style_upstream_keeps_its_query_and_joins_paths(tmp_path: Path) -> None:
    upstream = "https://example.openai.azure.com/openai/v1?api-version=preview"
    proxy, seen, response = proxied(
        tmp_path, upstream, "POST", "/v1/chat/completions?extra=1", json={"model": "m"}
    )
    assert response.status_code == 200
    (request,) = seen
    assert (
        str(request.url)
        == "https://example.openai.azure.com/openai/v1/chat/completions?api-version=preview&extra=1"
    )
    assert request.headers["api-key"] == KEY and "authorization" not in request.headers  # as AzureOpenAI
    assert recorded_uris(proxy) == [str(request.url)]


def test_a_credential_in_the_upstreams_query_is_sent_but_never_shown_or_recorded(tmp_path: Path) -> None:
    upstream = f"https://llm.example.com/v1?key={QUERY_SECRET}&api-version=1"
    proxy, seen, _ = proxied(tmp_path, upstream, "POST", "/v1/chat/completions", json={"model": "m"})
    assert seen[0].url.params["key"] == QUERY_SECRET  # the upstream needs it
    (uri,) = recorded_uris(proxy)
    assert QUERY_SECRET not in uri and "key=***" in uri
    assert QUERY_SECRET not in str(UpstreamUrl.parse(upstream))


def test_an_unreachable_upstream_says_so_without_its_credentials(tmp_path: Path) -> None:
    proxy = recording(f"http://127.0.0.1:9/v1?key={QUERY_SECRET}", tmp_path / "c.yaml")

    async def send() -> httpx2.Response:
        transport = httpx2.ASGITransport(app=proxy_host(proxy).app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://proxy.test") as client:
            return await client.post("/v1/chat/completions", json={"model": "m"})

    response = asyncio.run(send())
    assert response.status_code == 502 and QUERY_SECRET not in response.text and "key=***" in response.text
    assert all(QUERY_SECRET not in failure for failure in proxy.failures)


@pytest.mark.parametrize(
    "path",
    ["/v1/%2e%2e/%2e%2e/admin", "/v1/%2E%2E/admin", "/v1/chat/%252e%252e/%252e%252e/admin",
     "/v1/%2e/%2e%2e/admin", "/v1/..%5c..%5cadmin"],
)  # fmt: skip
def test_a_path_that_leaves_the_upstreams_base_is_refused_and_not_forwarded(
    path: str, tmp_path: Path
) -> None:
    _, seen, response = proxied(tmp_path, "https://api.example.com/openai/v1", "GET", path)
    assert response.status_code == 400 and response.json()["error"]["code"] == "sim_path_refused"
    assert seen == []


def test_contained_paths() -> None:
    assert contained("/chat/completions") == "/chat/completions"
    assert contained("/files/file-abc/content") == "/files/file-abc/content"
    assert contained("/../admin") is None and contained("/%2e%2e/admin") is None


def test_a_user_or_password_in_the_upstream_is_refused_in_one_line_without_showing_it(tmp_path: Any) -> None:
    done = subprocess.run(
        [*SIM, "proxy", str(tmp_path / "c.yaml"), "--upstream", "https://user:hunter2-PASSWORD@api.example.com/v1"],
        capture_output=True, text=True, timeout=60, check=False, env={"OPENAI_API_KEY": KEY, "PATH": ""},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "must not carry a user or password" in done.stderr
    assert "hunter2" not in done.stdout + done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_bodies_that_are_not_text_are_kept_as_they_came_and_lose_nothing_else(tmp_path: Any) -> None:
    """Audio that happens to start like gzip, and other binary bodies: the proxy writes every exchange, and
    `sim serve CASSETTE` serves each binary body back byte for byte (a credential in one is blanked)."""
    import os

    from sim.cassette.reader import read_cassette
    from sim.cassette.recording_answerer import RecordingAnswerer, recording_host

    audio = b"\x1f\x8b" + os.urandom(1022)  # gzip's magic bytes, but not gzip
    image = b"\x89PNG\r\n\x1a\n" + os.urandom(500) + f" {KEY} ".encode() + os.urandom(100)
    answers = {
        "/v1/audio/speech": httpx2.Response(200, content=audio, headers={"content-type": "audio/mpeg"}),
        "/v1/images/raw": httpx2.Response(200, content=image, headers={"content-type": "image/png"}),
        "/v1/models": httpx2.Response(200, json={"object": "list", "data": []}),
    }
    cassette = tmp_path / "binary.yaml"
    proxy = recording("https://api.example.com/v1", cassette)
    proxy.client = httpx2.AsyncClient(
        transport=httpx2.MockTransport(lambda request: answers[request.url.path])
    )

    async def through(app: Any, paths: list[str]) -> list[httpx2.Response]:
        async with httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app), base_url="http://local"
        ) as client:
            return [await client.post(path, content=b"{}") for path in paths]

    paths = ["/v1/models", "/v1/audio/speech", "/v1/images/raw", "/v1/models"]
    asyncio.run(through(proxy_host(proxy).app, paths))
    assert proxy.finish() == 4  # nothing lost
    assert KEY not in cassette.read_text()
    played = RecordingAnswerer(read_cassette(cassette).interactions, repeat=True)
    served = asyncio.run(through(recording_host(played).app, paths))
    assert [r.status_code for r in served] == [200] * 4
    assert served[1].content == audio and len(served[1].content) == 1024
    assert served[2].content == image.replace(KEY.encode(), b"*" * len(KEY))


@pytest.mark.parametrize("key", [KEY, HEX_KEY])
def test_the_key_glued_to_other_text_never_reaches_the_proxys_cassette(key: str, tmp_path: Path) -> None:
    """An upstream that says the key back, glued each way, in a JSON body, a header and a stream (split
    across its chunks), to a client that sent it glued in the URL, a header and its body."""
    glued = [glue.format(key) for glue in GLUED]
    said = " ".join(glued)
    pieces = [said[start : start + 7] for start in range(0, len(said), 7)]
    events = [{"choices": [{"index": 0, "delta": {"content": piece}}]} for piece in pieces]
    stream = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
    assert key not in stream

    def answer(request: httpx2.Request) -> httpx2.Response:
        headers = {"x-echo": said}
        if json.loads(request.content).get("stream"):
            return httpx2.Response(200, text=stream, headers={**headers, "content-type": "text/event-stream"})
        return httpx2.Response(200, json={"said": said, "glued": glued}, headers=headers)

    cassette = tmp_path / "cassette.yaml"
    proxy = RecordingProxy(
        UpstreamUrl.parse("https://api.example.com/v1"),
        {"authorization": f"Bearer {key}"},
        Journal(cassette, (key,)),
    )
    proxy.client = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))

    async def send() -> list[str]:
        transport = httpx2.ASGITransport(app=proxy_host(proxy).app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://proxy.test") as client:
            answers = []
            for stream in (False, True):
                response = await client.post(
                    f"/v1/chat/completions?note={said.replace(' ', '+')}",
                    json={"messages": [{"role": "user", "content": said}], "stream": stream},
                    headers={"x-note": said},
                )
                answers.append(response.text)
            return answers

    answers = asyncio.run(send())
    assert key in answers[0] and key in "".join(
        json.loads(line[6:])["choices"][0]["delta"]["content"] for line in answers[1].split("\n\n")[:-2]
    )  # the program gets the answer as the upstream sent it
    assert proxy.finish() == 2
    text = cassette.read_text()
    assert key not in text and text.count("<redacted>") >= 5 * 6, text


def test_credential_parameters_are_known_by_name_and_by_value_and_never_recorded(tmp_path: Path) -> None:
    """Names of every spelling (`x-goog-api-key`, `openaiKey`, `client_secret`), a value shaped like a
    key under any name, and the live key under a name that says nothing: sent as they are, never shown or
    recorded."""
    secrets = {"x-goog-api-key": "goog-0123456789abcdef", "openaiKey": "oai-0123456789abcdef",
               "client_secret": "cs-0123456789abcdef", "note": "sk-shaped0123456789abcdef",
               "k": KEY}  # fmt: skip
    kept = {"api-version": "2024-10-21", "keyword": "weather", "author": "me"}
    query = "&".join(f"{name}={value}" for name, value in {**kept, **secrets}.items())
    proxy, seen, _ = proxied(
        tmp_path, f"https://llm.example.com/v1?{query}", "POST", "/v1/responses", json={}
    )
    assert dict(seen[0].url.params) == {**kept, **secrets}  # the upstream gets them all
    (uri,) = recorded_uris(proxy)
    assert all(value not in uri for value in secrets.values()), uri
    assert all(f"{name}={value}" in uri for name, value in kept.items()), uri
    shown = str(UpstreamUrl.parse(f"https://llm.example.com/v1?{query}"))  # as a 502 or the access log says
    assert all(value not in shown for value in secrets.values()) and "keyword=weather" in shown
