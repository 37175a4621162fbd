"""Loops offering custom tools (free-form text, a `regex` grammar, a `lark` apply_patch-like grammar),
fuzzed with `sim fuzz --target`: the careful ones pass the api profile with their calls really answered
(inputs drawn from each grammar, which the API guarantees they match), and each broken twin is found: one
that reads a free-form input as JSON, one that assumes every call is a function call, one that never
answers a `custom_tool_call`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sim.fuzz.target import fuzz_target
from sim.fuzz.terms import Profile
from tests.fuzz import targets

CAREFUL = [targets.uses_custom_tools, targets.uses_custom_tools_responses]
BROKEN = [
    (targets.parses_custom_input_as_json, "crash"),
    (targets.assumes_function_calls, "crash"),
    (targets.drops_custom_calls, "pairing"),
]


@pytest.mark.parametrize("loop", CAREFUL, ids=[loop.__name__ for loop in CAREFUL])
def test_a_careful_loop_with_custom_tools_passes_the_api_profile(loop: Callable[..., Any]) -> None:
    campaign = fuzz_target(loop, examples=40, seed=0, profile=Profile.api)
    assert campaign.violations == []
    assert campaign.failure is None and campaign.vacuous() is None
    assert campaign.unhonoured == set()  # every grammar's inputs were drawn from it
    assert campaign.requests > campaign.runs
    assert campaign.round_trips > 10  # drawn custom calls reached the loop's tools and came back


@pytest.mark.parametrize(("loop", "invariant"), BROKEN, ids=[loop.__name__ for loop, _ in BROKEN])
def test_each_broken_twin_is_found(loop: Callable[..., Any], invariant: str) -> None:
    campaign = fuzz_target(loop, examples=40, seed=0, profile=Profile.api)
    assert campaign.failure is not None, f"{loop.__name__} passed {campaign.runs} runs"
    assert invariant in {violation.invariant for violation in campaign.violations}
