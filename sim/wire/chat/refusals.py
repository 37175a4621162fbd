"""What Chat Completions refuses of a request's parameters, in the API's words: `tool_choice` or
`parallel_tool_calls` with no tools (a framework that drops its tools on the last turn), an empty or too long
`tools` list, `max_tokens` on a
reasoning model (o-series, GPT-5: they take `max_completion_tokens`), an unknown
`service_tier`, and what the deprecated `functions` allow (`sim.wire.chat.legacy`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sim.wire.chat.legacy import refused_legacy
from sim.wire.requests import Refused
from sim.wire.service_tier import refused_service_tier

_REASONING_MODEL = re.compile(r"^(o[1-9][0-9]*|gpt-5(\.[0-9]+)?)(-|$)")


def reasoning_model(model: Any) -> bool:
    """Whether `model` names a reasoning model (`o1`, `o3-mini`, `o4-mini`, `gpt-5`, `gpt-5.1-...`)."""
    return isinstance(model, str) and _REASONING_MODEL.match(model) is not None


def _only_with_tools(name: str) -> Refused:
    return Refused(f"Invalid value for '{name}': '{name}' is only allowed when 'tools' are specified.", name)


MOST_TOOLS = 128
"""The most tools a request may offer."""


def _refused_tool_count(tools: Any) -> Refused | None:
    """An empty `tools` list (a framework that sends the list it emptied), or more than the API takes."""
    if tools == []:
        message = (
            "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array"
            " instead."
        )
        return Refused(message, "tools", "empty_array")
    if isinstance(tools, list) and len(tools) > MOST_TOOLS:
        message = (
            f"Invalid 'tools': array too long. Expected an array with maximum length {MOST_TOOLS}, but got"
            f" an array with length {len(tools)} instead."
        )
        return Refused(message, "tools", "array_above_max_length")
    return None


def refused_chat_request(body: Mapping[str, Any]) -> Refused | None:
    """The first of this module's refusals `body` meets, or None."""
    tools = body.get("tools")
    if (refused := _refused_tool_count(tools)) is not None:
        return refused
    if not tools:
        if body.get("tool_choice") not in (None, "none"):
            return _only_with_tools("tool_choice")
        if body.get("parallel_tool_calls") is not None:
            return _only_with_tools("parallel_tool_calls")
    if body.get("max_tokens") is not None and reasoning_model(body.get("model")):
        message = (
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use"
            " 'max_completion_tokens' instead."
        )
        return Refused(message, "max_tokens", "unsupported_parameter")
    return refused_service_tier(body) or refused_legacy(
        body, reasoning_model=reasoning_model(body.get("model"))
    )
