"""Chat Completions request bodies read as the API reads them: `messages` as core messages and `tools` as
tool specs, each checked (`MessageContractError` where the API would refuse them)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sim.core.errors import MessageContractError, ModelReplyError, PairingRule
from sim.core.messages import (
    AssistantMessage,
    ChatMessage,
    SystemMessage,
    ToolMessage,
    UserMessage,
    validate_pairing,
)
from sim.core.model import ModelRequest, ToolSpec
from sim.wire.chat.client import tool_call_from_wire
from sim.wire.chat.legacy import (
    function_call_from_wire,
    function_message_from_wire,
    function_spec_from_wire,
    functions_from_wire,
)
from sim.wire.custom_tools import CUSTOM, GrammarError, format_from_wire, is_custom
from sim.wire.requests import MissingParameterError, Refused, refused_malformed

_WIRE_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def contract_error(where: str, what: str) -> MessageContractError:
    """What is wrong with a request, and where in its body."""
    return MessageContractError(f"{where}: {what}")


def api_where(where: str) -> str:
    """`messages[1]` as the API names it in an error's `param`: `messages.[1]`."""
    return where.replace("[", ".[")


def content_text(content: Any, where: str) -> str:
    """Message content as text, for either API: a string, or the text (or refusal) of each part of a list;
    other parts (images, files) become a placeholder such as `[image_url]`."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for part in content:
            if not isinstance(part, Mapping):
                raise contract_error(where, "content parts must be objects")
            text = part.get("text", part.get("refusal"))
            pieces.append(text if isinstance(text, str) else f"[{part.get('type', 'part')}]")
        return "".join(pieces)
    raise contract_error(where, "content must be a string or an array of content parts")


def message_from_wire(raw: Any, where: str) -> ChatMessage:
    """One message as the API takes it, back into a `ChatMessage`; `MessageContractError` when malformed."""
    if not isinstance(raw, Mapping):
        raise contract_error(where, "each message must be an object")
    role = raw.get("role")
    if role in ("system", "developer"):
        return SystemMessage(content=content_text(raw.get("content"), f"{where}.content"))
    if role == "user":
        return UserMessage(content=content_text(raw.get("content"), f"{where}.content"))
    if role == "tool":
        call_id = raw.get("tool_call_id")
        if call_id is None:
            missing = f"{where}.tool_call_id: a tool message must answer a tool_call_id"
            raise MissingParameterError(missing, f"{api_where(where)}.tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise contract_error(f"{where}.tool_call_id", "a tool message must answer a tool_call_id")
        return ToolMessage(tool_call_id=call_id, content=content_text(raw.get("content"), f"{where}.content"))
    if role == "assistant":
        content = raw.get("content")
        calls = raw.get("tool_calls") or []
        if not isinstance(calls, list):
            raise contract_error(f"{where}.tool_calls", "must be an array")
        try:
            tool_calls = tuple(tool_call_from_wire(call) for call in calls)
        except ModelReplyError as error:
            raise contract_error(f"{where}.tool_calls", str(error)) from None
        text = None if content is None else content_text(content, f"{where}.content")
        tool_calls += function_call_from_wire(raw, where)  # a legacy call, named by where it stands
        return AssistantMessage(content=text, tool_calls=tool_calls)
    if role == "function":  # a legacy call's result: it answers the call of the message before it
        return function_message_from_wire(raw, where)
    raise contract_error(f"{where}.role", f"unsupported role {role!r}")


def _custom_spec_from_wire(raw: Mapping[str, Any], where: str) -> ToolSpec:
    """A `{type: custom, custom: {name, description, format}}` tool as a custom `ToolSpec`."""
    custom = raw.get(CUSTOM)
    if not isinstance(custom, Mapping):
        raise contract_error(f"{where}.custom", "Missing required parameter: 'tools[].custom'.")
    name = custom.get("name")
    if not isinstance(name, str) or not _WIRE_TOOL_NAME.fullmatch(name):
        raise contract_error(f"{where}.custom.name", f"invalid custom tool name {name!r}")
    try:
        grammar = format_from_wire(raw)
    except GrammarError as error:
        raise contract_error(f"{where}{error.where}", str(error)) from None
    description = custom.get("description", "")
    return ToolSpec(name, description if isinstance(description, str) else "", {}, "custom", grammar)


def _tool_spec_from_wire(raw: Any, where: str) -> ToolSpec:
    if is_custom(raw):
        return _custom_spec_from_wire(raw, where)
    if (
        not isinstance(raw, Mapping)
        or raw.get("type") != "function"
        or not isinstance(raw.get("function"), Mapping)
    ):
        raise contract_error(
            where, "each tool must be {type: function, function: {...}} or {type: custom, custom: {...}}"
        )
    return function_spec_from_wire(raw["function"], f"{where}.function")


def request_from_wire(body: Any) -> ModelRequest:
    """A Chat Completions request body as a `ModelRequest`, checked as the API checks it, pairing included."""
    if not isinstance(body, Mapping):
        raise contract_error("body", "must be a JSON object")
    messages = messages_from_wire(body.get("messages"))
    validate_pairing(messages)
    return ModelRequest(messages, offered_tools(body))


def offered_tools(body: Mapping[str, Any]) -> tuple[ToolSpec, ...]:
    """What a request offers the model: its `tools`, and the deprecated `functions`."""
    return tools_from_wire(body.get("tools")) + functions_from_wire(body)


def messages_from_wire(raw_messages: Any) -> list[ChatMessage]:
    """A request's `messages` as `ChatMessage`s, pairing unchecked; `MessageContractError` if malformed."""
    if not isinstance(raw_messages, list) or not raw_messages:
        raise contract_error("messages", "must be a non-empty array")
    return [message_from_wire(raw, f"messages[{index}]") for index, raw in enumerate(raw_messages)]


def tools_from_wire(raw_tools: Any) -> tuple[ToolSpec, ...]:
    """A request's `tools` as `ToolSpec`s; `MessageContractError` when they are not function tools."""
    if raw_tools is None:
        return ()
    if not isinstance(raw_tools, list):
        raise contract_error("tools", "must be an array")
    return tuple(_tool_spec_from_wire(raw, f"tools[{index}]") for index, raw in enumerate(raw_tools))


UNANSWERED_CALLS = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each"
    " 'tool_call_id'. The following tool_call_ids did not have response messages: {ids}"
)
"""The API's words for tool calls left without results (docs/errors.md: quoted live errors)."""

NO_PRECEDING_CALLS = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with"
    " 'tool_calls'."
)
"""The API's words (its spelling too) for a tool message after no tool calls."""

CALL_NOT_FOUND = "Invalid parameter: 'tool_call_id' of '{id}' not found in 'tool_calls' of previous message."
"""The API's words for a tool message answering none of the calls before it."""

ANSWERED_TWICE = (
    "Invalid parameter: Duplicate value for 'tool_call_id' of '{id}', in messages[{first}] and"
    " messages[{at}]."
)
"""The API's words for a second tool message answering the same call."""


def refused_conversation(error: MessageContractError, raw_messages: Any) -> Refused:
    """`raw_messages` (a request's `messages`) refused as the API refuses them: a pairing rule broken in the
    API's words, with its `param`; a malformed message as sim words it ("Invalid request: ..."). `detail`
    keeps the contract broken in sim's own words, for a run's problems."""
    detail = str(error)
    broken = error.pairing
    if broken is None or _legacy(raw_messages, broken.at):
        return refused_malformed(error)
    at, first_id = broken.at, broken.call_ids[0]
    if broken.rule is PairingRule.every_call_answered:
        message = UNANSWERED_CALLS.format(ids=", ".join(broken.call_ids))
        return Refused(message, f"messages.[{at}].role", detail=detail)
    if broken.rule is PairingRule.result_answers_a_call and not broken.after_calls:
        return Refused(NO_PRECEDING_CALLS, f"messages.[{at}].role", detail=detail)
    if broken.rule is PairingRule.result_answers_a_call:
        return Refused(CALL_NOT_FOUND.format(id=first_id), f"messages.[{at}].tool_call_id", detail=detail)
    if broken.rule is PairingRule.one_result_per_call:
        first = _answered_at(raw_messages, first_id, at)
        message = ANSWERED_TWICE.format(id=first_id, first=first, at=at)
        return Refused(message, f"messages.[{at}].tool_call_id", detail=detail)
    return Refused(f"Invalid request: {detail}", f"messages.[{at}].tool_calls", detail=detail)


def _legacy(raw_messages: Any, at: int) -> bool:
    """Whether message `at` is a legacy function call or result: its ids are sim's, never sent, so the
    API's words about `tool_call_id`s do not apply (sim's own are kept)."""
    raw = raw_messages[at] if isinstance(raw_messages, list) and 0 <= at < len(raw_messages) else None
    return isinstance(raw, Mapping) and (
        raw.get("role") == "function" or raw.get("function_call") is not None
    )


def _answered_at(raw_messages: Any, call_id: str, at: int) -> int:
    """The index of the tool message before `at` that first answered `call_id` (the one before `at` when
    none says so: a legacy function message)."""
    if isinstance(raw_messages, list):
        for index in range(min(at, len(raw_messages)) - 1, -1, -1):
            raw = raw_messages[index]
            if not isinstance(raw, Mapping) or raw.get("role") not in ("tool", "function"):
                break
            if raw.get("tool_call_id") == call_id:
                return index
    return at - 1
