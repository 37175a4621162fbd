"""Playing scenarios: the real `AgentRunner` in a scenario's scripted world, judged by its expectations."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import httpx2

from sim.adapters.answerer_model import AnswererModel
from sim.adapters.connect import connect_model
from sim.core.errors import ScenarioError
from sim.core.loop import DEFAULT_SYSTEM_PROMPT, AgentRunner
from sim.core.model import ModelClient
from sim.core.outcome import Outcome
from sim.core.transcript import Line, TranscriptRecorder, prompt_line
from sim.host.transport import transport
from sim.scenario.answerer import ScriptAnswerer, scenario_host
from sim.scenario.expectations import unmet_expectations
from sim.scenario.loader import load_scenario
from sim.scenario.schema import Scenario
from sim.scenario.world import build_world
from sim.wire import Api


@dataclass(frozen=True, slots=True)
class PlayReport:
    """How one scenario went: passed when `problems` is empty."""

    path: str
    name: str
    outcome: Outcome | None
    final_text: str | None
    turns: int
    problems: tuple[str, ...]
    transcript: tuple[Line, ...]
    load_seconds: float = 0.0
    run_seconds: float = 0.0

    @property
    def passed(self) -> bool:
        """Whether the run matched every expectation and used its whole script."""
        return not self.problems


Via = Literal["direct", "sdk"]
"""The client the loop asks the scenario's script (a `ScriptAnswerer`) through: `direct` (the answerer
itself, asked in process by `AnswererModel`: no HTTP, no SDK), or `sdk` (the real OpenAI adapter and SDK,
over Chat Completions or the Responses API, talking to the script served by the host, in process). The
same answerer judges the requests either way."""

SIMULATOR_URL = "http://simulator.sim/v1"


Wrap = Callable[[httpx2.AsyncBaseTransport], httpx2.AsyncBaseTransport]
"""What the in-process transport to the simulator is wrapped in (to keep the traffic, say)."""


def connect(
    scenario: Scenario,
    *,
    via: Via,
    stream: bool = False,
    api: Api = Api.chat,
    chain: bool = False,
    wrap: Wrap | None = None,
) -> tuple[ModelClient, ScriptAnswerer]:
    """The model the loop talks to, and the scenario's script that answers it: asked directly (`direct`),
    or served in process to the real adapter for `api` and the SDK (`sdk`)."""
    if via == "direct":
        answerer = ScriptAnswerer(scenario)
        return AnswererModel(answerer, scenario.model), answerer
    host = scenario_host(scenario)
    model = connect_model(
        api,
        base_url=SIMULATOR_URL,
        api_key="sim-in-process",
        model=scenario.model,
        stream=stream,
        chain=chain,
        http_client=httpx2.AsyncClient(transport=(wrap or _as_is)(transport(host))),
    )
    return model, host.answerer


def _as_is(transport: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport:
    return transport


async def play_scenario(
    scenario: Scenario,
    *,
    path: Path | None = None,
    via: Via = "direct",
    stream: bool = False,
    api: Api = Api.chat,
    chain: bool = False,
    wrap: Wrap | None = None,
) -> PlayReport:
    """Run `scenario` through the real loop with strict scripted fakes and check what came out: the
    script's problems (its answerer judged each request), what the world's fakes left unused, and the
    scenario's `expect` (`wrap`: around the transport to the simulator, with `via` sdk)."""
    started = time.perf_counter()
    prompt = scenario.require_prompt()
    world = build_world(scenario)
    recorder = TranscriptRecorder()
    model, script = connect(scenario, via=via, stream=stream, api=api, chain=chain, wrap=wrap)
    runner = AgentRunner(
        model,
        world.tools,
        world.approver,
        workspace=path.parent if path else Path.cwd(),
        system_prompt=scenario.system_prompt or DEFAULT_SYSTEM_PROMPT,
        max_turns=scenario.max_turns,
        observer=recorder,
        output=scenario.response_format.output() if scenario.response_format is not None else None,
    )
    ending = await runner.run_to_end(prompt)
    error, final_text, turns = ending.error, ending.final_text, ending.turns
    problems: list[str]
    if isinstance(error, ScenarioError):
        outcome: Outcome | None = None
        problems = [str(error)]
    else:
        outcome = ending.outcome
        problems = [problem.message for problem in script.problems + script.unused()] + world.unused()
        problems += unmet_expectations(
            scenario,
            outcome=outcome,
            error=str(error) if error else None,
            final_text=final_text,
            turns=turns,
            tool_results={call: event.result for call, event in recorder.tool_results.items()},
        )
    return PlayReport(
        path=str(path) if path else "",
        name=scenario.name or "",
        outcome=outcome,
        final_text=final_text,
        turns=turns,
        problems=tuple(problems),
        transcript=(prompt_line(prompt), *recorder.lines),
        run_seconds=time.perf_counter() - started,
    )


async def play_file(
    path: Path, *, via: Via = "direct", stream: bool = False, api: Api = Api.chat, chain: bool = False
) -> PlayReport:
    """Load and play one file; a file that does not load is a failed report saying why."""
    started = time.perf_counter()
    try:
        scenario = load_scenario(path)
        if scenario.prompt is None:
            raise ScenarioError(
                f"{path}: missing required key 'prompt' (a scenario without one can only be served by"
                " `sim serve`)"
            )
    except ScenarioError as error:
        return PlayReport(str(path), path.stem, None, None, 0, (str(error),), ())
    loaded = time.perf_counter()
    report = await play_scenario(scenario, path=path, via=via, stream=stream, api=api, chain=chain)
    return replace(report, load_seconds=loaded - started)
