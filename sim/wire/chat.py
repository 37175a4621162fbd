"""Chat Completions (`POST /v1/chat/completions`), everything about it: its paths; requests encoded
incrementally and replies decoded and checked (the client side); recorded bodies read (`history`,
`chained_to`, `response_id`, `ending`, the stream's text pieces); drift's carry-forward (`answer_from_wire`,
`carried_forward`, `chained`); requests parsed once and replies written as JSON or a stream (the server
side, `ChatProtocol`); and, for a client in process, a growing conversation's requests parsed for what each
adds (`GrowingConversation`) and what it wrote taken as it would be read back (`message_as_read`,
`reply_as_read`). `sim.wire.registry.CODECS` asks it through one `Codec`."""

from __future__ import annotations

import operator
import re
from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any

from sim.core.errors import MessageContractError, ModelReplyError
from sim.core.messages import (
    AssistantMessage,
    ChatMessage,
    HistoryView,
    PairingChecker,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    validate_pairing,
)
from sim.core.model import FinishReason, ModelReply, ModelRequest, ToolSpec, Usage
from sim.wire.body_bytes import EncodedTools, GrowingItems, assemble, dumps
from sim.wire.carrying import Answer, CannotResend, renamed
from sim.wire.logprobs import PIECE_CHARS, pieces, text_logprobs
from sim.wire.requests import (
    CREATED,
    Asked,
    Refused,
    parse,
    refused_strict,
    refused_tool_choice,
    refused_type,
    refused_unsupported,
)
from sim.wire.sse import frame
from sim.wire.stream_text import StreamText
from sim.wire.tool_choice import ReplyTerms, reply_terms

ENDPOINT = "/chat/completions"
"""The path a client posts to, after the base URL."""
PATHS: tuple[str, ...] = ("/v1/chat/completions", ENDPOINT)
"""The paths a server answers."""
CONVERSATION = "messages"
"""The key of a request body's conversation list."""
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
        return assemble(fields, "messages", self._encoded.joined(), self._tools.of(request.tools))


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


def well_formed(text: str) -> str:
    """`text` as UTF-8 can carry it: a surrogate pair split across stream chunks (each chunk's JSON
    escape decoded alone) joined again, and a lone surrogate replaced by U+FFFD, so that the next request
    can be encoded."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


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
    text = None if content is None else well_formed(content)
    return AssistantMessage(content=text, tool_calls=tuple(_tool_call(c) for c in raw_calls))


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
    return ToolCall(id=call_id, name=name, arguments=well_formed(arguments))


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
            raise _fail(STREAM_ENDED_EARLY)
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


STREAM_ENDED_EARLY = "Stream ended without a finish reason"
REPLY_NOT_JSON = "Reply body is not JSON"
STREAM_CHUNK_NOT_JSON = "Stream chunk is not JSON"

_WIRE_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _bad(where: str, what: str) -> MessageContractError:
    return MessageContractError(f"{where}: {what}")


def content_text(content: Any, where: str) -> str:
    """Message content as text, for either API: a string, or the text (or refusal) of each part of a list;
    other parts (images, files) become a placeholder such as `[image_url]`."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for part in content:
            if not isinstance(part, Mapping):
                raise _bad(where, "content parts must be objects")
            text = part.get("text", part.get("refusal"))
            pieces.append(text if isinstance(text, str) else f"[{part.get('type', 'part')}]")
        return "".join(pieces)
    raise _bad(where, "content must be a string or an array of content parts")


def message_from_wire(raw: Any, where: str) -> ChatMessage:
    """One message as the API takes it, back into a `ChatMessage`; `MessageContractError` when malformed."""
    if not isinstance(raw, Mapping):
        raise _bad(where, "each message must be an object")
    role = raw.get("role")
    if role in ("system", "developer"):
        return SystemMessage(content=content_text(raw.get("content"), f"{where}.content"))
    if role == "user":
        return UserMessage(content=content_text(raw.get("content"), f"{where}.content"))
    if role == "tool":
        call_id = raw.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise _bad(f"{where}.tool_call_id", "a tool message must answer a tool_call_id")
        return ToolMessage(tool_call_id=call_id, content=content_text(raw.get("content"), f"{where}.content"))
    if role == "assistant":
        content = raw.get("content")
        calls = raw.get("tool_calls") or []
        if not isinstance(calls, list):
            raise _bad(f"{where}.tool_calls", "must be an array")
        try:
            tool_calls = tuple(_tool_call(call) for call in calls)
        except ModelReplyError as error:
            raise _bad(f"{where}.tool_calls", str(error)) from None
        text = None if content is None else content_text(content, f"{where}.content")
        return AssistantMessage(content=text, tool_calls=tool_calls)
    raise _bad(f"{where}.role", f"unsupported role {role!r}")


def _tool_spec_from_wire(raw: Any, where: str) -> ToolSpec:
    if (
        not isinstance(raw, Mapping)
        or raw.get("type") != "function"
        or not isinstance(raw.get("function"), Mapping)
    ):
        raise _bad(where, "each tool must be {type: function, function: {...}}")
    function = raw["function"]
    name = function.get("name")
    if not isinstance(name, str) or not _WIRE_TOOL_NAME.fullmatch(name):
        raise _bad(f"{where}.function.name", f"invalid function name {name!r}")
    parameters = function.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(parameters, Mapping) or parameters.get("type", "object") != "object":
        raise _bad(
            f"{where}.function.parameters", f"Invalid schema for function '{name}': must be an object schema"
        )
    description = function.get("description", "")
    return ToolSpec(name, description if isinstance(description, str) else "", parameters)


def request_from_wire(body: Any) -> ModelRequest:
    """A Chat Completions request body as a `ModelRequest`, checked as the API checks it, pairing included."""
    if not isinstance(body, Mapping):
        raise _bad("body", "must be a JSON object")
    messages = messages_from_wire(body.get("messages"))
    validate_pairing(messages)
    return ModelRequest(messages, tools_from_wire(body.get("tools")))


def messages_from_wire(raw_messages: Any) -> list[ChatMessage]:
    """A request's `messages` as `ChatMessage`s, pairing unchecked; `MessageContractError` if malformed."""
    if not isinstance(raw_messages, list) or not raw_messages:
        raise _bad("messages", "must be a non-empty array")
    return [message_from_wire(raw, f"messages[{index}]") for index, raw in enumerate(raw_messages)]


def history(body: Mapping[str, Any]) -> list[ChatMessage]:
    """A request body's conversation, pairing unchecked (`MessageContractError` when malformed)."""
    return messages_from_wire(body.get(CONVERSATION))


def chained_to(body: Mapping[str, Any]) -> str | None:
    """Nothing: Chat Completions keeps no response a request could continue."""
    return None


def response_id(reply: Any) -> str | None:
    """Nothing: no request refers to a completion by its id."""
    return None


def ending(reply: ModelReply) -> str:
    """How a reply ended, in the API's words (`finish_reason: stop`)."""
    return f"finish_reason: {reply.finish_reason}"


def tools_from_wire(raw_tools: Any) -> tuple[ToolSpec, ...]:
    """A request's `tools` as `ToolSpec`s; `MessageContractError` when they are not function tools."""
    if raw_tools is None:
        return ()
    if not isinstance(raw_tools, list):
        raise _bad("tools", "must be an array")
    return tuple(_tool_spec_from_wire(raw, f"tools[{index}]") for index, raw in enumerate(raw_tools))


def stream_text_pieces(event: Any) -> Iterator[StreamText]:
    """The pieces of text a `chat.completion.chunk` streams: per choice every text field of its delta
    (`content`, `refusal`, `reasoning_content` and what other servers add, the legacy
    `function_call.arguments`), per tool call (by its `index`) each of its fields. Joined in order they
    are what the reply says (secrets are looked for there)."""
    if not isinstance(event, Mapping):
        return
    for choice in event.get("choices") or []:
        delta = choice.get("delta") if isinstance(choice, Mapping) else None
        if isinstance(delta, dict):
            yield from _delta_texts(delta, (choice.get("index", 0),))


def _delta_texts(holder: dict[str, Any], where: tuple[Hashable, ...]) -> Iterator[StreamText]:
    for key, value in holder.items():
        if isinstance(value, str):
            yield (*where, key), holder, key
        elif isinstance(value, dict):
            yield from _delta_texts(value, (*where, key))
        elif key == "tool_calls" and isinstance(value, list):
            for position, call in enumerate(value):
                if isinstance(call, dict):
                    yield from _delta_texts(call, (*where, key, str(call.get("index", position))))


def reply_from_events(events: Sequence[Any]) -> ModelReply:
    """A streamed reply (the JSON of each `data:` event) as a `ModelReply`, checked like any reply."""
    assembler = StreamAssembler()
    for event in events:
        assembler.feed(event)
    return reply_from_wire(assembler.completion())


def estimate_usage(request: ModelRequest, reply: ModelReply) -> Usage:
    """Token counts a simulator can report: about four characters a token, never zero."""
    prompt = sum(len(getattr(m, "content", None) or "") for m in request.messages) // 4 + len(
        request.messages
    )
    said = len(reply.message.content or "") + sum(
        len(c.arguments) + len(c.name) for c in reply.message.tool_calls
    )
    completion = said // 4 + 1
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)


def _wire_usage(usage: Usage) -> dict[str, Any]:
    return {
        **usage.model_dump(),
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _choice_logprobs(text: str | None, top: int | None, *, refusal: bool = False) -> dict[str, Any] | None:
    """A choice's `logprobs` (None when the request did not ask): its text's tokens under `content`, or
    under `refusal` for a refusal."""
    if top is None:
        return None
    tokens = text_logprobs(text, top) if text is not None else None
    return {"content": None, "refusal": tokens} if refusal else {"content": tokens, "refusal": None}


def completion_to_wire(
    reply: ModelReply,
    *,
    completion_id: str,
    created: int,
    model: str,
    usage: Usage,
    logprobs: int | None = None,
    refusal: bool = False,
) -> dict[str, Any]:
    """A `ModelReply` as the `chat.completion` body the real API would send; `logprobs` is the number of
    `top_logprobs` asked for when the request asked for log probabilities; with `refusal`, the text is sent
    as a refusal (`message.refusal`, the content null)."""
    text = reply.message.content
    message: dict[str, Any] = {
        "role": "assistant",
        "content": None if refusal else text,
        "refusal": text if refusal else None,
        "annotations": [],
    }
    if reply.message.tool_calls:
        message["tool_calls"] = message_to_wire(reply.message)["tool_calls"]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": _choice_logprobs(text, logprobs, refusal=refusal),
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": _wire_usage(usage),
        "service_tier": "default",
        "system_fingerprint": "fp_sim",
    }


def chunks_to_wire(
    reply: ModelReply,
    *,
    completion_id: str,
    created: int,
    model: str,
    usage: Usage | None,
    logprobs: int | None = None,
    refusal: bool = False,
    piece_chars: int = PIECE_CHARS,
) -> list[dict[str, Any]]:
    """A `ModelReply` as the `chat.completion.chunk`s the real API would stream: a role chunk, text pieces
    (each with its token's log probability when asked; `refusal` deltas for a refusal), tool-call deltas by
    index (arguments in pieces), the finish chunk, and a usage-only chunk when asked."""
    header = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
              "service_tier": "default", "system_fingerprint": "fp_sim"}  # fmt: skip
    extra = {"usage": None} if usage is not None else {}

    def chunk(
        delta: dict[str, Any], finish_reason: str | None = None, text: str | None = None
    ) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": _choice_logprobs(text, logprobs, refusal=refusal),
                  "finish_reason": finish_reason}  # fmt: skip
        return {**header, "choices": [choice], **extra}

    text = reply.message.content
    opened = "" if text is not None else None
    chunks = [chunk({"role": "assistant", "content": None if refusal else opened,
                     "refusal": opened if refusal else None})]  # fmt: skip
    field = "refusal" if refusal else "content"
    chunks += [chunk({field: piece}, text=piece) for piece in pieces(text or "", piece_chars)]
    for index, call in enumerate(reply.message.tool_calls):
        opening = {
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        chunks.append(chunk({"tool_calls": [opening]}))
        chunks += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in pieces(call.arguments, piece_chars)
        ]
    chunks.append(chunk({}, reply.finish_reason))
    if usage is not None:
        chunks.append({**header, "choices": [], "usage": _wire_usage(usage)})
    return chunks


def answer_from_wire(recorded: Any, streamed: bool) -> Answer:
    """A recorded completion (its body, or its stream's events when `streamed`) as the next request
    carries it back; a refusal where `message.refusal` (or a `refusal` delta) says one."""
    if not streamed:
        reply = reply_from_wire(recorded)
        choices = recorded.get("choices") if isinstance(recorded, dict) else None
        message = choices[0].get("message") if isinstance(choices, list) and choices else None
        refused = isinstance(message, dict) and isinstance(message.get("refusal"), str)
    else:
        reply = reply_from_events(recorded)
        refused = any(
            isinstance(choice, dict) and isinstance((choice.get("delta") or {}).get("refusal"), str)
            for event in recorded
            if isinstance(event, dict)
            for choice in event.get("choices") or []
        )
    return Answer(reply, refused, [message_to_wire(reply.message)], None)


def carried_forward(added: list[Any], was: Answer, now: Answer) -> list[Any]:
    """What a recorded request added to `messages` after the request before it, with the live assistant
    message where the recorded one was and the tool messages to the live ids."""
    if not added or not isinstance(added[0], Mapping) or added[0].get("role") != "assistant":
        raise CannotResend("the next request does not carry the reply right after the one before")
    ids = renamed(was.reply.message.tool_calls, now.reply.message.tool_calls)
    return [_as_sent(added[0], now.carried[0]), *(_answering(message, ids) for message in added[1:])]


def chained(recorded: dict[str, Any], was: Answer, now: Answer) -> dict[str, Any] | None:
    """Nothing: Chat Completions keeps nothing, every request sends the whole conversation."""
    return None


def _as_sent(sent: Mapping[str, Any], live: Mapping[str, Any]) -> dict[str, Any]:
    """The live assistant message in the shape the client sent the recorded one (the fields it adds, such
    as `annotations` or `refusal: null`, kept): its text and calls are the live ones."""
    shaped = dict(sent)
    for key in ("content", "tool_calls"):
        value = live.get(key)
        if value is not None or key in sent:
            shaped[key] = value
    if shaped.get("tool_calls") is None and "tool_calls" not in live:
        shaped.pop("tool_calls", None)
    return shaped


def _answering(message: Any, ids: Mapping[str, str]) -> Any:
    if isinstance(message, Mapping) and message.get("role") == "tool" and message.get("tool_call_id") in ids:
        return {**message, "tool_call_id": ids[message["tool_call_id"]]}
    return message


class ChatProtocol:
    """`POST /v1/chat/completions`."""

    name = "chat"
    paths: tuple[str, ...] = PATHS
    closing = b"data: [DONE]\n\n"

    def parse(self, body: dict[str, Any], number: int) -> Asked | Refused:
        """The request body read once: the request being answered, or the API's refusal."""
        return parse(self, body, number)

    def refused(self, body: dict[str, Any]) -> Refused | None:
        """Types, `stream_options` without `stream`, `n`, log probabilities, `tool_choice`."""
        refused = refused_type(body) or refused_unsupported(body)
        if refused is None and body.get("stream_options") is not None and not body.get("stream"):
            message = "The 'stream_options' parameter is only allowed when 'stream' is enabled."
            refused = Refused(message, "stream_options", "invalid_value")
        if refused is None and not isinstance(
            (body.get("stream_options") or {}).get("include_usage", False), bool
        ):
            refused = Refused(
                "Invalid type for 'include_usage'.", "stream_options.include_usage", "invalid_type"
            )
        if refused is not None:
            return refused
        functions = self._functions(body)
        offered = [function.get("name") for _, function in functions]
        return refused_tool_choice(body.get("tool_choice"), offered) or refused_strict(functions)

    @staticmethod
    def _functions(body: dict[str, Any]) -> list[tuple[str, Any]]:
        """Each function a request offers, with where it sits in the body."""
        return [(f"tools[{n}].function", t["function"]) for n, t in enumerate(body.get("tools") or [])
                if isinstance(t, dict) and isinstance(t.get("function"), dict)]  # fmt: skip

    def decode(self, body: dict[str, Any]) -> ModelRequest:
        """`messages` and `tools`, pairing checked."""
        return request_from_wire(body)

    def terms(self, body: dict[str, Any]) -> ReplyTerms:
        """Functions are strict where they say `strict: true`."""
        return reply_terms(body, [function for _, function in self._functions(body)], unsaid=lambda _: None)

    def check(self, body: dict[str, Any], decoded: ModelRequest) -> Refused | None:
        """Nothing travels back by reference over Chat Completions."""
        return None

    def reply(self, reply: ModelReply, asked: Asked, *, refusal: bool = False) -> dict[str, Any]:
        """A `chat.completion`; a refusal in `message.refusal`, its content null."""
        return completion_to_wire(
            reply,
            completion_id=f"chatcmpl-sim{asked.number:06d}",
            created=CREATED,
            model=asked.model,
            usage=estimate_usage(asked.decoded, reply),
            logprobs=self._logprobs(asked.body),
            refusal=refusal,
        )

    def stream(self, reply: ModelReply, asked: Asked, *, refusal: bool = False) -> list[bytes]:
        """`chat.completion.chunk`s; the usage chunk only when `stream_options.include_usage` asks; a
        refusal in `refusal` deltas."""
        include_usage = bool((asked.body.get("stream_options") or {}).get("include_usage"))
        chunks = chunks_to_wire(
            reply,
            completion_id=f"chatcmpl-sim{asked.number:06d}",
            created=CREATED,
            model=asked.model,
            usage=estimate_usage(asked.decoded, reply) if include_usage else None,
            logprobs=self._logprobs(asked.body),
            refusal=refusal,
        )
        return [frame(chunk) for chunk in chunks]

    @staticmethod
    def _logprobs(body: dict[str, Any]) -> int | None:
        """How many alternatives per token the request asks for, when it asks for log probabilities."""
        return int(body.get("top_logprobs") or 0) if body.get("logprobs") else None

    def broken(self, stream: bool) -> bytes:
        """Half a completion."""
        return b'data: {"id": "chatcmpl-\n\n' if stream else b'{"id": "chatcmpl-'

    def failed(self, error: dict[str, Any], asked: Asked) -> list[bytes]:
        """An `error` chunk, as the API streams a failure."""
        return [frame({"error": error})]


class GrowingConversation:
    """`ChatProtocol.parse` for the requests of one client whose conversation only grows (each request's
    `messages` starts with the previous request's, the same objects): what a request shares with the last
    one parsed, the same objects, is not read again, so a run of n requests reads n messages, not n²/2.
    A client that says which messages it wrote each body's `messages` from (`written`) is not read back
    at all: each message is taken as `message_as_read` says it would be read.

    The result is what `ChatProtocol.parse` gives for the same body: its refusals, its problems, its
    typed request. It relies on the client's word that an object it sends again is unchanged (and that
    `written` is what it wrote); a request that shares less (other fields, a shorter or different
    conversation) is read whole.
    """

    __slots__ = ("_last", "_pairing", "_protocol")

    def __init__(self, protocol: ChatProtocol) -> None:
        self._protocol = protocol
        self._last: Asked | None = None
        self._pairing = PairingChecker()
        """The pairing of `_last`'s messages, checked to their end."""

    def parse(
        self, body: dict[str, Any], number: int, written: Sequence[ChatMessage] | None = None
    ) -> Asked | Refused:
        """The request body read as `ChatProtocol.parse` reads it, the part the last one shares read once;
        `written`: the messages `body["messages"]` was written from by `message_to_wire`, one for one."""
        last, self._last = self._last, None
        raw = body.get(CONVERSATION)
        if not isinstance(raw, list) or not raw:
            return self._protocol.parse(body, number)  # refused as it refuses it
        if written is not None and len(written) != len(raw):
            written = None
        read = self._read(body, raw, number, last, written)
        if isinstance(read, Asked):
            self._last = read
        return read

    def _read(
        self,
        body: dict[str, Any],
        raw: list[Any],
        number: int,
        last: Asked | None,
        written: Sequence[ChatMessage] | None,
    ) -> Asked | Refused:
        """`body` read in `ChatProtocol.parse`'s order (refused parameters, messages, pairing, tools, terms),
        after `last` when it only adds messages at the end: every other field being the same object, it is
        refused for nothing `last` was not refused for, and its tools and terms are `last`'s."""
        if last is not None and _extends(body, raw, last.body):
            known, tools, terms = last.decoded.messages, last.decoded.tools, last.terms
        else:
            if (refused := self._protocol.refused(body)) is not None:
                return refused
            known, tools, terms = (), None, None
            self._pairing = PairingChecker()
        start = len(known)
        try:
            if written is not None:
                added = [message_as_read(message, f"messages[{index}]")
                         for index, message in enumerate(written[start:], start)]  # fmt: skip
            else:
                added = [message_from_wire(message, f"messages[{index}]")
                         for index, message in enumerate(raw[start:], start)]  # fmt: skip
            for message in added:
                self._pairing.check(message)
            self._pairing.require_complete()
            if tools is None:
                tools = tools_from_wire(body.get("tools"))
        except MessageContractError as error:
            return Refused(f"Invalid request: {error}", detail=str(error))
        if terms is None:
            terms = self._protocol.terms(body)
        return Asked(body, ModelRequest([*known, *added], tools), number, terms)


def _extends(body: dict[str, Any], raw: list[Any], before: dict[str, Any]) -> bool:
    """Whether `body` is `before` with messages added at the end of `raw`, its `messages`."""
    if body.keys() != before.keys():
        return False
    for key, value in body.items():
        if key != CONVERSATION and value is not before[key]:
            return False
    known = before[CONVERSATION]
    return len(raw) >= len(known) and all(map(operator.is_, raw, known))


def message_as_read(message: ChatMessage, where: str) -> ChatMessage:
    """`message` as a server reads it once `message_to_wire` wrote it, without writing and reading it:
    `message_from_wire(message_to_wire(message), where)`, with the same checks and the same result (what
    Chat Completions cannot carry, an assistant's reasoning and items, left out)."""
    if isinstance(message, ToolMessage):
        if not (isinstance(message.tool_call_id, str) and message.tool_call_id):
            raise _bad(f"{where}.tool_call_id", "a tool message must answer a tool_call_id")
        return message
    if not isinstance(message, AssistantMessage):
        return message
    try:
        calls = tuple(_call_as_read(call) for call in message.tool_calls)
    except ModelReplyError as error:
        raise _bad(f"{where}.tool_calls", str(error)) from None
    if _same(calls, message.tool_calls) and not message.reasoning and not message.items:
        return message
    return AssistantMessage(content=message.content, tool_calls=calls)


def reply_as_read(reply: ModelReply, asked: Asked) -> ModelReply:
    """What a client reads of the `chat.completion` `ChatProtocol.reply` writes for `reply` (not as a
    refusal: a refusal's text is read back as the content all the same), without writing it:
    `reply_from_wire(ChatProtocol().reply(reply, asked))`, with the same checks and the same result."""
    usage = estimate_usage(asked.decoded, reply)  # first, as writing the reply counts it first
    finish_reason = _finish_reason(reply.finish_reason)
    message = reply.message
    content = message.content
    calls = tuple(_call_as_read(call) for call in message.tool_calls)
    text = None if content is None else well_formed(content)
    if text is content and not message.reasoning and not message.items and _same(calls, message.tool_calls):
        read = message  # what it would be read as, equal and as immutable
    else:
        read = AssistantMessage(content=text, tool_calls=calls)
    return ModelReply(message=read, finish_reason=finish_reason, usage=usage)


def _same(read: tuple[ToolCall, ...], calls: tuple[ToolCall, ...]) -> bool:
    """Whether every call was read back as itself."""
    return all(map(operator.is_, read, calls))


def _call_as_read(call: ToolCall) -> ToolCall:
    """`call` as `_tool_call` reads it back from `message_to_wire`'s shape."""
    call_id, name, arguments = call.id, call.name, call.arguments
    if not (isinstance(call_id, str) and call_id and isinstance(name, str) and name):
        raise _fail("tool call id and function name must be non-empty strings")
    if not isinstance(arguments, str):
        raise _fail("tool call arguments must be a string")
    read = well_formed(arguments)
    if read is arguments:
        return call
    return ToolCall(id=call_id, name=name, arguments=read)


def server(store_limit: int) -> ChatProtocol:
    """A new server side of Chat Completions (which keeps nothing between requests: `store_limit` is the
    Responses API's)."""
    return ChatProtocol()
