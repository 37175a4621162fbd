"""Agents on openai-agents and pydantic-ai that ask for structured output (`output_type`), fuzzed with
`sim fuzz --target` under the api profile: a careful one, whose format is strict, passes with its answers
parsed (the API's completed text always matches a strict schema); a broken twin that parses text it only
asked for in words is found."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sim.fuzz.target import fuzz_target
from sim.fuzz.terms import Profile
from tests.fuzz import framework_targets as targets

CAREFUL = [
    (targets.agents_forecast, targets.AGENTS_ALLOW),
    (targets.agents_forecast_chat, targets.AGENTS_ALLOW),
    (targets.pydantic_ai_forecast, targets.PYDANTIC_AI_ALLOW),
    (targets.pydantic_ai_forecast_responses, targets.PYDANTIC_AI_ALLOW),
]


@pytest.mark.parametrize(("loop", "allow"), CAREFUL, ids=[loop.__name__ for loop, _ in CAREFUL])
def test_an_agent_with_a_strict_output_type_passes_the_api_profile(
    loop: Callable[..., Any], allow: tuple[str, ...]
) -> None:
    """What the framework raises is allowed only because a cut, filtered or refused reply can make it raise
    live; a completed answer off the schema (which the API never sends) would make it raise in most runs,
    so most runs must end with the answer parsed."""
    campaign = fuzz_target(loop, examples=30, seed=0, profile=Profile.api, allow=allow)
    assert campaign.violations == [], campaign.violations[0].detail if campaign.violations else ""
    assert campaign.failure is None and campaign.vacuous() is None
    assert campaign.round_trips > 5
    raised = sum(campaign.raised.values())
    assert raised <= campaign.runs // 2, f"{raised} of {campaign.runs} runs raised: {dict(campaign.raised)}"


@pytest.mark.parametrize(
    ("loop", "allow"),
    [
        (targets.agents_trusts_prompted_json, targets.AGENTS_ALLOW),
        (targets.pydantic_ai_trusts_prompted_json, targets.PYDANTIC_AI_ALLOW),
    ],
    ids=["openai-agents", "pydantic-ai"],
)
def test_an_agent_that_parses_unpromised_json_is_found(
    loop: Callable[..., Any], allow: tuple[str, ...]
) -> None:
    campaign = fuzz_target(loop, examples=30, seed=0, profile=Profile.api, allow=allow)
    assert campaign.failure is not None, f"{loop.__name__} passed {campaign.runs} runs"
    assert "crash" in {violation.invariant for violation in campaign.violations}
