"""The Responses API's items to and from the core: reasoning, message and function call items as the API
returns them and takes them back, and an assistant turn assembled from them; shared by the client, the
reading of requests and the server."""

from __future__ import annotations

import json
from collections.abc import Container, Mapping, Sequence
from typing import Any

from sim.core.errors import ModelReplyError
from sim.core.messages import (
    AssistantMessage,
    ChatMessage,
    HostedItem,
    Reasoning,
    SystemMessage,
    TextItem,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from sim.wire.hosted import hosted_as_sent
from sim.wire.replies import checked_call, well_formed


def reasoning_to_wire(reasoning: Reasoning) -> dict[str, Any]:
    """A reasoning item as the API returned it (and takes it back)."""
    item: dict[str, Any] = {"type": "reasoning"}
    if reasoning.id is not None:
        item["id"] = reasoning.id
    item["summary"] = [{"type": "summary_text", "text": text} for text in reasoning.summary]
    if reasoning.content:
        item["content"] = [{"type": "reasoning_text", "text": text} for text in reasoning.content]
    if reasoning.encrypted_content is not None:
        item["encrypted_content"] = reasoning.encrypted_content
    return item


def text_item_to_wire(item: TextItem) -> dict[str, Any]:
    """A message item of a reply as the API returned it (and takes it back): with its id and phase."""
    wire: dict[str, Any] = {"type": "message", "role": "assistant"}
    if item.id is not None:
        wire["id"] = item.id
        wire["status"] = "completed"
    annotations = [json.loads(annotation) for annotation in item.annotations]
    wire["content"] = [{"type": "output_text", "text": item.text, "annotations": annotations, "logprobs": []}]
    if item.phase is not None:
        wire["phase"] = item.phase
    return wire


def assistant_turn(
    parts: Sequence[Reasoning | TextItem | HostedItem],
    calls: Sequence[ToolCall] = (),
    *,
    content: str | None = None,
) -> AssistantMessage:
    """An assistant turn from its reasoning and text items in order (and its calls): `content` joins the
    texts unless given; the items are kept where sending back `content` and `reasoning` would lose
    something (an id or phase, several texts, reasoning after text, reasoning content kept in order)."""
    texts = [part.text for part in parts if isinstance(part, TextItem)]
    reasoning = tuple(part for part in parts if isinstance(part, Reasoning))
    if content is None and texts:
        content = "\n\n".join(texts)
    first_text = next((n for n, part in enumerate(parts) if isinstance(part, TextItem)), len(parts))
    ordered = bool(parts) and (
        len(texts) > 1
        or any(isinstance(part, HostedItem) for part in parts)
        or any(isinstance(part, TextItem) and (part.id or part.phase or part.annotations) for part in parts)
        or any(isinstance(part, Reasoning) for part in parts[first_text:])
    )
    return AssistantMessage(
        content=content, tool_calls=tuple(calls), reasoning=reasoning, items=tuple(parts) if ordered else ()
    )


def call_to_wire(call: ToolCall) -> dict[str, Any]:
    """A tool call as a `function_call` input item (a custom tool's as a `custom_tool_call`)."""
    if call.kind == "custom":
        return {"type": "custom_tool_call", "call_id": call.id, "name": call.name, "input": call.arguments}
    return {"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments}


def message_to_items(message: ChatMessage, custom_calls: Container[str] = ()) -> list[dict[str, Any]]:
    """One message as the input items the API takes (an assistant turn may be several); the result of a
    call whose id is in `custom_calls` (a custom tool's) is a `custom_tool_call_output`."""
    if isinstance(message, SystemMessage):
        return [{"role": "developer", "content": message.content}]
    if isinstance(message, UserMessage):
        return [{"role": "user", "content": message.content}]
    if isinstance(message, ToolMessage):
        kind = "custom_tool_call_output" if message.tool_call_id in custom_calls else "function_call_output"
        return [{"type": kind, "call_id": message.tool_call_id, "output": message.content}]
    if message.items:
        items = [
            reasoning_to_wire(part)
            if isinstance(part, Reasoning)
            else hosted_as_sent(part)
            if isinstance(part, HostedItem)
            else text_item_to_wire(part)
            for part in message.items
        ]
    else:
        items = [reasoning_to_wire(reasoning) for reasoning in message.reasoning]
        if message.content is not None:
            items.append({"role": "assistant", "content": message.content})
    return items + [call_to_wire(call) for call in message.tool_calls]


def text_item_from_wire(item: Mapping[str, Any], text: str) -> TextItem:
    """A `message` item's text as a `TextItem`, with the item's id and phase when it has them."""
    item_id, phase, content = item.get("id"), item.get("phase"), item.get("content")
    parts = content if isinstance(content, list) else []
    annotations = tuple(
        json.dumps(annotation, ensure_ascii=False)
        for part in parts
        if isinstance(part, Mapping) and isinstance(part.get("annotations"), list)
        for annotation in part["annotations"]
        if isinstance(annotation, Mapping)
    )
    return TextItem(
        text=well_formed(text),
        id=item_id if isinstance(item_id, str) else None,
        phase=phase if isinstance(phase, str) else None,
        annotations=annotations,
    )


def function_call_from_wire(item: Mapping[str, Any]) -> ToolCall:
    """A `function_call` item as a `ToolCall`, checked; its arguments `well_formed`."""
    call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments")
    return checked_call(call_id, name, arguments, "function_call call_id and name", "function_call arguments")


def custom_call_from_wire(item: Mapping[str, Any]) -> ToolCall:
    """A `custom_tool_call` item as a custom `ToolCall`, checked; its input `well_formed`."""
    call_id, name, text = item.get("call_id"), item.get("name"), item.get("input")
    call = checked_call(call_id, name, text, "custom_tool_call call_id and name", "custom_tool_call input")
    return call.model_copy(update={"kind": "custom"})


def reasoning_from_wire(item: Mapping[str, Any]) -> Reasoning:
    """A `reasoning` item as core `Reasoning`."""
    summary = item.get("summary") or []
    if not isinstance(summary, list):
        raise ModelReplyError("reasoning summary must be a list")
    texts = tuple(str(part.get("text", "")) for part in summary if isinstance(part, Mapping))
    content = item.get("content") or []
    shown = (
        tuple(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
        if isinstance(content, list)
        else ()
    )
    item_id, encrypted = item.get("id"), item.get("encrypted_content")
    return Reasoning(
        id=item_id if isinstance(item_id, str) else None,
        encrypted_content=encrypted if isinstance(encrypted, str) else None,
        summary=texts,
        content=shown,
    )
