"""Azure OpenAI clients, unmodified, against sim: `AzureOpenAI` and `AsyncAzureOpenAI` (a key in `api-key`,
an Entra ID token provider, a client bound to one deployment) and an `OpenAI` client at `/openai/v1/`, each
running a tool loop over Chat Completions and the Responses API, streamed and not, against a scenario over
a real 127.0.0.1 server and over the in-process transport; and a cassette recorded through `sim proxy` at
OpenAI's URL served by `sim serve` to an Azure client, and one recorded from an Azure client served to an
OpenAI client (real subprocesses)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
from openai import AsyncAzureOpenAI, AsyncOpenAI, AzureOpenAI, OpenAI

from sim.host.app import Host
from sim.scenario import load_scenario
from sim.scenario.answerer import ScriptAnswerer, scenario_host
from sim.wire.azure_paths import azure_environment, below_base, served_as
from tests.host.processes import SIM, sim_process
from tests.host.processes import served as sim_serve
from tests.served import Served, serving

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses POSIX signals")

DEPLOYMENT = "my-gpt-deployment"
VERSION = "2024-10-21"
KEY = "azure-key-0123456789abcdef0123456789ab"
ENTRA_TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJjb2duaXRpdmVzZXJ2aWNlcyJ9.c2lnbmF0dXJl"
PROMPT = "Run `echo 42` and tell me the result."
FINAL = "The command printed 42."

SCENARIO = f"""\
name: azure-loop
prompt: "{PROMPT}"
tools: [shell]
replies:
  - tool_calls:
      - {{id: call_1, name: shell, arguments: {{command: echo 42}}}}
  - content: {FINAL}
    expect_request:
      last_message: {{role: tool, tool_call_id: call_1, content: "42"}}
"""

SHELL = {
    "name": "shell",
    "description": "Run a shell command.",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}
CHAT_TOOLS: Any = [{"type": "function", "function": SHELL}]
RESPONSES_TOOLS: Any = [{"type": "function", **SHELL}]


@pytest.fixture(scope="module")
def server() -> Iterator[Served]:
    """One real server for the module, at the origin (clients add `/openai/...` themselves)."""
    yield from serving("")


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "azure-loop.yaml"
    path.write_text(SCENARIO)
    return path


def played(path: Path) -> Host[ScriptAnswerer]:
    return scenario_host(load_scenario(path))


def run_shell(arguments: str) -> str:
    assert json.loads(arguments) == {"command": "echo 42"}
    return "42"


# The loops: what an agent written against the SDK does, sync and async, over each API.


def answered(messages: list[Any], message: Any) -> str | None:
    """The answer when the Chat `message` makes no calls; else None, its calls and their results appended."""
    calls = message.tool_calls or []
    if not calls:
        return str(message.content)
    messages.append({"role": "assistant", "content": message.content, "tool_calls": calls_sent(calls)})
    messages += [
        {"role": "tool", "tool_call_id": call.id, "content": run_shell(call.function.arguments)}
        for call in calls
    ]
    return None


def chat_loop(client: OpenAI, model: str, stream: bool) -> str:
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    while True:
        if stream:
            with client.chat.completions.stream(model=model, messages=messages, tools=CHAT_TOOLS) as events:
                message: Any = events.get_final_completion().choices[0].message
        else:
            message = client.chat.completions.create(model=model, messages=messages, tools=CHAT_TOOLS)
            message = message.choices[0].message
        if (answer := answered(messages, message)) is not None:
            return answer


async def async_chat_loop(client: AsyncOpenAI, model: str, stream: bool) -> str:
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    while True:
        if stream:
            manager = client.chat.completions.stream(model=model, messages=messages, tools=CHAT_TOOLS)
            async with manager as events:
                message: Any = (await events.get_final_completion()).choices[0].message
        else:
            reply = await client.chat.completions.create(model=model, messages=messages, tools=CHAT_TOOLS)
            message = reply.choices[0].message
        if (answer := answered(messages, message)) is not None:
            return answer


def calls_sent(calls: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.function.name, "arguments": c.function.arguments},
        }
        for c in calls
    ]


def responses_loop(client: OpenAI, model: str, stream: bool) -> str:
    items: list[Any] = [{"role": "user", "content": PROMPT}]
    while True:
        if stream:
            with client.responses.stream(model=model, input=items, tools=RESPONSES_TOOLS) as events:
                response: Any = events.get_final_response()
        else:
            response = client.responses.create(model=model, input=items, tools=RESPONSES_TOOLS)
        assert client.responses.retrieve(response.id).id == response.id  # the stored response, by its id
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            assert [item.id for item in client.responses.input_items.list(response.id)]
            return str(response.output_text)
        items += [call_sent(call) for call in calls]
        items += [output_sent(call) for call in calls]


async def async_responses_loop(client: AsyncOpenAI, model: str, stream: bool) -> str:
    items: list[Any] = [{"role": "user", "content": PROMPT}]
    while True:
        if stream:
            async with client.responses.stream(model=model, input=items, tools=RESPONSES_TOOLS) as events:
                response: Any = await events.get_final_response()
        else:
            response = await client.responses.create(model=model, input=items, tools=RESPONSES_TOOLS)
        assert (await client.responses.retrieve(response.id)).id == response.id
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            assert [item.id async for item in client.responses.input_items.list(response.id)]
            return str(response.output_text)
        items += [call_sent(call) for call in calls]
        items += [output_sent(call) for call in calls]


def call_sent(call: Any) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments}


def output_sent(call: Any) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call.call_id, "output": run_shell(call.arguments)}


LOOPS = {"chat": chat_loop, "responses": responses_loop}
ASYNC_LOOPS = {"chat": async_chat_loop, "responses": async_responses_loop}


# The clients, as their users build them.


def azure_client(origin: str, how: str, http: httpx2.Client | None = None) -> OpenAI:
    """`how`: `key` (AzureOpenAI with api_key), `entra` (an Entra ID token provider), `deployment` (bound
    to one deployment), `v1` (an OpenAI client at `/openai/v1/`)."""
    if how == "v1":
        return OpenAI(base_url=f"{origin}/openai/v1/", api_key=KEY, max_retries=0, http_client=http)
    options: dict[str, Any] = {"api_key": KEY}
    if how == "entra":
        options = {"azure_ad_token_provider": lambda: ENTRA_TOKEN}
    elif how == "deployment":
        options["azure_deployment"] = DEPLOYMENT
    return AzureOpenAI(azure_endpoint=origin, api_version=VERSION, max_retries=0, http_client=http, **options)


def async_azure_client(origin: str, how: str, http: httpx2.AsyncClient | None = None) -> AsyncOpenAI:
    """As `azure_client`, async."""
    if how == "v1":
        return AsyncOpenAI(base_url=f"{origin}/openai/v1/", api_key=KEY, max_retries=0, http_client=http)
    options: dict[str, Any] = {"api_key": KEY}
    if how == "entra":

        async def token() -> str:
            return ENTRA_TOKEN

        options = {"azure_ad_token_provider": token}
    elif how == "deployment":
        options["azure_deployment"] = DEPLOYMENT
    return AsyncAzureOpenAI(
        azure_endpoint=origin, api_version=VERSION, max_retries=0, http_client=http, **options
    )


def assert_played_whole(host: Host[ScriptAnswerer]) -> None:
    answerer = host.answerer
    assert answerer.problems == [] and answerer.consumed, [problem.message for problem in answerer.problems]


CASES = [
    (api, stream, how)
    for api in ("chat", "responses")
    for stream in (False, True)
    for how in ("key", "entra", "deployment", "v1")
]


@pytest.mark.parametrize(("api", "stream", "how"), CASES)
def test_an_azure_client_runs_a_tool_loop_against_a_scenario_over_a_real_server(
    api: str, stream: bool, how: str, server: Served, scenario: Path
) -> None:
    server.host = host = played(scenario)
    with azure_client(server.url, how) as client:
        assert LOOPS[api](client, DEPLOYMENT, stream) == FINAL
    assert_played_whole(host)
    assert host.received_by[api] == {"chat": 2, "responses": 5}[api]  # 2 asked, 2 retrieved, 1 listed


@pytest.mark.parametrize(("api", "stream", "how"), CASES)
def test_an_async_azure_client_runs_a_tool_loop_against_a_scenario_over_a_real_server(
    api: str, stream: bool, how: str, server: Served, scenario: Path
) -> None:
    server.host = host = played(scenario)

    async def run() -> str:
        async with async_azure_client(server.url, how) as client:
            return await ASYNC_LOOPS[api](client, DEPLOYMENT, stream)

    assert asyncio.run(run()) == FINAL
    assert_played_whole(host)


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("how", ["key", "v1"])
def test_azure_clients_run_the_loop_over_the_in_process_transport(api: str, how: str, scenario: Path) -> None:
    """The host's ASGI app where the network would be (an async client: the app is async)."""
    host = played(scenario)

    async def run() -> str:
        transport = httpx2.ASGITransport(app=host.app)
        async with async_azure_client("http://azure.test", how, httpx2.AsyncClient(transport=transport)) as c:
            return await ASYNC_LOOPS[api](c, DEPLOYMENT, api == "responses")

    assert asyncio.run(run()) == FINAL
    assert_played_whole(host)


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_an_azure_client_whose_base_url_is_sims_openai_base_url_runs_the_loop(
    api: str, server: Served, scenario: Path
) -> None:
    """The Node SDK's `new AzureOpenAI()` takes OPENAI_BASE_URL (sim's `.../v1`) before
    AZURE_OPENAI_ENDPOINT, and both SDKs put a deployment's path after a base URL without one:
    `/v1/deployments/{name}/chat/completions?api-version=` (an `AzureOpenAI(base_url=...)` sends the same)."""
    server.host = host = played(scenario)
    with AzureOpenAI(base_url=f"{server.url}/v1", api_key=KEY, api_version=VERSION, max_retries=0) as client:
        assert LOOPS[api](client, DEPLOYMENT, False) == FINAL
    assert_played_whole(host)


def test_the_models_list_answers_at_azures_paths(server: Served, scenario: Path) -> None:
    server.host = played(scenario)
    for how in ("key", "v1"):
        with azure_client(server.url, how) as client:
            assert [model.id for model in client.models.list()] == ["sim-model"]


def get(url: str, *, method: str = "GET", body: bytes | None = None) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=body, method=method, headers={"api-key": KEY})
    request.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


BODY = json.dumps({"model": DEPLOYMENT, "messages": [{"role": "user", "content": PROMPT}]}).encode()


@pytest.mark.parametrize(
    "path",
    [
        f"/openai/deployments/{DEPLOYMENT}/embeddings?api-version={VERSION}",  # not simulated
        f"/openai/deployments/{DEPLOYMENT}/responses?api-version={VERSION}",  # not an Azure path
        f"/openai/chat/completions?api-version={VERSION}",  # chat is a deployment's
        "/openai/deployments//chat/completions?api-version=x",
        f"/openai/deployments/a/b/chat/completions?api-version={VERSION}",
        f"/openai/v1/nothing/here?api-version={VERSION}",
    ],
)
def test_paths_azure_does_not_answer_are_the_apis_404_and_reach_no_script(
    path: str, server: Served, scenario: Path
) -> None:
    server.host = host = played(scenario)
    status, body = get(server.url + path, method="POST", body=BODY)
    assert status == 404, body
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["code"] == "not_found"
    assert "api-version" in error["message"]
    assert host.received == 0 and host.answerer.problems == []


@pytest.mark.parametrize(
    "path",
    [
        f"/openai/deployments/{DEPLOYMENT}/chat/completions",
        f"/v1/deployments/{DEPLOYMENT}/chat/completions",
        "/openai/responses",
        "/openai/responses?api-version=",  # empty: none
        "/openai/models",
    ],
)
def test_a_path_without_api_version_is_azures_own_404_and_reaches_no_script(
    path: str, server: Served, scenario: Path
) -> None:
    """Azure OpenAI answers a path that needs `api-version` and lacks it with a 404 in its own shape,
    `{"error": {"code": "404", "message": "Resource not found"}}` (no `type`, no `param`)."""
    server.host = host = played(scenario)
    status, body = get(server.url + path, method="GET" if path.endswith("models") else "POST", body=BODY)
    assert status == 404, body
    error = body["error"]
    assert set(error) == {"code", "message"} and error["code"] == "404", error
    assert error["message"].startswith("Resource not found") and "api-version" in error["message"]
    assert host.received == 0 and host.answerer.problems == []


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", f"/openai/v1/chat/completions?api-version={VERSION}"),
        ("POST", "/openai/v1/responses?api-version=2025-04-01-preview"),
        ("GET", "/openai/v1/models?api-version=2024-02-01"),
        ("GET", "/openai/v1/responses/resp_1?api-version=preview&api-version=2024-10-21"),
    ],
)
def test_azures_v1_api_refuses_an_api_version_it_does_not_take(
    method: str, path: str, server: Served, scenario: Path
) -> None:
    """Azure OpenAI's v1 API takes `api-version` `v1` or `preview` (or none); a dated one, as the paths
    outside it take, is answered 400 `API version not supported`, in Azure's own shape."""
    server.host = host = played(scenario)
    status, body = get(server.url + path, method=method, body=BODY if method == "POST" else None)
    assert (status, body) == (400, {"error": {"code": "BadRequest", "message": "API version not supported"}})
    assert host.received == 0 and host.answerer.problems == []


@pytest.mark.parametrize("version", ["v1", "preview", ""])
def test_azures_v1_api_takes_the_versions_it_names(version: str, server: Served, scenario: Path) -> None:
    server.host = host = played(scenario)
    query = {"api-version": version} if version else None
    base_url = f"{server.url}/openai/v1/"
    with OpenAI(base_url=base_url, api_key=KEY, max_retries=0, default_query=query) as client:
        assert chat_loop(client, DEPLOYMENT, False) == FINAL
    assert_played_whole(host)


def test_a_hostile_deployment_name_is_only_a_name(server: Served, scenario: Path) -> None:
    """A deployment name with escapes, dots or a huge length is a name like any: the script answers it;
    one that decodes to more than one segment is no deployment path (the API's 404)."""
    for name, status in (("%2e%2e", 200), ("%1b%5b31m" + "x" * 4000, 200), ("..%2fadmin", 404)):
        server.host = played(scenario)
        url = f"{server.url}/openai/deployments/{name}/chat/completions?api-version={VERSION}"
        answered, body = get(url, method="POST", body=BODY)
        assert answered == status, body
        assert "choices" in body if status == 200 else body["error"]["code"] == "not_found"


# Cassettes: recorded at one host's URL, served to the other's client.


def record_through_proxy(cassette: Path, upstream: str, loop: Any) -> None:
    """`sim proxy CASSETTE --upstream UPSTREAM` with `loop(proxy_base_url)` run through it, then stopped
    gracefully so that it writes the cassette."""
    key = {"OPENAI_API_KEY": "sk-proxy-key-0123456789abcdef"}
    proxy = ("proxy", str(cassette), "--upstream", upstream, "--port", "0", "--grace", "0")
    with sim_process(*proxy, environment={**os.environ, **key}, graceful=True) as (_, base_url):
        assert loop(base_url) == FINAL
    assert cassette.exists()


def serve_once(cassette: Path, loop: Any) -> None:
    """`sim serve CASSETTE --once` with `loop(base_url)` against it: the verdict passes (all played)."""
    with sim_serve(cassette, "--once", "--grace", "0") as (process, base_url):
        assert loop(base_url) == FINAL
        assert process.wait(timeout=20) == 0, process.stderr.read() if process.stderr else ""


def origin_of(base_url: str) -> str:
    """The scheme, host and port of a base URL `sim serve` or `sim proxy` printed."""
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}"


def as_openai(api: str, base_url: str) -> str:
    """The tool loop over `api` run by an `OpenAI` client at `base_url`."""
    with OpenAI(base_url=base_url, api_key="sk-client-0123456789", max_retries=0) as client:
        return LOOPS[api](client, DEPLOYMENT, False)


def as_azure(api: str, base_url: str) -> str:
    """The tool loop over `api` run by an `AzureOpenAI` client at the origin of `base_url`."""
    with azure_client(origin_of(base_url), "key") as client:
        return LOOPS[api](client, DEPLOYMENT, False)


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_cassette_recorded_at_openais_url_is_served_to_an_azure_client(
    api: str, server: Served, scenario: Path, tmp_path: Path
) -> None:
    server.host = played(scenario)
    cassette = tmp_path / "openai.yaml"
    record_through_proxy(cassette, f"{server.url}/v1", partial(as_openai, api))
    assert f"{server.url}/v1/{'chat/completions' if api == 'chat' else 'responses'}" in cassette.read_text()
    serve_once(cassette, partial(as_azure, api))


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_cassette_recorded_from_an_azure_client_is_served_to_an_openai_client(
    api: str, server: Served, scenario: Path, tmp_path: Path
) -> None:
    server.host = played(scenario)
    cassette = tmp_path / "azure.yaml"
    record_through_proxy(cassette, server.url, partial(as_azure, api))
    text = cassette.read_text()
    assert f"api-version={VERSION}" in text and KEY not in text
    serve_once(cassette, lambda base_url: as_openai(api, origin_of(base_url) + "/v1"))


def test_sim_serve_scenario_answers_an_azure_client_in_a_real_process(scenario: Path) -> None:
    """`sim serve SCENARIO --once` as its user starts it: the Azure client's two requests end the run."""
    with sim_serve(scenario, "--once", "--grace", "0") as (process, base_url):
        with azure_client(origin_of(base_url), "key") as client:
            assert chat_loop(client, DEPLOYMENT, True) == FINAL
        assert process.wait(timeout=20) == 0
        assert process.stderr is not None and "served 2 requests (chat 2)" in process.stderr.read()


PROGRAM = f"""\
import sys
from openai import AzureOpenAI

sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from tests.host.test_azure import DEPLOYMENT, chat_loop

client = AzureOpenAI(api_version="{VERSION}", max_retries=0)  # endpoint and key from the environment
print(chat_loop(client, DEPLOYMENT, False))
"""


def test_an_azure_program_built_from_its_environment_runs_under_sim_serve_and_sim_proxy(
    server: Served, scenario: Path, tmp_path: Path
) -> None:
    """`AzureOpenAI()` reads AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_API_KEY: `sim serve FILE -- COMMAND`
    and `sim proxy CASSETTE --upstream URL -- COMMAND` set them as they set OPENAI_BASE_URL (the user's own
    Azure key kept from the proxied program, as OPENAI_API_KEY is)."""
    program = tmp_path / "azure_app.py"
    program.write_text(PROGRAM)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AZURE_OPENAI")}
    served = subprocess.run(
        [*SIM, "serve", scenario, "--port", "0", "--once", "--grace", "0", "--", sys.executable, program],
        env=environment, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert served.returncode == 0, served.stderr
    assert served.stdout.strip() == FINAL
    server.host = host = played(scenario)
    cassette = tmp_path / "proxied.yaml"
    secret = "azure-users-own-key-0123456789abcdef"
    run = [sys.executable, str(program)]
    proxied = subprocess.run(
        [*SIM, "proxy", cassette, "--upstream", server.url, "--port", "0", "--grace", "0", "--", *run],
        env={**environment, "OPENAI_API_KEY": "sk-proxy-key-0123456789", "AZURE_OPENAI_API_KEY": secret},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proxied.returncode == 0, proxied.stderr
    assert proxied.stdout.strip() == FINAL
    assert_played_whole(host)
    assert f"/openai/deployments/{DEPLOYMENT}/chat/completions?api-version={VERSION}" in cassette.read_text()
    assert secret not in cassette.read_text()


REAL_AZURE = (
    Path(__file__).resolve().parents[2].parent
    / "shared"
    / "real-cassettes"
    / "openllmetry__azure__chat_content_filtering__content_filter_finish.yaml"
)


@pytest.mark.skipif(
    not REAL_AZURE.exists(), reason="the real recordings (../shared/real-cassettes/) are absent"
)
def test_another_projects_azure_recording_answers_openai_and_azure_clients_alike(tmp_path: Path) -> None:
    """Four identical requests recorded at an Azure deployment's URL: two asked by an OpenAI client at
    `/v1`, two by an `AzureOpenAI` client, each answered as recorded (one a content filter's finish)."""
    messages: Any = [{"role": "user", "content": "Tell me a joke about opentelemetry"}]
    with sim_serve(REAL_AZURE, "--once", "--grace", "0") as (process, base_url):
        origin = origin_of(base_url)
        clients = [
            OpenAI(base_url=f"{origin}/v1", api_key="sk-any-0123456789", max_retries=0),
            AzureOpenAI(azure_endpoint=origin, api_key=KEY, api_version="2024-02-01", max_retries=0),
        ]
        ended = []
        for client in clients * 2:
            reply = client.chat.completions.create(model="openllmetry-testing", messages=messages)
            ended.append(reply.choices[0].finish_reason)
        for client in clients:
            client.close()
        assert process.wait(timeout=20) == 0  # every recorded interaction played
    assert "content_filter" in ended


@pytest.mark.parametrize(
    ("path", "served", "versioned"),
    [
        ("/openai/deployments/d/chat/completions", "/v1/chat/completions", True),
        ("/v1/deployments/d/chat/completions", "/v1/chat/completions", True),  # below OPENAI_BASE_URL
        ("/v1/deployments/d/embeddings", None, None),
        ("/openai/responses", "/v1/responses", True),
        ("/openai/responses/resp_1/input_items", "/v1/responses/resp_1/input_items", True),
        ("/openai/models", "/v1/models", True),
        ("/openai/v1/conversations/c/items", "/v1/conversations/c/items", False),
        ("/openai/deployments/d/embeddings", None, None),
        ("/openai/chat/completions", None, None),
        ("/openai", None, None),
        ("/v1/chat/completions", None, None),
    ],
)
def test_which_openai_path_an_azure_path_stands_for(path: str, served: str | None, versioned: bool) -> None:
    found = served_as(path)
    assert (found.path, found.versioned) == (served, versioned) if found else served is None


@pytest.mark.parametrize(
    ("path", "below"),
    [
        ("/v1/chat/completions", "/chat/completions"),
        ("/chat/completions/", "/chat/completions"),
        ("/openai/deployments/gpt-4o/chat/completions", "/chat/completions"),
        ("/v1/deployments/gpt-4o/chat/completions", "/chat/completions"),
        ("/openai/v1/responses/resp_1", "/responses/resp_1"),
        ("/openai/responses", "/responses"),
        ("/proxy/base/v1/chat/completions", "/proxy/base/v1/chat/completions"),  # an unknown base: as it is
    ],
)
def test_a_recorded_path_below_its_base(path: str, below: str) -> None:
    assert below_base(path) == below


@pytest.mark.parametrize(
    ("base_url", "endpoint"),
    [
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000"),
        ("http://127.0.0.1:8000/run-7/v1", "http://127.0.0.1:8000/run-7"),  # a prefix the server routes by
        ("http://127.0.0.1:8000/openai/deployments/x", "http://127.0.0.1:8000"),  # an Azure recording's base
        ("http://127.0.0.1:8000/openai/v1/", "http://127.0.0.1:8000"),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
    ],
)
def test_where_azure_clients_are_pointed_beside_openai_base_url(base_url: str, endpoint: str) -> None:
    assert azure_environment(base_url) == {"AZURE_OPENAI_ENDPOINT": endpoint}


def module_client_under(environment: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> OpenAI:
    """The Python SDK's module-level client (`openai.chat.completions.create(...)`) as a program started in
    `environment` gets it: what `import openai` reads from the environment, then its choice of client."""
    import openai

    for name in os.environ:
        if name.startswith(("OPENAI_", "AZURE_OPENAI_")):
            monkeypatch.delenv(name)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(openai, "api_type", os.environ.get("OPENAI_API_TYPE"))
    monkeypatch.setattr(openai, "api_version", os.environ.get("OPENAI_API_VERSION"))
    monkeypatch.setattr(openai, "azure_endpoint", os.environ.get("AZURE_OPENAI_ENDPOINT"))
    monkeypatch.setattr(openai, "_client", None)
    return openai._load_client()


@pytest.mark.parametrize("runner", ["serve", "proxy", "fuzz"])
@pytest.mark.parametrize("api_type", [None, "azure"])
def test_the_module_level_client_starts_in_the_environment_a_command_is_given(
    runner: str, api_type: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given OPENAI_API_KEY beside AZURE_OPENAI_API_KEY and AZURE_OPENAI_ENDPOINT, the module-level client
    refuses to choose (`AmbiguousModuleClientUsageError`) unless OPENAI_API_TYPE names one: the commands
    `sim serve`, `sim proxy` and `sim fuzz` run get `openai` unless the user named one."""
    from sim.cli.serving import _Beside, proxied_environment
    from sim.fuzz.program import program_environment, run_environment

    url = "http://127.0.0.1:8123/v1"
    users = {"PATH": os.environ["PATH"], "OPENAI_API_VERSION": VERSION}
    if api_type:
        users["OPENAI_API_TYPE"] = api_type
    if runner == "serve":
        monkeypatch.setattr(os, "environ", users)
        environment = _Beside(["program"], None).environment(url)
        monkeypatch.undo()
    elif runner == "proxy":
        environment = proxied_environment(users, url)
    else:
        environment = {**program_environment(users), **run_environment(url)}
    client = module_client_under(environment, monkeypatch)
    assert isinstance(client, AzureOpenAI) == (api_type == "azure")
    assert str(client.base_url) == ("http://127.0.0.1:8123/openai/" if api_type else f"{url}/")
