"""Hosted tools' items drawn under the api profile: only in the spec's shapes (each drawn reply loads as a
scenario reply and is served as the spec has it), never for a request that offers no hosted tool, and an
MCP server or an image (what sim cannot make up) not simulated."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.core.messages import UserMessage
from sim.core.model import ModelRequest
from sim.fuzz.hosted import NotSimulated, draw_hosted
from sim.fuzz.replies import ReplyDrawer
from sim.fuzz.terms import Profile
from sim.scenario.answerer import scenario_host
from sim.scenario.schema import Scenario, ScriptedReplySpec
from sim.wire.tool_choice import ReplyTerms
from tests.host.in_process import post
from tests.spec import untolerated

DRAWABLE = ({"type": "web_search_preview"}, {"type": "file_search", "vector_store_ids": ["vs_1"]},
            {"type": "code_interpreter", "container": "cntr_1"})  # fmt: skip
INCLUDE = ["web_search_call.action.sources", "file_search_call.results", "code_interpreter_call.outputs"]


@settings(max_examples=30, deadline=None)
@given(
    st.data(), st.sampled_from([ScriptedReplySpec(content="Sunny in Paris."), ScriptedReplySpec(content="")])
)
def test_drawn_hosted_items_load_and_are_served_in_the_specs_shapes(
    data: Any, spec: ScriptedReplySpec
) -> None:
    drawn = draw_hosted(data, DRAWABLE, spec)
    again = ScriptedReplySpec.model_validate(drawn.model_dump(mode="json", exclude_defaults=True))
    sim = scenario_host(Scenario(replies=[again]))
    body = {"model": "m", "input": "p", "tools": list(DRAWABLE), "include": INCLUDE}
    (response,) = post(sim, body, path="/v1/responses")
    assert response.status_code == 200, response.text
    assert untolerated("Response", response.json()) == []
    if drawn.annotations:
        (message,) = [item for item in response.json()["output"] if item["type"] == "message"]
        assert message["content"][0]["annotations"][0]["type"] == "url_citation"


@pytest.mark.parametrize(
    ("tool", "why"),
    [
        ({"type": "mcp", "server_label": "wiki", "server_url": "https://x"}, "MCP server"),
        ({"type": "image_generation"}, "image"),
    ],
)
def test_what_sim_cannot_make_up_is_not_simulated(tool: dict[str, Any], why: str) -> None:
    @settings(max_examples=20, deadline=None)
    @given(st.data())
    def draws(data: Any) -> None:
        draw_hosted(data, [tool], ScriptedReplySpec(content="ok"))

    with pytest.raises(NotSimulated, match=why):
        draws()


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_a_request_without_hosted_tools_gets_no_hosted_items(data: Any) -> None:
    drawer = ReplyDrawer(data, Profile.api)
    spec = drawer.draw(ModelRequest([UserMessage(content="p")], ()), ReplyTerms())
    assert spec.hosted == [] and spec.annotations == []


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_a_hosted_tool_that_tool_choice_forces_is_always_drawn(data: Any) -> None:
    drawer = ReplyDrawer(data, Profile.api)
    terms = ReplyTerms(hosted=DRAWABLE, hosted_choice="file_search")
    spec = drawer.draw(ModelRequest([UserMessage(content="p")], ()), terms)
    if spec.error is None and not spec.malformed:
        assert [entry["type"] for entry in spec.hosted] == ["file_search_call"]
