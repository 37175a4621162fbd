"""The `sim_cassette` marker and `--sim-record`, through pytester, against a real `sim serve` on 127.0.0.1."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest
import yaml

from tests.host.processes import served, served_to

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
    with served(tmp_path / "hello.yaml", "--cycle") as (process, url):
        yield url, process


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
            "*--sim-record=none only replays: run pytest with --sim-record=new_episodes to record what is"
            " missing (what is not used is dropped), or --sim-record=all (or delete the file)*",
        ]
    )
    assert "record_mode" not in changed.stdout.str()  # vcrpy's words are not shown

    pytester.makepyfile(test_agent=TEST.replace("PROMPT", "hi"))
    data = yaml.safe_load(text)
    data["interactions"].append(data["interactions"][0])
    cassette.write_text(yaml.safe_dump(data))
    partly = pytester.runpytest_subprocess()
    partly.assert_outcomes(passed=1, errors=1)
    partly.stdout.fnmatch_lines(
        ["*only partly played: 1 of 2 interactions unused (--sim-record=all records it again, keeping only*"]
    )


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
            "*--sim-record=none only replays: run pytest with --sim-record=once to record the cassette",
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
    """Recorded as CI would: `sim serve weather.yaml --once -- pytest --sim-record=once`."""
    (tmp_path / "weather.yaml").write_text(WEATHER)
    pytester.makepyfile(test_agent=AGENT_TEST)
    record = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--sim-record=once", "test_agent.py"]
    recorded = served_to(tmp_path / "weather.yaml", *record, env={"OPENAI_API_KEY": KEY}, cwd=pytester.path)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert "1 passed" in recorded.stdout and "(responses 2)" in recorded.stderr
    text = (pytester.path / "cassettes" / "agent.yaml").read_text()
    assert KEY not in text and "/v1/responses" in text
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there: a replay
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


def _prompts(cassette: Path) -> list[str]:
    """The user prompt of each request the cassette holds."""
    interactions = yaml.safe_load(cassette.read_text())["interactions"]
    bodies = [json.loads(interaction["request"]["body"]) for interaction in interactions]
    return [m["content"] for body in bodies for m in body["messages"] if m["role"] == "user"]


def test_each_recording_mode_leaves_exactly_what_the_run_sent(
    pytester: pytest.Pytester, server: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request an earlier recording made and this run did not (a live id changes on every recording) is
    dropped: kept, it would leave the next replay partly played."""
    url, _ = server
    monkeypatch.setenv("SIM_TEST_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    cassette = pytester.path / "cassettes" / "hello.yaml"
    pytester.makepyfile(test_agent=TEST.replace("PROMPT", "hi"))
    pytester.runpytest("--sim-record=once").assert_outcomes(passed=1)
    earlier = yaml.safe_load(cassette.read_text())["interactions"]

    pytester.makepyfile(test_agent=TEST.replace("PROMPT", "hello there"))
    data = yaml.safe_load(cassette.read_text())
    pytester.runpytest("--sim-record=all").assert_outcomes(passed=1)
    assert _prompts(cassette) == ["hello there"]
    pytester.runpytest().assert_outcomes(passed=1)  # played whole, offline

    data["interactions"] = earlier
    cassette.write_text(yaml.safe_dump(data))
    once = pytester.runpytest("--sim-record=once")  # never records into a cassette that exists
    once.assert_outcomes(failed=1)
    once.stdout.fnmatch_lines(
        [
            "*--sim-record=once records only a cassette that does not exist yet: run pytest with"
            " --sim-record=new_episodes to record what is missing (what is not used is dropped), or"
            " --sim-record=all (or delete the file) to record the test's whole cassette again"
        ]
    )
    assert _prompts(cassette) == ["hi"]
    pytester.runpytest("--sim-record=new_episodes").assert_outcomes(passed=1)
    assert _prompts(cassette) == ["hello there"]

    pytester.makepyfile(test_agent=TEST.split("    model =")[0] + "    pass\n")  # it sends nothing now
    pytester.runpytest("--sim-record=all").assert_outcomes(passed=1)
    assert yaml.safe_load(cassette.read_text())["interactions"] == []


MODELS = """
import os
import pytest
from openai import OpenAI

@pytest.mark.sim_cassette("models.yaml")
def test_lists_models():
    with OpenAI(base_url="http://127.0.0.1:9/v1", max_retries=0) as client:  # the key from the environment
        assert [model.id for model in client.models.list()] == ["sim-model"]

def test_after():
    assert os.environ.get("OPENAI_API_KEY") == os.environ.get("KEY_BEFORE")
"""
MODELS_CASSETTE = """interactions:
- request: {method: GET, uri: 'http://127.0.0.1:9/v1/models', body: null, headers: {}}
  response:
    status: {code: 200, message: OK}
    headers: {Content-Type: [application/json]}
    body:
      string: '{"object": "list", "data": [{"id": "sim-model", "object": "model", "created": 0}]}'
version: 1
"""


def test_a_replay_without_a_key_has_a_placeholder_for_the_test_only(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CI has no key, and the SDK will not build a client without one; a recording gets none."""
    pytester.makepyfile(test_models=MODELS)
    (pytester.path / "models.yaml").write_text(MODELS_CASSETTE)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("KEY_BEFORE", raising=False)
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=2)
    monkeypatch.setenv("OPENAI_API_KEY", "")  # as CI sets a secret a fork cannot read
    monkeypatch.setenv("KEY_BEFORE", "")
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=2)

    (pytester.path / "models.yaml").unlink()
    recording = pytester.runpytest("-p", "no:randomly", "--sim-record=once")
    recording.assert_outcomes(passed=1, failed=1)
    recording.stdout.fnmatch_lines(["*OPENAI_API_KEY*"])  # the SDK's own refusal: nothing stands in
    assert not (pytester.path / "models.yaml").exists()


def test_recording_under_xdist_workers_is_refused_in_one_line(pytester: pytest.Pytester) -> None:
    """Workers share the endpoint, and a scripted one (`sim serve --cycle`) answers them in turn."""
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    for mode in ("once", "new_episodes", "all"):
        refused = pytester.runpytest(f"--sim-record={mode}", "-n", "2")
        assert refused.ret == pytest.ExitCode.USAGE_ERROR
        refused.stderr.fnmatch_lines([f"ERROR: --sim-record={mode} records in one process: add -n 0 (*swap)"])
    pytester.runpytest("--sim-record=all", "-n", "0").assert_outcomes(passed=1)
