"""What the drawer draws for a request that asks for a text format: under the api profile every finished
text matches a strict format's schema (or is a JSON object in `json_object` mode), never empty; a format
that is not strict gets text off its schema now and then; a length cut is drawn cut."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.core.messages import UserMessage
from sim.core.model import ModelRequest
from sim.fuzz.replies import ReplyDrawer
from sim.fuzz.schema_values import satisfies
from sim.fuzz.terms import Profile
from sim.wire.tool_choice import ReplyTerms

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["city", "days"],
          "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}}  # fmt: skip
REQUEST = ModelRequest([UserMessage(content="p")])


def finished_texts(data: st.DataObject, terms: ReplyTerms, profile: Profile = Profile.api) -> list[Any]:
    """The texts of the finished replies drawn for three requests."""
    drawer = ReplyDrawer(data, profile)
    drawn = [drawer.draw(REQUEST, terms) for _ in range(3)]
    return [spec.content for spec in drawn if spec.content is not None and spec.finish() == "stop"
            and spec.error is None and not spec.malformed and spec.cut_after_chunks is None]  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_every_finished_text_matches_a_strict_format(data: st.DataObject) -> None:
    for text in finished_texts(data, ReplyTerms(text_schema=SCHEMA)):
        assert satisfies(SCHEMA, json.loads(text)), text


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_json_object_mode_draws_json_objects(data: st.DataObject) -> None:
    for text in finished_texts(data, ReplyTerms(json_object=True)):
        assert isinstance(json.loads(text), dict), text


def test_a_loose_format_gets_text_off_its_schema_now_and_then() -> None:
    seen: set[bool] = set()

    @settings(max_examples=150, deadline=None, database=None)
    @given(st.data())
    def draw(data: st.DataObject) -> None:
        for text in finished_texts(data, ReplyTerms(text_wanted=SCHEMA)):
            try:
                seen.add(satisfies(SCHEMA, json.loads(text)))
            except ValueError:
                seen.add(False)

    draw()
    assert seen == {True, False}


def test_a_length_cut_under_a_strict_format_is_drawn_and_cut() -> None:
    cuts: list[str] = []

    @settings(max_examples=200, deadline=None, database=None)
    @given(st.data())
    def draw(data: st.DataObject) -> None:
        spec = ReplyDrawer(data, Profile.api).draw(REQUEST, ReplyTerms(text_schema=SCHEMA))
        if spec.finish() == "length" and spec.content:
            cuts.append(spec.content)

    draw()
    assert cuts and all(cut.startswith("{") for cut in cuts)
