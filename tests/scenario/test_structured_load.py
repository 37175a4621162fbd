"""A scenario's structured outputs checked when it loads (`sim check`): strict schemas the API refuses, a
scripted text off the strict response format and a strict tool's arguments off its parameters are each one
line saying where; what the API would send loads."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from sim.core.errors import ScenarioError
from sim.player import play_scenario
from sim.scenario import load_scenario
from sim.scenario.schema import Scenario
from sim.wire import Api

HEAD = """\
prompt: p
response_format:
  name: answer
  strict: true
  schema: {type: object, properties: {city: {type: string}}, required: [city], additionalProperties: false}
tools:
  - name: lookup
    strict: true
    parameters:
      {type: object, properties: {city: {type: string}}, required: [city], additionalProperties: false}
"""


def load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(text))
    return load_scenario(path)


def test_what_the_api_would_send_loads(tmp_path: Path) -> None:
    load(tmp_path, HEAD + """\
replies:
  - tool_calls: [{name: lookup, arguments: {city: Paris}}]
  - {tool_calls: [{name: lookup, arguments: '{"ci'}], finish_reason: length}
  - {content: '{"ci', finish_reason: length}
  - refusal: No.
  - content: '{"city": "Paris"}'
""")  # fmt: skip


@pytest.mark.parametrize(
    ("replies", "says"),
    [
        ("  - content: 'Paris'\n",
         "s.yaml:12:14: replies[0].content: does not match the strict response format 'answer' at $: not"
         " JSON"),
        ("  - content: '{\"city\": 5}'\n",
         "s.yaml:12:14: replies[0].content: does not match the strict response format 'answer' at $.city: 5"
         " is not of type 'string'"),
        ("  - tool_calls: [{name: lookup, arguments: {}}]\n",
         "s.yaml:12:44: replies[0].tool_calls[0].arguments: do not match the parameters of strict tool"
         " 'lookup' at $: 'city' is a required property"),
        ("  - tool_calls: [{name: lookup, arguments: '[1]'}]\n",
         "s.yaml:12:44: replies[0].tool_calls[0].arguments: do not match the parameters of strict tool"
         " 'lookup' at $: not a JSON object (a JSON array)"),
    ],
)  # fmt: skip
def test_what_the_api_could_never_send_is_one_line_saying_where(
    tmp_path: Path, replies: str, says: str
) -> None:
    with pytest.raises(ScenarioError) as raised:
        load(tmp_path, HEAD + "replies:\n" + replies)
    assert f"/{says}" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_strict_schema_the_api_refuses_is_refused(tmp_path: Path) -> None:
    text = HEAD.replace("required: [city], additionalProperties: false}\n", "required: [city]}\n", 1)
    with pytest.raises(ScenarioError) as raised:
        load(tmp_path, text + "replies:\n  - content: '{}'\n")
    assert "response_format.schema: Invalid schema for response_format 'answer': " in str(raised.value)
    assert "additionalProperties" in str(raised.value)


def test_a_loose_format_and_a_loose_tool_hold_nothing(tmp_path: Path) -> None:
    text = HEAD.replace("strict: true", "strict: false")
    load(tmp_path, text + "replies:\n  - tool_calls: [{name: lookup, arguments: {}}]\n  - content: words\n")


PLAYED = (
    HEAD
    + """\
results: {call_1: "Paris: sunny"}
replies:
  - tool_calls: [{id: call_1, name: lookup, arguments: {city: Paris}}]
  - content: '{"city": "Paris"}'
"""
)
VIAS = [("direct", Api.chat, False), ("sdk", Api.chat, True), ("sdk", Api.responses, False),
        ("sdk", Api.responses, True)]  # fmt: skip


@pytest.mark.parametrize(("via", "api", "stream"), VIAS)
def test_sims_loop_sends_the_format_and_strict_tools(
    tmp_path: Path, via: Any, api: Api, stream: bool
) -> None:
    """The loop asks each request for the declared format and offers the strict tool as strict: a text off
    the format (which loading would refuse, so the scenario is built without it) is refused when served."""
    path = tmp_path / "s.yaml"
    path.write_text(PLAYED)
    good = asyncio.run(play_scenario(load_scenario(path), path=path, via=via, api=api, stream=stream))
    assert good.passed, good.problems
    data = yaml.safe_load(PLAYED)
    data["replies"][1]["content"] = '{"city": 5}'
    bad = asyncio.run(
        play_scenario(Scenario.model_validate(data), path=path, via=via, api=api, stream=stream)
    )
    assert any("replies[1]'s text fails at $.city: 5 is not of type 'string'" in p for p in bad.problems)
    data["replies"][1]["content"] = '{"city": "Paris"}'
    data["replies"][0]["tool_calls"][0]["arguments"] = {}
    bad = asyncio.run(
        play_scenario(Scenario.model_validate(data), path=path, via=via, api=api, stream=stream)
    )
    assert any("'lookup' is a strict function" in p for p in bad.problems), bad.problems


def test_a_mistyped_key_of_the_format_is_told_by_the_name_the_file_uses(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as raised:
        load(tmp_path, "prompt: p\nresponse_format: {name: a, schemaa: {}}\nreplies: [{content: x}]\n")
    assert "unknown key 'schemaa' (did you mean 'schema'?)" in str(raised.value)
