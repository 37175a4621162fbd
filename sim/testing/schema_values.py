"""Values for a tool's JSON Schema, as hypothesis strategies: arguments that satisfy it, and each kind of
mistake a model makes against it (a required property left out, a property of the wrong type, a property
the schema does not have).

Covers what tool schemas use (`type`, `properties`, `required`, `additionalProperties`, `items`, `enum`,
`const`, `anyOf`/`oneOf`, bounds, local `$ref`s as pydantic writes them); a keyword it does not know is
ignored, so a value may then miss a constraint, never crash the campaign. Past a few levels of nesting
only what is required is drawn, so recursive schemas stay small.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

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


def _resolved(schema: Any, root: dict[str, Any]) -> dict[str, Any]:
    for _ in range(_MAX_DEPTH * 4):
        if not isinstance(schema, dict):
            return {}
        reference = schema.get("$ref")
        if not isinstance(reference, str) or not reference.startswith("#/"):
            return schema
        target: Any = root
        for part in reference[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        schema = target
    return {}


def valid(schema: Any, root: dict[str, Any] | None = None, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values that satisfy `schema`."""
    root = root if root is not None else (schema if isinstance(schema, dict) else {})
    schema = _resolved(schema, root)
    if depth > 4 * _MAX_DEPTH:  # a schema that requires endless nesting has no value at all
        return st.none()
    if "const" in schema:
        return st.just(schema["const"])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return st.sampled_from(schema["enum"])
    choices = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(choices, list) and choices:
        return st.one_of([valid(choice, root, depth + 1) for choice in choices])
    kind = schema.get("type")
    if isinstance(kind, list) and kind:
        return st.one_of([valid({**schema, "type": one}, root, depth) for one in kind])
    if kind == "object" or (kind is None and "properties" in schema):
        return _object(schema, root, depth)
    if kind == "array":
        low = int(schema.get("minItems", 0))
        if depth >= _MAX_DEPTH and not low:
            return st.just([])
        items = valid(schema.get("items", {}), root, depth + 1)
        return st.lists(items, min_size=low, max_size=max(low, min(int(schema.get("maxItems", 3)), 3)))
    if kind == "string":
        low = int(schema.get("minLength", 0))
        return st.text(min_size=low, max_size=max(low, min(int(schema.get("maxLength", 16)), 16)))
    if kind == "integer":
        return st.integers(_bound(schema, "minimum", 1), _bound(schema, "maximum", -1))
    if kind == "number":
        return _floats(schema)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return _SCALARS


def _floats(schema: dict[str, Any]) -> st.SearchStrategy[float]:
    bounds: dict[str, Any] = {"allow_nan": False, "allow_infinity": False}
    for side, inclusive, exclusive in (
        ("min", "minimum", "exclusiveMinimum"),
        ("max", "maximum", "exclusiveMaximum"),
    ):
        if isinstance(schema.get(exclusive), int | float):
            bounds[f"{side}_value"], bounds[f"exclude_{side}"] = float(schema[exclusive]), True
        elif isinstance(schema.get(inclusive), int | float):
            bounds[f"{side}_value"] = float(schema[inclusive])
    return st.floats(**bounds)


def _bound(schema: dict[str, Any], name: str, step: int) -> int | None:
    exclusive = "exclusiveMinimum" if name == "minimum" else "exclusiveMaximum"
    if isinstance(schema.get(exclusive), int | float):
        return int(schema[exclusive]) + step
    value = schema.get(name)
    return int(value) if isinstance(value, int | float) else None


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) else {}


def _object(schema: dict[str, Any], root: dict[str, Any], depth: int) -> st.SearchStrategy[dict[str, Any]]:
    properties = _properties(schema)
    required = [name for name in schema.get("required") or [] if name in properties]
    optional = (
        {name: valid(sub, root, depth + 1) for name, sub in properties.items() if name not in required}
        if depth < _MAX_DEPTH
        else {}
    )
    return st.fixed_dictionaries(
        {name: valid(properties[name], root, depth + 1) for name in required}, optional=optional
    )


def arguments(schema: Any) -> st.SearchStrategy[dict[str, Any]]:
    """Valid arguments of a tool: an object, whatever the schema leaves out."""
    schema = schema if isinstance(schema, dict) else {}
    return valid(schema).map(lambda value: value if isinstance(value, dict) else {})


def mistaken(schema: Any) -> st.SearchStrategy[tuple[str, Any]]:
    """`(what is wrong, arguments)` for an object schema: a required property missing, one of the wrong
    type, or one the schema does not have (each only where the schema makes it a mistake)."""
    root = schema if isinstance(schema, dict) else {}
    schema = _resolved(schema, root)
    properties = _properties(schema)
    required = [name for name in schema.get("required") or [] if name in properties]
    good = arguments(schema)
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
    extra = f"unexpected_{len(properties)}"
    kinds.append(good.map(lambda value: ("an extra property", {**value, extra: "?"})))
    return st.one_of(kinds)
