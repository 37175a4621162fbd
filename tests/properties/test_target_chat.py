"""Fuzz campaigns of Chat loops that lean on a forced named `tool_choice` or the deprecated `functions`
(issue items 8 and 9): the careful loop passes the api profile, having really made round trips; each broken
twin is found, and its saved run reproduces the finding."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sim.fuzz.findings import findings
from sim.fuzz.target import fuzz_target, replay_target, target_of
from sim.fuzz.terms import Profile
from tests.fuzz import targets
from tests.fuzz.test_target import fuzz

CAREFUL = [targets.forces_its_tool, targets.calls_legacy_functions]
BROKEN = [  # (the loop, the finding that shows its bug)
    (targets.dispatches_on_finish_reason, "crash"),  # drops the forced call, which ends `stop`
    (targets.legacy_reads_tool_calls, "crash"),  # never sees a function call
    (targets.legacy_answers_with_tool_messages, "pairing"),  # the API refuses tool messages with functions
]


@pytest.mark.parametrize("loop", CAREFUL, ids=[loop.__name__ for loop in CAREFUL])
def test_the_careful_loop_passes_the_api_profile(loop: Callable[..., Any]) -> None:
    campaign = fuzz_target(loop, examples=40, seed=0, profile=Profile.api)
    assert campaign.violations == [], campaign.violations[0].detail if campaign.violations else ""
    assert campaign.failure is None and campaign.vacuous() is None
    assert campaign.requests > campaign.runs
    assert campaign.round_trips > 10  # drawn calls reached the loop and their results came back


@pytest.mark.parametrize(("loop", "invariant"), BROKEN, ids=[loop.__name__ for loop, _ in BROKEN])
def test_the_broken_twin_is_found(loop: Callable[..., Any], invariant: str) -> None:
    campaign = fuzz_target(loop, examples=40, seed=0, profile=Profile.api)
    assert campaign.failure is not None, f"{loop.__name__} passed {campaign.runs} runs"
    assert invariant in {violation.invariant for violation in campaign.violations}
    again = replay_target(target_of(loop), campaign.failure.scenario)
    assert invariant in {violation.invariant for violation in findings(again)}


def test_the_legacy_loop_sees_function_calls_and_answers_them_under_the_hostile_profile() -> None:
    """Whatever the hostile profile draws, a legacy reply holds one call at most, in `function_call`."""
    campaign = fuzz_target(targets.calls_legacy_functions, examples=30, seed=0, profile=Profile.hostile)
    assert campaign.round_trips > 0
    assert all(v.invariant != "crash" for v in campaign.violations), campaign.violations


def test_a_campaign_whose_calls_were_never_answered_says_so() -> None:
    """No invariant breaks when a loop takes a function call for its answer and stops (an extractor may end
    on a call), but the summary no longer says only that every invariant held: it says no call came back."""
    quiet = fuzz_target(targets.legacy_never_sees_its_calls, examples=30, seed=0, profile=Profile.api)
    assert quiet.violations == [] and quiet.round_trips == 0 and quiet.calling_runs > 0
    note = quiet.unanswered_note()
    assert note is not None and "message.function_call" in note
    careful = fuzz_target(targets.calls_legacy_functions, examples=20, seed=0, profile=Profile.api)
    assert careful.calling_runs > 0 and careful.unanswered_note() is None


def test_the_cli_says_no_call_was_answered() -> None:
    done = fuzz("--target", "tests.fuzz.targets:legacy_never_sees_its_calls", "--examples", "15")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 tool calls answered" in done.stdout
    assert "got tool calls, and the target never sent one result back" in done.stdout
