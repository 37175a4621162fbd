"""Proof that fuzzing can fail: each deliberately broken loop is caught within a bounded campaign, and the
scenario it saves reproduces the failure (and passes with the correct loop)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sim.fuzz.campaign import fuzz, run_example
from sim.player import play_file
from sim.scenario import load_scenario
from tests.properties.broken_loops import BUGS, broken

EXAMPLES = 400  # the bound: every bug below is found well within it


@pytest.mark.parametrize("bug", BUGS)
def test_the_fuzzer_catches_the_bug_and_the_saved_scenario_reproduces_it(bug: str, tmp_path: Path) -> None:
    report = fuzz(examples=EXAMPLES, seed=0, runner_factory=broken(bug), save_dir=tmp_path)
    assert report.failure is not None, f"{bug} was not caught in {EXAMPLES} examples"
    assert report.saved is not None
    found = {v.invariant for v in report.failure.violations}

    scenario = load_scenario(report.saved)
    again = asyncio.run(run_example(scenario, runner_factory=broken(bug)))
    assert {v.invariant for v in again.violations} == found

    correct = asyncio.run(run_example(scenario))
    assert correct.violations == []
    assert asyncio.run(play_file(report.saved)).problems == ()
    assert len(scenario.replies) <= 4, "shrunk to a small script"


def test_the_correct_loop_passes_the_same_campaign(tmp_path: Path) -> None:
    report = fuzz(examples=EXAMPLES, seed=0, save_dir=tmp_path)
    assert report.failure is None
    assert report.runs == EXAMPLES
    assert not list(tmp_path.iterdir())
