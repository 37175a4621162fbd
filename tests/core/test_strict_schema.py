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
    assert strict_problem(deep) == "5000 levels of nesting exceeds limit of 10."  # the API's words
    assert strict_by_default(deep) is None
    odd = {"type": "object", "properties": {"a": 1, "b": None}, "required": "a", "items": [1],
           "anyOf": "x", "$defs": [], "additionalProperties": False}  # fmt: skip
    assert strict_problem(odd) is not None
    strict_by_default(odd)


# The documented subset, keyword by keyword, and the limits (each a rule the API holds: refused in its words)


def closed(**properties: Any) -> dict[str, Any]:
    """A strict object schema with these properties."""
    required = list(properties)
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def test_every_keyword_of_the_documented_subset_is_taken() -> None:
    item = closed(at={"type": "string", "format": "date-time"}, mail={"type": "string", "format": "email"})
    schema = closed(
        code={"type": "string", "pattern": "^[A-Z]{3}$", "description": "A code.", "title": "Code"},
        price={"type": "number", "multipleOf": 0.01, "minimum": 0, "exclusiveMaximum": 1e6, "default": 1},
        count={"type": "integer", "maximum": 9, "exclusiveMinimum": 0},
        tags={"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 1, "maxItems": 3},
        kind={"type": "string", "const": "k"},
        maybe={"anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}]},
        unit={"type": ["string", "null"], "enum": ["c", "f", None]},
        item={"$ref": "#/$defs/Item"},
        tree={"$ref": "#"},  # recursion through the root
        older={"$ref": "#/definitions/Old"},
        pair={"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]},
    )
    schema["$defs"] = {"Item": item}
    schema["definitions"] = {"Old": closed(at={"type": "string", "format": "duration"})}
    assert strict_problem(schema) is None
    assert strict_by_default(schema) == schema


NOT_PERMITTED_EXAMPLES: dict[str, Any] = {
    "allOf": [{"type": "string"}], "oneOf": [{"type": "string"}], "not": {"type": "integer"},
    "if": {"type": "string"}, "then": {"type": "string"}, "else": {"type": "string"},
    "dependentRequired": {"a": ["b"]}, "dependentSchemas": {"a": {"type": "object"}},
    "patternProperties": {"^x": {"type": "string"}}, "propertyNames": {"pattern": "^x"},
    "unevaluatedProperties": False, "minProperties": 1, "maxProperties": 2, "minLength": 1, "maxLength": 9,
    "uniqueItems": True, "contains": {"type": "string"}, "minContains": 1, "maxContains": 2,
}  # fmt: skip


@pytest.mark.parametrize("keyword", sorted(NOT_PERMITTED_EXAMPLES))
def test_a_keyword_outside_the_subset_is_not_permitted(keyword: str) -> None:
    schema = closed(data={"type": "string", keyword: NOT_PERMITTED_EXAMPLES[keyword]})
    assert strict_problem(schema) == f"In context=('properties', 'data'), '{keyword}' is not permitted."
    assert strict_by_default({**schema, "required": []}) is None  # never strict by default either


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        ({**closed(), "allOf": [closed()]}, "In context=(), 'allOf' is not permitted."),
        ({**closed(), "anyOf": [closed(), closed(a={"type": "string"})]},
         "In context=(), 'anyOf' is not permitted."),  # the guide: a root is not anyOf
        (closed(where={"$ref": "#/$defs/Place", "description": "Where."}) | {"$defs": {"Place": closed()}},
         "In context=('properties', 'where'), $ref cannot have keywords {'description'}."),
        (closed(where={"$ref": "#/$defs/P", "default": None, "title": "W"}) | {"$defs": {"P": closed()}},
         "In context=('properties', 'where'), $ref cannot have keywords {'default', 'title'}."),
        (closed(a=closed(b={"type": "string"}), c={"$ref": "#/properties/a"}),
         "In context=('properties', 'c'), reference can only point to definitions defined at the top level of"
         " the schema."),
        (closed(url={"type": "string", "format": "uri"}),
         "In context=('properties', 'url'), 'uri' is not a valid format."),
        (closed(url={"type": ["string", "null"], "format": "uri"}),
         "In context=('properties', 'url', 'type', '0'), 'uri' is not a valid format."),
        (closed(any={}), "In context=('properties', 'any'), schema must have a 'type' key."),
        (closed(fact={"const": "fact"}), "In context=('properties', 'fact'), schema must have a 'type' key."),
        (closed(meta={"type": "object", "additionalProperties": {"type": "string"}}),
         "In context=('properties', 'meta'), object schema missing properties."),
        (closed(ids={"type": "array"}), "In context=('properties', 'ids'), array schema missing items."),
        (closed(ids={"type": "array", "items": {"type": "array"}}),
         "In context=('properties', 'ids', 'items'), array schema missing items."),
        (closed(x={"anyOf": [{"type": "string"}, {"type": "integer", "not": {"const": 1}}]}),
         "In context=('properties', 'x', 'anyOf', '1'), 'not' is not permitted."),
        (closed(x={"type": "string"}) | {"$defs": {"Bad": {"type": "string", "minLength": 2}}},
         "In context=('$defs', 'Bad'), 'minLength' is not permitted."),
        (closed(x=3), "In context=('properties', 'x'), schema must be a JSON Schema object, got int."),
    ],
    ids=["root allOf", "root anyOf", "$ref with description", "$ref with two keywords", "$ref not top level",
         "format uri", "format in a type list", "no type", "const without type", "open map",
         "array without items", "nested array without items", "inside anyOf", "inside $defs", "not a schema"],
)  # fmt: skip
def test_what_strict_mode_refuses_is_said_in_the_apis_words(schema: dict[str, Any], said: str) -> None:
    assert strict_problem(schema) == said


def _nested(levels: int) -> dict[str, Any]:
    """A strict schema whose deepest property is `levels` levels below the root."""
    node: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        node = closed(x=node)
    return node


def test_the_documented_nesting_depth_is_taken_and_one_more_refused() -> None:
    assert strict_problem(_nested(10)) is None
    assert strict_problem(_nested(11)) == "11 levels of nesting exceeds limit of 10."
    items: dict[str, Any] = {"type": "string"}
    for _ in range(11):  # an array's items are a level down too
        items = {"type": "array", "items": items}
    assert strict_problem(closed(deep=items)) == "12 levels of nesting exceeds limit of 10."


def test_the_documented_number_of_properties_is_taken_and_one_more_refused() -> None:
    half = {f"p{n}": {"type": "string"} for n in range(2_500)}
    assert strict_problem(closed(a=closed(**half), b=closed(**half)) | {"$defs": {}}) == (
        "5002 parameters exceeds limit of 5000."
    )
    assert strict_problem(closed(a=closed(**dict(list(half.items())[:2_498])), b=closed(**half))) is None


def test_the_documented_number_of_enum_values_is_taken_and_one_more_refused() -> None:
    numbers = closed(
        a={"type": "integer", "enum": list(range(600))}, b={"type": "number", "enum": list(range(400))}
    )
    assert strict_problem(numbers) is None
    numbers["properties"]["b"]["enum"].append(400)
    assert strict_problem(numbers) == (
        "Expected at most 1000 enum values in total within a single schema when using structured outputs,"
        " but received 1001. Consider reducing the number of enums, or use 'strict: false' to opt out of"
        " structured outputs."
    )


def test_a_large_enum_has_a_string_budget_of_its_own() -> None:
    long = closed(e={"type": "string", "enum": [f"{n:03d}" + "x" * 57 for n in range(251)]})  # 15,060 chars
    assert strict_problem(long) == (
        "Expected at most 15000 total characters across enum values when there are more than 250 enum values,"
        " but received 15060. Consider reducing the number of enums, or use 'strict: false' to opt out of"
        " structured outputs."
    )
    fewer = closed(e={"type": "string", "enum": [f"{n:03d}" + "x" * 97 for n in range(250)]})  # 25,000: 250
    assert strict_problem(fewer) is None


def test_names_enum_and_const_values_share_one_string_budget() -> None:
    names = {"n" * 30_000 + str(n): {"type": "string"} for n in range(3)}
    within = closed(**names) | {"$defs": {"D" * 29_000: closed()}}
    assert strict_problem(within) is None  # 90,003 + 29,000 characters
    exactly = within | {"properties": {**names, "k": {"type": "string", "const": "c" * 996}}}
    exactly["required"] = [*names, "k"]
    assert strict_problem(exactly) is None  # 120,000 characters: the budget, spent
    over = exactly | {"properties": {**names, "k": {"type": "string", "const": "c" * 997}}}
    assert strict_problem(over) == (
        "Expected at most 120000 total characters across property names, definition names, enum values and"
        " const values within a single schema when using structured outputs, but received 120001."
        " Consider reducing the number of enums, or use 'strict: false' to opt out of structured outputs."
    )


def test_unicode_names_are_names_like_any_other() -> None:
    assert strict_problem(closed(**{"天気": {"type": "string"}, "🌡️": {"type": "number"}})) is None
    missing = {"type": "object", "properties": {"天気": {"type": "string"}}, "required": [],
               "additionalProperties": False}  # fmt: skip
    assert strict_problem(missing) == (
        "In context=(), 'required' is required to be supplied and to be an array including every key in"
        " properties. Missing '天気'."
    )


# Responses' default: strict only where the schema can be, by the same rules


@pytest.mark.parametrize(
    "parameters",
    [
        {"type": "object", "properties": {"x": {"type": "string", "allOf": [{"type": "string"}]}}},
        {"type": "object", "properties": {"x": {"type": "string", "format": "uri"}}},
        {"type": "object", "properties": {"x": {"type": "string", "minLength": 1}}},
        {"type": "object", "properties": {"x": {"$ref": "#/$defs/X", "description": "An x."}},
         "$defs": {"X": {"type": "object", "properties": {}}}},
        {"type": "object", "properties": {"x": {"type": "integer", "enum": list(range(1_001))}}},
        {"type": "object", "properties": {"x": _nested(10)}},
    ],
    ids=["allOf", "format uri", "minLength", "$ref with description", "too many enum values", "too deep"],
)  # fmt: skip
def test_a_schema_outside_the_subset_is_not_made_strict_by_default(parameters: dict[str, Any]) -> None:
    assert strict_by_default(parameters) is None  # the API falls back to best effort: nothing is promised


def test_a_schema_inside_the_subset_is_made_strict_by_default() -> None:
    inner = {"type": "object", "properties": {"z": {"type": "integer"}}}
    parameters = {"type": "object", "properties": {"x": {"type": "string", "format": "email"},
                  "y": {"$ref": "#/$defs/Y"}}, "$defs": {"Y": inner}}  # fmt: skip
    made = strict_by_default(parameters)
    assert made is not None and strict_problem(made) is None
    assert made["required"] == ["x", "y"] and made["$defs"]["Y"]["required"] == ["z"]


# Hostile schemas: each judged in time proportional to its size, without recursion


def test_ten_thousand_levels_of_every_nesting_keyword_never_recurse() -> None:
    for wrap in (lambda node: closed(x=node), lambda node: {"type": "array", "items": node},
                 lambda node: {"anyOf": [node, {"type": "null"}]}):  # fmt: skip
        node: dict[str, Any] = {"type": "string"}
        for _ in range(10_000):
            node = wrap(node)
        root = node if node.get("type") == "object" else closed(deep=node)
        problem = strict_problem(root)
        assert problem is None or isinstance(problem, str)
        assert strict_by_default(root) is None or strict_problem(strict_by_default(root)) is None
    assert strict_problem(_nested(10_000)) == "10000 levels of nesting exceeds limit of 10."


def test_cycles_end() -> None:
    root = closed(me={"$ref": "#"}, list={"type": "array", "items": {"$ref": "#"}})
    assert strict_problem(root) is None
    itself: dict[str, Any] = closed()
    itself["properties"]["again"] = itself  # a Python schema holding itself (JSON cannot)
    itself["required"] = ["again"]
    assert strict_problem(itself) is None or isinstance(strict_problem(itself), str)
    assert strict_by_default({"type": "object", "properties": {"me": {"$ref": "#"}}}) is not None


def test_a_huge_schema_is_judged_quickly() -> None:
    import time

    wide = closed(**{f"p{n}": {"type": "string", "enum": ["a"]} for n in range(50_000)})
    started = time.perf_counter()
    assert strict_problem(wide) == "50000 parameters exceeds limit of 5000."
    assert time.perf_counter() - started < 10  # linear: a quadratic walk would take minutes


@pytest.mark.parametrize(
    "schema",
    [None, 3, "object", [], {"type": "object", "properties": []}, {"type": "object", "properties": {1: 2}},
     {"type": "object", "properties": {}, "required": [[]], "additionalProperties": False},
     closed(x={"type": "string", "format": ["date"]}), closed(x={"type": "string", "enum": "abc"}),
     closed(x={"$ref": 7}), closed(x={"$ref": "#/$defs/missing"}), closed(x={"type": {"a": 1}}),
     closed(x={"type": "array", "items": [{"type": "string"}]}), closed(x={"anyOf": {"type": "string"}})],
)  # fmt: skip
def test_malformed_schemas_are_judged_without_crashing(schema: Any) -> None:
    problem = strict_problem(schema)
    assert problem is None or isinstance(problem, str)
    strict_by_default(schema)


def test_a_kept_judgement_follows_the_schema_not_the_object() -> None:
    schema = closed(x={"type": "string"})
    assert strict_problem(schema) is None
    schema["properties"]["x"]["minLength"] = 1  # the same object, changed: judged anew
    assert strict_problem(schema) == "In context=('properties', 'x'), 'minLength' is not permitted."
    parameters = {"type": "object", "properties": {"x": {"type": "string"}}}
    first = strict_by_default(parameters)
    assert first is not None
    first["properties"]["x"]["type"] = "integer"  # a caller's copy is its own
    assert strict_by_default(parameters) == closed(x={"type": "string"})
