"""Asking a recorded file's conversations again: each conversation's first request sent as recorded, then
each next recorded request carrying the live reply in place of the recorded one (the recorded tool results
kept: the world stays fixed, only the model is asked again), up to the recorded number of turns; each live
reply compared with the recorded one. A conversation stops at its first breaking drift (the recorded
results no longer answer the live calls) or at an error."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx2

from sim.cassette.conversations import Conversation, HttpFailure, ModelCall, conversations
from sim.cassette.reader import RecordedRequest, RecordedResponse, read_cassette
from sim.cassette.scrubbing import Scrubber
from sim.cassette.upstream import UpstreamUrl
from sim.cassette.writer import HttpExchange
from sim.core.errors import AgentError
from sim.core.json_text import loads
from sim.core.model import Usage
from sim.core.transcript import preview
from sim.drift.compare import Compared, Drift, compare, summary
from sim.drift.resend import Resender, resender
from sim.wire.body_bytes import GrowingItems, assemble, dumps
from sim.wire.carrying import Answer, CannotResend


@dataclass(frozen=True, slots=True)
class TurnDrift:
    """One turn asked again: the recorded reply and the live one, in a few words each, and how they differ."""

    turn: int
    interaction: int
    recorded: str
    live: str
    compared: Compared
    shown: tuple[str, str] | None = None
    """The recorded and the live reply as JSON, where they differ (for a side-by-side view)."""


@dataclass(slots=True)
class ConversationDrift:
    """One recorded conversation asked again, turn by turn, and why it stopped early (if it did)."""

    turns: list[TurnDrift] = field(default_factory=list)
    recorded_turns: int = 0
    stopped: str | None = None
    unanswered: str | None = None
    """Why a turn was not answered (an HTTP error, no reply, a reply too large): the question was not asked
    through, so the live conversation is no recording of the model."""
    exchanges: list[HttpExchange] = field(default_factory=list)
    """What was sent and what came back, for `--rerecord` (no credential among the headers)."""

    @property
    def worst(self) -> Drift:
        """The farthest any turn drifted."""
        order = [Drift.same, Drift.compatible, Drift.breaking]
        found = [turn.compared.drift for turn in self.turns] or [Drift.same]
        return max(found, key=order.index)


@dataclass(slots=True)
class FileDrift:
    """A file's conversations asked again, what that cost, and why it could not be read (if so)."""

    path: str
    model: str | None = None
    """The model the recording asked (its first request's), for the cost."""
    conversations: list[ConversationDrift] = field(default_factory=list)
    requests: int = 0
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0
    upstream_seconds: float = 0.0
    """The time spent waiting for the upstream (the rest is sim's own)."""
    problem: str | None = None

    @property
    def worst(self) -> Drift:
        """The farthest any conversation drifted (a file that could not be asked is breaking)."""
        if self.problem is not None:
            return Drift.breaking
        order = [Drift.same, Drift.compatible, Drift.breaking]
        return max((c.worst for c in self.conversations), key=order.index, default=Drift.same)


MAX_REPLY_BYTES = 32 * 1024 * 1024
"""The most a live reply may hold, counted as it streams in (half what the cassette reader takes of a body,
so a re-recording reads back; a long streamed reply of the largest models is a few MiB)."""
REPLY_SECONDS = 600.0
"""The longest a live reply may take from the request to its last byte (the OpenAI SDK's own default)."""


@dataclass(frozen=True, slots=True)
class UpstreamConnection:
    """Where and how to ask: the base URL (`https://api.openai.com/v1`, parsed as `sim proxy` parses its
    own: `ValueError` for one with a user or password), the credential headers (never written or shown),
    the HTTP client (a test's in-process transport, or the network), the bounds of one reply (its size in
    bytes and its time in seconds, the whole of it), and the secrets (the key, the account ids) taken out of
    each live reply's text and calls before they are compared or shortened to be shown."""

    base_url: str
    headers: Mapping[str, str]
    client: httpx2.AsyncClient
    max_reply_bytes: int = MAX_REPLY_BYTES
    deadline: float = REPLY_SECONDS
    secrets: tuple[str, ...] = ()
    url: UpstreamUrl = field(init=False, repr=False)
    scrubber: Scrubber = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "url", UpstreamUrl.parse(self.base_url))
        object.__setattr__(self, "scrubber", Scrubber(self.secrets))

    def heard(self, answer: Answer) -> Answer:
        """A live answer whose text and calls have the secrets and anything shaped like a credential taken
        out, before any of it is compared or shortened to be shown (a key cut short is no longer found)."""
        said = self.scrubber.text
        message = answer.reply.message
        calls = tuple(
            call.model_copy(update={"name": said(call.name), "arguments": said(call.arguments)})
            for call in message.tool_calls
        )
        content = None if message.content is None else said(message.content)
        clean = message.model_copy(update={"content": content, "tool_calls": calls})
        return replace(answer, reply=answer.reply.model_copy(update={"message": clean}))


@dataclass(frozen=True, slots=True)
class Unanswered:
    """A request that got no whole reply: the upstream could not be reached, took too long, or sent more
    than a reply may hold."""

    why: str


def usage_sum(total: Usage, usage: Usage | None) -> Usage:
    """`total` with `usage` added (a reply that reports none adds nothing)."""
    if usage is None:
        return total
    return Usage(
        prompt_tokens=total.prompt_tokens + usage.prompt_tokens,
        completion_tokens=total.completion_tokens + usage.completion_tokens,
        total_tokens=total.total_tokens + usage.total_tokens,
    )


async def drift_file(
    path: Path, upstream: UpstreamConnection, *, max_requests: int | None = None
) -> FileDrift:
    """Ask each conversation of the cassette at `path` again; at most `max_requests` requests in all (the
    recorded count when None)."""
    started = time.perf_counter()
    result = FileDrift(str(path))
    try:
        found = conversations(read_cassette(path))
    except (AgentError, OSError, ValueError) as error:
        result.problem = f"cannot be read: {error}"
        return result
    budget = max_requests if max_requests is not None else sum(len(c.exchanges) for c in found)
    for conversation in found:
        asked = ConversationDrift(recorded_turns=len(conversation.exchanges))
        result.conversations.append(asked)
        budget = await _ask_again(conversation, asked, upstream, result, budget)
    result.seconds = time.perf_counter() - started
    return result


class _Sent:
    """What a conversation last sent: the body's other fields, its conversation list's items encoded one
    by one (so that the next body is one copy of them, not an encoding of the whole), and how long the
    recorded list was at that turn."""

    def __init__(self, body: dict[str, Any], key: str) -> None:
        items = body.get(key)
        listed = (
            items
            if isinstance(items, list)
            else []
            if items is None
            else [{"role": "user", "content": items}]
        )
        self.key = key
        self.fields = {name: value for name, value in body.items() if name != key}
        self.items = GrowingItems()
        self.items.extend(dumps(item) for item in listed)
        self.recorded = len(listed)
        self.request: RecordedRequest | None = None
        """The recorded request this state answers (a request that appends to it is read from its items)."""

    def extended(self, fields: dict[str, Any], added: list[Any], recorded: int) -> bytes:
        """The next body: `fields`, and the list as sent so far with `added` after it."""
        self.fields = fields
        self.items.extend(dumps(item) for item in added)
        self.recorded = recorded
        return assemble(fields, self.key, self.items.joined(), b"")


def _next(exchange: ModelCall, sender: Resender, state: _Sent, was: Answer, now: Answer) -> bytes:
    """The next request's body, carrying `now` where the recording carried `was`; `state` is brought up to
    it (a chained request sends only what is new, and leaves it as it was)."""
    request = exchange.interaction.request
    appended = request.appended
    continues_stored = exchange.codec.chained_to(state.fields) is not None
    if appended is not None and appended.base is state.request and not continues_stored:
        # a request that only appends items (compact, or a plain one repeating the one before): read from
        # those items alone, as the reader did
        added = sender.carried_forward(list(appended.items), was, now)
        return state.extended(state.fields, added, state.recorded + len(appended.items))
    body = _body(exchange)
    if (chained := sender.chained(body, was, now)) is not None:
        return dumps(chained)
    items = body.get(exchange.codec.conversation)
    listed = items if isinstance(items, list) else []
    if len(listed) < state.recorded:
        raise CannotResend("the next request does not extend the one before")
    fields = {name: value for name, value in body.items() if name != exchange.codec.conversation}
    added = sender.carried_forward(listed[state.recorded :], was, now)
    return state.extended(fields, added, len(listed))


async def _ask_again(
    conversation: Conversation,
    asked: ConversationDrift,
    upstream: UpstreamConnection,
    result: FileDrift,
    budget: int,
) -> int:
    previous: tuple[Answer, Answer] | None = None
    state: _Sent | None = None
    for turn, exchange in enumerate(conversation.exchanges, 1):
        if budget <= 0:
            asked.stopped = f"stopped before turn {turn}: --max-requests reached"
            return budget
        if isinstance(exchange.reply, HttpFailure) or exchange.request_problem:
            why = exchange.request_problem or f"the recording holds an error there ({exchange.reply})"
            asked.stopped = f"stopped at turn {turn}: {why}"
            return budget
        sender = resender(exchange.codec)
        try:
            was = sender.answer(exchange.interaction.response)
            if previous is None or state is None:  # the first request goes as recorded, byte for byte
                sent = exchange.interaction.request.body or b""
                state = _Sent(_body(exchange), exchange.codec.conversation)
                model = state.fields.get("model")
                result.model = result.model or (model if isinstance(model, str) else None)
            else:
                sent = _next(exchange, sender, state, *previous)
            state.request = exchange.interaction.request
        except CannotResend as error:
            asked.stopped = f"stopped at turn {turn}: {error}"
            return budget
        except (AgentError, ValueError) as error:
            asked.stopped = f"stopped at turn {turn}: the recorded reply cannot be read: {error}"
            return budget
        budget -= 1
        result.requests += 1
        response = await _send(upstream, exchange, sent, result)
        recorded = summary(was.reply, refused=was.refused)
        if isinstance(response, Unanswered):
            asked.unanswered = f"turn {turn}: {response.why}"
            compared = Compared(Drift.breaking, f"no reply: {response.why}")
            asked.turns.append(TurnDrift(turn, exchange.interaction.index, recorded, "(no reply)", compared))
            asked.stopped = _stopped(turn, conversation)
            return budget
        asked.exchanges.append(_written(exchange, upstream, sent, response))
        if response.status >= 400:
            said = _error_text(response, upstream.scrubber)
            asked.unanswered = f"turn {turn}: HTTP {response.status}: {said}"
            compared = Compared(Drift.breaking, f"an error: HTTP {response.status}: {said}")
            asked.turns.append(
                TurnDrift(turn, exchange.interaction.index, recorded, f"HTTP {response.status}", compared)
            )
            asked.stopped = _stopped(turn, conversation)
            return budget
        try:
            now = upstream.heard(sender.answer(response))
        except (AgentError, ValueError) as error:
            compared = Compared(Drift.breaking, f"the live reply cannot be read: {error}")
            asked.turns.append(
                TurnDrift(turn, exchange.interaction.index, recorded, "(unreadable)", compared)
            )
            asked.stopped = _stopped(turn, conversation)
            return budget
        result.usage = usage_sum(result.usage, now.reply.usage)
        compared = compare(
            was.reply, now.reply, exchange.tools, recorded_refused=was.refused, live_refused=now.refused
        )
        live = summary(now.reply, refused=now.refused)
        shown = None if compared.drift is Drift.same else (_shown(was), _shown(now))
        asked.turns.append(TurnDrift(turn, exchange.interaction.index, recorded, live, compared, shown))
        if compared.drift is Drift.breaking:
            asked.stopped = _stopped(turn, conversation)
            return budget
        previous = (was, now)
    return budget


def _shown(answer: Answer) -> str:
    return answer.reply.model_dump_json(exclude_none=True, exclude_defaults=True)


def _stopped(turn: int, conversation: Conversation) -> str | None:
    if turn == len(conversation.exchanges):
        return None
    of = len(conversation.exchanges)
    return f"stopped at turn {turn} of {of}: the recorded results no longer answer the live reply"


def _body(exchange: ModelCall) -> dict[str, Any]:
    text = exchange.interaction.request.text
    body = loads(text or "{}")
    if not isinstance(body, dict):
        raise CannotResend("the recorded request body is not a JSON object")
    return body


async def _send(
    upstream: UpstreamConnection, exchange: ModelCall, body: bytes, result: FileDrift
) -> RecordedResponse | Unanswered:
    """The upstream's reply, read as it streams in, within the reply's bounds of size and time."""
    url = upstream.url.target(exchange.codec.endpoint)
    headers = {"content-type": "application/json", **upstream.headers}
    started = time.perf_counter()
    try:
        async with asyncio.timeout(upstream.deadline):
            return await _read(upstream, url, body, headers)
    except TimeoutError:
        return Unanswered(f"no whole reply within {upstream.deadline:g} s")
    except httpx2.HTTPError as error:
        return Unanswered(f"the upstream cannot be reached: {type(error).__name__}")
    finally:
        result.upstream_seconds += time.perf_counter() - started


async def _read(
    upstream: UpstreamConnection, url: str, body: bytes, headers: dict[str, str]
) -> RecordedResponse | Unanswered:
    async with upstream.client.stream("POST", url, content=body, headers=headers) as response:
        chunks, size = [], 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > upstream.max_reply_bytes:
                return Unanswered(f"the reply holds more than {_bytes(upstream.max_reply_bytes)}")
            chunks.append(chunk)
    shown = {name.lower(): [value] for name, value in response.headers.items()}
    return RecordedResponse(response.status_code, response.reason_phrase, shown, b"".join(chunks))


def _bytes(size: int) -> str:
    return f"{size // 1024**2} MiB" if size % 1024**2 == 0 else f"{size} bytes"


def _error_text(response: RecordedResponse, scrubber: Scrubber) -> str:
    body = response.json()
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    said = str(message) if message is not None else response.body.decode("utf-8", "replace")
    return preview(scrubber.text(said), 120)  # scrubbed whole: a key cut short is no longer found


def _written(
    exchange: ModelCall, upstream: UpstreamConnection, body: bytes, response: RecordedResponse
) -> HttpExchange:
    """The exchange as a cassette would hold it: the request as sent, no credential header."""
    uri = upstream.url.target(exchange.codec.endpoint, shown=True)
    kept = {
        name: values for name, values in response.headers.items() if name in ("content-type", "openai-model")
    }
    return HttpExchange(
        method="POST",
        uri=uri,
        request_headers={"content-type": ["application/json"]},
        request_body=body,
        status=response.status,
        reason=response.reason,
        response_headers=kept,
        response_body=response.body,
    )
