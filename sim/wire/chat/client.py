"""Chat Completions, the client side: a core request encoded as a request body (incrementally, as a
conversation grows), and a `chat.completion` or its stream of chunks decoded and checked as the loop's
reply. The SDK adapters and `AnswererModel` use it."""

from __future__ import annotations

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
from sim.wire.body_bytes import EncodedTools, GrowingItems, assemble, dumps
from sim.wire.replies import STREAM_ENDED_EARLY, checked_call, well_formed
from sim.wire.text_format import chat_format_fields

REPLY_LIMIT = "max_completion_tokens"
"""The request field that caps a reply's tokens."""
FINISH_REASONS: frozenset[str] = frozenset({"stop", "tool_calls", "length", "content_filter"})


def message_to_wire(message: ChatMessage) -> dict[str, Any]:
    """One message as the API takes it."""
    if isinstance(message, SystemMessage | UserMessage):
        return {"role": message.role, "content": message.content}
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        wire["tool_calls"] = [call_to_wire(c) for c in message.tool_calls]
    return wire


def call_to_wire(call: ToolCall) -> dict[str, Any]:
    """One of an assistant message's `tool_calls`: a function's arguments, or a custom tool's input."""
    if call.kind == "custom":
        return {"id": call.id, "type": "custom", "custom": {"name": call.name, "input": call.arguments}}
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}


def tool_to_wire(spec: ToolSpec) -> dict[str, Any]:
    """One tool as the API takes it."""
    if spec.kind == "custom":
        grammar = spec.grammar
        form: dict[str, Any] = {"type": "text"}
        if grammar is not None:
            definition = {"syntax": grammar.syntax, "definition": grammar.definition}
            form = {"type": "grammar", "grammar": definition}
        custom = {"name": spec.name, "description": spec.description, "format": form}
        return {"type": "custom", "custom": custom}
    function = {"name": spec.name, "description": spec.description, "parameters": dict(spec.parameters)}
    return {"type": "function", "function": {**function, "strict": True} if spec.strict else function}


def request_fields(model: str, *, max_tokens: int | None, stream: bool) -> dict[str, Any]:
    """A client's request fields besides `messages` and `tools`: the model, the reply limit, and a stream
    that ends with its usage."""
    fields: dict[str, Any] = {"model": model}
    if max_tokens is not None:
        fields[REPLY_LIMIT] = max_tokens
    if stream:
        fields["stream"] = True
        fields["stream_options"] = {"include_usage": True}
    return fields


class RequestEncoder:
    """Builds request bodies as bytes; the messages a growing history already sent are not encoded again."""

    __slots__ = ("_encoded", "_previous", "_tools")

    def __init__(self) -> None:
        self._previous: Sequence[ChatMessage] = ()
        self._encoded = GrowingItems()
        self._tools = EncodedTools(tool_to_wire)

    def body(self, request: ModelRequest, fields: Mapping[str, Any]) -> bytes:
        """`{**fields, "messages": [...], "tools": [...]}` as JSON bytes; tools left out when none."""
        messages = request.messages
        new = messages.new_since(self._previous) if isinstance(messages, HistoryView) else None
        if new is None:
            self._encoded.clear()
            new = messages
        self._encoded.extend(dumps(message_to_wire(m)) for m in new)
        self._previous = messages
        if request.output is not None:
            fields = {**fields, **chat_format_fields(request.output)}
        return assemble(fields, "messages", self._encoded.joined(), self._tools.of(request.tools))


def reply_from_wire(completion: Any) -> ModelReply:
    """A `chat.completion` body as a `ModelReply`, after every check the loop relies on."""
    if not isinstance(completion, Mapping):
        raise ModelReplyError("Reply must be a JSON object")
    choices = completion.get("choices")
    if not isinstance(choices, list) or len(choices) != 1:
        count = len(choices) if isinstance(choices, list) else 0
        raise ModelReplyError(f"Reply must have exactly one choice, got {count}")
    choice = choices[0]
    if not isinstance(choice, Mapping):
        raise ModelReplyError("Reply choice must be a JSON object")
    finish_reason = finish_reason_from_wire(choice.get("finish_reason"))
    raw_message = choice.get("message")
    if raw_message is None and finish_reason == "content_filter":
        raw_message = {"role": "assistant", "content": None}
    return ModelReply(
        message=_assistant_message(raw_message),
        finish_reason=finish_reason,
        usage=_usage(completion.get("usage")),
    )


def finish_reason_from_wire(value: Any) -> FinishReason:
    """A choice's `finish_reason`, checked: one the loop knows (never the legacy `function_call`)."""
    if value == "function_call":
        raise ModelReplyError("Legacy function_call finish reason")
    if value not in FINISH_REASONS:
        raise ModelReplyError(f"Unsupported finish_reason: {value}")
    return value  # type: ignore[no-any-return]


def _assistant_message(raw: Any) -> AssistantMessage:
    if not isinstance(raw, Mapping):
        raise ModelReplyError("Reply message must be a JSON object")
    if raw.get("role") != "assistant":
        raise ModelReplyError("role must be assistant")
    content = raw.get("content")
    if content is not None and not isinstance(content, str):
        raise ModelReplyError("content must be a string or null")
    refusal = raw.get("refusal")
    if content is None and isinstance(refusal, str):
        content = refusal
    raw_calls = raw.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ModelReplyError("tool_calls must be a list")
    text = None if content is None else well_formed(content)
    return AssistantMessage(content=text, tool_calls=tuple(tool_call_from_wire(c) for c in raw_calls))


def tool_call_from_wire(raw: Any) -> ToolCall:
    """One of a message's `tool_calls` as a `ToolCall`, checked; its arguments `well_formed`."""
    if not isinstance(raw, Mapping):
        raise ModelReplyError("tool call must be a JSON object")
    if raw.get("type") == "custom":
        custom = raw.get("custom")
        if not isinstance(custom, Mapping) or not isinstance(custom.get("input"), str):
            # as before custom calls were read: a custom call without its input is not one the loop can take
            raise ModelReplyError("Unsupported tool call type: custom")
        call_id, name, text = raw.get("id"), custom.get("name"), custom.get("input")
        call = checked_call(call_id, name, text, "tool call id and custom tool name", "custom call input")
        return call.model_copy(update={"kind": "custom"})
    if raw.get("type", "function") != "function":
        raise ModelReplyError(f"Unsupported tool call type: {raw.get('type')}")
    function = raw.get("function")
    if not isinstance(function, Mapping):
        raise ModelReplyError("tool call must have a function")
    call_id, name, arguments = raw.get("id"), function.get("name"), function.get("arguments")
    return checked_call(call_id, name, arguments, "tool call id and function name", "tool call arguments")


def _usage(raw: Any) -> Usage | None:
    if raw is None:
        return None
    counts = {key: raw.get(key, 0) for key in ("prompt_tokens", "completion_tokens", "total_tokens")}
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts.values()):
        raise ModelReplyError("usage counts must be non-negative integers")
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
            raise ModelReplyError("Stream chunk must be a JSON object")
        if chunk.get("usage") is not None:
            self._usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                raise ModelReplyError("Reply must have exactly one choice, got more in the stream")
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
            raise ModelReplyError(STREAM_ENDED_EARLY)
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


def reply_from_events(events: Sequence[Any]) -> ModelReply:
    """A streamed reply (the JSON of each `data:` event) as a `ModelReply`, checked like any reply."""
    assembler = StreamAssembler()
    for event in events:
        assembler.feed(event)
    return reply_from_wire(assembler.completion())
