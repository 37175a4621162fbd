"""Structured outputs under `sim fuzz --target`: careful `.parse()` loops over both APIs (a strict format
and a strict function, refusals and cut replies handled) pass the api profile, which draws every finished
text from the strict format's schema; a loop that trusts a format that is not strict is found."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sim.fuzz.findings import findings
from sim.fuzz.target import fuzz_target, replay_target, target_of
from sim.fuzz.terms import Profile
from tests.fuzz import targets

CAREFUL = [targets.parses_chat, targets.parses_responses]


@pytest.mark.parametrize("loop", CAREFUL, ids=[loop.__name__ for loop in CAREFUL])
def test_careful_parse_loops_pass_the_api_profile(loop: Callable[..., Any]) -> None:
    """Before, a finished text drawn as plain words made `.parse()` raise: a `crash` the API never causes."""
    campaign = fuzz_target(loop, examples=40, seed=0, profile=Profile.api)
    assert campaign.violations == [], campaign.violations[0].detail if campaign.violations else ""
    assert campaign.failure is None and campaign.vacuous() is None
    assert campaign.requests > campaign.runs  # follow-ups were asked
    assert campaign.round_trips > 5  # strict calls reached the loop's tool and their results came back


def test_a_loop_trusting_a_loose_format_is_found() -> None:
    campaign = fuzz_target(targets.trusts_a_loose_format, examples=60, seed=0, profile=Profile.api)
    assert campaign.failure is not None, f"passed {campaign.runs} runs"
    assert "crash" in {violation.invariant for violation in campaign.violations}
    again = replay_target(target_of(targets.trusts_a_loose_format), campaign.failure.scenario)
    assert "crash" in {violation.invariant for violation in findings(again)}
