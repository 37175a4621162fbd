"""Values for JSON Schemas: drawn valid arguments validate against the model the schema came from (pydantic
writes `$defs`, `$ref`, `anyOf`, enums, bounds), and each drawn mistake fails it."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sim.fuzz.schema_values import arguments, mistaken, valid


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
