"""Chat Completions' deprecated function calling, as the API still serves it: a request that offers
`functions` (and steers them with `function_call`: `none`, `auto` or `{name}`) is answered with at most one
call, in `message.function_call` (`delta.function_call` pieces when streamed) with `finish_reason:
"function_call"` (`stop` when `function_call` named the function), never `tool_calls`; its history holds
assistant messages with a `function_call` and `role: "function"` messages with the result.

A legacy call carries no id on the wire. sim names each one by where its assistant message stands in the
conversation (`legacy_call_id`), and a `function` message answers the call of the message right before it:
read back as core tool calls and tool messages, the pairing rules hold for them as for tool calls."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from sim.core.errors import MessageContractError, ModelReplyError
from sim.core.messages import ToolCall, ToolMessage
from sim.core.model import ModelReply, ToolSpec
from sim.wire.replies import checked_call
from sim.wire.requests import Refused
from sim.wire.tool_choice import ReplyTerms, ToolChoiceError, read_tool_choice

FUNCTIONS = "functions"
"""The request field that offers legacy functions."""
FUNCTION_CALL = "function_call"
"""The request field that steers them, the assistant message's field that carries a call, and the finish
reason of a reply that calls one."""
_ID_PREFIX = "function_call_"
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_POSITION = re.compile(r"messages\[(\d+)\]")
_ONLY_WITH_FUNCTIONS = (
    "Invalid value for 'function_call': 'function_call' is only allowed when 'functions' are specified."
)
_TOOL_WITH_FUNCTIONS = (
    "Invalid parameter: messages with role 'tool' cannot be used when 'functions' are present."
    " Please use 'tools' instead of 'functions'."
)


def offers_functions(body: Mapping[str, Any]) -> bool:
    """Whether a request offers legacy `functions` (a non-empty list)."""
    functions = body.get(FUNCTIONS)
    return isinstance(functions, list) and bool(functions)


def legacy_call_id(position: int) -> str:
    """The id sim gives the legacy call of the assistant message at `messages[position]`."""
    return f"{_ID_PREFIX}{position}"


def _position(where: str) -> int:
    """The index a message's place in the body (`messages[3]`) says."""
    found = _POSITION.fullmatch(where)
    return int(found.group(1)) if found else 0


def _error(where: str, what: str) -> MessageContractError:
    return MessageContractError(f"{where}: {what}")


def function_call_from_wire(raw: Mapping[str, Any], where: str) -> tuple[ToolCall, ...]:
    """The legacy call an assistant message carries in `function_call` (none when it carries none), named
    by its place (`where`: `messages[3]`)."""
    call = raw.get(FUNCTION_CALL)
    if call is None:
        return ()
    if not isinstance(call, Mapping):
        raise _error(f"{where}.function_call", "must be an object with a name and arguments")
    try:
        read = checked_call(legacy_call_id(_position(where)), call.get("name"), call.get("arguments"),
                            "function_call name", "function_call arguments")  # fmt: skip
    except ModelReplyError as error:
        raise _error(f"{where}.function_call", str(error)) from None
    return (read,)


def function_message_from_wire(raw: Mapping[str, Any], where: str) -> ToolMessage:
    """A `role: "function"` message as the result of the legacy call of the message right before it."""
    name, content = raw.get("name"), raw.get("content")
    if not isinstance(name, str) or not name:
        raise _error(f"{where}.name", "a function message must name its function")
    if content is not None and not isinstance(content, str):
        raise _error(f"{where}.content", "a function message's content must be a string or null")
    answered = legacy_call_id(_position(where) - 1)
    return ToolMessage(tool_call_id=answered, content=content or "")


def functions_from_wire(body: Mapping[str, Any]) -> tuple[ToolSpec, ...]:
    """A request's legacy `functions` as tool specs; `MessageContractError` where one is malformed."""
    raw = body.get(FUNCTIONS)
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _error(FUNCTIONS, "must be an array")
    specs = []
    for index, function in enumerate(raw):
        where = f"{FUNCTIONS}[{index}]"
        if not isinstance(function, Mapping):
            raise _error(where, "each function must be an object with a name")
        specs.append(function_spec_from_wire(function, where))
    return tuple(specs)


def function_spec_from_wire(function: Mapping[str, Any], where: str) -> ToolSpec:
    """A function definition (`{name, description, parameters}`), as a tool's `function` and each of the
    deprecated `functions` give it; `where` is where it stands in the body."""
    name = function.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _error(f"{where}.name", f"invalid function name {name!r}")
    parameters = function.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(parameters, Mapping) or parameters.get("type", "object") != "object":
        raise _error(f"{where}.parameters", f"Invalid schema for function '{name}': must be an object schema")
    description = function.get("description", "")
    return ToolSpec(name, description if isinstance(description, str) else "", parameters)


def _names(body: Mapping[str, Any]) -> list[str]:
    return [str(f.get("name")) for f in body.get(FUNCTIONS) or [] if isinstance(f, Mapping)]


def refused_legacy(body: Mapping[str, Any], *, reasoning_model: bool) -> Refused | None:
    """What the API refuses of legacy function calling: `function_call` without `functions`, or naming a
    function not offered; `tool` messages when `functions` are offered; `function` messages on a reasoning
    model. `functions` and `tools` in one request are sim's limit (the API's answer is not known)."""
    choice = body.get(FUNCTION_CALL)
    offered = offers_functions(body)
    if choice is not None and not offered:
        return Refused(_ONLY_WITH_FUNCTIONS, FUNCTION_CALL)
    if offered and body.get("tools"):
        message = ("sim does not simulate 'functions' and 'tools' in one request: offer the functions as"
                   " 'tools' (the deprecated 'functions' cannot be mixed with them here).")  # fmt: skip
        return Refused(message, FUNCTIONS, "unsupported_value", unsimulated=True)
    if choice is not None and choice not in ("none", "auto"):
        name = choice.get("name") if isinstance(choice, Mapping) else None
        if not isinstance(name, str):
            message = "Invalid value for 'function_call': expected 'none', 'auto' or an object with a name."
            return Refused(message, FUNCTION_CALL, "invalid_value")
        if name not in _names(body):
            message = (
                f"Invalid value for 'function_call': no function named '{name}' was specified in 'functions'."
            )
            return Refused(message, FUNCTION_CALL, "invalid_value")
    messages = body.get("messages")
    if not (offered or reasoning_model) or not isinstance(messages, list):
        return None  # no message is refused for its role
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, Mapping) else None
        if role == "tool" and offered:
            return Refused(_TOOL_WITH_FUNCTIONS, f"messages.[{index}].role")
        if role == "function" and reasoning_model:
            said = f"Unsupported value: 'messages[{index}].role' does not support 'function' with this model."
            return Refused(said, f"messages[{index}].role", "unsupported_value")
    return None


def legacy_terms(terms: ReplyTerms, body: Mapping[str, Any]) -> ReplyTerms:
    """`terms` of a request that offers legacy `functions`: at most one call, steered by `function_call`
    as `tool_choice` steers tools, given the id of where its reply will stand; other requests' as they are."""
    if not offers_functions(body):
        return terms
    choice = body.get(FUNCTION_CALL)
    if isinstance(choice, Mapping):
        choice = {"type": "function", "function": {"name": choice.get("name")}}
    try:
        read = read_tool_choice(choice, _names(body))
    except ToolChoiceError:  # refused before it is answered
        read = terms.choice
    messages = body.get("messages")
    position = len(messages) if isinstance(messages, list) else 0
    return dataclasses.replace(terms, choice=read, parallel=False, legacy_call_id=legacy_call_id(position))


def legacy_contradiction(terms: ReplyTerms, reply: ModelReply) -> str | None:
    """How a reply to a request that offers legacy `functions` breaks what it guarantees (what its
    `function_call` allows, one call at most), or None."""
    names = [call.name for call in reply.message.tool_calls]
    if terms.legacy_call_id is None:
        return None
    if (contradiction := terms.choice.contradiction(names)) is not None:
        return contradiction.replace("tool_choice", "function_call", 1)
    if len(names) <= 1:
        return None
    return (f"the request offers the deprecated 'functions', answered with one function_call at most, but"
            f" the scripted reply calls {', '.join(names)}")  # fmt: skip


def function_call_to_wire(reply: ModelReply) -> dict[str, Any]:
    """The one call of a legacy reply as `message.function_call`."""
    call = reply.message.tool_calls[0]
    return {"name": call.name, "arguments": call.arguments}
