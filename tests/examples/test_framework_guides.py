"""The framework guide (docs/frameworks.md), run: each framework's weather agent in `examples/frameworks/`
(a) against `sim serve SCENARIO`, (b) recorded with `sim proxy ... -- python agent.py` and replayed with
`sim serve CASSETTE`, (c) replayed inside pytest by the marker, and (d) fuzzed with `sim fuzz --target`
(a fixed seed, a few dozen examples, the verdict asserted, and the output the guide shows checked). The
frameworks are test extras; every agent runs as its own process, as its user would start it."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.host.processes import MARKED_KEY, ROOT, SIM, served, served_to

FRAMEWORKS = ROOT / "examples" / "frameworks"
WEATHER = FRAMEWORKS / "weather.yaml"
AGENTS = {
    "openai-agents": ["agents_weather.py"],
    "openai-agents-chat": ["agents_weather.py", "--chat"],
    "pydantic-ai": ["pydantic_ai_weather.py"],
    "pydantic-ai-chat": ["pydantic_ai_weather.py", "--chat"],
    "langchain": ["langchain_weather.py"],
    "langchain-responses": ["langchain_weather.py", "--responses"],
    "litellm": ["litellm_weather.py"],
    "litellm-responses": ["litellm_weather.py", "--responses"],
}
APIS = {
    "openai-agents": "responses",
    "openai-agents-chat": "chat",
    "pydantic-ai": "responses",
    "pydantic-ai-chat": "chat",
    "langchain": "chat",
    "langchain-responses": "responses",
    "litellm": "chat",
    "litellm-responses": "responses",
}
RECORDED = ["langchain", "openai-agents", "pydantic-ai"]
"""The agents also recorded through the proxy and served back (each way of each framework is served a
scenario; one way of each is recorded, to keep the suite fast)."""
ANSWER = "It is sunny in Paris.\n"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses POSIX signals")


def agent(name: str) -> list[str]:
    script, *options = AGENTS[name]
    return [sys.executable, str(FRAMEWORKS / script), *options]


@pytest.mark.parametrize("name", sorted(set(AGENTS) - set(RECORDED)))
def test_each_framework_in_each_api_runs_unmodified_against_a_served_scenario(name: str) -> None:
    done = served_to(WEATHER, *agent(name), options=["--once"])  # the guide's `sim serve ... -- python ...`
    assert (done.returncode, done.stdout) == (0, ANSWER), done.stderr  # the agent's and the scenario's
    assert f"({APIS[name]} 2)" in done.stderr


@pytest.mark.parametrize("name", RECORDED)
def test_a_served_scenario_then_a_proxied_recording_served_back(tmp_path: Path, name: str) -> None:
    done = served_to(WEATHER, *agent(name), options=["--once"])
    assert (done.returncode, done.stdout) == (0, ANSWER), done.stderr
    assert f"({APIS[name]} 2)" in done.stderr  # the API the framework speaks by default

    cassette = tmp_path / "weather.cassette.yaml"
    with served(WEATHER, "--once") as (upstream, upstream_url):
        recording = subprocess.run(
            [*SIM, "proxy", str(cassette), "--upstream", upstream_url, "--port", "0", "--", *agent(name)],
            env={**os.environ, "OPENAI_API_KEY": MARKED_KEY},
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert (recording.returncode, recording.stdout) == (0, ANSWER), recording.stderr
        assert upstream.wait(timeout=20) == 0
    assert MARKED_KEY not in cassette.read_text()

    again = served_to(cassette, *agent(name), options=["--once"])
    assert (again.returncode, again.stdout) == (0, ANSWER), again.stderr


def test_the_marker_replays_every_framework_offline() -> None:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "examples/frameworks/test_weather.py",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",  # one process: each worker pytest-xdist starts imports every framework again
        ],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 passed" in done.stdout


def guide_recording_recipe() -> tuple[list[str], list[str]]:
    """The framework guide's recording recipe: the options of its `sim serve` (its fixed port left out) and
    of the `pytest` it runs against it."""
    text = (ROOT / "docs" / "frameworks.md").read_text()
    serve = r"^sim serve examples/frameworks/weather\.yaml (--cycle.*)"
    line = serve + r" -- pytest examples/frameworks/test_weather\.py (.*)$"
    found = re.findall(line, text, flags=re.M)
    assert len(found) == 1, "the guide shows one recording recipe"
    options = shlex.split(found[0][0])
    if "--port" in options:
        del options[options.index("--port") : options.index("--port") + 2]
    return options, shlex.split(found[0][1])


def test_the_marker_records_every_framework_again_into_fresh_cassettes(tmp_path: Path) -> None:
    """The guide's recipe, under this project's pytest settings (`-n auto` among them)."""
    copy = tmp_path / "test_weather.py"
    copy.write_text((FRAMEWORKS / "test_weather.py").read_text())
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    (tmp_path / "pytest.ini").write_text(f"[pytest]\naddopts = {settings['addopts']}\n")
    serve, record = guide_recording_recipe()
    done = served_to(
        WEATHER, sys.executable, "-m", "pytest", str(copy), *record, "-q", "-p", "no:cacheprovider",
        options=serve, env={"OPENAI_API_KEY": MARKED_KEY}, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    written = sorted(tmp_path.glob("cassettes/test_weather/*.yaml"))
    assert len(written) == 6
    assert all(MARKED_KEY not in path.read_text() for path in written)
    # each is the script's conversation (a call, then the answer), not replies another test was due
    assert {path.name: path.read_text().count("\n- request:") for path in written} == {
        path.name: 2 for path in written
    }


def guide_fuzz_commands() -> dict[str, list[str]]:
    """Each `sim fuzz --target examples.frameworks.X` of the framework guide: its target and `--allow`s."""
    text = (ROOT / "docs" / "frameworks.md").read_text()
    commands: dict[str, list[str]] = {}
    for line in re.findall(r"^sim fuzz --target examples\.frameworks\.(.*)$", text, flags=re.M):
        target, *words = line.split("#")[0].split()
        assert all(word == "--allow" for word in words[::2]), line  # the guide's options are allows
        commands.setdefault(target, words[1::2])
    return commands


FINDINGS = {
    # the guide's finding: a call whose arguments are not JSON (a non-strict function's, as the API can
    # send) lands in langchain's `invalid_tool_calls`; the loop over `tool_calls` answers the others only,
    # and the API refuses the next request
    "langchain_weather:run": ("pairing", "missing tool results for ids"),
}
VERDICTS = [(target, allowed, FINDINGS.get(target)) for target, allowed in guide_fuzz_commands().items()]
"""The guide's fuzz commands, run as it shows them: each passes but the ones with a finding."""


def test_the_guide_fuzzes_each_framework() -> None:
    targets = {target.split("_weather")[0] for target, _, _ in VERDICTS}
    assert targets >= {"agents", "pydantic_ai", "langchain"} and set(FINDINGS) <= {t for t, _, _ in VERDICTS}


@pytest.mark.parametrize(("target", "allowed", "finding"), VERDICTS, ids=[v[0] for v in VERDICTS])
def test_each_framework_agent_fuzzed_as_a_target(
    tmp_path: Path, target: str, allowed: list[str], finding: tuple[str, str] | None
) -> None:
    options = [option for name in allowed for option in ("--allow", name)]
    done = subprocess.run(
        [*SIM, "fuzz", "--target", f"examples.frameworks.{target}", "--examples", "30", "--seed", "0",
         "--json", "--save", str(tmp_path), *options],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    summary = json.loads(done.stdout)
    assert summary["requests"] > summary["runs"] >= 30
    assert summary["round_trips"] > 10  # drawn calls reached the agent's tool and their results came back
    if finding is None:
        assert (done.returncode, summary["violations"]) == (0, []), done.stdout
    else:
        assert done.returncode == 1
        (violation,) = summary["violations"]
        assert violation["invariant"] == finding[0] and finding[1] in violation["detail"], violation
        assert summary["saved"] == str(tmp_path / "fuzz-target-seed-0.yaml")
    sample = documented_output(f"sim fuzz --target examples.frameworks.{target} --examples 30")
    assert sample is not None or finding is None  # the docs show the run that finds something
    if sample is not None:  # and what it prints is what the docs say it prints
        raised = ", ".join(f"{name} {count}" for name, count in summary["raised"].items())
        runs, requests, answered = summary["runs"], summary["requests"], summary["round_trips"]
        said = f"{runs} runs of examples.frameworks.{target} (api profile): {requests} requests,"
        assert sample[:2] == [f"{said} {answered} tool calls answered", f"raised: {raised}"]


def documented_output(command: str) -> list[str] | None:
    """The lines the docs show a command printing (a `text` block that starts `$ COMMAND`), if they do."""
    text = (ROOT / "docs" / "fuzzing.md").read_text()
    found = re.search(rf"^```text\n\$ {re.escape(command)}\n(.*?)^```", text, flags=re.S | re.M)
    return found[1].splitlines() if found else None
