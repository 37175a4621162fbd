"""Azure OpenAI upstreams for `sim proxy`, `sim record` and `sim drift`: a key goes in `api-key` (beside the
Bearer token), an Entra ID token as the Bearer token alone, an `api-version` in the base URL rides along,
and neither the key, the token nor a client's own credentials is ever written: every file each command
leaves is searched for them, and so is what it printed.

The upstream is a real server on 127.0.0.1 playing a scenario at Azure's paths (`/openai/v1/...`, a base
path under `/openai` being how a gateway in front of Azure OpenAI is known); Azure's own host name cannot be
reached offline, so where the host name is what says "Azure", the in-process transport stands where Azure
OpenAI would be."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from openai import AsyncAzureOpenAI, OpenAI

from sim.adapters.settings import Settings
from sim.cassette.journal import Journal
from sim.cassette.recording_proxy import RecordingProxy, proxy_host
from sim.cassette.upstream import UpstreamUrl
from sim.core.errors import ConfigurationError
from sim.host.app import Host
from sim.scenario import load_scenario
from sim.scenario.answerer import scenario_host
from tests.commands import in_a_process
from tests.host.processes import ROOT, sim_process
from tests.host.test_azure import DEPLOYMENT, FINAL, LOOPS, SCENARIO, async_responses_loop
from tests.served import Served, serving

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses POSIX signals")

KEY = "3f9c2b7e41d84a0c9e5b6d7f8a1c2e3d"
"""Shaped like an Azure OpenAI key (32 hex digits): nothing but sim's knowing it tells it from text."""
ENTRA = (
    "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJodHRwczovL2NvZ25pdGl2ZXNlcnZpY2VzIn0.U2lnbmVkQnlFbnRyYQ"
)
"""Shaped like a Microsoft Entra ID access token (a JWT)."""
CLIENT_TOKEN = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJjbGllbnQifQ.Q2xpZW50T3duVG9rZW4"
"""The client's own Entra token, sent to the proxy: never forwarded, never written."""
ECHO = ROOT / "scenarios" / "echo-42.yaml"


class Witnessed:
    """A host whose every request's headers and query are kept (what the upstream was sent)."""

    def __init__(self, host: Host[Any]) -> None:
        self.host = host
        self.seen: list[tuple[str, str, dict[str, str]]] = []

    async def app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {name.decode().lower(): value.decode() for name, value in scope["headers"]}
            self.seen.append((scope["path"], scope["query_string"].decode(), headers))
        await self.host.app(scope, receive, send)


@pytest.fixture(scope="module")
def upstream() -> Iterator[Served]:
    yield from serving("")


def playing(upstream: Served, scenario: Path) -> Witnessed:
    witnessed = Witnessed(scenario_host(load_scenario(scenario)))
    upstream.host = witnessed  # type: ignore[assignment]  # served through its `app`, as a host is
    return witnessed


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "azure-loop.yaml"
    path.write_text(SCENARIO)
    return path


def assert_never_written(folder: Path, *secrets: str, printed: str = "") -> None:
    """No file below `folder` (the cassette, journals, reports) nor what was printed holds any secret."""
    files = [path for path in folder.rglob("*") if path.is_file()]
    assert files, "the command wrote nothing to search"
    for path in files:
        data = path.read_bytes()
        for secret in secrets:
            assert secret.encode() not in data, f"{secret[:6]}... written in {path.name}"
    for secret in secrets:
        assert secret not in printed


def proxied(tmp_path: Path, upstream: Served, key: str, api: str) -> Path:
    """An OpenAI client's tool loop through `sim proxy --upstream {upstream}/openai/v1` (Azure's v1 API
    behind a gateway) with OPENAI_API_KEY=`key`; the cassette it wrote."""
    cassette = tmp_path / "out" / "proxied.yaml"
    cassette.parent.mkdir()
    command = (
        "proxy",
        str(cassette),
        "--upstream",
        f"{upstream.url}/openai/v1",
        "--port",
        "0",
        "--grace",
        "0",
    )
    environment = {**os.environ, "OPENAI_API_KEY": key}
    with sim_process(*command, environment=environment, graceful=True) as (process, base_url):
        client = OpenAI(base_url=base_url, api_key="sk-client-own-key-0123456789", max_retries=0)
        assert LOOPS[api](client, DEPLOYMENT, False) == FINAL
        client.close()
    assert process.stdout is not None and process.stderr is not None
    assert_never_written(cassette.parent, key, "sk-client-own-key-0123456789", printed=process.stderr.read())
    return cassette


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_sim_proxy_sends_a_key_as_api_key_to_an_azure_upstream_and_never_writes_it(
    api: str, upstream: Served, scenario: Path, tmp_path: Path
) -> None:
    witnessed = playing(upstream, scenario)
    cassette = proxied(tmp_path, upstream, KEY, api)
    assert witnessed.seen and all(path.startswith("/openai/v1/") for path, _, _ in witnessed.seen)
    for _, _, headers in witnessed.seen:
        assert headers["api-key"] == KEY and "authorization" not in headers  # as AzureOpenAI sends a key
    assert f"{upstream.url}/openai/v1/" in cassette.read_text()


def test_sim_proxy_sends_an_entra_token_as_the_bearer_token_alone_and_never_writes_it(
    upstream: Served, scenario: Path, tmp_path: Path
) -> None:
    witnessed = playing(upstream, scenario)
    proxied(tmp_path, upstream, ENTRA, "chat")
    assert len(witnessed.seen) == 2
    for _, _, headers in witnessed.seen:
        assert headers["authorization"] == f"Bearer {ENTRA}" and "api-key" not in headers
    assert_never_written(tmp_path / "out", ENTRA.split(".")[2])  # not even the token's signature


def test_an_azure_client_with_its_own_entra_token_through_the_proxy_to_azures_host(
    scenario: Path, tmp_path: Path
) -> None:
    """`AsyncAzureOpenAI` with a token provider at the proxy, `--upstream https://RES.openai.azure.com`:
    the request goes to Azure's path with its `api-version`, with the proxy's key in `api-key` and the
    client's token dropped. (Azure's host: the in-process transport stands where it would be.)"""
    azure = scenario_host(load_scenario(scenario))
    seen: list[httpx2.Request] = []

    async def run() -> str:
        async def to_azure(request: httpx2.Request) -> httpx2.Response:
            seen.append(request)
            inner = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=azure.app))
            async with inner:
                answered = await inner.send(request)
                return httpx2.Response(
                    answered.status_code, headers=answered.headers, content=answered.content
                )

        cassette = tmp_path / "out" / "azure.yaml"
        cassette.parent.mkdir()
        upstream = UpstreamUrl.parse("https://res.openai.azure.com")
        proxy = RecordingProxy(upstream, {"authorization": f"Bearer {KEY}"}, Journal(cassette, (KEY,)))
        proxy.client = httpx2.AsyncClient(transport=httpx2.MockTransport(to_azure))
        http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=proxy_host(proxy).app))

        async def token() -> str:
            return CLIENT_TOKEN

        client = AsyncAzureOpenAI(
            azure_endpoint="http://proxy.test",
            azure_ad_token_provider=token,
            api_version="2025-03-01-preview",
            http_client=http,
            max_retries=0,
        )
        async with client:
            said = await async_responses_loop(client, DEPLOYMENT, True)
        assert proxy.finish() > 0
        return said

    assert asyncio.run(run()) == FINAL
    assert seen[0].url.path == "/openai/responses"
    assert all(request.url.path.startswith("/openai/responses") for request in seen)
    for request in seen:
        assert request.url.host == "res.openai.azure.com"
        assert request.url.params["api-version"] == "2025-03-01-preview"
        assert request.headers["api-key"] == KEY and CLIENT_TOKEN not in str(request.headers)
    assert_never_written(tmp_path / "out", KEY, CLIENT_TOKEN)


def recorded(tmp_path: Path, base_url: str, key: str) -> Any:
    """`sim record` against `base_url` with OPENAI_API_KEY=`key` (a real process)."""
    environment = {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": key, "OPENAI_MODEL": DEPLOYMENT}
    cassette = tmp_path / "out" / "recorded.yaml"
    cassette.parent.mkdir(exist_ok=True)
    prompt = "Run `echo 42` and tell me the result."
    done = in_a_process(
        "record",
        cassette,
        "--prompt",
        prompt,
        "--approve",
        "always",
        "--workspace",
        tmp_path,
        env=environment,
    )
    return done, cassette


@pytest.mark.parametrize(("key", "api_key_sent"), [(KEY, True), (ENTRA, False)], ids=["key", "entra"])
def test_sim_record_against_azure_sends_api_key_and_api_version_and_never_writes_the_key(
    key: str, api_key_sent: bool, upstream: Served, tmp_path: Path
) -> None:
    witnessed = playing(upstream, ECHO)
    done, cassette = recorded(tmp_path, f"{upstream.url}/openai/v1?api-version=preview", key)
    assert done.returncode == 0, done.stderr
    assert [(path, query) for path, query, _ in witnessed.seen] == [
        ("/openai/v1/chat/completions", "api-version=preview")
    ] * 2
    for _, _, headers in witnessed.seen:
        assert headers["authorization"] == f"Bearer {key}"
        assert headers.get("api-key") == (key if api_key_sent else None)
    assert "/openai/v1/chat/completions?api-version=preview" in cassette.read_text()
    assert_never_written(tmp_path / "out", key, printed=done.stdout + done.stderr)


def test_sim_record_refuses_a_credential_in_the_base_urls_query_in_one_line(tmp_path: Path) -> None:
    done, cassette = recorded(tmp_path, f"http://127.0.0.1:9/openai/v1?api-version=1&key={KEY}", KEY)
    assert done.returncode == 2 and not cassette.exists()
    assert "may hold only api-version" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert KEY not in done.stdout + done.stderr


def test_sim_drift_sends_api_key_to_an_azure_upstream_and_never_writes_it(
    upstream: Served, tmp_path: Path
) -> None:
    witnessed = playing(upstream, ECHO)
    out = tmp_path / "out"
    out.mkdir()
    done = in_a_process(
        "drift",
        ROOT / "cassettes" / "echo-42.yaml",
        "--upstream",
        f"{upstream.url}/openai/v1?api-version=preview",
        "--rerecord",
        out / "fresh",
        "--report",
        out / "drift.html",
        env={"OPENAI_API_KEY": KEY},
    )
    assert done.returncode in (0, 1), done.stderr
    assert witnessed.seen
    for path, query, headers in witnessed.seen:
        assert path == "/openai/v1/chat/completions" and query == "api-version=preview"
        assert headers["api-key"] == KEY and "authorization" not in headers
    assert_never_written(out, KEY, printed=done.stdout + done.stderr)


@pytest.mark.parametrize(
    ("url", "azure"),
    [
        ("https://res.openai.azure.com", True),
        ("https://res.cognitiveservices.azure.com/openai/v1", True),
        ("https://gateway.example.com/openai/v1", True),
        ("https://gateway.example.com/openai", True),
        ("https://api.openai.com/v1", False),
        ("https://openai.azure.com.example.com/v1", False),
        ("https://example.com/openai-compatible/v1", False),
    ],
)
def test_which_upstreams_are_azure(url: str, azure: bool) -> None:
    assert UpstreamUrl.parse(url).azure is azure
    sent = UpstreamUrl.parse(url).credentials({"authorization": f"Bearer {KEY}"})
    assert sent == ({"api-key": KEY} if azure else {"authorization": f"Bearer {KEY}"})
    entra = UpstreamUrl.parse(url).credentials({"authorization": f"Bearer {ENTRA}"})
    assert entra == {"authorization": f"Bearer {ENTRA}"}


def test_settings_of_a_live_run_at_azure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """OPENAI_BASE_URL's `?api-version=` is taken off the URL and sent with every request; the key goes in
    `api-key` to Azure (a token does not), and the query is not shown."""
    monkeypatch.chdir(tmp_path)  # no .env
    monkeypatch.setenv("OPENAI_MODEL", DEPLOYMENT)
    monkeypatch.setenv("OPENAI_BASE_URL", "https://res.openai.azure.com/openai/v1/?api-version=preview")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    settings = Settings.load()
    assert settings.base_url == "https://res.openai.azure.com/openai/v1/"
    assert settings.query == (("api-version", "preview"),) and settings.headers == {"api-key": KEY}
    monkeypatch.setenv("OPENAI_API_KEY", ENTRA)
    assert Settings.load().headers == {}
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1")
    assert Settings.load().headers == {} and Settings.load().query == ()
    monkeypatch.setenv("OPENAI_BASE_URL", f"https://res.openai.azure.com/openai/v1?sig={KEY}")
    with pytest.raises(ConfigurationError, match="may hold only api-version") as refused:
        Settings.load()
    assert KEY not in str(refused.value)


def test_a_command_under_the_proxy_holds_no_credential_of_the_users_and_azure_openai_sends_the_placeholder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`AzureOpenAI()` takes AZURE_OPENAI_AD_TOKEN before AZURE_OPENAI_API_KEY: a user's Entra ID token left
    in the proxied command's environment would be what it holds and sends, not the placeholder key; nor is
    an admin key (OPENAI_ADMIN_KEY, which both SDKs read) the command's to hold."""
    from openai import AzureOpenAI

    from sim.cli.serving import PLACEHOLDER_KEY, proxied_environment

    users = {"AZURE_OPENAI_AD_TOKEN": ENTRA, "OPENAI_ADMIN_KEY": "sk-admin-users-own-0123456789",
             "AZURE_OPENAI_API_KEY": KEY, "OPENAI_API_KEY": KEY,
             "OPENAI_API_VERSION": "2024-10-21"}  # fmt: skip
    environment = proxied_environment(users, "http://127.0.0.1:8123/v1")
    assert not {"AZURE_OPENAI_AD_TOKEN", "OPENAI_ADMIN_KEY"} & set(environment)
    assert KEY not in environment.values() and ENTRA not in environment.values()
    for name in (*users, "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    seen: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={"object": "list", "data": []})

    with AzureOpenAI(http_client=httpx2.Client(transport=httpx2.MockTransport(answer))) as client:
        client.models.list()
    (request,) = seen
    assert str(request.url) == "http://127.0.0.1:8123/openai/models?api-version=2024-10-21"
    assert request.headers["api-key"] == PLACEHOLDER_KEY and "authorization" not in request.headers
