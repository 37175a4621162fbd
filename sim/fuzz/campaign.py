"""Fuzzing campaigns: hypothesis draws scenarios, a loop runs each, the invariants judge, failures shrink.

`run_example` runs one scenario through a loop (ours by default; anything built like `AgentRunner` and
with an async `run(prompt)`), its model asking the scenario's script directly (`direct`) or through the
real SDK against the script served in process (`sdk`). `fuzz` runs a campaign and keeps the smallest
failing scenario, which it can save as a file.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.database import ExampleDatabase

from sim.cassette.session import result_from_text
from sim.cassette.writer import to_yaml, write_atomically
from sim.core.loop import DEFAULT_SYSTEM_PROMPT, AgentRunner, RunEnding
from sim.core.messages import ToolMessage
from sim.core.scripted import ScriptedApprover
from sim.fuzz.databases import Namespaced
from sim.fuzz.invariants import Violation, broken_invariants
from sim.fuzz.oracle import expect
from sim.fuzz.strategies import scenarios
from sim.player import Via, connect
from sim.scenario.schema import Scenario
from sim.scenario.world import build_world

RunnerFactory = Callable[..., Any]
"""Builds a loop like `AgentRunner(model, tools, approver, workspace=, system_prompt=, max_turns=)`."""


@dataclass(slots=True)
class ExampleRun:
    """One scenario run: how it ended and what it broke."""

    scenario: Scenario
    ending: RunEnding
    violations: list[Violation]


async def run_example(
    scenario: Scenario, *, via: Via = "direct", runner_factory: RunnerFactory = AgentRunner
) -> ExampleRun:
    """Run `scenario` through the loop `runner_factory` builds, and check every invariant."""
    expected = expect(scenario)
    world = build_world(scenario)
    model, script = connect(scenario, via=via)
    runner = runner_factory(
        model,
        world.tools,
        world.approver,
        workspace=Path.cwd(),
        system_prompt=scenario.system_prompt or DEFAULT_SYSTEM_PROMPT,
        max_turns=scenario.max_turns,
    )
    ending = await RunEnding.settle(runner.run(scenario.require_prompt()))
    approver = world.approver
    violations = broken_invariants(
        scenario,
        expected,
        script.requests,
        ending,
        commands_run=world.commands.calls,
        approvals_asked=[r.call.id for r in approver.requests]
        if isinstance(approver, ScriptedApprover)
        else [],
    )
    return ExampleRun(scenario, ending, violations)


def campaign_settings(examples: int, database: ExampleDatabase | None = None) -> settings:
    """Hypothesis settings of a campaign: no deadline, generate and shrink, one bug reported; with a
    `database`, the failures it holds replayed first and new ones kept there (else a seed says it all)."""
    return settings(
        max_examples=examples,
        deadline=None,
        database=database,
        phases=(Phase.reuse, Phase.generate, Phase.shrink) if database else (Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
    )


class InvariantBroken(AssertionError):
    """A run broke an invariant."""


@dataclass(slots=True)
class FuzzReport:
    """A campaign's tally and, if it found one, its smallest failing example."""

    runs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    error_codes: Counter[str] = field(default_factory=Counter)
    failure: ExampleRun | None = None
    saved: Path | None = None


def fuzz(
    *,
    examples: int = 200,
    seed: int = 0,
    via: Via = "direct",
    runner_factory: RunnerFactory = AgentRunner,
    save_dir: Path | None = None,
    on_run: Callable[[], None] | None = None,
    database: ExampleDatabase | None = None,
) -> FuzzReport:
    """Run `examples` drawn scenarios (more while shrinking a failure); deterministic for a given `seed`;
    with a `database`, the failures it keeps are run first and new ones kept there."""
    report = FuzzReport()
    kept = None if database is None else Namespaced(database, f"sim fuzz own loop {via}")

    @campaign_settings(examples, kept)
    @hypothesis_seed(seed)
    @given(scenarios())
    def campaign(scenario: Scenario) -> None:
        run = asyncio.run(run_example(scenario, via=via, runner_factory=runner_factory))
        tally(report, run)
        if on_run is not None:
            on_run()
        if run.violations:
            report.failure = run  # the smallest failing example is the last one run
            raise InvariantBroken("; ".join(map(str, run.violations)))

    try:
        campaign()
    except InvariantBroken:
        if save_dir is not None and report.failure is not None:
            report.saved = save_counterexample(report.failure, save_dir, seed)
    return report


def tally(report: FuzzReport, run: ExampleRun) -> None:
    """Count the run's outcome and the error codes its tool results carry."""
    report.runs += 1
    report.outcomes[run.ending.outcome] += 1
    for message in run.ending.history:
        if isinstance(message, ToolMessage):
            report.error_codes[result_from_text(message.content).error_code or "ok"] += 1


def save_scenario(scenario: Scenario, folder: Path, name: str, description: str) -> Path:
    """Write `scenario` as `folder/NAME.yaml` (atomically), under that name and description."""
    data = scenario.model_dump(mode="json", exclude_defaults=True)
    data["name"], data["description"] = name, description
    path = folder / f"{name}.yaml"
    write_atomically(path, to_yaml(data))
    return path


def save_counterexample(run: ExampleRun, folder: Path, seed: int) -> Path:
    """Write the failing scenario (its expectations are the oracle's) so that `sim play` reproduces it."""
    violations = "; ".join(map(str, run.violations))
    description = f"Shrunk by sim fuzz-loop (seed {seed}). It broke: {violations}"
    return save_scenario(run.scenario, folder, f"fuzz-seed-{seed}", description)
