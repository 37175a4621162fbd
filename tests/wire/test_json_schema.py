"""Arguments judged against a tool's schema with bounded pattern searches: a catastrophic pattern meeting a
hostile string cannot be judged, and says so, in drift's comparison and in the fuzzer's judge alike;
every other judgment is `jsonschema`'s own."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from sim.fuzz.schema_values import satisfies
from sim.wire import json_schema
from sim.wire.json_schema import UnjudgedPattern, search, validator_class
from tests.hangs import within

HOSTILE = "a" * 40 + "!"
RUNAWAY = "^(a|a)+$"  # 2**40 ways to read forty `a`s, each tried before the `!` fails them


def test_a_runaway_search_stops_and_says_so() -> None:
    with within(10, "a runaway pattern"), pytest.raises(UnjudgedPattern, match="ran past"):
        search(RUNAWAY, HOSTILE)
    assert search(RUNAWAY, "a" * 40) and not search("^(a+)+$", HOSTILE)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": RUNAWAY},
        {"type": "object", "patternProperties": {RUNAWAY: {}}},
        {"type": "object", "patternProperties": {RUNAWAY: {}}, "additionalProperties": False},
        {"type": "object", "properties": {"q": {"anyOf": [{"type": "integer"}, {"pattern": RUNAWAY}]}}},
        {"type": "object", "propertyNames": {"pattern": RUNAWAY}},
    ],
    ids=["pattern", "patternProperties", "additionalProperties", "nested", "propertyNames"],
)
def test_the_fuzzers_judge_cannot_judge_a_runaway_pattern_and_says_the_value_passes(
    schema: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(json_schema, "PATTERN_SECONDS", 0.01)  # the bound itself is shown above, once
    value = HOSTILE if schema["type"] == "string" else {HOSTILE: "x", "q": HOSTILE}
    with within(10, "the fuzzer's judge"):
        assert satisfies(schema, value)  # as for any schema it cannot judge


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"pattern": "^[a-z]+$"}, "abc"),
        ({"pattern": "^[a-z]+$"}, "ab1"),
        ({"patternProperties": {"^x": {"type": "integer"}}}, {"xa": "no", "b": 1}),
        ({"patternProperties": {"^x": {}}, "additionalProperties": False}, {"xa": 1, "b": 1}),
        ({"patternProperties": {"^x": {}}, "additionalProperties": {"type": "string"}}, {"xa": 1, "b": "s"}),
        ({"properties": {"b": {}}, "patternProperties": {"^x": {}}, "additionalProperties": False}, {"b": 1}),
    ],
)
def test_every_other_judgment_is_jsonschemas_own(schema: dict[str, Any], value: Any) -> None:
    plain = jsonschema.Draft202012Validator(schema)
    bounded = validator_class(schema)(schema)
    assert bounded.is_valid(value) == plain.is_valid(value)
    assert [e.path for e in bounded.iter_errors(value)] == [e.path for e in plain.iter_errors(value)]
