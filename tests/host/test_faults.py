"""Network faults as the wire shows them, met by the official SDK and an openai-agents loop: over a real
server on 127.0.0.1 (started once for the module) and over the in-process transport, a dropped or reset
connection is retried by the SDK itself (`max_retries`, `x-stainless-retry-count`) and finally raised as
`openai.APIConnectionError`, a stall past the client's timeout as `APITimeoutError`, and a stream dropped
midway raises while it is iterated."""

from __future__ import annotations

import asyncio
import contextlib
import re
import textwrap
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.models.openai_responses import OpenAIResponsesModel

from sim.adapters.openai_chat import OpenAIChatModel
from sim.core.errors import ModelConnectionError
from sim.core.loop import AgentRunner
from sim.host.answers import Answer, Received
from sim.host.app import Host
from sim.host.serve import AppServer, base_url, listen
from sim.host.transport import transport
from sim.player import Via, connect
from sim.scenario import load_scenario
from sim.scenario.answerer import ScriptAnswerer, scenario_host
from sim.scenario.world import build_world
from sim.wire import Api

set_tracing_disabled(True)  # tracing would send each run to OpenAI's servers


class Switched:
    """The answerer of the module's one server: each test's script, and the retry count of each request."""

    def __init__(self) -> None:
        self.script: ScriptAnswerer | None = None
        self.retries: list[int | None] = []

    @property
    def finished(self) -> bool:
        return False

    async def answer(self, request: Received) -> Answer:
        assert self.script is not None
        self.retries.append(request.retry_count)
        return await self.script.answer(request)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[Switched, str]]:
    switched = Switched()
    sock = listen("127.0.0.1", 0)
    served = AppServer(Host(switched).app, sock)
    thread = threading.Thread(target=served.run, daemon=True)
    thread.start()
    while not served.server.started:
        time.sleep(0.01)
    yield switched, base_url(sock)
    served.stop()
    thread.join(timeout=10)


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's own retries, without its half-second backoff."""
    monkeypatch.setattr(openai._base_client, "INITIAL_RETRY_DELAY", 0.01)
    monkeypatch.setattr(openai._base_client, "MAX_RETRY_DELAY", 0.02)


VIAS = ["server", "in_process"]


class Sim:
    """One test's scenario served one way (`via`): clients for it, and what it saw."""

    def __init__(self, tmp_path: Path, text: str, via: str, server: tuple[Switched, str]) -> None:
        path = tmp_path / "faults.yaml"
        path.write_text(textwrap.dedent(text))
        self.script = ScriptAnswerer(load_scenario(path))
        switched, url = server
        if via == "server":
            switched.script, switched.retries = self.script, []
            self.switched, self.url, self.transport = switched, url, None
        else:
            self.switched = Switched()
            self.switched.script = self.script
            self.url, self.transport = "http://sim.test/v1", transport(Host(self.switched))

    def client(self, **options: Any) -> openai.AsyncOpenAI:
        http = httpx2.AsyncClient(transport=self.transport) if self.transport is not None else None
        return openai.AsyncOpenAI(base_url=self.url, api_key="sk-sim", http_client=http, **options)

    @property
    def retries(self) -> list[int | None]:
        return self.switched.retries


WEATHER: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


async def raw_sdk_loop(client: openai.AsyncOpenAI, prompt: str) -> str:
    """A plain tool loop on the raw SDK: ask, run each call, send its result, until a text comes."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(5):
        completion = await client.chat.completions.create(model="m", messages=messages, tools=[WEATHER])
        message = completion.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny"})
    raise AssertionError("the loop did not end")


LOOP = """
prompt: p
tools: []
replies:
  - tool_calls: [{name: get_weather, arguments: {city: Paris}}]
    fault: drop
    drops: 2
  - content: Sunny in Paris.
    fault: reset
    fault_at: mid_body
    drops: 1
"""


@pytest.mark.parametrize("via", VIAS)
def test_a_raw_sdk_loop_recovers_from_dropped_connections_through_the_sdks_own_retries(
    tmp_path: Path, via: str, server: tuple[Switched, str]
) -> None:
    sim = Sim(tmp_path, LOOP, via, server)
    assert asyncio.run(raw_sdk_loop(sim.client(max_retries=2), "Weather in Paris?")) == "Sunny in Paris."
    assert sim.retries == [0, 1, 2, 0, 1]  # each retry as the SDK marks it
    assert sim.script.problems == [] and sim.script.unused() == []


def test_a_sync_raw_sdk_loop_recovers_over_a_real_server(
    tmp_path: Path, server: tuple[Switched, str]
) -> None:
    sim = Sim(tmp_path, LOOP, "server", server)
    client = openai.OpenAI(base_url=sim.url, api_key="sk-sim", max_retries=2)
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    first = client.chat.completions.create(model="m", messages=messages, tools=[WEATHER]).choices[0].message
    assert first.tool_calls is not None
    messages += [first.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "sunny"}]  # fmt: skip
    final = client.chat.completions.create(model="m", messages=messages, tools=[WEATHER]).choices[0].message
    assert final.content == "Sunny in Paris." and sim.retries == [0, 1, 2, 0, 1]


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


@pytest.mark.parametrize("via", VIAS)
def test_an_openai_agents_loop_recovers_from_dropped_connections(
    tmp_path: Path, via: str, server: tuple[Switched, str]
) -> None:
    sim = Sim(tmp_path, LOOP, via, server)
    model = OpenAIResponsesModel(model="gpt-4o", openai_client=sim.client(max_retries=2))
    agent = Agent(name="weather", instructions="Use the tool.", tools=[get_weather], model=model)
    result = asyncio.run(Runner.run(agent, "Weather in Paris?"))
    assert result.final_output == "Sunny in Paris."
    assert sim.retries == [0, 1, 2, 0, 1]
    assert sim.script.problems == []


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize(
    ("fault", "cause", "words"),
    [
        ("{fault: drop}", httpx2.RemoteProtocolError, "Server disconnected without sending a response."),
        ("{fault: drop, fault_at: mid_body}", httpx2.RemoteProtocolError, "peer closed connection without"
         " sending complete message body (received"),
        ("{cut_after_chunks: 1}", httpx2.RemoteProtocolError, "(received"),
        ("{fault: reset}", httpx2.ReadError, ""),
        ("{fault: reset, fault_at: mid_body}", httpx2.ReadError, ""),
    ],
    ids=["drop", "drop mid-body", "cut", "reset", "reset mid-body"],
)  # fmt: skip
def test_without_retries_a_dropped_connection_is_the_sdks_connection_error(
    tmp_path: Path, via: str, server: tuple[Switched, str], fault: str, cause: type, words: str
) -> None:
    sim = Sim(tmp_path, f"prompt: p\nreplies:\n  - {{content: hello, {fault[1:-1]}}}\n", via, server)

    async def ask() -> None:
        await sim.client(max_retries=0).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "p"}]
        )

    with pytest.raises(openai.APIConnectionError) as caught:
        asyncio.run(ask())
    assert type(caught.value) is openai.APIConnectionError  # never a bare JSONDecodeError
    assert isinstance(caught.value.__cause__, cause) and words in str(caught.value.__cause__)
    assert sim.retries == [0]


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_stream_dropped_midway_raises_while_it_is_iterated(
    tmp_path: Path, via: str, api: str, server: tuple[Switched, str]
) -> None:
    sim = Sim(
        tmp_path, "prompt: p\nreplies:\n  - {content: one two three four, cut_after_chunks: 2}\n", via, server
    )
    got: list[Any] = []

    async def read() -> None:
        client = sim.client(max_retries=2)
        if api == "chat":
            stream: Any = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "p"}], stream=True
            )
        else:
            stream = await client.responses.create(model="m", input="p", stream=True)
        async for event in stream:
            got.append(event)

    with pytest.raises(openai.APIConnectionError) as caught:  # raised by the SDK's stream as it reads
        asyncio.run(read())
    cause = caught.value.__cause__
    assert isinstance(cause, httpx2.RemoteProtocolError) and "incomplete chunked read" in str(cause)
    assert len(got) == 2  # the events before the drop came, and no final one
    assert sim.retries == [0]  # a stream that started is not retried: the SDK raises as it reads


@pytest.mark.parametrize("via", VIAS)
def test_a_stall_past_the_clients_timeout_is_retried_then_answered(
    tmp_path: Path, via: str, server: tuple[Switched, str]
) -> None:
    script = "prompt: p\nreplies:\n  - {content: late, fault: stall, stall_seconds: 5, drops: 1}\n"
    sim = Sim(tmp_path, script, via, server)

    async def ask() -> str | None:
        client = sim.client(max_retries=1, timeout=0.3)
        completion = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "p"}]
        )
        return completion.choices[0].message.content

    started = time.monotonic()
    assert asyncio.run(ask()) == "late"
    assert 0.3 <= time.monotonic() - started < 4
    assert sim.retries == [0, 1]


@pytest.mark.parametrize("via", VIAS)
def test_a_stall_on_every_attempt_is_the_sdks_timeout_error(
    tmp_path: Path, via: str, server: tuple[Switched, str]
) -> None:
    script = "prompt: p\nreplies:\n  - {content: late, fault: stall, stall_seconds: 5, drops: 3}\n"
    sim = Sim(tmp_path, script, via, server)

    async def ask() -> None:
        client = sim.client(max_retries=2, timeout=0.2)
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "p"}])

    with pytest.raises(openai.APITimeoutError):
        asyncio.run(ask())
    assert sim.retries == [0, 1, 2]
    (gave_up,) = [p for p in sim.script.unused() if p.code == "sim_expectation_failed"]
    assert "3 times before its reply, but the client gave up after 3 attempts" in gave_up.message


class TestHostile:
    @pytest.mark.parametrize("via", VIAS)
    def test_drops_on_every_request_exhaust_the_sdks_retries(
        self, tmp_path: Path, via: str, server: tuple[Switched, str]
    ) -> None:
        replies = "".join(
            f"  - {{content: r{n}, fault: {kind}}}\n" for n, kind in enumerate(["drop", "reset", "drop"])
        )
        sim = Sim(tmp_path, f"prompt: p\nreplies:\n{replies}", via, server)
        with pytest.raises(openai.APIConnectionError):
            asyncio.run(raw_sdk_loop(sim.client(max_retries=2), "p"))
        assert sim.retries == [0, 1, 2]
        assert sim.script.problems == [] and sim.script.unused() == []  # each fault was a reply's answer

    @pytest.mark.parametrize("via", VIAS)
    def test_the_most_drops_a_script_may_ask_outlast_any_sdk(
        self, tmp_path: Path, via: str, server: tuple[Switched, str]
    ) -> None:
        sim = Sim(
            tmp_path, "prompt: p\nreplies:\n  - {content: never, fault: drop, drops: 100}\n", via, server
        )
        with pytest.raises(openai.APIConnectionError):
            asyncio.run(raw_sdk_loop(sim.client(max_retries=5), "p"))
        assert sim.retries == [0, 1, 2, 3, 4, 5]
        assert [p.kind.value for p in sim.script.unused()] == ["unused", "expectation_failed"]

    @pytest.mark.parametrize("via", VIAS)
    def test_a_fault_before_an_error_then_the_error_retried(
        self, tmp_path: Path, via: str, server: tuple[Switched, str]
    ) -> None:
        script = """
        prompt: p
        replies:
          - error: {status: 503, message: Busy, type: server_error}
            fault: reset
            drops: 1
          - error: {status: 500, message: Broke}
            cut_after_chunks: 1
          - content: at last
        """
        sim = Sim(tmp_path, script, via, server)
        assert asyncio.run(raw_sdk_loop(sim.client(max_retries=3), "p")) == "at last"
        assert sim.retries == [0, 1, 2, 3]  # dropped, 503, 500 dropped mid-body, the reply
        assert sim.script.problems == []

    @pytest.mark.parametrize("via", VIAS)
    def test_another_request_while_drops_are_due_is_the_clients_problem(
        self, tmp_path: Path, via: str, server: tuple[Switched, str]
    ) -> None:
        sim = Sim(tmp_path, "prompt: p\nreplies:\n  - {content: x, fault: drop, drops: 2}\n", via, server)

        async def twice() -> None:
            client = sim.client(max_retries=0)
            for text in ["first", "second"]:
                with contextlib.suppress(openai.APIError):
                    await client.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": text}]
                    )

        asyncio.run(twice())
        (problem,) = sim.script.problems
        assert re.search(r"gave up after 1 attempt; request \d+ is another request", problem.message)

    def test_a_server_keeps_serving_after_many_concurrent_dropped_and_reset_connections(
        self, tmp_path: Path, server: tuple[Switched, str]
    ) -> None:
        path = tmp_path / "cycle.yaml"
        path.write_text("prompt: p\nreplies:\n  - {content: a, fault: drop}\n  - {content: b, fault: reset}\n"
                        "  - {content: c, cut_after_chunks: 1}\n")  # fmt: skip
        switched, url = server
        switched.script, switched.retries = ScriptAnswerer(load_scenario(path), cycle=True), []

        def ask(number: int) -> str:
            client = openai.OpenAI(base_url=url, api_key="sk-sim", max_retries=0)
            try:
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"{number}"}])
            except openai.APIConnectionError:
                return "dropped"
            return "answered"

        with ThreadPoolExecutor(8) as pool:
            assert set(pool.map(ask, range(48))) == {"dropped"}
        assert len(switched.retries) == 48
        models = openai.OpenAI(base_url=url, api_key="sk-sim").models.list()
        assert [model.id for model in models] == ["sim-model"]


OUR_LOOP = """
prompt: Run `echo 42`.
tools: [shell]
commands: [{command: echo 42, output: "42"}]
replies:
  - tool_calls: [{id: call_1, name: shell, arguments: {command: echo 42}}]
  - {content: The command printed 42., cut_after_chunks: 1}
expect: {outcome: api_error}
"""


@pytest.mark.parametrize("api", [Api.chat, Api.responses])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("via", ["sdk", "direct"])
def test_our_adapters_raise_the_connection_error_and_the_run_keeps_its_history(
    tmp_path: Path, api: Api, stream: bool, via: Via
) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text(OUR_LOOP)
    scenario = load_scenario(path)
    model, script = connect(scenario, via=via, stream=stream, api=api)
    world = build_world(scenario)
    runner = AgentRunner(model, world.tools, world.approver, workspace=tmp_path, max_turns=5)
    ending = asyncio.run(runner.run_to_end("Run `echo 42`."))
    assert type(ending.error) is ModelConnectionError, ending.error  # never ModelReplyError "not JSON"
    assert str(ending.error).startswith("Could not reach the model endpoint: peer closed connection")
    assert [message.role for message in ending.history][-3:] == ["user", "assistant", "tool"]
    assert ending.outcome == "api_error" and script.problems == [] and script.unused() == []


def test_our_adapter_with_retries_recovers_as_the_sdk_does(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text(OUR_LOOP.replace("cut_after_chunks: 1}", "fault: reset, drops: 2}"))
    host = scenario_host(load_scenario(path))
    http = httpx2.AsyncClient(transport=transport(host))
    model = OpenAIChatModel.connect(base_url="http://sim.test/v1", api_key="sk-sim", model="sim-model",
                                    max_retries=2, http_client=http)  # fmt: skip
    world = build_world(host.answerer.scenario)
    runner = AgentRunner(model, world.tools, world.approver, workspace=tmp_path, max_turns=5)
    ending = asyncio.run(runner.run_to_end("Run `echo 42`."))
    assert ending.error is None and ending.final_text == "The command printed 42."
    assert host.answerer.problems == [] and host.answerer.unused() == []


def test_in_process_a_fault_is_raised_even_where_app_exceptions_are_answered_500(tmp_path: Path) -> None:
    path = tmp_path / "drop.yaml"
    path.write_text("prompt: p\nreplies:\n  - {content: x, fault: drop}\n")
    host = scenario_host(load_scenario(path))

    async def ask() -> None:
        async with httpx2.AsyncClient(transport=transport(host, raise_app_exceptions=False)) as client:
            body = {"model": "m", "messages": [{"role": "user", "content": "p"}]}
            await client.post("http://sim.test/v1/chat/completions", json=body)

    with pytest.raises(httpx2.RemoteProtocolError, match="Server disconnected without sending a response"):
        asyncio.run(ask())


@pytest.mark.parametrize("via", VIAS)
def test_a_stream_dropped_mid_body_loses_its_second_half(
    tmp_path: Path, via: str, server: tuple[Switched, str]
) -> None:
    script = (
        "prompt: p\nreplies:\n  - {content: one two three four five six, fault: reset, fault_at: mid_body}\n"
    )
    sim = Sim(tmp_path, script, via, server)
    got: list[Any] = []

    async def read() -> None:
        stream = await sim.client(max_retries=2).responses.create(model="m", input="p", stream=True)
        async for event in stream:
            got.append(event)

    with pytest.raises(openai.APIConnectionError):
        asyncio.run(read())
    assert got and got[-1].type != "response.completed" and sim.retries == [0]
