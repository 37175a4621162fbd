"""The `sim_cassette` marker and `--sim-record`, through pytester, against a real `sim serve` on 127.0.0.1."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

KEY = "sk-RECOGNISABLE-fixture-4b1d9a"
SCENARIO = "prompt: hi\ntools: []\nreplies:\n  - content: hello\n"
TEST = """
import os
import pytest
from sim import AgentRunner, AllowAllApprover, ToolRegistry
from sim.adapters.openai_chat import OpenAIChatModel

@pytest.mark.sim_cassette("cassettes/hello.yaml")
def test_hello():
    model = OpenAIChatModel.connect(base_url=os.environ["SIM_TEST_URL"], api_key=os.environ["OPENAI_API_KEY"],
                                    model="sim-model")
    runner = AgentRunner(model, ToolRegistry(), AllowAllApprover())
    assert runner.run_sync("PROMPT").final_text == "hello"
"""

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses POSIX signals")


@pytest.fixture
def server(tmp_path: Path) -> object:
    (tmp_path / "hello.yaml").write_text(SCENARIO)
    process = subprocess.Popen(
        [sys.executable, "-m", "sim.cli", "serve", str(tmp_path / "hello.yaml"), "--port", "0", "--cycle"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip().removeprefix("OPENAI_BASE_URL=")
    yield url, process
    if process.poll() is None:
        process.kill()
    process.wait(timeout=10)


def test_record_once_then_replay_offline(
    pytester: pytest.Pytester, server: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, process = server
    monkeypatch.setenv("SIM_TEST_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    pytester.makepyfile(test_agent=TEST.replace("PROMPT", "hi"))

    pytester.runpytest_subprocess("--sim-record=once").assert_outcomes(passed=1)
    cassette = pytester.path / "cassettes" / "hello.yaml"
    text = cassette.read_text()
    assert KEY not in text
    assert len(yaml.safe_load(text)["interactions"]) == 1

    process.send_signal(signal.SIGINT)
    process.wait(timeout=10)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)  # the endpoint is gone: this is a replay

    pytester.makepyfile(test_agent=TEST.replace("PROMPT", "hello there"))
    changed = pytester.runpytest_subprocess()
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(
        [
            f"*cassette {cassette} has no recording of request 1 (POST /v1/chat/completions)",
            '*nearest recorded request differs at messages[[]1[]].content: recorded "hi" != now "hello*',
            "*run pytest with --sim-record=once to record what is missing, or --sim-record=all*",
        ]
    )
    assert "record_mode" not in changed.stdout.str() and "new_episodes" not in changed.stdout.str()

    pytester.makepyfile(test_agent=TEST.replace("PROMPT", "hi"))
    data = yaml.safe_load(text)
    data["interactions"].append(data["interactions"][0])
    cassette.write_text(yaml.safe_dump(data))
    partly = pytester.runpytest_subprocess()
    partly.assert_outcomes(passed=1, errors=1)
    partly.stdout.fnmatch_lines(["*only partly played: 1 of 2 interactions unused*"])


def test_without_a_cassette_replay_mode_never_reaches_the_network(
    pytester: pytest.Pytester, server: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = server
    monkeypatch.setenv("SIM_TEST_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    pytester.makepyfile(test_agent=TEST.replace("PROMPT", "hi"))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    assert not (pytester.path / "cassettes" / "hello.yaml").exists()
    result.stdout.fnmatch_lines(
        [
            "*cassette *hello.yaml does not exist: request 1 (POST /v1/chat/completions) has no recording",
            "*--sim-record=once*",
        ]
    )
    assert "record_mode" not in result.stdout.str()


def test_record_mode_must_be_known(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--sim-record=sometimes")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*invalid choice*sometimes*"])


AGENT_TEST = """
import pytest
from agents import Agent, Runner, function_tool, set_tracing_disabled

set_tracing_disabled(True)  # tracing would export to the network

@function_tool
def get_weather(city: str) -> str:
    "The weather in a city."
    return f"{city}: sunny"

@pytest.mark.sim_cassette("cassettes/agent.yaml")
def test_agent():
    agent = Agent(name="weather", instructions="Use the tool.", tools=[get_weather], model="gpt-4o")
    assert Runner.run_sync(agent, "Weather in Paris?").final_output == "It is sunny in Paris."
"""
WEATHER = """
replies:
  - tool_calls: [{name: get_weather, arguments: {city: Paris}}]
  - content: It is sunny in Paris.
"""


def test_an_openai_agents_run_over_the_responses_api_is_recorded_then_replayed(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "weather.yaml").write_text(WEATHER)
    server = subprocess.Popen(
        [sys.executable, "-m", "sim.cli", "serve", str(tmp_path / "weather.yaml"), "--port", "0", "--once"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None and server.stderr is not None
        monkeypatch.setenv(
            "OPENAI_BASE_URL", server.stdout.readline().strip().removeprefix("OPENAI_BASE_URL=")
        )
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        pytester.makepyfile(test_agent=AGENT_TEST)
        pytester.runpytest_subprocess("--sim-record=once").assert_outcomes(passed=1)
        assert server.wait(timeout=20) == 0
        assert "(responses 2)" in server.stderr.read()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=10)
    text = (pytester.path / "cassettes" / "agent.yaml").read_text()
    assert KEY not in text and "/v1/responses" in text
    pytester.runpytest_subprocess().assert_outcomes(passed=1)  # the server is gone: this is a replay
