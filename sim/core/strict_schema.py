"""OpenAI's strict mode for a function's parameters (Structured Outputs): which schemas it takes, said as the
API says it refuses one, and the schema the Responses API enforces for a function that leaves `strict` out.

A strict schema's root is an object, and every object in it (under `properties`, `items`, `prefixItems`,
`anyOf`, `$defs`/`definitions`) says `additionalProperties: false` and lists every property in `required`.
The Responses API, given a function without `strict`, makes its schema strict where it can (every property
required, additional ones refused), and falls back to best-effort calling where it cannot: an object that
allows additional properties, or a root that is not an object.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

_Context = tuple[str, ...]
_NESTED = ("properties", "$defs", "definitions")
"""Keywords whose values map names to schemas."""
_LISTED = ("anyOf", "prefixItems")
"""Keywords whose values list schemas."""


def _is_object(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in schema


def _subschemas(schema: Mapping[str, Any], context: _Context) -> Iterator[tuple[Mapping[str, Any], _Context]]:
    """Each schema nested in `schema`, with its context (the path the API names in its refusal)."""
    for keyword in _NESTED:
        children = schema.get(keyword)
        if isinstance(children, Mapping):
            for name, child in children.items():
                if isinstance(child, Mapping):
                    yield child, (*context, keyword, str(name))
    for keyword in _LISTED:
        children = schema.get(keyword)
        if isinstance(children, list):
            for index, child in enumerate(children):
                if isinstance(child, Mapping):
                    yield child, (*context, keyword, str(index))
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield items, (*context, "items")


def _object_problem(schema: Mapping[str, Any], context: _Context) -> str | None:
    where = f"In context={context!r}, "
    if schema.get("additionalProperties") is not False:
        return where + "'additionalProperties' is required to be supplied and to be false."
    properties = schema.get("properties")
    names = list(properties) if isinstance(properties, Mapping) else []
    required = schema.get("required")
    listed = required if isinstance(required, list) else []
    every = "'required' is required to be supplied and to be an array including every key in properties."
    if missing := [name for name in names if name not in listed]:
        return f"{where}{every} Missing '{missing[0]}'."
    if extra := [name for name in listed if name not in names]:
        return f"{where}{every} Extra required key '{extra[0]}' supplied."
    return None


def _problem(schema: Mapping[str, Any], context: _Context, depth: int) -> str | None:
    if depth > 64:  # a schema nested this deep is refused by the API's own limits long before
        return f"In context={context!r}, the schema is nested too deeply."
    if _is_object(schema) and (found := _object_problem(schema, context)) is not None:
        return found
    for child, where in _subschemas(schema, context):
        if (found := _problem(child, where, depth + 1)) is not None:
            return found
    return None


def strict_problem(parameters: Any) -> str | None:
    """Why the API refuses `parameters` as the schema of a function that says `strict: true`, in its own
    words (after "Invalid schema for function 'NAME': "); None when it takes them."""
    if not isinstance(parameters, Mapping) or parameters.get("type") != "object":
        kind = parameters.get("type") if isinstance(parameters, Mapping) else None
        return f"schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{kind}\"'."
    return _problem(parameters, (), 0)


def _made_strict(schema: Any, depth: int) -> Any:
    """`schema` with every object's properties required and additional ones refused; None where an object
    allows additional properties, or names none while not refusing them (it cannot be made strict)."""
    if not isinstance(schema, Mapping):
        return schema
    if depth > 64:
        return None
    made: dict[str, Any] = dict(schema)
    if _is_object(schema):
        properties = schema.get("properties")
        if schema.get("additionalProperties", properties is None) is not False:
            return None
        made["additionalProperties"] = False
        made["required"] = list(properties) if isinstance(properties, Mapping) else []
    copied: dict[str, Any] = {}  # each container of subschemas copied once, as its first child is made
    for child, (keyword, *name) in _subschemas(schema, ()):
        fixed = _made_strict(child, depth + 1)
        if fixed is None:
            return None
        if not name:  # `items`: one schema
            made[keyword] = fixed
            continue
        if keyword not in copied:
            copied[keyword] = made[keyword] = (
                list(made[keyword]) if keyword in _LISTED else dict(made[keyword])
            )
        copied[keyword][int(name[0]) if keyword in _LISTED else name[0]] = fixed
    return made


def strict_by_default(parameters: Any) -> dict[str, Any] | None:
    """The schema the Responses API enforces for a function that leaves `strict` out: `parameters` made
    strict; None where they cannot be (the function is then called best-effort, as with `strict: false`)."""
    made = _made_strict(parameters, 0) if isinstance(parameters, Mapping) else None
    if not isinstance(made, dict) or strict_problem(made) is not None:
        return None
    return made
