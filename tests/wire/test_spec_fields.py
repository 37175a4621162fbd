"""Every hosted and custom tool item and event sim serves over the Responses API carries only fields the
official spec gives it: the spec's item and event schemas leave `additionalProperties` open, so validation
(`tests.spec.untolerated`) would let an invented field through; here each item's and each event's keys are
held to its own schema's `properties` (the item picked by its `type` among the spec's `OutputItem`s, the event
among `ResponseStreamEvent`s, a web search's action among its actions)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.host.in_process import post, simulator
from tests.spec import _registry
from tests.wire.test_custom_tools import CALLS, RESP_PATCH, RESP_REGEX, RESP_TEXT
from tests.wire.test_hosted_tools import EVERY_ITEM, INCLUDE, MCP_APPROVAL, _body

PATH = "/v1/responses"


@functools.cache
def _schemas() -> dict[str, Any]:
    schemas: dict[str, Any] = _registry().contents("urn:openai")["components"]["schemas"]
    return schemas


def _name(ref: dict[str, Any]) -> str:
    return str(ref["$ref"]).rsplit("/", 1)[-1]


def _fields(name: str) -> set[str]:
    """The properties a schema gives (those of each `allOf` part with them)."""
    schema = _schemas()[name]
    fields = set(schema.get("properties", {}))
    for part in schema.get("allOf", []):
        fields |= _fields(_name(part)) if "$ref" in part else set(part.get("properties", {}))
    return fields


def _by_type(union: list[dict[str, Any]]) -> dict[str, str]:
    """Each branch of a union of schemas, by the one `type` value it takes."""
    found = {}
    for ref in union:
        name = _name(ref)
        schema = _schemas()[name]
        parts = [schema, *(_schemas()[_name(p)] for p in schema.get("allOf", []) if "$ref" in p)]
        for part in parts:
            kind = part.get("properties", {}).get("type", {})
            if kind.get("enum"):
                found[kind["enum"][0]] = name
                break
    return found


@functools.cache
def _items() -> dict[str, str]:
    return _by_type(_schemas()["OutputItem"]["anyOf"])


@functools.cache
def _events() -> dict[str, str]:
    return _by_type(_schemas()["ResponseStreamEvent"]["anyOf"])


@functools.cache
def _actions() -> dict[str, str]:
    return _by_type(_schemas()["WebSearchToolCall"]["properties"]["action"]["anyOf"])


def invented(value: dict[str, Any], kinds: dict[str, str], where: str) -> list[str]:
    """The keys of `value` its schema (picked by its `type` in `kinds`) does not give, as `where.key`."""
    name = kinds.get(value.get("type", ""))
    if name is None:
        return [f"{where}: no schema for type {value.get('type')!r}"]
    given = _fields(name)
    if str(value.get("type")).endswith(".delta"):
        given = given | {"obfuscation"}  # the spec's stream options give it to "streaming delta events"
    found = [f"{where}.{key} ({name})" for key in sorted(set(value) - given)]
    if value.get("type") == "web_search_call" and isinstance(value.get("action"), dict):
        found += invented(value["action"], _actions(), f"{where}.action")
    return found


def invented_in_output(output: list[dict[str, Any]], where: str) -> list[str]:
    return [found for n, item in enumerate(output) for found in invented(item, _items(), f"{where}[{n}]")]


def _sent(response: httpx2.Response) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in response.text.split("\n") if line.startswith("data: ")]


CASES = {
    "hosted": (EVERY_ITEM, _body(include=INCLUDE)),
    "hosted without include": (EVERY_ITEM, _body()),
    "mcp approval": (MCP_APPROVAL, _body()),
    "custom": (CALLS, {"model": "m", "input": "p", "tools": [RESP_PATCH, RESP_REGEX, RESP_TEXT]}),
}


@pytest.mark.parametrize("case", CASES)
def test_each_served_item_has_only_the_specs_fields(tmp_path: Path, case: str) -> None:
    script, body = CASES[case]
    (response,) = post(simulator(tmp_path, script), body, path=PATH)
    assert response.status_code == 200, response.text
    assert invented_in_output(response.json()["output"], "output") == []


@pytest.mark.parametrize("case", CASES)
def test_each_streamed_event_and_its_item_have_only_the_specs_fields(tmp_path: Path, case: str) -> None:
    script, body = CASES[case]
    (response,) = post(simulator(tmp_path, script), {**body, "stream": True}, path=PATH)
    events = _sent(response)
    assert events
    found = []
    for n, event in enumerate(events):
        found += invented(event, _events(), f"events[{n}]")
        if isinstance(event.get("item"), dict):
            found += invented(event["item"], _items(), f"events[{n}].item")
        if isinstance(event.get("response"), dict):
            found += invented_in_output(event["response"].get("output") or [], f"events[{n}].response.output")
    assert found == []


def test_an_invented_field_is_found() -> None:
    """The check itself: a field no schema gives, on an item, an event and a web search's action."""
    item = {"type": "web_search_call", "id": "ws_1", "status": "completed", "results": [],
            "action": {"type": "search", "query": "q", "url": "u"}}  # fmt: skip
    assert invented(item, _items(), "item") == [
        "item.results (WebSearchToolCall)",
        "item.action.url (WebSearchActionSearch)",
    ]
    event = {"type": "response.mcp_call.completed", "item_id": "m", "output_index": 0,
             "sequence_number": 3, "item": {}}  # fmt: skip
    assert invented(event, _events(), "e") == ["e.item (ResponseMCPCallCompletedEvent)"]
