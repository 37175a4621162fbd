"""Strict mode's rules for function parameters, judged against the schemas the real SDKs make strict (the
OpenAI SDK's `pydantic_function_tool`, openai-agents' `ensure_strict_json_schema`): what they send is taken,
what they would have to change is refused in the API's words, and the Responses API's default makes a
schema strict where it can."""

from __future__ import annotations

from typing import Any, Literal

import openai
import pytest
from agents.strict_schema import ensure_strict_json_schema
from pydantic import BaseModel, Field

from sim.core.strict_schema import strict_by_default, strict_problem


class Location(BaseModel):
    city: str
    unit: Literal["c", "f"] | None = None


class Forecast(BaseModel):
    where: Location
    days: list[int] = []
    stops: list[Location] = Field(default_factory=list)


class Tree(BaseModel):
    name: str
    children: list[Tree] = []


class Search(BaseModel):
    query: str
    limit: int = 10
    mode: Literal["fast", "deep"] | int = "fast"
    pair: tuple[int, str] | None = None


class Free(BaseModel):
    query: str
    extra: dict[str, Any] = {}


MODELS: list[type[BaseModel]] = [Location, Forecast, Tree, Search]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_what_the_sdks_make_strict_is_taken(model: type[BaseModel]) -> None:
    tool: Any = openai.pydantic_function_tool(model)
    assert tool["function"]["strict"] is True
    assert strict_problem(tool["function"]["parameters"]) is None
    assert strict_problem(ensure_strict_json_schema(model.model_json_schema())) is None


@pytest.mark.parametrize("model", [Location, Forecast, Search], ids=lambda m: m.__name__)
def test_a_plain_pydantic_schema_is_refused_and_made_strict_by_default(model: type[BaseModel]) -> None:
    raw = model.model_json_schema()
    assert strict_problem(raw) is not None  # pydantic leaves out additionalProperties (and optionals)
    made = strict_by_default(raw)
    assert made is not None and strict_problem(made) is None
    sdk: Any = openai.pydantic_function_tool(model)["function"]["parameters"]
    assert made["required"] == sdk["required"]  # every property required, as the SDK makes it


def test_a_schema_that_allows_additional_properties_cannot_be_made_strict() -> None:
    assert strict_by_default(Free.model_json_schema()) is None
    assert strict_by_default(Tree.model_json_schema()) is None  # a root `$ref`: the SDKs inline it first
    assert strict_by_default({"type": "object", "properties": {"x": {"type": "object"}}}) is None
    assert strict_by_default({"type": "array", "items": {"type": "string"}}) is None
    assert strict_by_default("not a schema") is None


@pytest.mark.parametrize(
    ("parameters", "said"),
    [
        ({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
         "In context=(), 'additionalProperties' is required to be supplied and to be false."),
        ({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
          "required": ["city"], "additionalProperties": False},
         "In context=(), 'required' is required to be supplied and to be an array including every key in"
         " properties. Missing 'unit'."),
        ({"type": "object", "properties": {}, "required": ["state"], "additionalProperties": False},
         "In context=(), 'required' is required to be supplied and to be an array including every key in"
         " properties. Extra required key 'state' supplied."),
        ({"type": "object", "properties": {"where": {"type": "object", "required": ["city"],
          "properties": {"city": {"type": "string"}}}}, "required": ["where"], "additionalProperties": False},
         "In context=('properties', 'where'), 'additionalProperties' is required to be supplied and to be"
         " false."),
        ({"type": "array", "items": {"type": "string"}},
         "schema must be a JSON Schema of 'type: \"object\"', got 'type: \"array\"'."),
    ],
    ids=["no additionalProperties", "missing required", "extra required", "nested", "not an object"],
)  # fmt: skip
def test_a_refused_schema_is_said_in_the_apis_words(parameters: dict[str, Any], said: str) -> None:
    assert strict_problem(parameters) == said


def test_hostile_schemas_never_crash_the_rules() -> None:
    deep: dict[str, Any] = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
    node = deep
    for _ in range(5_000):
        child: dict[str, Any] = {
            "type": "object",
            "properties": {},
            "required": [],
            "additionalProperties": False,
        }
        node["properties"]["x"], node["required"] = child, ["x"]
        node = child
    assert "nested too deeply" in (strict_problem(deep) or "")
    assert strict_by_default(deep) is None
    odd = {"type": "object", "properties": {"a": 1, "b": None}, "required": "a", "items": [1],
           "anyOf": "x", "$defs": [], "additionalProperties": False}  # fmt: skip
    assert strict_problem(odd) is not None
    strict_by_default(odd)
