"""Chat Completions, the server side (`ChatProtocol`): a request parsed once or refused as the API refuses
it, and a reply written as the `chat.completion` or the `chat.completion.chunk`s the API would send."""

from __future__ import annotations

from typing import Any

from sim.core.errors import MessageContractError
from sim.core.model import ModelReply, ModelRequest, Usage
from sim.wire.chat import PATHS
from sim.wire.chat.client import (
    message_to_wire,
)
from sim.wire.chat.legacy import function_call_to_wire, legacy_terms
from sim.wire.chat.reading import (
    refused_conversation,
    request_from_wire,
)
from sim.wire.chat.refusals import refused_chat_request
from sim.wire.chat.served import AS_IS, Serving, serving
from sim.wire.custom_tools import custom_names
from sim.wire.logprobs import PIECE_CHARS, pieces, text_logprobs
from sim.wire.obfuscation import padded_chunks, refused_option, wanted
from sim.wire.requests import (
    CREATED,
    Asked,
    Refused,
    RefusedError,
    parse,
    refused_custom_format,
    refused_strict,
    refused_tool_choice,
    refused_type,
    refused_unsupported,
    wrong_type,
)
from sim.wire.resources import Resource
from sim.wire.sse import frame
from sim.wire.text_format import chat_format, refused_chat_format, with_format
from sim.wire.tool_choice import ReplyTerms, reply_terms


def estimate_usage(request: ModelRequest, reply: ModelReply) -> Usage:
    """Token counts a simulator can report: about four characters a token, never zero; the completion
    counts the reply's reasoning tokens too, as the API counts them (`reasoning_tokens`)."""
    prompt = sum(len(getattr(m, "content", None) or "") for m in request.messages) // 4 + len(
        request.messages
    )
    said = len(reply.message.content or "") + sum(
        len(c.arguments) + len(c.name) for c in reply.message.tool_calls
    )
    completion = said // 4 + 1 + reasoning_tokens(reply)
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)


def reasoning_tokens(reply: ModelReply) -> int:
    """The tokens a reply spent reasoning: about four characters a token of each reasoning item's summary
    and text, at least one an item (whether or not its summary is served: the model reasoned all the same);
    none for a reply that does not reason."""
    reasoning = reply.message.reasoning
    if not reasoning:
        return 0
    return sum(sum(map(len, (*item.summary, *item.content))) // 4 + 1 for item in reasoning)


def _wire_usage(usage: Usage, reasoning: int = 0) -> dict[str, Any]:
    return {
        **usage.model_dump(),
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": reasoning,
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
    served: Serving = AS_IS,
) -> dict[str, Any]:
    """A `ModelReply` as the `chat.completion` body the real API would send; `logprobs` is the number of
    `top_logprobs` asked for when the request asked for log probabilities; with `refusal`, the text is sent
    as a refusal (`message.refusal`, the content null); `served` says its finish reason, whether its call
    is a legacy `function_call`, and its service tier."""
    text = reply.message.content
    message: dict[str, Any] = {
        "role": "assistant",
        "content": None if refusal else text,
        "refusal": text if refusal else None,
        "annotations": [],
    }
    if reply.message.tool_calls and served.legacy:
        message["function_call"] = function_call_to_wire(reply)
    elif reply.message.tool_calls:
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
                "finish_reason": served.finish(reply),
            }
        ],
        "usage": _wire_usage(usage, reasoning_tokens(reply)),
        "service_tier": served.service_tier,
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
    served: Serving = AS_IS,
) -> list[dict[str, Any]]:
    """A `ModelReply` as the `chat.completion.chunk`s the real API would stream: a role chunk, text pieces
    (each with its token's log probability when asked; `refusal` deltas for a refusal), tool-call deltas by
    index (arguments in pieces; a legacy call's `function_call` deltas instead), the finish chunk, and a
    usage-only chunk when asked; `served` as `completion_to_wire` takes it."""
    header = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
              "service_tier": served.service_tier, "system_fingerprint": "fp_sim"}  # fmt: skip
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
    if served.legacy and reply.message.tool_calls:
        legacy_call = function_call_to_wire(reply)
        chunks.append(chunk({"function_call": {"name": legacy_call["name"], "arguments": ""}}))
        arguments = pieces(legacy_call["arguments"], piece_chars)
        chunks += [chunk({"function_call": {"arguments": piece}}) for piece in arguments]
    for index, call in enumerate(() if served.legacy else reply.message.tool_calls):
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
    chunks.append(chunk({}, served.finish(reply)))
    if usage is not None:
        chunks.append({**header, "choices": [], "usage": _wire_usage(usage, reasoning_tokens(reply))})
    return chunks


def _refused_custom_stream(body: dict[str, Any]) -> Refused | None:
    """A stream that could carry a custom tool call: the API's chunk schema has no shape for one (its tool
    call deltas are functions only), so sim cannot say how the API would stream it."""
    if body.get("stream") and custom_names(body.get("tools")) and body.get("tool_choice") != "none":
        message = ("sim does not stream custom tool calls over Chat Completions: the API's chunk schema has"
                   " no shape for them. Stream over the Responses API, or do not stream.")  # fmt: skip
        return Refused(message, "stream", "unsupported_value", unsimulated=True)
    return None


class ChatProtocol:
    """`POST /v1/chat/completions`."""

    name = "chat"
    paths: tuple[str, ...] = PATHS
    closing = b"data: [DONE]\n\n"
    resources: tuple[Resource, ...] = ()

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
            usage := (body.get("stream_options") or {}).get("include_usage", False), bool
        ):
            refused = wrong_type("stream_options.include_usage", "a boolean", usage)
        refused = refused or refused_option(body)
        if refused is not None or (refused := refused_chat_format(body)) is not None:
            return refused
        if (refused := refused_chat_request(body)) is not None:
            return refused
        functions = self._functions(body)
        offered = [function.get("name") for _, function in functions] + custom_names(body.get("tools"))
        return (refused_custom_format(body.get("tools")) or _refused_custom_stream(body)
                or refused_tool_choice(body.get("tool_choice"), offered)
                or refused_strict(functions))  # fmt: skip

    @staticmethod
    def _functions(body: dict[str, Any]) -> list[tuple[str, Any]]:
        """Each function a request offers, with where it sits in the body."""
        return [(f"tools[{n}].function", t["function"]) for n, t in enumerate(body.get("tools") or [])
                if isinstance(t, dict) and isinstance(t.get("function"), dict)]  # fmt: skip

    def decode(self, body: dict[str, Any]) -> ModelRequest:
        """`messages` and `tools`, pairing checked (a broken pairing refused in the API's words)."""
        try:
            return request_from_wire(body)
        except MessageContractError as error:
            if error.pairing is None:
                raise
            raise RefusedError(refused_conversation(error, body.get("messages"))) from None

    def terms(self, body: dict[str, Any]) -> ReplyTerms:
        """Functions are strict where they say `strict: true`."""
        terms = reply_terms(body, [function for _, function in self._functions(body)], unsaid=lambda _: None)
        return legacy_terms(with_format(terms, chat_format(body)), body)

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
            served=serving(reply, asked.body, asked.terms),
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
            served=serving(reply, asked.body, asked.terms),
        )
        if wanted(asked.body):
            padded_chunks(chunks, asked.number)
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


def server(store_limit: int) -> ChatProtocol:
    """A new server side of Chat Completions (which keeps nothing between requests: `store_limit` is the
    Responses API's)."""
    return ChatProtocol()
