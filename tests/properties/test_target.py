"""The seeded-bug proof for `sim fuzz --target`: loops on the raw SDK, each with one bug, over real HTTP
to the drawing simulator on 127.0.0.1. Each bug is caught within a bounded campaign and its saved run
reproduces it; the careful loops pass; miswired targets fail clearly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sim.fuzz.findings import findings
from sim.fuzz.target import fuzz_target, replay_target, target_of
from sim.fuzz.terms import Profile
from tests.fuzz import targets

SEEDED = [  # (the loop, the profile that can send what catches it, the finding, the campaign's seed)
    (targets.drops_invalid_json, Profile.api, "pairing", 0),
    (targets.never_stops, Profile.api, "runaway", 0),
    # seed 6: at seeds 0 and 1 the hostile profile's duplicate call ids (a pairing finding) come first
    (targets.crashes_on_non_objects, Profile.hostile, "crash", 6),
    (targets.asks_after_the_answer, Profile.api, "request_after_final", 0),
    (targets.breaks_the_chain, Profile.api, "pairing", 0),
    (targets.chains_without_storing, Profile.api, "pairing", 0),  # a request the API refuses: store false
    (targets.careful_but_drops_invalid_json, Profile.api, "pairing", 0),  # a non-strict tool's arguments
    (targets.trusts_open_responses_arguments, Profile.api, "crash", 0),  # a schema that cannot be strict
]

TRUSTING = [
    targets.requires_a_tool,
    targets.names_its_tool,
    targets.allows_one_tool,
    targets.one_call_at_a_time,
    targets.trusts_strict_arguments,
    targets.trusts_strict_responses_arguments,
    targets.trusts_optional_responses_arguments,
    targets.hands_off,
    targets.responses_hand_off,
    targets.reads_logprobs,
]


@pytest.mark.parametrize(
    ("loop", "profile", "invariant", "seed"), SEEDED, ids=[s[0].__name__ for s in SEEDED]
)
def test_each_seeded_bug_is_caught_and_its_saved_run_reproduces_it(
    loop: Callable[..., Any], profile: Profile, invariant: str, seed: int
) -> None:
    campaign = fuzz_target(loop, examples=60, seed=seed, profile=profile)
    assert campaign.failure is not None, f"{loop.__name__} passed {campaign.runs} runs"
    assert invariant in {violation.invariant for violation in campaign.violations}
    assert all("request " in violation.detail for violation in campaign.violations)
    again = replay_target(target_of(loop), campaign.failure.scenario)
    assert invariant in {violation.invariant for violation in findings(again)}


@pytest.mark.parametrize(
    ("loop", "profile"),
    [
        (targets.careful, Profile.api),
        (targets.retries_after_empty, Profile.api),
        (targets.chains_carefully, Profile.api),
        (targets.crashes_on_non_objects, Profile.api),  # its bug needs what only the hostile profile sends
    ],
    ids=["careful", "retries_after_empty", "chains_carefully", "crashes_on_non_objects-api"],
)
def test_careful_loops_pass_having_really_been_exercised(loop: Callable[..., Any], profile: Profile) -> None:
    campaign = fuzz_target(loop, examples=60, seed=0, profile=profile)
    assert campaign.violations == []
    assert campaign.failure is None and campaign.vacuous() is None
    assert campaign.runs == 60
    assert campaign.requests > campaign.runs  # follow-ups were asked, not only first requests
    assert campaign.round_trips > 20  # drawn calls reached the loop's tool and their results came back


def test_the_hostile_profile_sends_what_the_api_profile_never_does() -> None:
    campaign = fuzz_target(targets.careful, examples=100, seed=0, profile=Profile.hostile)
    assert {violation.invariant for violation in campaign.violations} == {"pairing"}
    assert "must be unique" in campaign.violations[0].detail  # a duplicate call id, answered twice


@pytest.mark.parametrize("loop", TRUSTING, ids=[loop.__name__ for loop in TRUSTING])
def test_loops_that_rely_on_what_the_api_guarantees_pass_the_api_profile(loop: Callable[..., Any]) -> None:
    """Each sends a parameter the API documents a guarantee for (a tool must be called, that tool, one call
    at a time, arguments that match a strict schema) and raises where it does not hold, or hands off as the
    API documents (new instructions and tools, the conversation kept): the api profile draws only what the
    API would send for that request, and a handoff is no `append_only`, so none is a finding."""
    campaign = fuzz_target(loop, examples=30, seed=0, profile=Profile.api)
    assert campaign.violations == [], campaign.violations[0].detail if campaign.violations else ""
    assert campaign.failure is None and campaign.vacuous() is None
    assert campaign.round_trips > 5


def test_a_run_that_asks_for_what_sim_cannot_simulate_is_counted_not_a_finding() -> None:
    """`n: 2` on a follow-up: the API would serve it, sim answers 400 saying it does not; the loop then
    raises (as it would on any 400), and the run is counted as not simulated, never a crash."""
    drawn: list[Any] = []  # what the api profile drew: its 400s (`context_length_exceeded`) the loop raises
    campaign = fuzz_target(targets.asks_for_two_choices_later, examples=60, seed=0, profile=Profile.api,
                           on_draw=lambda _, spec: drawn.append(spec))  # fmt: skip
    refused = [spec for spec in drawn if spec.error is not None and spec.error.status == 400]
    assert campaign.violations == [] and campaign.vacuous() is None
    assert 0 < campaign.unsimulated < campaign.runs
    assert campaign.unsimulated_example is not None and "n must be 1, not 2" in campaign.unsimulated_example
    # sim's own 400 is counted as not simulated, never as what the loop raised (only the drawn 400s are)
    assert campaign.raised["BadRequestError"] == len(refused)


@pytest.mark.parametrize("loop", [targets.requires_a_tool, targets.trusts_strict_arguments],
                         ids=["tool_choice", "strict"])  # fmt: skip
def test_the_hostile_profile_sends_what_it_draws_whatever_the_request_guarantees(
    loop: Callable[..., Any],
) -> None:
    """The hostile profile draws what the API would never send for the request (text where a tool is
    required, a strict function's arguments off its schema): sent as drawn, it reaches the loop, whose
    trust is then found as a crash; the drawer's own draw is never refused as a script mismatch."""
    campaign = fuzz_target(loop, examples=60, seed=0, profile=Profile.hostile)
    details = [violation.detail for violation in campaign.violations]
    assert not any("disagree" in detail for detail in details), details
    assert "crash" in {violation.invariant for violation in campaign.violations}
