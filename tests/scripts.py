"""Small builders for scripted conversations used across the tests."""

from __future__ import annotations

import json
from typing import Any

from sim import ModelReply, ToolCall


def shell_call(call_id: str, command: str) -> ToolCall:
    """A `shell` call with well-formed arguments."""
    return ToolCall(id=call_id, name="shell", arguments=json.dumps({"command": command}))


def call(call_id: str, name: str, arguments: Any) -> ToolCall:
    """A call whose arguments are `arguments` as JSON, or kept raw when already a string."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(id=call_id, name=name, arguments=raw)


def reply(*calls: ToolCall) -> ModelReply:
    """A reply asking for `calls`."""
    return ModelReply.calling(*calls)
