"""Recorded conversations asked again of a "live" model that is `sim serve` playing a scenario, in process
(an httpx2 ASGI transport stands where the network would be): the recorded scenario itself answers the
same; copies whose model now picks another tool, adds a parallel call, renames an argument, refuses,
answers early or only rewords are each classed, over both APIs, JSON and SSE, on the bundled cassettes
and on the real corpus."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from sim.cassette.compact import compact_data
from sim.cassette.conversations import conversations
from sim.cassette.convert import runs, scenario_data
from sim.cassette.reader import load_data, read_cassette
from sim.cassette.recording_answerer import RecordingAnswerer, base_path, recording_host
from sim.cassette.writer import to_yaml
from sim.drift import session
from sim.drift.compare import Drift
from sim.drift.session import FileDrift, UpstreamConnection, drift_file
from sim.host.app import Host
from sim.scenario.answerer import ScriptAnswerer, scenario_host
from sim.scenario.schema import Scenario
from tests.corpus import needs_corpus, real_cassettes
from tests.host.in_process import post

ROOT = Path(__file__).resolve().parents[2]
ECHO = yaml.safe_load((ROOT / "scenarios" / "echo-42.yaml").read_text())
CASSETTES = {
    "chat": ROOT / "cassettes" / "echo-42.yaml",
    "responses": ROOT / "cassettes" / "responses" / "echo-42.yaml",
}


def asked(
    cassette: Path, scenario: dict[str, Any] | Scenario, **options: Any
) -> tuple[FileDrift, Host[ScriptAnswerer]]:
    """`cassette` asked again of a simulator playing `scenario`."""
    played = scenario if isinstance(scenario, Scenario) else Scenario.model_validate(scenario)
    simulator = scenario_host(played)
    return asked_of(cassette, simulator.app, **options), simulator


def asked_of(cassette: Path, app: Any, base_path: str = "/v1", **options: Any) -> FileDrift:
    """`cassette` asked again of the ASGI `app`, its API under `base_path`."""

    async def run() -> FileDrift:
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app)) as http:
            upstream = UpstreamConnection(f"http://sim.test{base_path}", {"authorization": "Bearer k"}, http)
            return await drift_file(cassette, upstream, **options)

    return asyncio.run(run())


def streamed(cassette: Path, tmp_path: Path) -> Path:
    """A copy of `cassette` whose requests ask for a stream (the live replies come as SSE)."""
    data = yaml.safe_load(cassette.read_text())
    for interaction in data["interactions"]:
        body = json.loads(interaction["request"]["body"])
        interaction["request"]["body"] = json.dumps({**body, "stream": True})
    copy = tmp_path / f"streamed-{cassette.parent.name}-{cassette.name}"
    copy.write_text(yaml.safe_dump(data, sort_keys=False))
    return copy


def turns(result: FileDrift) -> list[tuple[Drift, str]]:
    return [(turn.compared.drift, turn.compared.why) for c in result.conversations for turn in c.turns]


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("transport", ["json", "sse"])
def test_the_recorded_scenario_answers_the_same(api: str, transport: str, tmp_path: Path) -> None:
    cassette = CASSETTES[api] if transport == "json" else streamed(CASSETTES[api], tmp_path)
    result, simulator = asked(cassette, ECHO)
    assert turns(result) == [(Drift.same, "same"), (Drift.same, "same")]
    assert simulator.answerer.problems == []  # each rebuilt request is as recorded (expect_request holds)
    assert result.requests == 2 and result.worst is Drift.same
    # usage as the API reports it: a Chat stream carries none unless `stream_options.include_usage` asks
    assert (result.usage.total_tokens > 0) is (api == "responses" or transport == "json")
    assert result.conversations[0].stopped is None


def replying(first: dict[str, Any] | None = None, second: dict[str, Any] | None = None) -> dict[str, Any]:
    """The echo-42 scenario with its first and/or second reply replaced."""
    replies = [dict(ECHO["replies"][0]), dict(ECHO["replies"][1])]
    if first is not None:
        replies[0] = first
    if second is not None:
        replies[1] = {**second, "expect_request": ECHO["replies"][1]["expect_request"]}
    return {**ECHO, "replies": replies, "expect": {"outcome": "completed"}}


def calls(*arguments: dict[str, Any], name: str = "shell") -> dict[str, Any]:
    return {
        "tool_calls": [{"id": f"call_{n}", "name": name, "arguments": a} for n, a in enumerate(arguments, 1)]
    }


VARIANTS = {
    "another tool": (
        calls({"path": "x"}, name="read_file"),
        Drift.breaking,
        "adds read_file and drops shell",
    ),
    "a parallel call": (
        calls({"command": "echo 42"}, {"command": "ls"}),
        Drift.breaking,
        "a call adds shell",
    ),
    "a renamed argument": (calls({"cmd": "echo 42"}), Drift.breaking, "fail its schema"),
    "a refusal": ({"refusal": "I can't run commands."}, Drift.breaking, "a refusal"),
    "an early answer": ({"content": "It prints 42."}, Drift.breaking, "answers where the recording called"),
    "other valid arguments": (calls({"command": "echo  42"}), Drift.compatible, "the schema takes them"),
}


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_each_kind_of_drift_on_the_first_turn(api: str, variant: str, tmp_path: Path) -> None:
    first, drift, said = VARIANTS[variant]
    scenario = replying(first)
    cassette = CASSETTES[api] if api == "chat" else streamed(CASSETTES[api], tmp_path)
    result, _ = asked(cassette, scenario)
    found = turns(result)
    assert found[0][0] is drift and said in found[0][1], found
    conversation = result.conversations[0]
    if drift is Drift.breaking:  # the recorded results no longer answer: asked no further
        assert len(found) == 1 and result.requests == 1
        assert (
            conversation.stopped
            == "stopped at turn 1 of 2: the recorded results no longer answer the live reply"
        )
    else:  # the recorded result goes to the live call, and the conversation goes on
        assert [d for d, _ in found] == [Drift.compatible, Drift.same] and conversation.stopped is None


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_only_rewording_is_compatible_drift_with_its_similarity(api: str) -> None:
    result, _ = asked(CASSETTES[api], replying(second={"content": "The command printed 42 for you."}))
    (first, second) = [turn for c in result.conversations for turn in c.turns]
    assert first.compared.drift is Drift.same and second.compared.drift is Drift.compatible
    assert (
        second.compared.similarity == pytest.approx(4 / 6)
        and "67% of the words shared" in second.compared.why
    )
    assert result.worst is Drift.compatible


def test_an_error_from_the_live_model_is_breaking_and_ends_the_conversation() -> None:
    failing = replying({"error": {"status": 500, "message": "The server had an error."}})
    result, _ = asked(CASSETTES["chat"], failing)
    assert turns(result) == [(Drift.breaking, "an error: HTTP 500: The server had an error.")]


def test_max_requests_stops_asking() -> None:
    result, _ = asked(CASSETTES["chat"], ECHO, max_requests=1)
    assert (
        result.requests == 1
        and result.conversations[0].stopped == "stopped before turn 2: --max-requests reached"
    )


def test_an_unreadable_file_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("interactions: [{request: 1}]\n")
    result, _ = asked(broken, ECHO)
    assert result.problem is not None and result.worst is Drift.breaking and result.requests == 0


def one_run(cassette: Path) -> Scenario | None:
    """The scenario that answers as `cassette` recorded (`sim convert`'s), when it holds one run."""
    found = [run for conversation in conversations(read_cassette(cassette)) for run in runs(conversation)]
    if len(found) != 1:
        return None
    return Scenario.model_validate(scenario_data(found[0], name=cassette.stem, source=cassette.name))


@needs_corpus
@pytest.mark.parametrize(
    "cassette", real_cassettes() + real_cassettes("responses"), ids=lambda p: p.name[:60]
)
def test_a_real_recording_asked_of_a_model_that_answers_as_recorded_is_the_same(cassette: Path) -> None:
    """The model is the scenario `sim convert` makes of the recording, or, for a cassette of several runs
    (no one scenario answers them all), `sim serve CASSETTE`: the recording itself."""
    scenario = one_run(cassette)
    if scenario is not None:
        result, simulator = asked(cassette, scenario)
        assert simulator.answerer.problems == []
    else:
        recording = RecordingAnswerer(read_cassette(cassette).interactions, repeat=True)
        result = asked_of(cassette, recording_host(recording).app, base_path(recording.interactions))
        assert recording.problems == []
    assert result.worst is Drift.same, turns(result)
    asked_turns = sum(len(c.turns) for c in result.conversations)
    assert asked_turns == result.requests and (asked_turns > 0 or result.conversations[0].stopped)


def test_a_chained_conversation_names_the_live_response_it_continues() -> None:
    """`cassettes/responses/parallel-calls.yaml` chains through `previous_response_id`; the live model has
    served a request before, so its response ids are not the recorded ones: the next request must name the
    live response (naming the recorded id would continue the other conversation, which the API refuses)."""
    simulator = scenario_host(
        Scenario.model_validate(yaml.safe_load((ROOT / "scenarios" / "parallel-calls.yaml").read_text()))
    )
    cassette = ROOT / "cassettes" / "responses" / "parallel-calls.yaml"
    cycle = scenario_host(simulator.answerer.scenario, cycle=True)

    post(cycle, {"model": "m", "input": "earlier"}, path="/v1/responses")
    cycle.answerer.answered = 0  # the script starts again for the drift run; the store keeps the earlier one
    result = asked_of(cassette, cycle.app)
    assert [drift for drift, _ in turns(result)] == [Drift.same, Drift.same], cycle.answerer.problems
    assert cycle.answerer.problems == [] and result.requests == 2
    sent = [json.loads(exchange.request_body or b"{}") for exchange in result.conversations[0].exchanges]
    recorded = json.loads(read_cassette(cassette).interactions[1].request.body or b"{}")
    assert recorded["previous_response_id"] == "resp_sim000001"
    assert sent[1]["previous_response_id"] == "resp_sim000002"  # the live response, not the recorded one


MAX_TURNS = yaml.safe_load((ROOT / "scenarios" / "max-turns.yaml").read_text())


def compacted(cassette: Path, tmp_path: Path) -> Path:
    """A compact copy of `cassette` (`sim compact`'s form)."""
    copy = tmp_path / f"compact-{cassette.parent.name}-{cassette.name}"
    copy.write_text(to_yaml(compact_data(load_data(cassette))))
    return copy


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("form", ["plain", "compact"])
def test_each_live_reply_stays_in_the_conversation_after_it(
    api: str, form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three turns, the first answered with other (valid) arguments: the requests after it carry that live
    reply, not the recorded one, on a plain cassette and on a compact one (either way, a request that
    appends to the one before is read from its items alone: only the first body is parsed whole)."""
    recorded = ROOT / "cassettes" / ("" if api == "chat" else "responses") / "max-turns.yaml"
    cassette = recorded if form == "plain" else compacted(recorded, tmp_path)
    waiting = {"id": "call_1", "name": "shell", "arguments": {"command": "./deploy-status --wait"}}
    changed = {**MAX_TURNS, "replies": [{"tool_calls": [waiting]}, *MAX_TURNS["replies"][1:]]}
    parsed: list[int] = []
    whole = session._body
    monkeypatch.setattr(session, "_body", lambda exchange: parsed.append(1) or whole(exchange))
    result, simulator = asked(cassette, changed)
    assert [drift for drift, _ in turns(result)] == [Drift.compatible, Drift.same, Drift.same], turns(result)
    assert len(parsed) == 1
    assert simulator.answerer.problems == []
    later = [exchange.request_body or b"" for exchange in result.conversations[0].exchanges[1:]]
    assert all(b"./deploy-status --wait" in body for body in later)  # the live call, at turns 2 and 3
