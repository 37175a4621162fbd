"""OpenAI's strict mode (Structured Outputs): which JSON Schemas it takes, said as the API says it refuses
one, and the schema the Responses API enforces for a function that leaves `strict` out. One set of rules
for the parameters of a strict function and the schema of a strict response format.

The subset, from the Structured Outputs guide ("Supported schemas"), with the API's own refusals:

- The root is an object (`type: "object"`), not `anyOf`. Every object says `additionalProperties: false`,
  has `properties`, and lists each property in `required`; every array has `items` (or `prefixItems`).
  A schema says its `type` unless it is an `anyOf` or a `$ref`.
- Keywords: `type`, `properties`, `required`, `additionalProperties`, `items`, `prefixItems`, `anyOf`,
  `enum`, `const`, `$ref`, `$defs`/`definitions`; strings `pattern` and `format` (one of `FORMATS`);
  numbers `multipleOf`, `maximum`, `exclusiveMaximum`, `minimum`, `exclusiveMinimum`; arrays `minItems`,
  `maxItems`; and annotations (`title`, `description`, `default`, ...). The keywords of JSON Schema outside
  the subset are refused ("In context=(...), 'allOf' is not permitted."): the guide lists `allOf`, `not`,
  `if`/`then`/`else`, `dependentRequired`, `dependentSchemas`; the API refuses as well `oneOf`,
  `minLength`, `uniqueItems`, `propertyNames`, `contains` (its refusals, as reported in public issues)
  and the other assertions the guide names unsupported for fine-tuned models (`NOT_PERMITTED`).
  A keyword JSON Schema does not define (e.g. `x-order`) is let through, as an annotation.
- `$ref` points at the root (`#`, recursion) or a top-level definition (`#/$defs/NAME`,
  `#/definitions/NAME`), and stands alone ("$ref cannot have keywords {'description'}").

Limits (the guide's "Objects have limitations on nesting depth and size"; the numbers of its current
version, which raised the first ones, 100 properties and 5 levels):

- `MAX_DEPTH`: 10 levels of nesting ("11 levels of nesting exceeds limit of 10."). sim counts a level for
  each `properties` or `items` step below the root (`anyOf`, `$ref` and `$defs` add none), the lenient
  reading of the guide's rule, so that no schema the API takes is refused.
- `MAX_PROPERTIES`: 5,000 object properties in all ("6000 parameters exceeds limit of 5000.").
- `MAX_ENUM_VALUES`: 1,000 enum values in all ("Expected at most 1000 enum values in total within a single
  schema when using structured outputs, but received 1008. ...", earlier 500).
- `MAX_LARGE_ENUM_LENGTH`: a single enum of more than `LARGE_ENUM` (250) string values totals at most
  15,000 characters ("Expected at most 15000 total characters across enum values when there are more than
  250 enum values, but received 15342. ...").
- `MAX_STRING_LENGTH`: 120,000 characters of property names, definition names, enum and const values. No
  refusal of it has been reported: sim words it as the enum limits are worded.

The messages follow each refusal the API was seen to send (the text after "Invalid schema for function
'NAME': " or "Invalid schema for response_format 'NAME': "); where none was seen (a non-object schema
where a schema belongs, a root `anyOf`, a `$ref` to a missing definition) sim says it in the same style;
so too the 120,000-character limit.

A schema is judged in one walk over its nodes, with a stack rather than recursion, so a hostile schema
(deep, wide, cyclic through `$ref`) costs its size and no more; and as a conversation sends the same tools
with every request, each judgement of a small schema is kept under its JSON text.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 10
MAX_PROPERTIES = 5_000
MAX_ENUM_VALUES = 1_000
LARGE_ENUM = 250
MAX_LARGE_ENUM_LENGTH = 15_000
MAX_STRING_LENGTH = 120_000
FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
"""The string formats strict mode takes ("'uri' is not a valid format.")."""

NOT_PERMITTED = frozenset({
    "allOf", "oneOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "dependencies",
    "patternProperties", "propertyNames", "unevaluatedProperties", "minProperties", "maxProperties",
    "minLength", "maxLength", "contentEncoding", "contentMediaType", "contentSchema", "uniqueItems",
    "contains", "minContains", "maxContains", "unevaluatedItems", "additionalItems", "$dynamicRef",
    "$recursiveRef",
})  # fmt: skip
"""The keywords of JSON Schema (draft 2020-12 and earlier) that strict mode refuses."""

_Context = tuple[str, ...]
_Path = tuple[Any, str, str | None]
"""Where a schema sits, built as the walk goes down (its parent's path, a keyword, a name or None) and
spelled out as a context only for a refusal: copying a deep path at every step would cost its square."""
_NESTED = ("properties", "$defs", "definitions")
"""Keywords whose values map names to schemas."""
_LISTED = ("anyOf", "prefixItems")
"""Keywords whose values list schemas."""
_DEEPER = frozenset({"properties", "items", "prefixItems"})
"""The steps that nest a level deeper (a property's value, an array's items)."""
_KEPT_LENGTH = 16_384
"""The longest schema (as JSON text) whose judgement is kept."""
_OPT_OUT = "Consider reducing the number of enums, or use 'strict: false' to opt out of structured outputs."


def _is_object(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in schema


def _is_array(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "array" or (isinstance(kind, list) and "array" in kind)


def _children(schema: Mapping[str, Any]) -> Iterator[tuple[Any, str, str | None]]:
    """Each value nested in `schema` where a schema belongs, with the keyword it sits under and its name or
    index there (None for `items`, one schema)."""
    for keyword in _NESTED:
        children = schema.get(keyword)
        if isinstance(children, Mapping):
            for name, child in children.items():
                yield child, keyword, str(name)
    for keyword in _LISTED:
        children = schema.get(keyword)
        if isinstance(children, list):
            for index, child in enumerate(children):
                yield child, keyword, str(index)
    if "items" in schema:
        yield schema["items"], "items", None


def _context(path: _Path | None) -> _Context:
    """The context the API names in a refusal: the keywords and names from the root down to a schema."""
    steps: list[str] = []
    while path is not None:
        path, keyword, name = path
        steps += [name, keyword] if name is not None else [keyword]
    return tuple(reversed(steps))


def _ref_problem(schema: Mapping[str, Any], root: Mapping[str, Any]) -> str | None:
    if extra := sorted(str(key) for key in schema if key != "$ref"):
        return "$ref cannot have keywords {" + ", ".join(repr(key) for key in extra) + "}."
    ref = schema["$ref"]
    if ref == "#":
        return None
    pointer = ref[2:] if isinstance(ref, str) and ref.startswith("#/") else ""
    keyword, _, name = pointer.partition("/")
    definitions = root.get(keyword) if keyword in ("$defs", "definitions") else None
    if not isinstance(definitions, Mapping) or "/" in name:
        return "reference can only point to definitions defined at the top level of the schema."
    if name not in definitions:
        return f"reference to '{ref}' names no definition of the schema."
    return None


def _object_problem(schema: Mapping[str, Any]) -> str | None:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return "object schema missing properties."
    if schema.get("additionalProperties") is not False:
        return "'additionalProperties' is required to be supplied and to be false."
    required = schema.get("required")
    listed = [name for name in required if isinstance(name, str)] if isinstance(required, list) else []
    every = "'required' is required to be supplied and to be an array including every key in properties."
    named = set(listed)  # sets: a schema with many properties is judged in time proportional to them
    if (missing := next((name for name in properties if name not in named), None)) is not None:
        return f"{every} Missing '{missing}'."
    if (extra := next((name for name in listed if name not in properties), None)) is not None:
        return f"{every} Extra required key '{extra}' supplied."
    return None


def _node_problem(schema: Any, root: Mapping[str, Any]) -> tuple[str, _Context] | None:
    """What strict mode refuses in this one schema (not in those nested in it), and the steps below the
    schema the API names in its context (none but for a format in a list of types)."""
    if not isinstance(schema, Mapping):
        return f"schema must be a JSON Schema object, got {type(schema).__name__}.", ()
    if "$ref" in schema:
        found = _ref_problem(schema, root)
        return None if found is None else (found, ())
    for keyword in schema:
        if keyword in NOT_PERMITTED:
            return f"'{keyword}' is not permitted.", ()
    if "type" not in schema and "anyOf" not in schema:
        return "schema must have a 'type' key.", ()
    if "format" in schema and not (isinstance(schema["format"], str) and schema["format"] in FORMATS):
        kind = schema.get("type")
        listed = ("type", str(kind.index("string"))) if isinstance(kind, list) and "string" in kind else ()
        return f"{schema['format']!r} is not a valid format.", listed
    if _is_object(schema) and (found := _object_problem(schema)) is not None:
        return found, ()
    if _is_array(schema) and "items" not in schema and "prefixItems" not in schema:
        return "array schema missing items.", ()
    return None


@dataclass(slots=True)
class _Size:
    """What the guide's limits count, tallied over a whole schema."""

    depth: int = 0
    properties: int = 0
    enum_values: int = 0
    characters: int = 0
    large_enum: int = 0
    """The character total of the longest enum of more than `LARGE_ENUM` string values."""

    def add(self, schema: Mapping[str, Any], depth: int) -> None:
        self.depth = max(self.depth, depth)
        for keyword in ("properties", "$defs", "definitions"):
            names = schema.get(keyword)
            if isinstance(names, Mapping):
                self.properties += len(names) if keyword == "properties" else 0
                self.characters += sum(len(str(name)) for name in names)
        enum = schema.get("enum")
        if isinstance(enum, list):
            self.enum_values += len(enum)
            length = sum(len(value) for value in enum if isinstance(value, str))
            self.characters += length
            if sum(isinstance(value, str) for value in enum) > LARGE_ENUM:
                self.large_enum = max(self.large_enum, length)
        if isinstance(const := schema.get("const"), str):
            self.characters += len(const)

    def problem(self) -> str | None:
        """The first limit passed, in the API's words; None when the schema is within them all."""
        if self.depth > MAX_DEPTH:
            return f"{self.depth} levels of nesting exceeds limit of {MAX_DEPTH}."
        if self.properties > MAX_PROPERTIES:
            return f"{self.properties} parameters exceeds limit of {MAX_PROPERTIES}."
        at_most = "Expected at most"
        received = "when using structured outputs, but received"
        if self.enum_values > MAX_ENUM_VALUES:
            said = f"{MAX_ENUM_VALUES} enum values in total within a single schema {received}"
            return f"{at_most} {said} {self.enum_values}. {_OPT_OUT}"
        if self.large_enum > MAX_LARGE_ENUM_LENGTH:
            said = f"{MAX_LARGE_ENUM_LENGTH} total characters across enum values when there are more than"
            return f"{at_most} {said} {LARGE_ENUM} enum values, but received {self.large_enum}. {_OPT_OUT}"
        if self.characters > MAX_STRING_LENGTH:
            said = (
                f"{MAX_STRING_LENGTH} total characters across property names, definition names, enum values"
                f" and const values within a single schema {received}"
            )
            return f"{at_most} {said} {self.characters}. {_OPT_OUT}"
        return None


def _text(schema: Any) -> str | None:
    """`schema` as JSON text, the key under which its judgement is kept; None for a schema too large to keep
    or not JSON (one that holds itself, or is nested deeper than JSON encodes)."""
    try:
        text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return None
    return text if len(text) <= _KEPT_LENGTH else None


@functools.lru_cache(maxsize=512)
def _judged(text: str) -> str | None:
    return _problem(json.loads(text))


def strict_problem(schema: Any) -> str | None:
    """Why the API refuses `schema` under strict mode, in its own words (after "Invalid schema for function
    'NAME': " for a function's parameters, "Invalid schema for response_format 'NAME': " for a response
    format's schema); None when it takes it. A request's schemas are mostly the last request's again: each
    judgement is kept, under the schema's JSON text."""
    text = _text(schema)
    return _problem(schema) if text is None else _judged(text)


def _problem(schema: Any) -> str | None:
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        kind = schema.get("type") if isinstance(schema, Mapping) else None
        return f"schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{kind}\"'."
    if "anyOf" in schema:
        return "In context=(), 'anyOf' is not permitted."
    size = _Size()
    seen: set[int] = set()  # a schema built in Python may hold one mapping twice, or itself
    stack: list[tuple[Any, _Path | None, int]] = [(schema, None, 0)]
    while stack:
        node, path, depth = stack.pop()
        if (found := _node_problem(node, schema)) is not None:
            said, below = found
            return f"In context={(*_context(path), *below)!r}, {said}"
        if id(node) in seen or "$ref" in node:
            continue
        seen.add(id(node))
        size.add(node, depth)
        children = [
            (
                child,
                (path, keyword, name),
                depth + 1 if keyword in _DEEPER else 0 if keyword in _NESTED else depth,
            )
            for child, keyword, name in _children(node)
        ]
        stack.extend(reversed(children))  # the first child is judged first, as the API reads the schema
    return size.problem()


def _made_strict(schema: Any, depth: int) -> Any:
    """`schema` with every object's properties required and additional ones refused; None where an object
    allows additional properties, or names none while not refusing them (it cannot be made strict)."""
    if not isinstance(schema, Mapping):
        return schema
    if depth > MAX_DEPTH + 2:  # deeper than strict mode takes: no need to go on
        return None
    made: dict[str, Any] = dict(schema)
    if _is_object(schema):
        properties = schema.get("properties")
        if schema.get("additionalProperties", properties is None) is not False:
            return None
        made["additionalProperties"] = False
        made["required"] = list(properties) if isinstance(properties, Mapping) else []
    copied: dict[str, Any] = {}  # each container of subschemas copied once, as its first child is made
    for child, keyword, name in _children(schema):
        if not isinstance(child, Mapping):
            continue
        fixed = _made_strict(child, depth + 1)
        if fixed is None:
            return None
        if name is None:  # `items`: one schema
            made[keyword] = fixed
            continue
        if keyword not in copied:
            copied[keyword] = made[keyword] = (
                list(made[keyword]) if keyword in _LISTED else dict(made[keyword])
            )
        copied[keyword][int(name) if keyword in _LISTED else name] = fixed
    return made


@functools.lru_cache(maxsize=512)
def _made_text(text: str) -> str | None:
    made = _made(json.loads(text))
    return None if made is None else json.dumps(made, ensure_ascii=False, separators=(",", ":"))


def strict_by_default(parameters: Any) -> dict[str, Any] | None:
    """The schema the Responses API enforces for a function that leaves `strict` out: `parameters` made
    strict; None where they cannot be, by the same rules as `strict: true` (an object that allows
    additional properties, a keyword outside the subset, a limit passed): the function is then called
    best-effort, as with `strict: false`, and echoed `strict: false`."""
    text = _text(parameters)
    if text is None:
        return _made(parameters)
    made = _made_text(text)
    return None if made is None else dict(json.loads(made))  # a copy of its own for each caller


def _made(parameters: Any) -> dict[str, Any] | None:
    made = _made_strict(parameters, 0) if isinstance(parameters, Mapping) else None
    if not isinstance(made, dict) or strict_problem(made) is not None:
        return None
    return made
