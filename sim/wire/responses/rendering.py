"""Responses API replies written as the API writes them: a `ModelReply` as the `response` object (echoing
the request, with minted item ids) and as the events that stream it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sim.core.messages import (
    AssistantMessage,
    HostedItem,
    Reasoning,
    TextItem,
)
from sim.core.model import ModelReply, Usage
from sim.core.strict_schema import strict_by_default
from sim.wire.hosted import hosted_events, hosted_to_wire
from sim.wire.logprobs import pieces, text_logprobs
from sim.wire.responses.client import (
    INCOMPLETE_REASONS,
)
from sim.wire.responses.items import (
    call_to_wire,
    reasoning_to_wire,
)
from sim.wire.service_tier import asked_tier, served_tier
from sim.wire.text_format import echoed_text

OUTPUT_TEXT_LOGPROBS = "message.output_text.logprobs"
"""What a request asks `include` for, to get the log probabilities of output text."""
SUMMARIES = frozenset({"auto", "concise", "detailed"})
"""What `reasoning.summary` says to have reasoning summarized (the API serves `summary: []` otherwise)."""


def summary_asked(request: Mapping[str, Any]) -> bool:
    """Whether the request asks for reasoning summaries (`reasoning.summary`, or the deprecated
    `reasoning.generate_summary`)."""
    reasoning = request.get("reasoning")
    if not isinstance(reasoning, Mapping):
        return False
    said = reasoning.get("summary") or reasoning.get("generate_summary")
    return isinstance(said, str) and said in SUMMARIES


def _items_of(
    message: AssistantMessage, suffix: str, logprobs: int | None, include: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """An assistant turn as output items (reasoning, the message, each function call), with item ids
    minted from the response's: `msg_<suffix>`, `fc_<suffix>_<n>`."""
    parts = message.items or (*message.reasoning, *_texts(message))
    single_text = sum(isinstance(part, TextItem) for part in parts) == 1
    items: list[dict[str, Any]] = []
    for n, item in enumerate(parts):
        if isinstance(item, Reasoning):
            served = reasoning_to_wire(item)
            served.setdefault("content", [])  # as real recordings serve it (no reasoning text asked)
            items.append(served)
            continue
        if isinstance(item, HostedItem):
            items.append(hosted_to_wire(item, include))
            continue
        text = item.text
        part = {"type": "output_text", "text": text, "annotations": [json.loads(a) for a in item.annotations],
                "logprobs": text_logprobs(text, logprobs) if logprobs is not None else []}  # fmt: skip
        minted = f"msg_{suffix}" if single_text else f"msg_{suffix}_{n}"
        items.append({"type": "message", "id": item.id or minted, "status": "completed", "role": "assistant",
                      "content": [part], **({"phase": item.phase} if item.phase else {})})  # fmt: skip
    items += [{"type": "function_call", "id": f"fc_{suffix}_{n}", "status": "completed", **call_to_wire(call)}
              if call.kind == "function" else {"id": f"ctc_{suffix}_{n}", **call_to_wire(call)}
              for n, call in enumerate(message.tool_calls, 1)]  # fmt: skip
    return items


def _texts(message: AssistantMessage) -> tuple[TextItem, ...]:
    return () if message.content is None else (TextItem(text=message.content),)


def _echoed_tool(tool: Any) -> Any:
    """A request's tool as the response echoes it: a function's `description` null when absent, `strict`
    when absent whether the API made its schema strict (it does where it can)."""
    if isinstance(tool, Mapping) and tool.get("type") == "function":
        parameters = tool.get("parameters")
        strict = tool.get("strict", parameters is None or strict_by_default(parameters) is not None)
        return {"description": None, "parameters": None, **tool, "strict": strict}
    return tool


def echoed_fields(request: Mapping[str, Any]) -> dict[str, Any]:
    """What a `response` object repeats of the request that created it, with the API's defaults for what
    the request left out (as real recordings show them)."""
    defaults: dict[str, Any] = {
        "background": False,
        "instructions": None,
        "max_output_tokens": None,
        "max_tool_calls": None,
        "metadata": {},
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "prompt_cache_key": None,
        "reasoning": {"effort": None, "summary": None},
        "safety_identifier": None,
        "service_tier": "default",
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "top_logprobs": 0,
        "top_p": 1.0,
        "truncation": "disabled",
        "user": None,
    }
    echoed = {key: request[key] if request.get(key) is not None else value for key, value in defaults.items()}
    echoed["service_tier"] = served_tier(request)  # `auto` served `default`, `fast` shown `priority`
    echoed["tools"] = [_echoed_tool(tool) for tool in request.get("tools") or []]
    echoed["text"] = echoed_text(request.get("text"))
    return echoed


def response_to_wire(
    reply: ModelReply,
    *,
    response_id: str,
    created: int,
    model: str,
    usage: Usage | None,
    request: Mapping[str, Any] | None = None,
    status: str | None = None,
    error: Mapping[str, Any] | None = None,
    reasoning_tokens: int = 0,
) -> dict[str, Any]:
    """A `ModelReply` as the `response` object the real API would send to `request` (echoing what the API
    echoes; output text with log probabilities when the request includes them). Its message and call items
    get ids derived from `response_id` (a reasoning item keeps the id it has); a cut reply is `incomplete`,
    and so is its last item. `status` and `error` override, for a failed or unfinished response;
    `reasoning_tokens` are those of `usage`'s output tokens spent reasoning."""
    asked = request or {}
    top = asked.get("top_logprobs") or 0
    logprobs = top if OUTPUT_TEXT_LOGPROBS in (asked.get("include") or []) else None
    include = [value for value in asked.get("include") or [] if isinstance(value, str)]
    output = _items_of(reply.message, response_id.removeprefix("resp_"), logprobs, include)
    incomplete = {v: k for k, v in INCOMPLETE_REASONS.items()}.get(reply.finish_reason)
    if incomplete and output and "status" in output[-1]:
        output[-1]["status"] = "incomplete"
    status = status or ("incomplete" if incomplete else "completed")
    wire_usage = None
    if usage is not None:
        wire_usage = {
            "input_tokens": usage.prompt_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
            "total_tokens": usage.total_tokens,
        }
    return {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": status,
        "completed_at": created if status == "completed" else None,
        "error": dict(error) if error is not None else None,
        "incomplete_details": {"reason": incomplete} if status == "incomplete" else None,
        "model": model,
        "output": output,
        **echoed_fields(asked),
        "usage": wire_usage,
    }


def events_to_wire(
    response: dict[str, Any], request: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """A `response` object as the events the real API streams, each with its `sequence_number`:
    created, in_progress, each output item added / streamed in pieces / done, then completed (or
    incomplete). Until it is done, the response says the tier `request` asked for (`auto` when none)."""
    started = {**response, "status": "in_progress", "completed_at": None, "output": [],
               "incomplete_details": None, "usage": None}  # fmt: skip
    if request is not None and "service_tier" in response:
        started["service_tier"] = asked_tier(request)
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
    ]
    for index, item in enumerate(response["output"]):
        events += _item_events(index, item)
    final = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
    events.append({"type": final, "response": response})
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


def _item_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    where = {"output_index": index}
    added = {"type": "response.output_item.added", **where}
    done = {"type": "response.output_item.done", **where, "item": item}
    if item["type"] == "function_call":
        at = {"item_id": item["id"], **where}
        deltas = [{"type": "response.function_call_arguments.delta", **at, "delta": piece}
                  for piece in pieces(item["arguments"])]  # fmt: skip
        finished = {"type": "response.function_call_arguments.done", **at,
                    "arguments": item["arguments"], "name": item["name"]}  # fmt: skip
        opened = {**added, "item": {**item, "arguments": "", "status": "in_progress"}}
        return [opened, *deltas, finished, done]
    if item["type"] == "custom_tool_call":
        at = {"item_id": item["id"], **where}
        deltas = [{"type": "response.custom_tool_call_input.delta", **at, "delta": piece}
                  for piece in pieces(item["input"])]  # fmt: skip
        finished = {"type": "response.custom_tool_call_input.done", **at, "input": item["input"]}
        return [{**added, "item": {**item, "input": ""}}, *deltas, finished, done]
    if item["type"] == "reasoning":
        return [{**added, "item": {**item, "summary": []}}, *_summary_events(item, where), done]
    if item["type"] != "message":
        return hosted_events(index, item)
    opened = {**added, "item": {**item, "status": "in_progress", "content": []}}
    parts: list[dict[str, Any]] = []
    for content_index, part in enumerate(item["content"]):
        at = {"item_id": item["id"], **where, "content_index": content_index}
        if part["type"] == "refusal":
            text = part["refusal"]
            parts += [
                {"type": "response.content_part.added", **at, "part": {"type": "refusal", "refusal": ""}},
                *({"type": "response.refusal.delta", **at, "delta": bit} for bit in pieces(text)),
                {"type": "response.refusal.done", **at, "refusal": text},
            ]
        else:
            text, tokens = part["text"], part.get("logprobs") or []
            split = pieces(text)
            parts += [
                {"type": "response.content_part.added", **at,
                 "part": {**part, "text": "", "logprobs": [], "annotations": []}},
                *({"type": "response.output_text.delta", **at, "delta": piece,
                   "logprobs": tokens[n : n + 1] if len(tokens) == len(split) else []}
                  for n, piece in enumerate(split)),
                *({"type": "response.output_text.annotation.added", **at, "annotation_index": n,
                   "annotation": annotation} for n, annotation in enumerate(part.get("annotations") or [])),
                {"type": "response.output_text.done", **at, "text": text, "logprobs": tokens},
            ]  # fmt: skip
        parts.append({"type": "response.content_part.done", **at, "part": part})
    return [opened, *parts, done]


def _summary_events(item: dict[str, Any], where: dict[str, int]) -> list[dict[str, Any]]:
    """A reasoning item's summary as the API streams it: each part added, its text in pieces, done."""
    events: list[dict[str, Any]] = []
    for summary_index, part in enumerate(item["summary"]):
        at = {"item_id": item.get("id"), **where, "summary_index": summary_index}
        text = part["text"]
        events += [
            {"type": "response.reasoning_summary_part.added", **at,
             "part": {"type": "summary_text", "text": ""}},
            *({"type": "response.reasoning_summary_text.delta", **at, "delta": piece}
              for piece in pieces(text)),
            {"type": "response.reasoning_summary_text.done", **at, "text": text},
            {"type": "response.reasoning_summary_part.done", **at, "part": part},
        ]  # fmt: skip
    return events
