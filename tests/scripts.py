"""Small builders for scripted conversations used across the tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

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


def chat_cassette(path: Path, request: dict[str, Any], reply: dict[str, Any]) -> Path:
    """Anyone's cassette (no `sim:` block) of one Chat Completions call: `request` answered with `reply`."""
    interaction = {
        "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions", "headers": {},
                    "body": json.dumps(request)},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": {},
                     "body": {"string": json.dumps(reply)}},
    }  # fmt: skip
    path.write_text(yaml.safe_dump({"interactions": [interaction], "version": 1}))
    return path
