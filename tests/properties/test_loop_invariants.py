"""The loop's invariants over drawn hostile scripts: the real `AgentRunner` asking the scenario's script
directly, and (fewer examples) through the real adapter and SDK against the script served in process; and
the two clients hand the loop the same run."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings

from sim.fuzz.campaign import run_example
from sim.fuzz.strategies import scenarios
from sim.player import play_scenario
from sim.scenario.schema import Scenario

FIXED = settings(deadline=None, database=None, derandomize=True)


@settings(FIXED, max_examples=300)
@given(scenarios())
def test_invariants_hold_for_agent_runner(scenario: Scenario) -> None:
    run = asyncio.run(run_example(scenario))
    assert run.violations == []


@settings(FIXED, max_examples=60)
@given(scenarios())
def test_invariants_hold_through_the_sdk_and_the_simulator(scenario: Scenario) -> None:
    run = asyncio.run(run_example(scenario, via="sdk"))
    assert run.violations == []


@settings(FIXED, max_examples=150)
@given(scenarios())
def test_drawn_scenarios_are_complete_tests_that_sim_play_passes(scenario: Scenario) -> None:
    """The world fits the script exactly (strict fakes find nothing unused) and the oracle agrees."""
    report = asyncio.run(play_scenario(scenario))
    assert report.problems == ()


@settings(FIXED, max_examples=60)
@given(scenarios())
def test_both_clients_give_the_loop_the_same_run(scenario: Scenario) -> None:
    """Asked directly or through the real SDK over the host, the script hands the loop the same replies
    and errors: the same transcript, line for line, and the same verdict."""
    direct, sdk = (asyncio.run(play_scenario(scenario, via=via)) for via in ("direct", "sdk"))
    assert direct.transcript == sdk.transcript
    assert (direct.outcome, direct.turns, direct.problems) == (sdk.outcome, sdk.turns, sdk.problems)
