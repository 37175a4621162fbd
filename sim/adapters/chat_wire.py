"""The Chat Completions wire format: requests encoded incrementally, replies decoded and checked."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sim.core.errors import ModelReplyError
from sim.core.messages import (
    AssistantMessage,
    ChatMessage,
    HistoryView,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from sim.core.model import FinishReason, ModelReply, ModelRequest, ToolSpec, Usage

FINISH_REASONS: frozenset[str] = frozenset({"stop", "tool_calls", "length", "content_filter"})


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def message_to_wire(message: ChatMessage) -> dict[str, Any]:
    """One message as the API takes it."""
    if isinstance(message, SystemMessage | UserMessage):
        return {"role": message.role, "content": message.content}
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        wire["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    return wire


def tool_to_wire(spec: ToolSpec) -> dict[str, Any]:
    """One tool as the API takes it."""
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": dict(spec.parameters)},
    }


class RequestEncoder:
    """Builds request bodies as bytes; the messages a growing history already sent are not encoded again."""

    __slots__ = ("_encoded", "_encoded_tools", "_previous", "_tools")

    def __init__(self) -> None:
        self._previous: Sequence[ChatMessage] = ()
        self._encoded: list[bytes] = []
        self._tools: tuple[ToolSpec, ...] | None = None
        self._encoded_tools = b""

    def body(self, request: ModelRequest, fields: Mapping[str, Any]) -> bytes:
        """`{**fields, "messages": [...], "tools": [...]}` as JSON bytes; tools left out when none."""
        messages = request.messages
        new = messages.new_since(self._previous) if isinstance(messages, HistoryView) else None
        if new is None:
            self._encoded = []
            new = messages
        self._encoded.extend(_dumps(message_to_wire(m)) for m in new)
        self._previous = messages
        if request.tools is not self._tools:
            self._tools = request.tools
            self._encoded_tools = _dumps([tool_to_wire(s) for s in request.tools]) if request.tools else b""
        parts = [_dumps(dict(fields))[:-1]]
        parts.append(b',"messages":[' if fields else b'"messages":[')
        parts.append(b",".join(self._encoded))
        parts.append(b"]")
        if self._encoded_tools:
            parts += [b',"tools":', self._encoded_tools]
        parts.append(b"}")
        return b"".join(parts)


def _fail(message: str) -> ModelReplyError:
    return ModelReplyError(message)


def reply_from_wire(completion: Any) -> ModelReply:
    """A `chat.completion` body as a `ModelReply`, after every check the loop relies on."""
    if not isinstance(completion, Mapping):
        raise _fail("Reply must be a JSON object")
    choices = completion.get("choices")
    if not isinstance(choices, list) or len(choices) != 1:
        count = len(choices) if isinstance(choices, list) else 0
        raise _fail(f"Reply must have exactly one choice, got {count}")
    choice = choices[0]
    if not isinstance(choice, Mapping):
        raise _fail("Reply choice must be a JSON object")
    finish_reason = _finish_reason(choice.get("finish_reason"))
    raw_message = choice.get("message")
    if raw_message is None and finish_reason == "content_filter":
        raw_message = {"role": "assistant", "content": None}
    return ModelReply(
        message=_assistant_message(raw_message),
        finish_reason=finish_reason,
        usage=_usage(completion.get("usage")),
    )


def _finish_reason(value: Any) -> FinishReason:
    if value == "function_call":
        raise _fail("Legacy function_call finish reason")
    if value not in FINISH_REASONS:
        raise _fail(f"Unsupported finish_reason: {value}")
    return value  # type: ignore[no-any-return]


def _assistant_message(raw: Any) -> AssistantMessage:
    if not isinstance(raw, Mapping):
        raise _fail("Reply message must be a JSON object")
    if raw.get("role") != "assistant":
        raise _fail("role must be assistant")
    content = raw.get("content")
    if content is not None and not isinstance(content, str):
        raise _fail("content must be a string or null")
    refusal = raw.get("refusal")
    if content is None and isinstance(refusal, str):
        content = refusal
    raw_calls = raw.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise _fail("tool_calls must be a list")
    return AssistantMessage(content=content, tool_calls=tuple(_tool_call(c) for c in raw_calls))


def _tool_call(raw: Any) -> ToolCall:
    if not isinstance(raw, Mapping):
        raise _fail("tool call must be a JSON object")
    if raw.get("type", "function") != "function":
        raise _fail(f"Unsupported tool call type: {raw.get('type')}")
    function = raw.get("function")
    if not isinstance(function, Mapping):
        raise _fail("tool call must have a function")
    call_id, name, arguments = raw.get("id"), function.get("name"), function.get("arguments")
    if not (isinstance(call_id, str) and call_id and isinstance(name, str) and name):
        raise _fail("tool call id and function name must be non-empty strings")
    if not isinstance(arguments, str):
        raise _fail("tool call arguments must be a string")
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _usage(raw: Any) -> Usage | None:
    if raw is None:
        return None
    counts = {key: raw.get(key, 0) for key in ("prompt_tokens", "completion_tokens", "total_tokens")}
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts.values()):
        raise _fail("usage counts must be non-negative integers")
    return Usage(**counts)


class StreamAssembler:
    """Folds `chat.completion.chunk`s into the `chat.completion` they add up to.

    Text pieces are joined; tool-call deltas are merged by `index` (id and name from the first delta
    that has them, arguments concatenated); the finish reason comes from the last choice chunk; usage
    from the usage-only chunk (`choices: []`).
    """

    def __init__(self) -> None:
        self._role: str | None = None
        self._content: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish_reason: Any = None
        self._usage: Any = None

    def feed(self, chunk: Any) -> None:
        """Add one chunk."""
        if not isinstance(chunk, Mapping):
            raise _fail("Stream chunk must be a JSON object")
        if chunk.get("usage") is not None:
            self._usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                raise _fail("Reply must have exactly one choice, got more in the stream")
            delta = choice.get("delta") or {}
            self._role = delta.get("role") or self._role
            if isinstance(delta.get("content"), str):
                self._content.append(delta["content"])
            if isinstance(delta.get("refusal"), str):
                self._refusal.append(delta["refusal"])
            for piece in delta.get("tool_calls") or []:
                self._merge_call(piece)
            if choice.get("finish_reason") is not None:
                self._finish_reason = choice["finish_reason"]

    def _merge_call(self, piece: Mapping[str, Any]) -> None:
        call = self._calls.setdefault(piece.get("index", 0), {"type": "function", "function": {}, "args": []})
        if piece.get("id") and "id" not in call:
            call["id"] = piece["id"]
        if piece.get("type"):
            call["type"] = piece["type"]
        function = piece.get("function") or {}
        if function.get("name") and "name" not in call["function"]:
            call["function"]["name"] = function["name"]
        if isinstance(function.get("arguments"), str):
            call["args"].append(function["arguments"])

    def completion(self) -> dict[str, Any]:
        """The assembled `chat.completion`; `ModelReplyError` when the stream never said how it finished."""
        if self._finish_reason is None:
            raise _fail("Stream ended without a finish reason")
        message: dict[str, Any] = {
            "role": self._role or "assistant",
            "content": "".join(self._content) if self._content else None,
        }
        if self._refusal:
            message["refusal"] = "".join(self._refusal)
        if self._calls:
            message["tool_calls"] = [
                {
                    "id": call.get("id"),
                    "type": call["type"],
                    "function": {**call["function"], "arguments": "".join(call["args"])},
                }
                for _, call in sorted(self._calls.items())
            ]
        return {
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish_reason}],
            "usage": self._usage,
        }
