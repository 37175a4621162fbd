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


CHAT_URI = "https://api.openai.com/v1/chat/completions"


def chat_interaction(
    request: dict[str, Any] | str,
    reply: dict[str, Any] | str,
    *,
    status: int = 200,
    reason: str = "OK",
    request_headers: dict[str, list[str]] | None = None,
    response_headers: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    """One recorded Chat Completions call, as vcrpy writes it: `request` answered with `reply` (each a body
    given as data, or as the text recorded)."""
    return {
        "request": {"method": "POST", "uri": CHAT_URI, "headers": request_headers or {},
                    "body": request if isinstance(request, str) else json.dumps(request)},
        "response": {"status": {"code": status, "message": reason}, "headers": response_headers or {},
                     "body": {"string": reply if isinstance(reply, str) else json.dumps(reply)}},
    }  # fmt: skip


def cassette_text(*interactions: dict[str, Any]) -> str:
    """Anyone's cassette (no `sim:` block) holding `interactions`, as YAML."""
    return yaml.safe_dump({"interactions": list(interactions), "version": 1})


def chat_cassette(
    path: Path, request: dict[str, Any] | str, reply: dict[str, Any] | str, **recorded: Any
) -> Path:
    """Anyone's cassette (no `sim:` block) of one Chat Completions call written to `path`: `request` answered
    with `reply`, `recorded` as `chat_interaction` takes it."""
    path.write_text(cassette_text(chat_interaction(request, reply, **recorded)))
    return path


def cassette_calling(path: Path, name: str) -> Path:
    """A cassette of one model call answered with a call of the tool `name`, written to `path`."""
    call = {"id": "c1", "type": "function", "function": {"name": name, "arguments": "{}"}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    reply = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}]}
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    return chat_cassette(path, request, reply)
