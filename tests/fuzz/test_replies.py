"""Replies drawn per request: under the `api` profile only what the real API sends for that request (unique
call ids, object, cut or non-JSON arguments, offered tools or plausible hallucinated ones; a call where
`tool_choice` requires one, one call when calls may not come in parallel, a strict function's schema),
under `hostile` everything."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.core.messages import UserMessage
from sim.core.model import ModelRequest, ToolSpec
from sim.core.strict_schema import strict_by_default
from sim.fuzz.replies import ReplyDrawer, kind_of
from sim.fuzz.terms import Profile
from sim.wire.tool_choice import ReplyTerms, ToolChoice

PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER = ToolSpec("get_weather", "The weather.", PARAMETERS)
REQUEST = ModelRequest([UserMessage(content="Weather?")], (WEATHER,))


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_api_profile_draws_only_what_the_api_sends(data: st.DataObject) -> None:
    drawer = ReplyDrawer(data, Profile.api)
    ids: list[str] = []
    for _ in range(6):
        reply = drawer.draw(REQUEST)
        assert not reply.malformed
        # a stream fails as the API fails one (a 500 `server_error`: `response.failed`, Chat's error frame)
        assert reply.error is None or (
            reply.error.status in (429, 500, 503)
            and (not reply.error.in_stream or reply.error.code == "server_error")
        )
        for call in reply.tool_calls:
            assert call.id is not None
            ids.append(call.id)
            if isinstance(call.arguments, str):  # JSON cut at the token limit, or not JSON (non-strict)
                try:
                    json.loads(call.arguments)
                except ValueError:
                    pass
                else:
                    raise AssertionError(f"text arguments parse: {call.arguments!r}")
            else:
                assert isinstance(call.arguments, dict)
    assert len(ids) == len(set(ids))


TIME = ToolSpec("get_time", "The time.", PARAMETERS)
TWO = ModelRequest([UserMessage(content="Weather?")], (WEATHER, TIME))


def _terms(**given: object) -> ReplyTerms:
    return ReplyTerms(**given)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(
    st.data(), st.sampled_from(["required", "named", "allowed", "none", "single", "strict", "strict single"])
)
def test_the_api_profile_keeps_what_the_request_is_guaranteed(data: st.DataObject, terms_of: str) -> None:
    terms = {
        "required": _terms(choice=ToolChoice(required=True)),
        "named": _terms(choice=ToolChoice(required=True, allowed=frozenset({"get_time"}), named="get_time")),
        "allowed": _terms(choice=ToolChoice(allowed=frozenset({"get_time"}))),
        "none": _terms(choice=ToolChoice(forbidden=True)),
        "single": _terms(parallel=False),
        "strict": _terms(strict={"get_weather": PARAMETERS, "get_time": PARAMETERS}),
        "strict single": _terms(strict={"get_weather": PARAMETERS, "get_time": PARAMETERS}, parallel=False),
    }[terms_of]
    drawer = ReplyDrawer(data, Profile.api)
    for _ in range(5):
        reply = drawer.draw(TWO, terms)
        names = [call.name for call in reply.tool_calls]
        transport = reply.error is not None or reply.cut_after_chunks is not None
        if terms.choice.required and not transport:
            assert names and set(names) <= {tool.name for tool in TWO.tools}, reply  # offered, none made up
        assert terms.choice.permits(names) or (terms.choice.required and not names and transport), reply
        if not terms.parallel:
            assert len(names) <= 1
        # strict arguments are guaranteed one call at a time (`sim.wire.guarantees.PARALLEL_STRICT`)
        guaranteed = reply.finish_reason != "length" and (len(names) == 1 or not terms.parallel)
        for call in reply.tool_calls:
            if call.name in terms.strict and guaranteed:
                assert isinstance(call.arguments, dict) and isinstance(call.arguments.get("city"), str), reply


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_request_without_tools_is_never_answered_with_calls(data: st.DataObject) -> None:
    drawer = ReplyDrawer(data, Profile.hostile)
    for _ in range(4):
        assert not drawer.draw(ModelRequest([UserMessage(content="Hi")])).tool_calls


def test_the_hostile_profile_draws_what_the_api_profile_never_does() -> None:
    seen: set[str] = set()

    @settings(max_examples=400, deadline=None, database=None)
    @given(st.data())
    def collect(data: st.DataObject) -> None:
        drawer = ReplyDrawer(data, Profile.hostile)
        ids: list[str] = []
        for _ in range(5):
            reply = drawer.draw(REQUEST)
            seen.add(kind_of(reply))
            if reply.error is not None and reply.error.in_stream:
                seen.add("in_stream")
            for call in reply.tool_calls:
                if call.id in ids:
                    seen.add("reused_id")
                ids.append(call.id or "")
                if isinstance(call.arguments, str) and call.arguments in (
                    '["Paris"]',
                    '"Paris"',
                    "42",
                    "null",
                    "true",
                ):
                    seen.add("not_object")

    collect()
    assert {"malformed", "in_stream", "reused_id", "not_object", "calls", "final", "error", "cut"} <= seen


OPTIONAL = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["city"]}  # fmt: skip
UNMEETABLE = {"type": "object", "properties": {"code": {"type": "string", "not": {"type": "string"}}},
              "required": ["code"]}  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_a_strict_function_is_drawn_from_the_schema_the_api_enforces(data: st.DataObject) -> None:
    # the Responses API makes a function that leaves `strict` out strict: every property then required
    enforced = strict_by_default(OPTIONAL)
    assert enforced is not None
    request = ModelRequest([UserMessage(content="Weather?")], (ToolSpec("get_weather", "", OPTIONAL),))
    drawer = ReplyDrawer(data, Profile.api)
    for _ in range(4):
        reply = drawer.draw(request, _terms(strict={"get_weather": enforced}))
        for call in reply.tool_calls:
            if reply.finish_reason != "length" and len(reply.tool_calls) == 1:  # in parallel: not guaranteed
                assert isinstance(call.arguments, dict) and set(call.arguments) == {"city", "unit"}, reply
    assert not drawer.unhonoured


def test_a_schema_the_generator_cannot_meet_is_noted_and_a_strict_call_is_cut() -> None:
    request = ModelRequest([UserMessage(content="Code?")], (ToolSpec("get_code", "", UNMEETABLE),))
    seen: dict[str, set[str]] = {"strict": set(), "loose": set()}
    unhonoured: set[str] = set()

    @settings(max_examples=150, deadline=None, database=None)
    @given(st.data(), st.sampled_from(["strict", "loose"]))
    def collect(data: st.DataObject, how: str) -> None:
        drawer = ReplyDrawer(data, Profile.api)
        terms = _terms(  # one call at a time: a strict schema is guaranteed only then
            choice=ToolChoice(required=True), strict={"get_code": UNMEETABLE} if how == "strict" else {},
            parallel=how != "strict",
        )  # fmt: skip
        reply = drawer.draw(request, terms)
        unhonoured.update(drawer.unhonoured)
        if reply.tool_calls and reply.cut_after_chunks is None and reply.error is None:
            seen[how].add("cut" if reply.finish_reason == "length" else "whole")
            if how == "strict":
                assert reply.finish_reason == "length", reply  # never a whole call off a strict schema

    collect()
    assert unhonoured == {"get_code"}
    assert seen["strict"] == {"cut"}
    assert "whole" in seen["loose"]  # a function that is not strict may get arguments off its schema
