"""Drawn tool arguments judged by `jsonschema`, the reference validator, over schemas as real tools write
them: pydantic models (enums, `Literal`, `Optional`, nested models, tuples, bounded lists, dicts, unions,
`$defs`/`$ref`), OpenAPI 3.0 schemas (boolean `exclusiveMaximum`, judged as draft 4) and hand-written ones
(`oneOf`/`anyOf`/`allOf`, `prefixItems`, `uniqueItems`, `pattern`, `multipleOf`, `minProperties`, `const`,
`not`, `if`/`then`). Every valid draw validates; every mistake fails validation as it says."""

from __future__ import annotations

import json
from enum import Enum
from typing import Annotated, Any, Literal

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field

from sim.fuzz.schema_values import arguments, mistaken

FIXED = settings(max_examples=150, deadline=None, database=None, derandomize=True)


class Colour(Enum):
    red = "red"
    green = "green"


class Address(BaseModel):
    model_config = ConfigDict(extra="forbid")
    street: Annotated[str, Field(min_length=1, max_length=40)]
    postcode: Annotated[str, Field(pattern=r"^[0-9]{5}$")]


class Order(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["pickup", "delivery"]
    colour: Colour = Colour.red
    address: Address | None = None
    items: Annotated[list[Annotated[int, Field(ge=1, le=99)]], Field(min_length=1, max_length=4)]
    dimensions: tuple[float, float] = (1.0, 1.0)
    notes: dict[str, str] = {}
    quantity: Annotated[int, Field(multiple_of=5, gt=0, le=50)] = 5
    discount: Annotated[float, Field(ge=0, lt=1)] = 0.0
    tag: int | str = 0


OPENAPI_30 = {  # a tool generated from an OpenAPI 3.0 operation: `exclusiveMaximum` is a boolean there
    "$schema": "http://json-schema.org/draft-04/schema#",
    "type": "object",
    "properties": {
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "exclusiveMaximum": True},
        "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1},
        "sort": {"type": "string", "enum": ["asc", "desc"]},
    },
    "required": ["limit"],
    "additionalProperties": False,
}

HAND_WRITTEN = {
    "type": "object",
    "properties": {
        "point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}], "items": False},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "uniqueItems": True,
                 "minItems": 2, "maxItems": 4},
        "code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3}$"},
        "version": {"const": 2},
        "target": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "integer", "minimum": 0}]},
        "range": {"allOf": [
            {"type": "object", "properties": {"low": {"type": "integer"}}, "required": ["low"]},
            {"properties": {"high": {"type": "integer"}}, "required": ["high"]},
        ]},
        "mode": {"type": "string", "not": {"enum": ["off"]}},
        "step": {"type": "number", "multipleOf": 0.5, "minimum": 0, "maximum": 10},
        "extra": {"type": "object", "minProperties": 2, "additionalProperties": {"type": "integer"}},
    },
    "required": ["code", "target", "range"],
    "if": {"properties": {"version": {"const": 2}}, "required": ["version"]},
    "then": {"required": ["mode"]},
}  # fmt: skip

SCHEMAS = {
    "pydantic": Order.model_json_schema(),
    "openapi-3.0": OPENAPI_30,
    "hand-written": HAND_WRITTEN,
    "open object": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "no properties": {"type": "object"},
}


def judge(schema: dict[str, Any]) -> Any:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


@FIXED
@given(st.data(), st.sampled_from(sorted(SCHEMAS)))
def test_every_valid_draw_validates(data: st.DataObject, name: str) -> None:
    schema = SCHEMAS[name]
    drawn = data.draw(arguments(schema), label="arguments")
    errors = [error.message for error in judge(schema).iter_errors(drawn)]
    assert errors == [], (name, json.dumps(drawn)[:300])


@FIXED
@given(st.data(), st.sampled_from(sorted(SCHEMAS)))
def test_every_mistake_fails_validation_as_it_says(data: st.DataObject, name: str) -> None:
    schema = SCHEMAS[name]
    what, drawn = data.draw(mistaken(schema), label="mistake")
    errors = list(judge(schema).iter_errors(drawn))
    if what == "nothing to get wrong":  # the schema allows any object: a mistake would be valid
        assert errors == [] and schema.get("additionalProperties") is not False
        return
    assert errors, (name, what, drawn)
    said = " ".join(error.message for error in errors)
    if what.startswith("missing "):
        assert f"'{what.removeprefix('missing ')}' is a required property" in said
    elif what == "an extra property":
        assert schema.get("additionalProperties") is False
        assert "Additional properties are not allowed" in said
    else:
        prop, _, kind = what.partition(" not ")
        assert any(list(error.absolute_path)[:1] == [prop] for error in errors), (what, said)
        assert kind in said or "is not of type" in said


@pytest.mark.parametrize(
    "schema",
    [{"type": "integer", "minimum": 10, "maximum": 5}, {"not": {}}, False,
     {"type": "string", "pattern": "(?<"},
     {"type": "object", "properties": {"x": {"type": "integer", "exclusiveMaximum": True, "maximum": 1,
                                              "exclusiveMinimum": True, "minimum": 0}}, "required": ["x"]},
     {"type": "number", "format": "date-time", "x-unknown": {"deep": [1, 2]}}],
)  # fmt: skip
def test_a_schema_with_no_value_or_an_unknown_keyword_never_stops_a_campaign(schema: Any) -> None:
    @settings(max_examples=20, deadline=None, database=None)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        assert isinstance(data.draw(arguments(schema)), dict)
        data.draw(mistaken(schema))

    check()
