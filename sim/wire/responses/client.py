"""The Responses API, the client side: a core request encoded as a request body (incrementally, as a
conversation grows; stateless or chained), and a `response` or its stream of events decoded and checked as
the loop's reply. The SDK adapter uses it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sim.core.errors import ModelAPIError, ModelReplyError
from sim.core.messages import (
    AssistantMessage,
    ChatMessage,
    HistoryView,
    HostedItem,
    Reasoning,
    SystemMessage,
    TextItem,
    ToolCall,
)
from sim.core.model import FinishReason, ModelReply, ModelRequest, ToolSpec, Usage
from sim.wire.body_bytes import EncodedTools, GrowingItems, assemble, dumps
from sim.wire.hosted import ITEM_TOOL, hosted_item_of
from sim.wire.replies import STREAM_ENDED_EARLY, well_formed
from sim.wire.responses.items import (
    assistant_turn,
    custom_call_from_wire,
    function_call_from_wire,
    message_to_items,
    reasoning_from_wire,
    text_item_from_wire,
)
from sim.wire.text_format import responses_format_fields

INCOMPLETE_REASONS: dict[str, FinishReason] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}
"""`incomplete_details.reason` as the loop's finish reason."""

REPLY_LIMIT = "max_output_tokens"
"""The request field that caps a reply's tokens."""
ENCRYPTED_REASONING = "reasoning.encrypted_content"
"""What a stateless request asks `include` for, to be able to send reasoning back."""


def tool_to_wire(spec: ToolSpec) -> dict[str, Any]:
    """One tool as the API takes it: flat, not nested under `function`."""
    if spec.kind == "custom":
        grammar = spec.grammar
        form: dict[str, Any] = {"type": "text"} if grammar is None else {
            "type": "grammar", "syntax": grammar.syntax, "definition": grammar.definition}  # fmt: skip
        return {"type": "custom", "name": spec.name, "description": spec.description, "format": form}
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": dict(spec.parameters),
        "strict": spec.strict,
    }


def request_fields(
    model: str, *, chain: bool, previous_response_id: str | None, max_tokens: int | None, stream: bool
) -> dict[str, Any]:
    """A client's request fields besides `instructions`, `input` and `tools`: the model; with `chain` the
    server stores the response (and the request continues `previous_response_id`, if given), without it the
    request asks for the encrypted reasoning it will send back; the reply limit; streaming."""
    fields: dict[str, Any] = {"model": model, "store": chain}
    if previous_response_id is not None:
        fields["previous_response_id"] = previous_response_id
    if not chain:
        fields["include"] = [ENCRYPTED_REASONING]
    if max_tokens is not None:
        fields[REPLY_LIMIT] = max_tokens
    if stream:
        fields["stream"] = True
    return fields


class ItemEncoder:
    """Builds request bodies as bytes; the items a growing history already sent are not encoded again."""

    __slots__ = ("_custom_calls", "_encoded", "_previous", "_tools")

    def __init__(self) -> None:
        self._previous: Sequence[ChatMessage] = ()
        self._encoded = GrowingItems()
        """Each history message's items (without the system prompt), comma-joined."""
        self._custom_calls: set[str] = set()
        """The ids of the custom tool calls encoded: their results are `custom_tool_call_output` items."""
        self._tools = EncodedTools(tool_to_wire)

    def body(self, request: ModelRequest, fields: Mapping[str, Any], *, start: int = 0) -> bytes:
        """`{**fields, "instructions", "input": [...], "tools": [...]}` as JSON bytes, with the input items
        of history messages from `start` on (a chained request sends only what is new)."""
        messages = request.messages
        new = messages.new_since(self._previous) if isinstance(messages, HistoryView) else None
        has_system = bool(messages) and isinstance(messages[0], SystemMessage)
        if new is None:
            self._encoded.clear()
            new = messages[1:] if has_system else messages
        for m in new:
            if isinstance(m, AssistantMessage):
                self._custom_calls.update(call.id for call in m.tool_calls if call.kind == "custom")
        custom = self._custom_calls
        self._encoded.extend(b",".join(dumps(item) for item in message_to_items(m, custom)) for m in new)
        self._previous = messages
        head = {**fields, "instructions": messages[0].content} if has_system else dict(fields)
        head.update(responses_format_fields(request.output))
        return assemble(head, "input", self._encoded.joined(start), self._tools.of(request.tools))


def _failure(error: Any) -> ModelAPIError:
    """A failed response (`status: failed`, `response.failed`, an `error` event) as a typed error."""
    details = error if isinstance(error, Mapping) else {}
    message = details.get("message") if isinstance(details.get("message"), str) else "The response failed"
    code = details.get("code")
    return ModelAPIError(f"Model API error: {message}", code=str(code) if code is not None else None)


def reply_from_wire(response: Any) -> ModelReply:
    """A `response` object as a `ModelReply`, after every check the loop relies on; `status: failed` is a
    `ModelAPIError`."""
    if not isinstance(response, Mapping):
        raise ModelReplyError("Reply must be a JSON object")
    status = response.get("status")
    if status == "failed":
        raise _failure(response.get("error"))
    finish: FinishReason | None = None
    if status == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        if reason not in INCOMPLETE_REASONS:
            raise ModelReplyError(f"Unsupported incomplete reason: {reason}")
        finish = INCOMPLETE_REASONS[reason]
    elif status != "completed":
        raise ModelReplyError(f"Unsupported response status: {status}")
    output = response.get("output")
    if not isinstance(output, list):
        raise ModelReplyError("Reply output must be a list")
    message = _assistant_message(output)
    finish = finish or ("tool_calls" if message.tool_calls else "stop")
    return ModelReply(message=message, finish_reason=finish, usage=_usage(response.get("usage")))


def _assistant_message(output: list[Any]) -> AssistantMessage:
    texts: list[str] = []
    refusals: list[str] = []
    calls: list[ToolCall] = []
    parts: list[Reasoning | TextItem | HostedItem] = []
    for item in output:
        if not isinstance(item, Mapping):
            raise ModelReplyError("Reply output items must be JSON objects")
        kind = item.get("type")
        if kind == "message":
            if item.get("role", "assistant") != "assistant":
                raise ModelReplyError("role must be assistant")
            said: list[str] = []
            for part in item.get("content") or []:
                _text_part(part, said, refusals)
            if said:
                texts += said
                parts.append(text_item_from_wire(item, "\n\n".join(said)))
        elif kind == "function_call":
            calls.append(function_call_from_wire(item))
        elif kind == "custom_tool_call":
            calls.append(custom_call_from_wire(item))
        elif kind == "reasoning":
            parts.append(reasoning_from_wire(item))
        elif kind in ITEM_TOOL:  # a hosted tool's item: kept in order, sent back as it came
            parts.append(hosted_item_of(item))
        else:
            raise ModelReplyError(f"Unsupported output item type: {kind}")
    content = "\n\n".join(texts) if texts else ("".join(refusals) if refusals else None)
    if refusals:  # a refusal is not sent back as a message item: the items say only what texts do
        parts = [part for part in parts if isinstance(part, Reasoning)]
    return assistant_turn(parts, calls, content=None if content is None else well_formed(content))


def _text_part(part: Any, texts: list[str], refusals: list[str]) -> None:
    if not isinstance(part, Mapping):
        raise ModelReplyError("Message content parts must be JSON objects")
    if part.get("type") == "output_text" and isinstance(part.get("text"), str):
        texts.append(part["text"])
    elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
        refusals.append(part["refusal"])
    else:
        raise ModelReplyError(f"Unsupported message content part: {part.get('type')}")


def _usage(raw: Any) -> Usage | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ModelReplyError("usage must be a JSON object")
    counts = [raw.get(key, 0) for key in ("input_tokens", "output_tokens", "total_tokens")]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts):
        raise ModelReplyError("usage counts must be non-negative integers")
    return Usage(prompt_tokens=counts[0], completion_tokens=counts[1], total_tokens=counts[2])


def response_id(reply: Any) -> str | None:
    """The id of a `response` body, or of the response a stream's events carry (its last one)."""
    if isinstance(reply, list):
        carried = [
            event["response"]
            for event in reply
            if isinstance(event, Mapping) and isinstance(event.get("response"), Mapping)
        ]
        return response_id(carried[-1]) if carried else None
    value = reply.get("id") if isinstance(reply, Mapping) else None
    return value if isinstance(value, str) else None


FINAL_EVENTS = frozenset({"response.completed", "response.incomplete"})


def reply_from_events(events: Sequence[Any]) -> ModelReply:
    """A streamed reply (the JSON of each event) as a `ModelReply`, from its final response event (its
    output rebuilt from the `output_item.done` events when the final event leaves it out); a failed
    response or an `error` event is a `ModelAPIError`."""
    done_items: dict[int, Any] = {}
    for event in events:
        if not isinstance(event, Mapping):
            raise ModelReplyError("Stream event must be a JSON object")
        kind = event.get("type")
        if kind == "error":
            raise _failure(event.get("error", event))
        if kind == "response.failed":
            response = event.get("response")
            raise _failure(response.get("error") if isinstance(response, Mapping) else None)
        if kind == "response.output_item.done" and isinstance(event.get("output_index"), int):
            done_items[event["output_index"]] = event.get("item")
        if kind in FINAL_EVENTS:
            response = event.get("response")
            if isinstance(response, Mapping) and not response.get("output") and done_items:
                response = {**response, "output": [item for _, item in sorted(done_items.items())]}
            return reply_from_wire(response)
    raise ModelReplyError(STREAM_ENDED_EARLY)
