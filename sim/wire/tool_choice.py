"""What a request lets the model answer, read the same way for both APIs: what its `tool_choice` lets the
model call (`none`, `auto`, `required`, one named function: Chat's `{function: {name}}`, the Responses
API's flat `{name}`; or `allowed_tools`: Chat nests `{allowed_tools: {mode, tools}}`, the Responses API
writes `{mode, tools}`), whether calls may come several at once, and which functions are strict."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sim.core.model import InputGrammar, ModelReply
from sim.wire.custom_tools import CUSTOM, custom_grammars


@dataclass(frozen=True, slots=True)
class ToolChoice:
    """What the model may answer: whether it must call a tool, whether it may, and which tools (None: any
    offered)."""

    required: bool = False
    forbidden: bool = False
    allowed: frozenset[str] | None = None
    named: str | None = None
    """The one function a named choice forces (for messages)."""

    def permits(self, names: Sequence[str]) -> bool:
        """Whether a reply calling `names` (in order; none for a text reply) obeys this choice."""
        return self.contradiction(names) is None

    def contradiction(self, names: Sequence[str]) -> str | None:
        """How a reply calling `names` disobeys this choice, or None."""
        if self.forbidden and names:
            return f"the request says tool_choice 'none', but the scripted reply calls {', '.join(names)}"
        if self.required and not names:
            said = repr(self.named) if self.named else "'required'"
            return f"the request says tool_choice {said}, but the scripted reply calls no tool"
        if self.allowed is not None and any(name not in self.allowed for name in names):
            said = repr(self.named) if self.named else f"allowed_tools {sorted(self.allowed)}"
            return f"the request says tool_choice {said}, but the scripted reply calls {list(names)}"
        return None


class ToolChoiceError(ValueError):
    """A `tool_choice` the API refuses (malformed, or naming a tool that is not offered), or that sim cannot
    honour (`unsimulated`)."""

    def __init__(self, message: str, *, unsimulated: bool = False) -> None:
        super().__init__(message)
        self.unsimulated = unsimulated


def _function_name(tool: Any) -> str | None:
    """The name a `{type: function, name}` or `{type: function, function: {name}}` entry gives (or a custom
    tool's: `{type: custom, name}`, `{type: custom, custom: {name}}`)."""
    if not isinstance(tool, Mapping) or tool.get("type") not in ("function", CUSTOM):
        return None
    function = tool.get("function", tool.get(CUSTOM))
    name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
    return name if isinstance(name, str) else None


def read_tool_choice(choice: Any, offered: Sequence[str]) -> ToolChoice:
    """`choice` as what the model may call, checked against the tools `offered`; `ToolChoiceError` with the
    API's words where it would refuse the request."""
    if choice is None or choice == "auto":
        return ToolChoice()
    if choice == "none":
        return ToolChoice(forbidden=True)
    if choice == "required":
        return ToolChoice(required=True)
    if isinstance(choice, Mapping) and choice.get("type") == "allowed_tools":
        inner = choice.get("allowed_tools", choice)
        mode = inner.get("mode") if isinstance(inner, Mapping) else None
        tools = inner.get("tools") if isinstance(inner, Mapping) else None
        if mode not in ("auto", "required") or not isinstance(tools, list) or not tools:
            raise ToolChoiceError(
                "Invalid value for 'tool_choice': allowed_tools needs a mode ('auto' or 'required') and a"
                " non-empty list of tools."
            )
        names = [_function_name(tool) for tool in tools]
        if None in names:
            raise ToolChoiceError(
                "Invalid value for 'tool_choice': sim allows function tools only.", unsimulated=True
            )
        _check_offered([name for name in names if name is not None], offered)
        return ToolChoice(required=mode == "required", allowed=frozenset(n for n in names if n is not None))
    name = _function_name(choice)
    if name is None:
        raise ToolChoiceError(
            "Invalid value for 'tool_choice': expected 'none', 'auto', 'required', a named function or"
            " allowed_tools."
        )
    _check_offered([name], offered)
    return ToolChoice(required=True, allowed=frozenset({name}), named=name)


def _check_offered(names: Sequence[str], offered: Sequence[str]) -> None:
    for name in names:
        if name not in offered:
            raise ToolChoiceError(
                f"Invalid value for 'tool_choice': no function named '{name}' was specified in 'tools'."
            )


def contradicts_tool_choice(body: Mapping[str, Any], reply: ModelReply) -> str | None:
    """How a scripted reply contradicts the `tool_choice` of the request `body` (the real model could not
    answer so); a malformed choice contradicts nothing (it was refused before)."""
    choice = body.get("tool_choice")
    try:
        read = read_tool_choice(choice, _named_anywhere(choice))
    except ToolChoiceError:
        return None
    return read.contradiction([call.name for call in reply.message.tool_calls])


def _named_anywhere(choice: Any) -> list[str]:
    if not isinstance(choice, Mapping):
        return []
    inner = choice.get("allowed_tools", choice)
    tools = inner.get("tools") if isinstance(inner, Mapping) else None
    entries = tools if isinstance(tools, list) else [choice]
    return [name for name in map(_function_name, entries) if name is not None]


@dataclass(frozen=True, slots=True)
class ReplyTerms:
    """What the API guarantees a reply to one request: `choice` (what may be called), whether a reply may
    hold several calls (`parallel_tool_calls`, true by default), and the schema each strict function's
    arguments always match (unless the reply is cut at the token limit), by function name."""

    choice: ToolChoice = ToolChoice()
    parallel: bool = True
    strict: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    text_schema: Mapping[str, Any] | None = None
    """The schema every completed text matches (a strict `json_schema` response format), unless the reply
    is cut at the token limit or refused."""
    json_object: bool = False
    """Whether every completed text is a JSON object (`json_object` mode)."""
    text_wanted: Mapping[str, Any] | None = None
    """The schema a non-strict `json_schema` format asks the text to match (best effort: not guaranteed)."""
    custom: Mapping[str, InputGrammar | None] = field(default_factory=dict)
    """Each custom tool offered, by name: the grammar its input always matches (unless the reply is cut at
    the token limit), or None for free text."""
    hosted: tuple[Mapping[str, Any], ...] = ()
    """The hosted tools offered (web search, MCP servers, ...), as the request wrote them: the only ones
    whose items a reply may hold."""
    hosted_choice: str | None = None
    """The hosted tool `tool_choice` forces (`web_search`, `mcp`, ...): every reply holds one of its items."""
    legacy_call_id: str | None = None
    """Set when the request offers Chat's deprecated `functions`: its reply holds one call at most, sent as
    a `function_call` that carries no id on the wire; this is the id sim gives it (where the reply will
    stand in the conversation)."""


def reply_terms(
    body: Mapping[str, Any],
    functions: Sequence[Mapping[str, Any]],
    *,
    unsaid: Callable[[Any], Mapping[str, Any] | None],
) -> ReplyTerms:
    """The terms a request's body sets, its function definitions given (`unsaid`: the schema the API
    enforces for a function that leaves `strict` out, None where it enforces none)."""
    custom = custom_grammars(body.get("tools"))
    names = [str(function.get("name")) for function in functions] + list(custom)
    try:
        choice = read_tool_choice(body.get("tool_choice"), names)
    except ToolChoiceError:  # refused before it is answered
        choice = ToolChoice()
    strict: dict[str, Mapping[str, Any]] = {}
    for function in functions:
        said, parameters = function.get("strict"), function.get("parameters")
        enforced = unsaid(parameters) if said is None else parameters if said is True else None
        if isinstance(enforced, Mapping):
            strict[str(function.get("name"))] = enforced
    return ReplyTerms(choice, body.get("parallel_tool_calls") is not False, strict, custom=custom)
