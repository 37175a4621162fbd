"""Values judged against a JSON Schema (a tool's arguments, a structured text) by `jsonschema`, the reference
validator, one validator per schema, with each `pattern` (and `patternProperties` key pattern) searched under
a time limit by the `regex` package: a recorded pattern such as `^(a|a)+$` meeting a hostile argument cannot
be judged, and says so, instead of hanging whoever validates (the server's guarantees, drift's comparison,
the fuzzer's judge)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast

import jsonschema
import regex
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from sim.core.transcript import preview

PATTERN_SECONDS = 0.1
"""How long one pattern may search one string. `regex` looks at its clock now and then, so a search that
runs away stops within about half a second; a pattern a schema means takes microseconds."""

_Keyword = Callable[[Any, Any, Any, Mapping[str, Any]], Iterator[ValidationError]]
"""A keyword's check, as `jsonschema` calls it: the validator (whose `descend` the protocol leaves out), the
keyword's value, the instance, the schema holding the keyword."""


class UnjudgedPattern(Exception):
    """A pattern that could not be searched: it ran past `PATTERN_SECONDS`, or it cannot be read."""


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` is found in `text`; `UnjudgedPattern` when that cannot be known in time."""
    try:
        return regex.search(pattern, text, timeout=PATTERN_SECONDS) is not None
    except TimeoutError:
        raise UnjudgedPattern(
            f"the pattern {preview(pattern, 40)!r} ran past {PATTERN_SECONDS} s on {preview(text, 40)!r}"
        ) from None
    except (regex.error, TypeError) as error:
        raise UnjudgedPattern(f"the pattern {preview(str(pattern), 40)!r} cannot be read: {error}") from None


def _pattern(
    validator: Any, pattern: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional(original: _Keyword) -> _Keyword:
    """`additionalProperties` as `jsonschema` judges it, the keys that `patternProperties` take found by
    bounded searches first (and left out of what it judges)."""

    def judged(
        validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]
    ) -> Iterator[ValidationError]:
        patterns = schema.get("patternProperties")
        if not (isinstance(patterns, Mapping) and patterns and validator.is_type(instance, "object")):
            yield from original(validator, value, instance, schema)
            return
        taken = {key for key in instance if any(search(pattern, key) for pattern in patterns)}
        rest = {key: item for key, item in instance.items() if key not in taken}
        plain = {name: item for name, item in schema.items() if name != "patternProperties"}
        yield from original(validator, value, rest, plain)

    return judged


@functools.cache
def _bounded(cls: type[Validator]) -> type[Validator]:
    keywords = cls.VALIDATORS
    bounded: dict[str, _Keyword] = {"pattern": _pattern, "patternProperties": _pattern_properties}
    if "additionalProperties" in keywords:
        bounded["additionalProperties"] = _additional(keywords["additionalProperties"])
    return cast(type[Validator], jsonschema.validators.extend(cls, bounded))  # type: ignore[no-untyped-call]


def validator_class(schema: Any) -> type[Validator]:
    """The validator of the draft `schema` names (2020-12 when it names none), its patterns bounded: a
    judgment that meets a pattern it cannot search in time raises `UnjudgedPattern`."""
    return _bounded(jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator))


KEPT_SCHEMA_CHARS = 16_384
"""Validators of schemas up to this long (as JSON text) are kept by the hundred; of longer ones (a strict
schema of 5,000 described properties holds some 14 MB) only the last few, so that hostile requests cannot
fill the memory."""


def validator_of(schema_text: str) -> Validator | None:
    """The validator of the schema `schema_text` writes (its patterns bounded, as `validator_class` makes
    them), one per schema, kept as `KEPT_SCHEMA_CHARS` says; None for a schema its draft does not take."""
    kept = _kept_small if len(schema_text) <= KEPT_SCHEMA_CHARS else _kept_large
    return kept(schema_text)


def _new_validator(schema_text: str) -> Validator | None:
    schema = json.loads(schema_text)
    bounded = validator_class(schema)
    try:
        bounded.check_schema(schema)
    except jsonschema.SchemaError:
        return None
    return bounded(schema)


_kept_small = functools.lru_cache(maxsize=256)(_new_validator)
_kept_large = functools.lru_cache(maxsize=4)(_new_validator)
