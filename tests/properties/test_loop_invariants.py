"""The loop's invariants over drawn hostile scripts: the real `AgentRunner` with the scripted model, and
(fewer examples) through the real adapter and SDK against the simulator, in process."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings

from sim.fuzz.campaign import run_example
from sim.fuzz.strategies import scenarios
from sim.player import play_scenario

FIXED = settings(deadline=None, database=None, derandomize=True)


@settings(FIXED, max_examples=300)
@given(scenarios())
def test_invariants_hold_for_agent_runner(scenario: object) -> None:
    run = asyncio.run(run_example(scenario))  # type: ignore[arg-type]
    assert run.violations == []


@settings(FIXED, max_examples=60)
@given(scenarios())
def test_invariants_hold_through_the_sdk_and_the_simulator(scenario: object) -> None:
    run = asyncio.run(run_example(scenario, via="sdk"))  # type: ignore[arg-type]
    assert run.violations == []


@settings(FIXED, max_examples=150)
@given(scenarios())
def test_drawn_scenarios_are_complete_tests_that_sim_play_passes(scenario: object) -> None:
    """The world fits the script exactly (strict fakes find nothing unused) and the oracle agrees."""
    report = asyncio.run(play_scenario(scenario))  # type: ignore[arg-type]
    assert report.problems == ()
