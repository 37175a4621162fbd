"""Values for JSON Schemas: drawn valid arguments validate against the model the schema came from (pydantic
writes `$defs`, `$ref`, `anyOf`, enums, bounds), and each drawn mistake fails it."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sim.fuzz.schema_values import arguments, mistaken, satisfies, valid


class Unit(StrEnum):
    celsius = "celsius"
    fahrenheit = "fahrenheit"


class Place(BaseModel):
    model_config = ConfigDict(extra="forbid")
    city: Annotated[str, Field(min_length=1, max_length=30)]
    country: str | None = None


class Forecast(BaseModel):
    model_config = ConfigDict(extra="forbid")
    place: Place
    days: Annotated[int, Field(ge=1, le=7)]
    unit: Unit = Unit.celsius
    hourly: bool = False
    stops: Annotated[list[Place], Field(max_length=3)] = []
    ratio: Annotated[float, Field(gt=0, lt=1)] = 0.5


SCHEMA = Forecast.model_json_schema()


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_valid_arguments_validate_against_their_model(data: st.DataObject) -> None:
    Forecast.model_validate_json(json.dumps(data.draw(arguments(SCHEMA))))


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_each_mistake_fails_the_model(data: st.DataObject) -> None:
    what, drawn = data.draw(mistaken(SCHEMA))
    with pytest.raises(ValidationError):  # strict, as the JSON a tool receives ("yes" is no boolean)
        Forecast.model_validate_json(json.dumps(drawn), strict=True)
    assert what.startswith(("missing ", "an extra property")) or " not " in what


@pytest.mark.parametrize(
    "schema",
    [{}, {"type": "object"}, {"type": "string"}, {"anyOf": [{"type": "integer"}, {"type": "null"}]},
     {"$ref": "#/$defs/missing"}, {"type": ["string", "integer"]}, {"not": {}},
     {"type": "array", "items": {}}],
)  # fmt: skip
def test_schemas_with_little_or_unknown_shape_never_crash_and_arguments_are_objects(schema: Any) -> None:
    @settings(max_examples=30, deadline=None)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        data.draw(valid(schema))
        assert isinstance(data.draw(arguments(schema)), dict)

    check()


def test_a_self_referencing_schema_is_bounded() -> None:
    class Node(BaseModel):
        name: str
        children: list[Node] = []

    @settings(max_examples=50, deadline=None)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        Node.model_validate_json(json.dumps(data.draw(arguments(Node.model_json_schema()))))

    check()


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 10**9}}, "required": ["a"]},
        {"type": "object", "properties": {"a": {"type": "array", "minItems": 10**9}}, "required": ["a"]},
    ],
    ids=["minLength", "minItems"],
)
def test_a_schema_asking_for_more_than_can_be_drawn_gets_values_short_of_it(schema: dict[str, Any]) -> None:
    """Drawn, never raised: a campaign offered such a schema (a tool's, a loose response format's) goes on,
    and its draws are judged off the schema (the drawer then notes the tool as unhonoured)."""

    @settings(max_examples=5, database=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def draws(data: st.DataObject) -> None:
        value = data.draw(arguments(schema))
        assert not satisfies(schema, value)

    draws()


@pytest.mark.parametrize(
    "defs",
    [{}, {"x": {"$ref": "#/$defs/y"}, "y": {"$ref": "#/$defs/x"}}],
    ids=["to nothing", "in a cycle"],
)
def test_arguments_of_a_schema_whose_refs_cannot_be_resolved_are_judged_not_raised(
    defs: dict[str, Any],
) -> None:
    """A loose schema a request sends may name what is not there: the judge cannot say, so it says the
    drawn value passes (as for a pattern it cannot judge), rather than ending the campaign."""
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "required": ["a"], "$defs": defs}
    assert satisfies(schema, {"a": 1})
