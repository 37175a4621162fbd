"""The frameworks our users build on, each in its default Responses API mode with one tool, against
`sim serve` started as a real process on 127.0.0.1: the scripted reply reaches their tool and their run
ends with the scripted final text. The frameworks are test extras; each agent runs as its own process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SIM = [sys.executable, "-m", "sim.cli"]
SCENARIO = """
name: weather
description: A framework's agent asks for the weather with its one tool, then answers.
replies:
  - tool_calls: [{name: get_weather, arguments: {city: Paris}}]
  - content: It is sunny in Paris.
    expect_request: {last_message: {role: tool, content: "Paris: sunny"}}
"""
AGENTS = {
    "openai-agents": """
        from agents import Agent, Runner, function_tool, set_tracing_disabled

        set_tracing_disabled(True)  # tracing would export to the network

        @function_tool
        def get_weather(city: str) -> str:
            \"\"\"The weather in a city.\"\"\"
            return f"{city}: sunny"

        agent = Agent(name="weather", instructions="Use the tool.", tools=[get_weather], model="gpt-4o")
        print(Runner.run_sync(agent, "Weather in Paris?").final_output)
    """,
    "pydantic-ai": """
        from pydantic_ai import Agent

        agent = Agent("openai:gpt-4o", instructions="Use the tool.")

        @agent.tool_plain
        def get_weather(city: str) -> str:
            \"\"\"The weather in a city.\"\"\"
            return f"{city}: sunny"

        print(agent.run_sync("Weather in Paris?").output)
    """,
}

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses POSIX signals")


@pytest.mark.parametrize("framework", sorted(AGENTS))
def test_the_framework_runs_to_the_scripted_answer_over_the_responses_api(
    tmp_path: Path, framework: str
) -> None:
    scenario = tmp_path / "weather.yaml"
    scenario.write_text(SCENARIO)
    agent = tmp_path / "agent.py"
    agent.write_text(textwrap.dedent(AGENTS[framework]))
    server = subprocess.Popen(
        [*SIM, "serve", str(scenario), "--port", "0", "--once"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None and server.stderr is not None
        base_url = server.stdout.readline().strip().removeprefix("OPENAI_BASE_URL=")
        environment = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-framework-test-0123"}
        done = subprocess.run(
            [sys.executable, str(agent)],
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip().endswith("It is sunny in Paris.")
        assert server.wait(timeout=20) == 0  # --once: every reply sent, no problem found
        assert "served 2 requests (responses 2); 2 replies sent" in server.stderr.read()
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=10)
