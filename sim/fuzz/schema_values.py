"""Values for a tool's JSON Schema, as hypothesis strategies: arguments that satisfy it, and each kind of
mistake a model makes against it (a required property left out, a property of the wrong type, a property
the schema does not allow).

Covers what tool schemas use: `type`, `properties`, `required`, `additionalProperties`, `min`/`maxProperties`,
`items`, `prefixItems`, `min`/`maxItems`, `uniqueItems`, `enum`, `const`, `anyOf`/`oneOf`/`allOf`, string
lengths and `pattern`, numeric bounds (OpenAPI 3.0's boolean `exclusiveMaximum` too) and `multipleOf`, and
local `$ref`s as pydantic writes them. What a value must also satisfy beyond that (`not`, `if`/`then`/`else`,
a `oneOf` whose branches overlap, formats) is checked with `jsonschema`, the reference validator: drawn
values it refuses are drawn again, a few times. A keyword neither knows, or a schema with no value at all,
never crashes a campaign (a value then misses a constraint). Past a few levels of nesting only what is
required is drawn, so recursive schemas stay small.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from referencing.exceptions import Unresolvable

from sim.wire.json_schema import UnjudgedPattern, validator_class, validator_of

_MAX_DEPTH = 4
_SCALARS = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=12)
_WRONG = {
    "string": st.integers(-5, 5),
    "integer": st.text(max_size=6),
    "number": st.text(max_size=6),
    "boolean": st.sampled_from(["yes", "true", 1]),
    "array": st.text(max_size=6),
    "object": st.text(max_size=6),
    "null": st.integers(0, 3),
}
_CHECKED = frozenset({"not", "if", "then", "else", "format", "dependentRequired", "dependentSchemas",
                      "propertyNames", "patternProperties", "contains", "unevaluatedProperties"})  # fmt: skip
"""Keywords whose values are drawn without them and then checked by `jsonschema`."""


def _resolved(schema: Any, root: dict[str, Any]) -> dict[str, Any]:
    for _ in range(_MAX_DEPTH * 4):
        if schema is False:
            return {"not": {}}  # no value at all
        if not isinstance(schema, dict):
            return {}  # `true`, a reference to nothing, not a schema: anything
        reference = schema.get("$ref")
        if not isinstance(reference, str) or not reference.startswith("#/"):
            return schema
        target: Any = root
        for part in reference[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        schema = (
            {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
            if isinstance(target, dict)
            else target
        )
    return {}


def _merged(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its `allOf` folded in: properties and required joined, the rest the first said."""
    parts = schema.get("allOf")
    if not isinstance(parts, list):
        return schema
    merged = {k: v for k, v in schema.items() if k != "allOf"}
    for part in parts:
        part = _merged(_resolved(part, root), root)
        properties = {**(part.get("properties") or {}), **(merged.get("properties") or {})}
        required = [*(merged.get("required") or []), *(part.get("required") or [])]
        merged = {**part, **merged}
        if properties:
            merged["properties"] = properties
        if required:
            merged["required"] = list(dict.fromkeys(required))
    return merged


def _validator(schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """The reference validator for `schema`, its `$ref`s resolved against `root`'s definitions, of the
    draft `root` names (2020-12 when it names none)."""
    cls = validator_class(root)
    shared = {key: root[key] for key in ("$schema", "$defs", "definitions") if key in root}
    return cls({**shared, **schema})


def valid(schema: Any, root: dict[str, Any] | None = None, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values that satisfy `schema` (as `jsonschema` judges them)."""
    root = root if root is not None else (schema if isinstance(schema, dict) else {})
    schema = _merged(_resolved(schema, root), root)
    drawn = _drawn(schema, root, depth)
    if _CHECKED & set(schema) or _has_overlapping_one_of(schema):
        return _judged(drawn, _validator(schema, root))
    return drawn


_TRIES = 8
"""Values drawn for a keyword the generator does not honour, before one that `jsonschema` refuses is kept
(a schema with no value at all must not stop a campaign)."""


@st.composite
def _judged(draw: st.DrawFn, drawn: st.SearchStrategy[Any], checker: Any) -> Any:
    value = None
    for _ in range(_TRIES):
        value = draw(drawn)
        try:
            if checker.is_valid(value):
                return value
        except UnjudgedPattern:  # a pattern that runs away on it cannot refuse it
            return value
    return value


def _has_overlapping_one_of(schema: dict[str, Any]) -> bool:
    choices = schema.get("oneOf")
    return isinstance(choices, list) and len(choices) > 1


def _drawn(schema: dict[str, Any], root: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    if depth > 4 * _MAX_DEPTH:  # a schema that requires endless nesting has no value at all
        return st.none()
    if "const" in schema:
        return st.just(schema["const"])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return st.sampled_from(schema["enum"])
    choices = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(choices, list) and choices:
        rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
        return st.one_of(
            [valid(_merged({**rest, "allOf": [choice]}, root), root, depth + 1) for choice in choices]
        )
    kind = schema.get("type")
    if isinstance(kind, list) and kind:
        return st.one_of([_drawn({**schema, "type": one}, root, depth) for one in kind])
    if kind == "object" or (kind is None and "properties" in schema):
        return _object(schema, root, depth)
    if kind == "array" or (kind is None and ("items" in schema or "prefixItems" in schema)):
        return _array(schema, root, depth)
    if kind == "string" or (kind is None and ("pattern" in schema or "minLength" in schema)):
        return _string(schema)
    if kind == "integer":
        return _integers(schema)
    if kind == "number":
        return _floats(schema)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return _SCALARS


def _number(schema: dict[str, Any], name: str) -> float | None:
    value = schema.get(name)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _limits(schema: dict[str, Any]) -> tuple[float | None, bool, float | None, bool]:
    """(low, low excluded, high, high excluded), in either draft: a number `exclusiveMinimum` (2019+) or a
    boolean one that makes `minimum` exclusive (draft 4, OpenAPI 3.0)."""
    low, high = _number(schema, "minimum"), _number(schema, "maximum")
    low_out, high_out = schema.get("exclusiveMinimum") is True, schema.get("exclusiveMaximum") is True
    if (exclusive := _number(schema, "exclusiveMinimum")) is not None and (low is None or exclusive >= low):
        low, low_out = exclusive, True
    if (exclusive := _number(schema, "exclusiveMaximum")) is not None and (high is None or exclusive <= high):
        high, high_out = exclusive, True
    return low, low_out, high, high_out


def _integers(schema: dict[str, Any]) -> st.SearchStrategy[int]:
    low, low_out, high, high_out = _limits(schema)
    first = None if low is None else (int(low) + 1 if low_out and low == int(low) else -int(-low // 1))
    last = None if high is None else (int(high) - 1 if high_out and high == int(high) else int(high // 1))
    step = schema.get("multipleOf")
    if isinstance(step, int) and not isinstance(step, bool) and step > 0:
        first_k = None if first is None else -(-first // step)
        last_k = None if last is None else last // step
        if first_k is not None and last_k is not None and first_k > last_k:
            return st.just(first_k * step)  # no value: one that misses a bound, never none
        return st.integers(first_k, last_k).map(lambda k: k * step)
    if first is not None and last is not None and first > last:
        return st.just(first)
    return st.integers(first, last)


def _floats(schema: dict[str, Any]) -> st.SearchStrategy[float]:
    low, low_out, high, high_out = _limits(schema)
    step = _number(schema, "multipleOf")
    if step is not None and step > 0:
        integral: dict[str, Any] = {"type": "integer"}
        if low is not None:
            integral["minimum"] = int(-(-low // step)) + (1 if low_out and (low / step).is_integer() else 0)
        if high is not None:
            integral["maximum"] = int(high // step) - (1 if high_out and (high / step).is_integer() else 0)
        return _integers(integral).map(lambda k: k * step)
    if low is not None and high is not None and (low > high or (low == high and (low_out or high_out))):
        return st.just(low)
    return st.floats(
        min_value=low, max_value=high, exclude_min=low_out and low is not None,
        exclude_max=high_out and high is not None, allow_nan=False, allow_infinity=False,
    )  # fmt: skip


_LARGEST = 200
"""The most characters or items a drawn string or array is made to have: a schema that asks for more (a
`minLength` of a billion) gets values short of it, which the drawer notes as unhonoured."""


def _size(schema: dict[str, Any], low_name: str, high_name: str, cap: int) -> tuple[int, int]:
    low = schema.get(low_name)
    low = min(int(low), _LARGEST) if isinstance(low, int) and not isinstance(low, bool) and low > 0 else 0
    high = schema.get(high_name)
    high = int(high) if isinstance(high, int) and not isinstance(high, bool) else low + cap
    return low, max(low, min(high, low + cap)) if high >= low else low


def _string(schema: dict[str, Any]) -> st.SearchStrategy[str]:
    low, high = _size(schema, "minLength", "maxLength", 16)
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and _readable(pattern):
        return _judged(st.from_regex(pattern), _Lengths(low, high))
    return st.text(min_size=low, max_size=high)


def _readable(pattern: str) -> bool:
    """Whether Python reads the pattern (ECMA's mostly agrees; one it cannot read is drawn plainly)."""
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return False
    return True


@dataclass(frozen=True, slots=True)
class _Lengths:
    """A check of a string's length, as `_judged` takes checks."""

    low: int
    high: int

    def is_valid(self, text: str) -> bool:
        return self.low <= len(text) <= self.high


def _array(schema: dict[str, Any], root: dict[str, Any], depth: int) -> st.SearchStrategy[list[Any]]:
    low, high = _size(schema, "minItems", "maxItems", 3)
    given = schema.get("prefixItems")
    prefix: list[Any] = given if isinstance(given, list) else []
    rest = schema.get("items", {})
    if depth >= _MAX_DEPTH and not low and not prefix:
        return st.just([])
    unique = schema.get("uniqueItems") is True
    head = st.tuples(*(valid(item, root, depth + 1) for item in prefix)).map(list)
    more_low, more_high = max(0, low - len(prefix)), max(0, high - len(prefix))
    if rest is False or more_high == 0:
        tail: st.SearchStrategy[list[Any]] = st.just([])
    else:
        items = valid(rest, root, depth + 1)
        tail = st.lists(items, min_size=more_low, max_size=more_high,
                        unique_by=(lambda v: json.dumps(v, sort_keys=True)) if unique else None)  # fmt: skip
    joined = st.tuples(head, tail).map(lambda pair: pair[0] + pair[1])
    if unique:
        return joined.filter(
            lambda values: len({json.dumps(v, sort_keys=True) for v in values}) == len(values)
        )
    return joined


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) else {}


def _object(schema: dict[str, Any], root: dict[str, Any], depth: int) -> st.SearchStrategy[dict[str, Any]]:
    properties = _properties(schema)
    required = [name for name in schema.get("required") or [] if isinstance(name, str)]
    optional = (
        {name: valid(sub, root, depth + 1) for name, sub in properties.items() if name not in required}
        if depth < _MAX_DEPTH
        else {}
    )
    extra = schema.get("additionalProperties", True)
    extra_values = (
        None if extra is False else valid(extra if isinstance(extra, dict) else {}, root, depth + 1)
    )
    fixed = {name: valid(properties.get(name, extra if isinstance(extra, dict) else {}), root, depth + 1)
             for name in required}  # fmt: skip
    drawn = st.fixed_dictionaries(fixed, optional=optional)
    low, high = _size(schema, "minProperties", "maxProperties", 3)
    if low == 0 and "maxProperties" not in schema:
        return drawn
    if extra_values is None:
        return drawn.filter(lambda value: low <= len(value) <= high)
    keys = st.text(min_size=1, max_size=8).filter(lambda key: key not in properties)
    padding = st.dictionaries(keys, extra_values, max_size=max(low, 1))

    def fitted(pair: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
        value, more = pair
        for key, item in more.items():
            if len(value) >= low:
                break
            value = {**value, key: item}
        return value

    return st.tuples(drawn, padding).map(fitted).filter(lambda value: low <= len(value) <= high)


def satisfies(schema: Any, value: Any) -> bool:
    """Whether `value` satisfies `schema` as `jsonschema` judges it (true where it cannot judge: a schema
    that is not JSON Schema of its draft, such as OpenAPI 3.0's boolean bounds without `$schema`, or a
    pattern that runs away on the value: its searches are bounded; a `$ref` it cannot resolve)."""
    if not isinstance(schema, dict):
        return True
    try:
        text = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):
        return True
    judge = validator_of(text)
    try:
        return judge is None or bool(judge.is_valid(value))
    except (UnjudgedPattern, Unresolvable, RecursionError):  # a `$ref` to nothing, or refs in a cycle
        return True


def arguments(schema: Any) -> st.SearchStrategy[dict[str, Any]]:
    """Valid arguments of a tool: an object, whatever the schema leaves out."""
    schema = schema if isinstance(schema, dict) else {}
    return valid(schema).map(lambda value: value if isinstance(value, dict) else {})


def mistaken(schema: Any) -> st.SearchStrategy[tuple[str, Any]]:
    """`(what is wrong, arguments)` for an object schema: a required property missing, one of the wrong
    type, or one the schema does not allow (each only where the schema makes it a mistake); where it makes
    none, `("nothing to get wrong", valid arguments)`."""
    root = schema if isinstance(schema, dict) else {}
    schema = _merged(_resolved(schema, root), root)
    properties = _properties(schema)
    required = [name for name in schema.get("required") or [] if name in properties]
    good = arguments(root)
    kinds: list[st.SearchStrategy[tuple[str, Any]]] = []
    if required:
        kinds.append(
            st.tuples(good, st.sampled_from(required)).map(
                lambda pair: (f"missing {pair[1]}", {k: v for k, v in pair[0].items() if k != pair[1]})
            )
        )
    typed = {
        name: sub["type"] for name, sub in properties.items()
        if isinstance(sub, dict) and isinstance(sub.get("type"), str) and sub["type"] in _WRONG
    }  # fmt: skip
    if typed:
        kinds.append(
            st.tuples(good, st.sampled_from(sorted(typed))).flatmap(
                lambda pair: _WRONG[typed[pair[1]]].map(
                    lambda wrong: (f"{pair[1]} not {typed[pair[1]]}", {**pair[0], pair[1]: wrong})
                )
            )
        )
    if schema.get("additionalProperties") is False:
        extra = f"unexpected_{len(properties)}"
        kinds.append(good.map(lambda value: ("an extra property", {**value, extra: "?"})))
    if not kinds:
        return good.map(lambda value: ("nothing to get wrong", value))
    return st.one_of(kinds)
