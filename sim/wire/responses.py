"""The Responses API (`POST /v1/responses`), everything about it: its paths; requests encoded incrementally
and replies decoded, checked and assembled from streams (the client side); recorded bodies read (`history`,
`chained_to`, `response_id`, `ending`, the stream's text pieces); drift's carry-forward (`answer_from_wire`,
`carried_forward`, `chained`); and requests parsed, chained and checked once and replies written as JSON or
events (the server side, `ResponsesProtocol`); all to and from the core messages.
`sim.wire.registry.CODECS` asks it through one `Codec`.

The system prompt is `instructions`; the history is `input` items (`message`, `function_call` with its
`call_id`, `function_call_output`, and `reasoning` items sent back as the model returned them); tools
are flat (`{type: function, name, description, parameters, strict}`).
"""

from __future__ import annotations

import base64
import json
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sim.core.errors import MessageContractError, ModelAPIError, ModelReplyError
from sim.core.messages import (
    AssistantMessage,
    ChatMessage,
    HistoryView,
    PairingChecker,
    Reasoning,
    SharedPrefix,
    SystemMessage,
    TextItem,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from sim.core.model import FinishReason, ModelReply, ModelRequest, ToolSpec, Usage
from sim.core.strict_schema import strict_by_default
from sim.wire import STORE_LIMIT_BYTES
from sim.wire.body_bytes import EncodedTools, GrowingItems, assemble, dumps
from sim.wire.carrying import Answer, CannotResend, renamed
from sim.wire.chat import STREAM_ENDED_EARLY, content_text, estimate_usage, well_formed
from sim.wire.logprobs import pieces, text_logprobs
from sim.wire.requests import (
    CREATED,
    Asked,
    Refused,
    RefusedError,
    parse,
    refused_strict,
    refused_tool_choice,
    refused_type,
    refused_unsupported,
)
from sim.wire.response_store import ResponseStore
from sim.wire.sse import frame
from sim.wire.stream_text import StreamText
from sim.wire.tool_choice import ReplyTerms, reply_terms

INCOMPLETE_REASONS: dict[str, FinishReason] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}
"""`incomplete_details.reason` as the loop's finish reason."""
ENDPOINT = "/responses"
"""The path a client posts to, after the base URL."""
PATHS: tuple[str, ...] = ("/v1/responses", ENDPOINT)
"""The paths a server answers."""
CONVERSATION = "input"
"""The key of a request body's conversation list."""
REPLY_LIMIT = "max_output_tokens"
"""The request field that caps a reply's tokens."""

ENCRYPTED_REASONING = "reasoning.encrypted_content"
"""What a stateless request asks `include` for, to be able to send reasoning back."""
OUTPUT_TEXT_LOGPROBS = "message.output_text.logprobs"
"""What a request asks `include` for, to get the log probabilities of output text."""


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
    wire["content"] = [{"type": "output_text", "text": item.text, "annotations": [], "logprobs": []}]
    if item.phase is not None:
        wire["phase"] = item.phase
    return wire


def assistant_turn(
    parts: Sequence[Reasoning | TextItem], calls: Sequence[ToolCall] = (), *, content: str | None = None
) -> AssistantMessage:
    """An assistant turn from its reasoning and text items in order (and its calls): `content` joins the
    texts unless given; the items are kept where sending back `content` and `reasoning` would lose
    something (an id or phase, several texts, reasoning after text, reasoning content kept in order)."""
    texts = [part.text for part in parts if isinstance(part, TextItem)]
    reasoning = tuple(part for part in parts if isinstance(part, Reasoning))
    if content is None and texts:
        content = "\n\n".join(texts)
    first_text = next((n for n, part in enumerate(parts) if isinstance(part, TextItem)), len(parts))
    ordered = (
        len(texts) > 1
        or any(isinstance(part, TextItem) and (part.id or part.phase) for part in parts)
        or any(isinstance(part, Reasoning) for part in parts[first_text:])
    )
    return AssistantMessage(
        content=content, tool_calls=tuple(calls), reasoning=reasoning, items=tuple(parts) if ordered else ()
    )


def call_to_wire(call: ToolCall) -> dict[str, Any]:
    """A tool call as a `function_call` input item."""
    return {"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments}


def message_to_items(message: ChatMessage) -> list[dict[str, Any]]:
    """One message as the input items the API takes (an assistant turn may be several)."""
    if isinstance(message, SystemMessage):
        return [{"role": "developer", "content": message.content}]
    if isinstance(message, UserMessage):
        return [{"role": "user", "content": message.content}]
    if isinstance(message, ToolMessage):
        return [{"type": "function_call_output", "call_id": message.tool_call_id, "output": message.content}]
    if message.items:
        items = [
            reasoning_to_wire(part) if isinstance(part, Reasoning) else text_item_to_wire(part)
            for part in message.items
        ]
    else:
        items = [reasoning_to_wire(reasoning) for reasoning in message.reasoning]
        if message.content is not None:
            items.append({"role": "assistant", "content": message.content})
    return items + [call_to_wire(call) for call in message.tool_calls]


def tool_to_wire(spec: ToolSpec) -> dict[str, Any]:
    """One tool as the API takes it: flat, not nested under `function`."""
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": dict(spec.parameters),
        "strict": False,
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

    __slots__ = ("_encoded", "_previous", "_tools")

    def __init__(self) -> None:
        self._previous: Sequence[ChatMessage] = ()
        self._encoded = GrowingItems()
        """Each history message's items (without the system prompt), comma-joined."""
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
        self._encoded.extend(b",".join(dumps(item) for item in message_to_items(m)) for m in new)
        self._previous = messages
        head = {**fields, "instructions": messages[0].content} if has_system else dict(fields)
        return assemble(head, "input", self._encoded.joined(start), self._tools.of(request.tools))


def _fail(message: str) -> ModelReplyError:
    return ModelReplyError(message)


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
        raise _fail("Reply must be a JSON object")
    status = response.get("status")
    if status == "failed":
        raise _failure(response.get("error"))
    finish: FinishReason | None = None
    if status == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        if reason not in INCOMPLETE_REASONS:
            raise _fail(f"Unsupported incomplete reason: {reason}")
        finish = INCOMPLETE_REASONS[reason]
    elif status != "completed":
        raise _fail(f"Unsupported response status: {status}")
    output = response.get("output")
    if not isinstance(output, list):
        raise _fail("Reply output must be a list")
    message = _assistant_message(output)
    finish = finish or ("tool_calls" if message.tool_calls else "stop")
    return ModelReply(message=message, finish_reason=finish, usage=_usage(response.get("usage")))


def _assistant_message(output: list[Any]) -> AssistantMessage:
    texts: list[str] = []
    refusals: list[str] = []
    calls: list[ToolCall] = []
    parts: list[Reasoning | TextItem] = []
    for item in output:
        if not isinstance(item, Mapping):
            raise _fail("Reply output items must be JSON objects")
        kind = item.get("type")
        if kind == "message":
            if item.get("role", "assistant") != "assistant":
                raise _fail("role must be assistant")
            said: list[str] = []
            for part in item.get("content") or []:
                _text_part(part, said, refusals)
            if said:
                texts += said
                parts.append(_text_item(item, "\n\n".join(said)))
        elif kind == "function_call":
            calls.append(_function_call(item))
        elif kind == "reasoning":
            parts.append(reasoning_from_wire(item))
        else:
            raise _fail(f"Unsupported output item type: {kind}")
    content = "\n\n".join(texts) if texts else ("".join(refusals) if refusals else None)
    if refusals:  # a refusal is not sent back as a message item: the items say only what texts do
        parts = [part for part in parts if isinstance(part, Reasoning)]
    return assistant_turn(parts, calls, content=None if content is None else well_formed(content))


def _text_item(item: Mapping[str, Any], text: str) -> TextItem:
    item_id, phase = item.get("id"), item.get("phase")
    return TextItem(
        text=well_formed(text),
        id=item_id if isinstance(item_id, str) else None,
        phase=phase if isinstance(phase, str) else None,
    )


def _text_part(part: Any, texts: list[str], refusals: list[str]) -> None:
    if not isinstance(part, Mapping):
        raise _fail("Message content parts must be JSON objects")
    if part.get("type") == "output_text" and isinstance(part.get("text"), str):
        texts.append(part["text"])
    elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
        refusals.append(part["refusal"])
    else:
        raise _fail(f"Unsupported message content part: {part.get('type')}")


def _function_call(item: Mapping[str, Any]) -> ToolCall:
    call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments")
    if not (isinstance(call_id, str) and call_id and isinstance(name, str) and name):
        raise _fail("function_call call_id and name must be non-empty strings")
    if not isinstance(arguments, str):
        raise _fail("function_call arguments must be a string")
    return ToolCall(id=call_id, name=name, arguments=well_formed(arguments))


def reasoning_from_wire(item: Mapping[str, Any]) -> Reasoning:
    """A `reasoning` item as core `Reasoning`."""
    summary = item.get("summary") or []
    if not isinstance(summary, list):
        raise _fail("reasoning summary must be a list")
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


def _usage(raw: Any) -> Usage | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise _fail("usage must be a JSON object")
    counts = [raw.get(key, 0) for key in ("input_tokens", "output_tokens", "total_tokens")]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts):
        raise _fail("usage counts must be non-negative integers")
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
            raise _fail("Stream event must be a JSON object")
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
    raise _fail(STREAM_ENDED_EARLY)


def stream_text_pieces(event: Any) -> Iterator[StreamText]:
    """The pieces of text a Responses stream carries in its delta events (output text, refusals, call
    arguments, reasoning summaries), by item and part: joined in order, they are what the reply says."""
    if not isinstance(event, dict) or not isinstance(event.get("delta"), str):
        return
    kind = event.get("type")
    if isinstance(kind, str) and kind.startswith("response.") and kind.endswith(".delta"):
        which = (kind, event.get("item_id"), event.get("output_index"), event.get("content_index"),
                 event.get("summary_index"))  # fmt: skip
        yield which, event, "delta"


# The reverse direction: what a simulator reads from requests and writes back.


def _bad(where: str, what: str) -> MessageContractError:
    return MessageContractError(f"{where}: {what}")


def messages_from_items(items: Any) -> list[ChatMessage]:
    """Input items as messages: consecutive assistant items (text, reasoning, function calls) are one
    assistant turn. Pairing is not checked here; `MessageContractError` when an item is malformed."""
    if isinstance(items, str):
        return [UserMessage(content=items)]
    if not isinstance(items, list):
        raise _bad("input", "must be a string or an array of input items")
    messages: list[ChatMessage] = []
    parts: list[Reasoning | TextItem] = []
    calls: list[ToolCall] = []
    open_turn = False

    def close() -> None:
        nonlocal open_turn
        if open_turn:
            messages.append(assistant_turn(parts, calls))
            parts.clear()
            calls.clear()
            open_turn = False

    for index, item in enumerate(items):
        where = f"input[{index}]"
        if not isinstance(item, Mapping):
            raise _bad(where, "each input item must be an object")
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            text = content_text(item.get("content"), f"{where}.content")
            if role == "assistant":
                parts.append(_text_item(item, text))
                open_turn = True
                continue
            close()
            if role in ("system", "developer"):
                messages.append(SystemMessage(content=text))
            elif role == "user":
                messages.append(UserMessage(content=text))
            else:
                raise _bad(f"{where}.role", f"unsupported role {role!r}")
        elif kind == "function_call":
            try:
                call = _function_call(item)
            except ModelReplyError as error:
                raise _bad(where, str(error)) from None
            calls.append(call)
            open_turn = True
        elif kind == "reasoning":
            try:
                parts.append(reasoning_from_wire(item))
            except ModelReplyError as error:
                raise _bad(where, str(error)) from None
            open_turn = True
        elif kind == "function_call_output":
            close()
            call_id = item.get("call_id")
            if not isinstance(call_id, str) or not call_id:
                raise _bad(f"{where}.call_id", "a function_call_output must answer a call_id")
            messages.append(
                ToolMessage(tool_call_id=call_id, content=content_text(item.get("output"), where))
            )
        else:
            raise _bad(f"{where}.type", f"sim does not simulate input items of type {kind!r}")
    close()
    return messages


def instructions_from_wire(body: Mapping[str, Any]) -> SystemMessage | None:
    """A request's `instructions` as its system message (an empty string too: the request says it)."""
    instructions = body.get("instructions")
    return SystemMessage(content=instructions) if isinstance(instructions, str) else None


def history(body: Mapping[str, Any]) -> list[ChatMessage]:
    """A request body's conversation (`instructions`, then `input`), pairing unchecked
    (`MessageContractError` when malformed)."""
    system = instructions_from_wire(body)
    return [*([system] if system is not None else []), *messages_from_items(body.get(CONVERSATION))]


def chained_to(body: Mapping[str, Any]) -> str | None:
    """The response a request continues (`previous_response_id`), if it names one."""
    previous = body.get("previous_response_id")
    return previous if isinstance(previous, str) else None


def ending(reply: ModelReply) -> str:
    """How a reply ended, in the API's words (`status: completed`, `status: incomplete (...)`)."""
    reason = {v: k for k, v in INCOMPLETE_REASONS.items()}.get(reply.finish_reason)
    return f"status: incomplete ({reason})" if reason else "status: completed"


def tools_from_wire(raw_tools: Any) -> tuple[ToolSpec, ...]:
    """A request's flat function `tools`; Chat-shaped tools (`tools[0].function`) and built-in tools are
    refused as the API (or sim, which cannot run them) refuses them."""
    if raw_tools is None:
        return ()
    if not isinstance(raw_tools, list):
        raise _bad("tools", "must be an array")
    specs = []
    for index, raw in enumerate(raw_tools):
        where = f"tools[{index}]"
        if not isinstance(raw, Mapping):
            raise _bad(where, "each tool must be an object")
        if raw.get("type") != "function":
            raise _bad(f"{where}.type", f"sim does not simulate built-in tools ({raw.get('type')!r})")
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            hint = " (tools here are flat: {type, name, parameters}, not Chat's {function: {...}})"
            raise _bad(f"{where}.name", "Missing required parameter" + (hint if "function" in raw else ""))
        parameters = raw.get("parameters") or {"type": "object", "properties": {}}
        if not isinstance(parameters, Mapping) or parameters.get("type", "object") != "object":
            raise _bad(
                f"{where}.parameters", f"Invalid schema for function '{name}': must be an object schema"
            )
        description = raw.get("description")
        specs.append(ToolSpec(name, description if isinstance(description, str) else "", parameters))
    return tuple(specs)


def _items_of(message: AssistantMessage, suffix: str, logprobs: int | None) -> list[dict[str, Any]]:
    """An assistant turn as output items (reasoning, the message, each function call), with item ids
    minted from the response's: `msg_<suffix>`, `fc_<suffix>_<n>`."""
    parts = message.items or (*message.reasoning, *_texts(message))
    single_text = sum(isinstance(part, TextItem) for part in parts) == 1
    items: list[dict[str, Any]] = []
    for n, item in enumerate(parts):
        if isinstance(item, Reasoning):
            items.append(reasoning_to_wire(item))
            continue
        text = item.text
        part = {"type": "output_text", "text": text, "annotations": [],
                "logprobs": text_logprobs(text, logprobs) if logprobs is not None else []}  # fmt: skip
        minted = f"msg_{suffix}" if single_text else f"msg_{suffix}_{n}"
        items.append({"type": "message", "id": item.id or minted, "status": "completed", "role": "assistant",
                      "content": [part], **({"phase": item.phase} if item.phase else {})})  # fmt: skip
    items += [{"type": "function_call", "id": f"fc_{suffix}_{n}", "status": "completed", **call_to_wire(call)}
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
    if echoed["service_tier"] == "auto":
        echoed["service_tier"] = "default"
    echoed["tools"] = [_echoed_tool(tool) for tool in request.get("tools") or []]
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
) -> dict[str, Any]:
    """A `ModelReply` as the `response` object the real API would send to `request` (echoing what the API
    echoes; output text with log probabilities when the request includes them). Its message and call items
    get ids derived from `response_id` (a reasoning item keeps the id it has); a cut reply is `incomplete`,
    and so is its last item. `status` and `error` override, for a failed or unfinished response."""
    asked = request or {}
    top = asked.get("top_logprobs") or 0
    logprobs = top if OUTPUT_TEXT_LOGPROBS in (asked.get("include") or []) else None
    output = _items_of(reply.message, response_id.removeprefix("resp_"), logprobs)
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
            "output_tokens_details": {"reasoning_tokens": 0},
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


def events_to_wire(response: dict[str, Any]) -> list[dict[str, Any]]:
    """A `response` object as the events the real API streams, each with its `sequence_number`:
    created, in_progress, each output item added / streamed in pieces / done, then completed (or
    incomplete)."""
    started = {**response, "status": "in_progress", "completed_at": None, "output": [],
               "incomplete_details": None, "usage": None}  # fmt: skip
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
    if item["type"] == "reasoning":
        return [{**added, "item": {**item, "summary": []}}, *_summary_events(item, where), done]
    if item["type"] != "message":
        return [{**added, "item": item}, done]
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
                 "part": {**part, "text": "", "logprobs": []}},
                *({"type": "response.output_text.delta", **at, "delta": piece,
                   "logprobs": tokens[n : n + 1] if len(tokens) == len(split) else []}
                  for n, piece in enumerate(split)),
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


def answer_from_wire(recorded: Any, streamed: bool) -> Answer:
    """A recorded response (its body, or its stream's events when `streamed`) as the next request carries
    it back: its output items as sent back; a refusal where a message part is one."""
    if not streamed:
        reply = reply_from_wire(recorded)
        whole = recorded if isinstance(recorded, dict) else {}
    else:
        reply = reply_from_events(recorded)
        whole = next(
            (
                e["response"]
                for e in reversed(recorded)
                if isinstance(e, dict) and isinstance(e.get("response"), dict)
            ),
            {},
        )
    output = [item for item in whole.get("output") or [] if isinstance(item, dict)]
    refused = any(
        isinstance(part, dict) and part.get("type") == "refusal"
        for item in output
        if item.get("type") == "message"
        for part in item.get("content") or []
    )
    carried = list(output)  # sent back as they came, as the SDK's `response.output` is
    return Answer(reply, refused, carried, response_id(recorded if streamed else whole))


def carried_forward(added: list[Any], was: Answer, now: Answer) -> list[Any]:
    """What a recorded request added to `input` after the request before it, with the live output items
    where the recorded ones were sent back and the tool outputs to the live call ids (a client that sent a
    call's item id, `fc_...`, as its `call_id` gets the live call id there too)."""
    ids = _live_ids(was, now)
    recorded_ids = {item.get("id") for item in was.carried if item.get("id")}
    recorded_calls = {item.get("call_id") for item in was.carried if item.get("call_id")}
    end = 0
    while end < len(added) and _carried_back(added[end], recorded_ids, recorded_calls):
        end += 1
    return [*now.carried, *_outputs(added[end:], ids)]


def chained(recorded: dict[str, Any], was: Answer, now: Answer) -> dict[str, Any] | None:
    """A recorded request naming `previous_response_id`: the live response named instead, its input as
    recorded but for the call ids; None for a request that sends its whole conversation."""
    if recorded.get("previous_response_id") is None:
        return None
    if now.response_id is None:
        raise CannotResend("the live response has no id to chain to")
    items = recorded.get(CONVERSATION)
    listed = items if isinstance(items, list) else [{"role": "user", "content": items}]
    return {
        **recorded,
        "previous_response_id": now.response_id,
        CONVERSATION: _outputs(listed, _live_ids(was, now)),
    }


def _live_ids(was: Answer, now: Answer) -> dict[str, str]:
    ids = renamed(was.reply.message.tool_calls, now.reply.message.tool_calls)
    return ids | _renamed_items(was.carried, ids)


def _renamed_items(carried: list[Any], ids: Mapping[str, str]) -> dict[str, str]:
    """Each recorded function call's item id -> the live call id its call id went to."""
    return {
        item["id"]: ids[item["call_id"]]
        for item in carried
        if item.get("type") == "function_call"
        and isinstance(item.get("id"), str)
        and item.get("call_id") in ids
    }


def _carried_back(item: Any, ids: set[Any], calls: set[Any]) -> bool:
    """Whether an input item is one of the recorded reply's output items sent back."""
    if not isinstance(item, Mapping):
        return False
    if item.get("type") == "function_call":
        return item.get("call_id") in calls | ids or item.get("id") in ids
    if item.get("type") == "reasoning":
        return True
    return item.get("role") == "assistant" or (item.get("type") == "message" and item.get("id") in ids)


def _outputs(items: list[Any], ids: Mapping[str, str]) -> list[Any]:
    return [
        {**item, "call_id": ids[item["call_id"]]}
        if isinstance(item, Mapping)
        and item.get("type") == "function_call_output"
        and item.get("call_id") in ids
        else item
        for item in items
    ]


ENCRYPTED_PREFIX = "sim-reasoning:"


@dataclass(frozen=True, slots=True)
class _ServedReasoning:
    """A reasoning item as it was served, and whether the API kept it (`store` not false)."""

    item: Reasoning
    stored: bool


def _not_found(item_id: str, *, unstored: bool) -> Refused:
    message = f"Item with id '{item_id}' not found."
    if unstored:
        message += (
            " Items are not persisted when `store` is set to false. Try again with `store` set to true, or"
            " remove this item from your input."
        )
    return Refused(message, "input", None, status=404)


class ResponsesProtocol:
    """`POST /v1/responses`: stateless or chained through `previous_response_id`, with a store of the
    responses it sent with `store` not false (bounded), and the reasoning items it served, by item id."""

    name = "responses"
    paths: tuple[str, ...] = PATHS
    closing = b""
    STORED = 10_000
    """The most reasoning items and function calls remembered (a store of responses is bounded by bytes)."""

    def __init__(self, store_limit: int = STORE_LIMIT_BYTES) -> None:
        self.store = ResponseStore(store_limit)
        """The responses kept for chains."""
        self._reasoning: OrderedDict[str, _ServedReasoning] = OrderedDict()
        """Each reasoning item served, by its item id."""
        self._needs: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        """The reasoning item ids served before each function call item (by its item id): the API refuses
        the call item sent back by id without them."""

    def parse(self, body: dict[str, Any], number: int) -> Asked | Refused:
        """The request body read once: the request being answered, or the API's refusal."""
        return parse(self, body, number)

    def refused(self, body: dict[str, Any]) -> Refused | None:
        """Types, `n`, `logprobs` (Chat's name: the Responses API takes `top_logprobs` and `include`),
        `tool_choice`."""
        if "logprobs" in body:
            return Refused("Unknown parameter: 'logprobs'.", "logprobs", "unknown_parameter")
        offered = [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]
        return (refused_type(body) or refused_unsupported(body)
                or refused_tool_choice(body.get("tool_choice"), offered)
                or refused_strict(self._functions(body)))  # fmt: skip

    @staticmethod
    def _functions(body: dict[str, Any]) -> list[tuple[str, Any]]:
        """Each function a request offers, with where it sits in the body."""
        return [(f"tools[{n}]", t) for n, t in enumerate(body.get("tools") or [])
                if isinstance(t, dict) and t.get("type") == "function"]  # fmt: skip

    def decode(self, body: dict[str, Any]) -> ModelRequest:
        """`instructions` and `input` (after the stored conversation `previous_response_id` names), and
        flat `tools`; pairing is checked on the whole rebuilt conversation."""
        previous = body.get("previous_response_id")
        new = messages_from_items(body.get(CONVERSATION))
        pairing = PairingChecker()
        found = None
        if previous is not None:
            found = self.store.conversation(previous) if isinstance(previous, str) else None
            if found is None:
                message = f"Previous response with id '{previous}' not found."
                raise RefusedError(Refused(message, "previous_response_id", "previous_response_not_found"))
            if found:  # it was checked up to its reply when it was asked for: the reply on is checked
                pairing.check(found[-1])
        for item in new:
            pairing.check(item)
        pairing.require_complete()
        conversation = SharedPrefix(new) if found is None else found.extended(new)
        system = instructions_from_wire(body)
        tools = tools_from_wire(body.get("tools"))
        if system is None:
            return ModelRequest(conversation, tools)
        return ModelRequest(HistoryView(system, conversation.shared, len(conversation)), tools)

    def terms(self, body: dict[str, Any]) -> ReplyTerms:
        """Functions are strict where they say `strict: true`, and where they leave it out and their schema
        can be made strict (as the API then makes it)."""
        functions = [function for _, function in self._functions(body)]
        return reply_terms(body, functions, unsaid=strict_by_default)

    def check(self, body: dict[str, Any], decoded: ModelRequest) -> Refused | None:
        """Reasoning items sent back as the API checks them: one sent by id alone must be one the API kept
        (not `store: false`), one sent in full must be as it was served, and a function call item sent back
        by its id needs the reasoning items served before it."""
        items = body.get("input")
        if not isinstance(items, list):
            return None
        sent: set[str] = set()
        for item in items:
            if not isinstance(item, dict):
                continue
            item_id = item.get("id")
            if item.get("type") == "reasoning" and isinstance(item_id, str):
                sent.add(item_id)
                if (refused := self._check_reasoning(item_id, item)) is not None:
                    return refused
            elif item.get("type") == "function_call" and body.get("previous_response_id") is None:
                missing = [r for r in self._needs.get(str(item_id), ()) if r not in sent]
                if missing:
                    message = (f"Item '{item_id}' of type 'function_call' was provided without its required"
                               f" 'reasoning' item: '{missing[0]}'.")  # fmt: skip
                    return Refused(message, "input")
        return None

    def _check_reasoning(self, item_id: str, item: dict[str, Any]) -> Refused | None:
        served = self._reasoning.get(item_id)
        encrypted = item.get("encrypted_content")
        if served is None:
            return None if encrypted is not None else _not_found(item_id, unstored=False)
        if encrypted is None and not served.stored:
            return _not_found(item_id, unstored=True)
        returned = reasoning_from_wire(item)
        if (encrypted is not None and encrypted != served.item.encrypted_content) or (
            "summary" in item and returned.summary != served.item.summary
        ):
            message = f"The reasoning item {item_id} did not come back as it was served."
            return Refused(message, None, "sim_reasoning_changed")
        return None

    def reply(self, reply: ModelReply, asked: Asked, *, refusal: bool = False) -> dict[str, Any]:
        """A `response` object, kept (with the conversation it ends) for requests that chain to it unless
        the request said `store: false`; a refusal as a `refusal` content part."""
        response_id = f"resp_sim{asked.number:06d}"
        served = self._served(reply, response_id, asked.body)
        wire = response_to_wire(
            served,
            response_id=response_id,
            created=CREATED,
            model=asked.model,
            usage=estimate_usage(asked.decoded, reply),
            request=asked.body,
        )
        stored = asked.body.get("store") is not False
        if stored:
            messages = asked.decoded.messages
            history = (
                messages.dialogue
                if isinstance(messages, HistoryView)
                else messages
                if isinstance(messages, SharedPrefix)
                else SharedPrefix([m for m in messages if not isinstance(m, SystemMessage)])
            )
            self.store.put(response_id, history.extended([served.message]))
        for item in served.message.reasoning:
            if item.id is not None:
                self._reasoning[item.id] = _ServedReasoning(item, stored)
        _bound(self._reasoning, self.STORED)
        reasoning_ids = tuple(item["id"] for item in wire["output"] if item["type"] == "reasoning")
        for item in wire["output"]:
            if item["type"] == "function_call" and reasoning_ids:
                self._needs[item["id"]] = reasoning_ids
        _bound(self._needs, self.STORED)
        if refusal:
            for item in wire["output"]:
                if item["type"] == "message":
                    item["content"] = [
                        {"type": "refusal", "refusal": p.get("text", "")} for p in item["content"]
                    ]
        return wire

    def _served(self, reply: ModelReply, response_id: str, body: dict[str, Any]) -> ModelReply:
        """The reply with its reasoning as served: an id, and encrypted content when the request asked."""
        if not reply.message.reasoning:
            return reply
        encrypted = ENCRYPTED_REASONING in (body.get("include") or [])
        reasoning = tuple(
            Reasoning(
                id=f"rs_{response_id.removeprefix('resp_')}_{n}",
                summary=item.summary,
                encrypted_content=ENCRYPTED_PREFIX
                + base64.b64encode(json.dumps([response_id, item.summary]).encode()).decode()
                if encrypted
                else None,
            )
            for n, item in enumerate(reply.message.reasoning, 1)
        )
        return reply.model_copy(update={"message": reply.message.model_copy(update={"reasoning": reasoning})})

    def stream(self, reply: ModelReply, asked: Asked, *, refusal: bool = False) -> list[bytes]:
        """The response's events, named and numbered as the API sends them (kept as `reply` keeps it)."""
        wire = self.reply(reply, asked, refusal=refusal)
        return [frame(event, event["type"]) for event in events_to_wire(wire)]

    def failed(self, error: dict[str, Any], asked: Asked) -> list[bytes]:
        """`response.created`, `response.in_progress`, then `response.failed` carrying the error (its
        `code` one the API uses: `server_error` when the script names none)."""
        empty = ModelReply(message=AssistantMessage(), finish_reason="stop")
        response_id = f"resp_sim{asked.number:06d}"

        def response(status: str, failure: dict[str, Any] | None = None) -> dict[str, Any]:
            return response_to_wire(empty, response_id=response_id, created=CREATED,
                model=asked.model, usage=None, request=asked.body, status=status, error=failure)  # fmt: skip

        started = response("in_progress")
        ended = response("failed", {"code": error.get("code") or "server_error", "message": error["message"]})
        events = [
            {"type": "response.created", "response": started},
            {"type": "response.in_progress", "response": started},
            {"type": "response.failed", "response": ended},
        ]
        return [frame({**event, "sequence_number": n}, str(event["type"])) for n, event in enumerate(events)]

    def broken(self, stream: bool) -> bytes:
        """Half a response."""
        return b'event: response.created\ndata: {"type": "response.cr\n\n' if stream else b'{"id": "resp_'


def _bound(kept: OrderedDict[str, Any], most: int) -> None:
    """Forget the oldest entries past `most`."""
    while len(kept) > most:
        kept.popitem(last=False)


def server(store_limit: int) -> ResponsesProtocol:
    """A new server side of the Responses API, its store of responses bounded to `store_limit` bytes."""
    return ResponsesProtocol(store_limit)
