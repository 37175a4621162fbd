"""Fuzzing loops that offer hosted tools, under the api profile: a careful loop offering web search beside a
function passes (the hosted calls drawn in the spec's shapes, cited in the text), its broken twin that takes
`output[0]` for the message is found, and a loop offering an MCP server (whose tool list sim cannot know)
is counted as not simulated, never a finding."""

from __future__ import annotations

from sim.fuzz.findings import findings
from sim.fuzz.target import fuzz_target, replay_target, target_of
from sim.fuzz.terms import Profile
from tests.fuzz import targets


def test_a_careful_loop_offering_web_search_passes_the_api_profile() -> None:
    campaign = fuzz_target(targets.searches_the_web, examples=40, seed=0, profile=Profile.api)
    assert campaign.violations == []
    assert campaign.failure is None and campaign.vacuous() is None
    assert campaign.requests > campaign.runs
    assert campaign.round_trips > 10
    assert campaign.unsimulated == 0


def test_a_loop_that_takes_the_first_item_for_the_message_is_found() -> None:
    campaign = fuzz_target(targets.trusts_the_first_item, examples=40, seed=0, profile=Profile.api)
    assert campaign.failure is not None, f"passed {campaign.runs} runs"
    assert {violation.invariant for violation in campaign.violations} == {"crash"}
    assert "web_search_call" in campaign.violations[0].detail
    again = replay_target(target_of(targets.trusts_the_first_item), campaign.failure.scenario)
    assert "crash" in {violation.invariant for violation in findings(again)}


def test_a_loop_offering_an_mcp_server_is_not_simulated_never_a_finding() -> None:
    campaign = fuzz_target(targets.asks_an_mcp_server, examples=10, seed=0, profile=Profile.api)
    assert campaign.violations == [] and campaign.failure is None
    assert campaign.unsimulated == campaign.runs == 10
    assert "MCP server" in (campaign.vacuous() or "")


def test_an_openai_agents_agent_with_web_search_passes_the_api_profile() -> None:
    from tests.fuzz.hosted_targets import AGENTS_ALLOW, agents_search_the_web

    campaign = fuzz_target(
        agents_search_the_web, examples=30, seed=0, profile=Profile.api, allow=AGENTS_ALLOW
    )
    assert campaign.violations == [] and campaign.failure is None and campaign.vacuous() is None
    assert campaign.round_trips > 10 and campaign.unsimulated == 0


def test_a_loop_that_takes_every_web_search_call_for_a_query_is_found() -> None:
    campaign = fuzz_target(targets.logs_every_query, examples=40, seed=0, profile=Profile.api)
    assert campaign.failure is not None, f"passed {campaign.runs} runs"
    assert {violation.invariant for violation in campaign.violations} == {"crash"}
    assert "AttributeError" in campaign.violations[0].detail
