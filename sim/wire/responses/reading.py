"""Responses API request bodies read as the API reads them: `instructions` and `input` items as core
messages (consecutive assistant items one turn) and flat `tools` as tool specs, each checked
(`MessageContractError` where the API, or sim, refuses them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sim.core.errors import MessageContractError, ModelReplyError, PairingRule
from sim.core.messages import (
    AssistantMessage,
    ChatMessage,
    HostedItem,
    Reasoning,
    SystemMessage,
    TextItem,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from sim.core.model import ToolSpec
from sim.wire.chat.reading import content_text
from sim.wire.custom_tools import GrammarError, format_from_wire, is_custom
from sim.wire.hosted import HOSTED_TOOLS, INPUT_ITEMS, hosted_from_wire
from sim.wire.requests import MissingParameterError, Refused
from sim.wire.responses.items import (
    assistant_turn,
    custom_call_from_wire,
    function_call_from_wire,
    reasoning_from_wire,
    text_item_from_wire,
)


def _bad(where: str, what: str) -> MessageContractError:
    return MessageContractError(f"{where}: {what}")


def messages_from_items(
    items: Any, referenced: Callable[[str], Mapping[str, Any]] | None = None
) -> list[ChatMessage]:
    """Input items as messages: consecutive assistant items (text, reasoning, function calls) are one
    assistant turn. Pairing is not checked here; `MessageContractError` when an item is malformed. An
    `item_reference` is read as the item `referenced(id)` gives (which refuses an unknown id)."""
    if isinstance(items, str):
        return [UserMessage(content=items)]
    if not isinstance(items, list):
        raise _bad("input", "must be a string or an array of input items")
    messages: list[ChatMessage] = []
    parts: list[Reasoning | TextItem | HostedItem] = []
    calls: list[ToolCall] = []
    open_turn = False

    def close() -> None:
        nonlocal open_turn
        if open_turn:
            messages.append(assistant_turn(parts, calls))
            parts.clear()
            calls.clear()
            open_turn = False

    for index, item in enumerate(items):
        where = f"input[{index}]"
        if not isinstance(item, Mapping):
            raise _bad(where, "each input item must be an object")
        kind = item.get("type", "message")
        if kind == "item_reference" or (kind == "message" and len(item) == 1 and "id" in item):
            if referenced is None or not isinstance(item.get("id"), str):
                raise _bad(f"{where}.id", "an item_reference names an item by its id")
            item = referenced(item["id"])
            kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            text = content_text(item.get("content"), f"{where}.content")
            if role == "assistant":
                parts.append(text_item_from_wire(item, text))
                open_turn = True
                continue
            close()
            if role in ("system", "developer"):
                messages.append(SystemMessage(content=text))
            elif role == "user":
                messages.append(UserMessage(content=text))
            else:
                raise _bad(f"{where}.role", f"unsupported role {role!r}")
        elif kind == "function_call":
            try:
                call = function_call_from_wire(item)
            except ModelReplyError as error:
                raise _bad(where, str(error)) from None
            calls.append(call)
            open_turn = True
        elif kind == "reasoning":
            try:
                parts.append(reasoning_from_wire(item))
            except ModelReplyError as error:
                raise _bad(where, str(error)) from None
            open_turn = True
        elif kind in INPUT_ITEMS:
            parts.append(hosted_from_wire(where, item))
            open_turn = True
        elif kind == "custom_tool_call":
            try:
                calls.append(custom_call_from_wire(item))
            except ModelReplyError as error:
                raise _bad(where, str(error)) from None
            open_turn = True
        elif kind in ("function_call_output", "custom_tool_call_output"):
            close()
            call_id = item.get("call_id")
            if call_id is None:
                missing = f"{where}.call_id: a {kind} must answer a call_id"
                raise MissingParameterError(missing, f"{where}.call_id")
            if not isinstance(call_id, str) or not call_id:
                raise _bad(f"{where}.call_id", f"a {kind} must answer a call_id")
            messages.append(
                ToolMessage(tool_call_id=call_id, content=content_text(item.get("output"), where))
            )
        else:
            raise _bad(f"{where}.type", f"sim does not simulate input items of type {kind!r}")
    close()
    return messages


def instructions_from_wire(body: Mapping[str, Any]) -> SystemMessage | None:
    """A request's `instructions` as its system message (an empty string too: the request says it)."""
    instructions = body.get("instructions")
    return SystemMessage(content=instructions) if isinstance(instructions, str) else None


def _custom_spec(raw: Mapping[str, Any], where: str) -> ToolSpec:
    """A flat `{type: custom, name, description, format}` tool as a custom `ToolSpec`."""
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise _bad(f"{where}.name", "Missing required parameter")
    try:
        grammar = format_from_wire(raw)
    except GrammarError as error:
        raise _bad(f"{where}{error.where}", str(error)) from None
    description = raw.get("description")
    return ToolSpec(name, description if isinstance(description, str) else "", {}, "custom", grammar)


def tools_from_wire(raw_tools: Any) -> tuple[ToolSpec, ...]:
    """A request's flat function `tools`; Chat-shaped tools (`tools[0].function`) and built-in tools are
    refused as the API (or sim, which cannot run them) refuses them."""
    if raw_tools is None:
        return ()
    if not isinstance(raw_tools, list):
        raise _bad("tools", "must be an array")
    specs = []
    for index, raw in enumerate(raw_tools):
        where = f"tools[{index}]"
        if not isinstance(raw, Mapping):
            raise _bad(where, "each tool must be an object")
        if is_custom(raw):
            specs.append(_custom_spec(raw, where))
            continue
        if raw.get("type") in HOSTED_TOOLS:
            continue  # run by the server: the loop never calls it (checked in `refused`)
        if raw.get("type") != "function":
            raise _bad(f"{where}.type", f"sim does not simulate built-in tools ({raw.get('type')!r})")
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            hint = " (tools here are flat: {type, name, parameters}, not Chat's {function: {...}})"
            raise _bad(f"{where}.name", "Missing required parameter" + (hint if "function" in raw else ""))
        parameters = raw.get("parameters") or {"type": "object", "properties": {}}
        if not isinstance(parameters, Mapping) or parameters.get("type", "object") != "object":
            raise _bad(
                f"{where}.parameters", f"Invalid schema for function '{name}': must be an object schema"
            )
        description = raw.get("description")
        specs.append(ToolSpec(name, description if isinstance(description, str) else "", parameters))
    return tuple(specs)


NO_OUTPUT = "No tool output found for {kind} {id}."
"""The API's words for a call left without its output (docs/errors.md: quoted live errors)."""

NO_CALL = "No tool call found for {kind} output with call_id {id}."
"""The API's words for an output that answers no call."""

CONVERSATION_PARAM = "input"
"""The `param` of every refused pairing: the API names the whole `input`."""

_CALL_KINDS = {"function": "function call", "custom": "custom tool call"}


def refused_pairing(error: MessageContractError, items: Any, conversation: Sequence[ChatMessage]) -> Refused:
    """A broken pairing in `conversation` (read from the request's `input` `items`, after what it continues)
    refused as the API refuses it: in its words, `param: input`; a rule it words otherwise unknown, in
    sim's ("Invalid request: ..."). `detail` keeps the contract broken in sim's own words."""
    detail = str(error)
    broken = error.pairing
    if broken is not None and broken.rule is PairingRule.every_call_answered:
        call_id = broken.call_ids[0]
        kind = _CALL_KINDS[_call_kind(conversation, call_id)]
        return Refused(NO_OUTPUT.format(kind=kind, id=call_id), CONVERSATION_PARAM, detail=detail)
    if broken is not None and broken.rule is PairingRule.result_answers_a_call:
        call_id = broken.call_ids[0]
        kind = _CALL_KINDS[_output_kind(items, call_id)]
        return Refused(NO_CALL.format(kind=kind, id=call_id), CONVERSATION_PARAM, detail=detail)
    return Refused(f"Invalid request: {detail}", CONVERSATION_PARAM, detail=detail)


def _call_kind(conversation: Sequence[ChatMessage], call_id: str) -> str:
    """Whether the call `call_id` (the last with that id) is a function's or a custom tool's."""
    for message in reversed(conversation):
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                if call.id == call_id:
                    return call.kind
    return "function"


def _output_kind(items: Any, call_id: str) -> str:
    """Whether the output item answering `call_id` is a function's or a custom tool's."""
    if isinstance(items, list):
        for item in items:
            if isinstance(item, Mapping) and item.get("call_id") == call_id:
                if item.get("type") == "custom_tool_call_output":
                    return "custom"
                if item.get("type") == "function_call_output":
                    return "function"
    return "function"
