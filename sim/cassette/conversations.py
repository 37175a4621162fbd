"""A cassette's model calls (Chat Completions and the Responses API) read as conversations: each request's
new messages and the reply it got; a Responses request that names `previous_response_id` continues the
conversation recorded for that response.

Reading stays linear in the file however long the session: a request that appends items to the request
before it (a compact one, or a plain one whose text repeats that request's) is read from its items alone,
and the requests of a conversation share one growing list of messages (`SharedPrefix`), so neither
rebuilding bodies nor copying histories costs the session's square.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sim.cassette.reader import Cassette, RecordedInteraction, collector_paused
from sim.core.errors import AgentError
from sim.core.messages import (
    AssistantMessage,
    ChatMessage,
    SharedPrefix,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from sim.core.model import ModelReply, ToolSpec
from sim.wire.registry import Codec


@dataclass(frozen=True, slots=True)
class HttpFailure:
    """A recorded error response (or a reply that cannot be read)."""

    status: int
    message: str
    error_type: str | None = None
    code: str | None = None
    unreadable: bool = False


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One model call: what the request held (a chained request: the whole conversation it continues), what
    it added, and what came back."""

    interaction: RecordedInteraction
    codec: Codec
    messages: Sequence[ChatMessage]
    new_messages: list[ChatMessage]
    tools: tuple[ToolSpec, ...]
    streamed: bool
    reply: ModelReply | HttpFailure
    request_problem: str | None = None
    continues: str | None = None
    """The `previous_response_id` it names, if any."""
    unknown_previous: bool = False
    """Whether that response is not in the cassette (the conversation before it is unknown)."""
    unknown_start: bool = False
    """Whether the chain it continues goes back to a response not in the cassette (the calls that the
    first results it holds answer may not be shown)."""
    renamed_calls: dict[str, str] = field(default_factory=dict)
    """Call ids this request sends in place of the ones the model returned (some clients send the item
    id, `fc_...`, as `call_id`): the sent id -> the model's, paired by position."""


@dataclass(slots=True)
class Conversation:
    """Requests that each extend the one before (in recorded order, other conversations' requests may
    come between them)."""

    exchanges: list[ModelCall] = field(default_factory=list)

    def continued_by(self, messages: Sequence[ChatMessage]) -> tuple[bool, int] | None:
        """How well `messages` continue this conversation (its last reply comes next, the length of what
        it repeats), or None when they do not extend it; the system prompt may change (an agent handing
        off to another). A conversation ending in an unreadable request is continued by nothing."""
        last = self.exchanges[-1]
        if last.request_problem:
            return None
        reply = last.reply
        grown = None
        if isinstance(messages, SharedPrefix) and last.messages:
            grown = messages.new_since(last.messages)
        if grown is not None:  # a view of the same list: it repeats all of it (system prompt included)
            carries = bool(grown) and isinstance(reply, ModelReply) and grown[0] == reply.message
            return (carries, len(last.messages) - _system_count(last.messages)) if grown else None
        previous, mine = _dialogue(last.messages), _dialogue(messages)
        if len(mine) <= len(previous) or mine[: len(previous)] != previous:
            return None
        carries_reply = isinstance(reply, ModelReply) and mine[len(previous)] == reply.message
        return carries_reply, len(previous)


def _system_count(messages: Sequence[ChatMessage]) -> int:
    """1 when the messages open with a system prompt, else 0."""
    return 1 if messages and isinstance(messages[0], SystemMessage) else 0


def _dialogue(messages: Sequence[ChatMessage]) -> Sequence[ChatMessage]:
    """The messages after a leading system prompt."""
    return messages[1:] if messages and isinstance(messages[0], SystemMessage) else messages


def _added(previous: Sequence[ChatMessage], messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """What `messages` add to `previous`: the system prompt when it changed, then the new dialogue."""
    grown = messages.new_since(previous) if isinstance(messages, SharedPrefix) else None
    if grown is not None:
        return list(grown)
    system = list(messages[:1]) if messages and isinstance(messages[0], SystemMessage) else []
    changed = system if system and system != list(previous[:1]) else []
    return [*changed, *_dialogue(messages)[len(_dialogue(previous)) :]]


@dataclass(frozen=True, slots=True)
class _Request:
    messages: Sequence[ChatMessage]
    tools: tuple[ToolSpec, ...] = ()
    streamed: bool = False
    problem: str | None = None
    continues: str | None = None
    unknown_previous: bool = False
    unknown_start: bool = False


@dataclass(frozen=True, slots=True)
class _Replied:
    """A recorded response's conversation: the request's messages, then the reply (joined only when a
    request continues it)."""

    messages: Sequence[ChatMessage]
    reply: AssistantMessage
    partial: bool
    """Whether its chain goes back to a response not recorded."""


def _appended(
    interaction: RecordedInteraction, codec: Codec, earlier: dict[int, ModelCall], parallel: _ParallelReplies
) -> _Request | None:
    """A request that appends items to an earlier request (compact, or plain text repeating it) read from
    those items alone: the earlier request's conversation, continued (None when it cannot be read so)."""
    appended = interaction.request.appended
    base = earlier.get(id(appended.base)) if appended is not None else None
    if appended is None or base is None or base.request_problem or base.codec is not codec:
        return None
    if not base.messages or isinstance(base.messages[-1], AssistantMessage):
        return None  # the items might join the assistant turn it ends with: read the request whole
    try:
        new = codec.history({codec.conversation: appended.items})
    except AgentError:
        return None
    if any(isinstance(message, SystemMessage) for message in new):
        return None
    messages = (
        SharedPrefix(list(base.messages)) if not isinstance(base.messages, SharedPrefix) else base.messages
    )
    return _Request(
        messages.extended(parallel.regrouped(new)), base.tools, base.streamed, None, base.continues,
        base.unknown_previous, base.unknown_start,
    )  # fmt: skip


def _request(
    interaction: RecordedInteraction,
    codec: Codec,
    replied: dict[str, _Replied],
    parallel: _ParallelReplies,
) -> _Request:
    """The request's conversation; a chained one is continued from the response it names (`replied`:
    each recorded response's conversation, by id)."""
    body = interaction.request.json()
    if not isinstance(body, dict):
        return _Request([], problem="request body is not a JSON object")
    streamed = bool(body.get("stream"))
    try:
        messages, tools = parallel.regrouped(codec.history(body)), codec.tools(body.get("tools"))
    except AgentError as error:
        return _Request([], streamed=streamed, problem=str(error))
    previous = codec.chained_to(body)
    if previous is None:
        return _Request(SharedPrefix(messages), tools, streamed)
    system = [m for m in messages[:1] if isinstance(m, SystemMessage)]
    found = replied.get(previous)
    if found is None:
        return _Request(SharedPrefix(messages), tools, streamed, None, previous, True, True)
    earlier = found.messages
    same_system = bool(earlier) and isinstance(earlier[0], SystemMessage) and system == [earlier[0]]
    if isinstance(earlier, SharedPrefix) and (same_system or (not system and not _has_system(earlier))):
        whole = earlier.extended([found.reply, *messages[len(system) :]])
    else:
        dialogue = [m for m in earlier if not isinstance(m, SystemMessage)]
        whole = SharedPrefix([*system, *dialogue, found.reply, *messages[len(system) :]])
    return _Request(whole, tools, streamed, None, previous, False, found.partial)


def _has_system(messages: Sequence[ChatMessage]) -> bool:
    return bool(messages) and isinstance(messages[0], SystemMessage)


def _reply(interaction: RecordedInteraction, codec: Codec) -> ModelReply | HttpFailure:
    response = interaction.response
    if response.status >= 400:
        body: Any = response.json()
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            return HttpFailure(
                response.status,
                str(error.get("message", "")),
                _text(error.get("type")),
                _text(error.get("code")),
            )
        return HttpFailure(response.status, response.body.decode("utf-8", errors="replace")[:200])
    try:
        if response.is_event_stream:
            return codec.reply_from_events(response.events())
        return codec.reply(response.json())
    except (AgentError, ValueError) as error:
        return HttpFailure(response.status, f"unreadable reply: {error}", unreadable=True)


def _served_id(interaction: RecordedInteraction, codec: Codec) -> str | None:
    response = interaction.response
    try:
        return codec.response_id(response.events() if response.is_event_stream else response.json())
    except ValueError:
        return None


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _renamed(previous: ModelReply | HttpFailure, new: list[ChatMessage]) -> dict[str, str]:
    """The call ids a request sends for the previous reply's calls, where they differ (by position)."""
    sent = new[0] if new and isinstance(new[0], AssistantMessage) else None
    if not isinstance(previous, ModelReply) or sent is None:
        return {}
    returned = previous.message.tool_calls
    if [c.name for c in sent.tool_calls] != [c.name for c in returned]:
        return {}
    return {
        mine.id: theirs.id
        for mine, theirs in zip(sent.tool_calls, returned, strict=True)
        if mine.id != theirs.id
    }


class _ParallelReplies:
    """The replies recorded so far that called several tools, by their first call: what a request that
    sends calls back each followed by its output (call A, output A, call B, output B: a form the API
    accepts) is regrouped into."""

    def __init__(self) -> None:
        self._by_first: dict[ToolCall, list[AssistantMessage]] = {}

    def add(self, message: AssistantMessage) -> None:
        if len(message.tool_calls) > 1:
            self._by_first.setdefault(message.tool_calls[0], []).append(message)

    def regrouped(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        """`messages` with each interleaved run of a recorded reply's calls made that one assistant turn,
        its outputs after it."""
        if not self._by_first:
            return messages
        out: list[ChatMessage] = []
        index = 0
        while index < len(messages):
            message = messages[index]
            merged = self._merged(messages, index) if isinstance(message, AssistantMessage) else None
            if merged is None:
                out.append(message)
                index += 1
            else:
                out += merged[0]
                index = merged[1]
        return out

    def _merged(self, messages: list[ChatMessage], start: int) -> tuple[list[ChatMessage], int] | None:
        first = messages[start]
        assert isinstance(first, AssistantMessage)
        if not first.tool_calls:
            return None
        for reply in self._by_first.get(first.tool_calls[0], ()):
            calls = reply.tool_calls
            if len(first.tool_calls) >= len(calls) or calls[: len(first.tool_calls)] != first.tool_calls:
                continue
            taken, outputs, index = len(first.tool_calls), [], start + 1
            ids = {call.id for call in calls}
            while index < len(messages):
                message = messages[index]
                if isinstance(message, ToolMessage) and message.tool_call_id in ids:
                    outputs.append(message)
                elif (
                    isinstance(message, AssistantMessage)
                    and message.content is None
                    and not message.reasoning
                    and taken < len(calls)
                    and calls[taken : taken + len(message.tool_calls)] == message.tool_calls
                ):
                    taken += len(message.tool_calls)
                else:
                    break
                index += 1
            if taken == len(calls):
                return [first.model_copy(update={"tool_calls": calls}), *outputs], index
        return None


def conversations(cassette: Cassette) -> list[Conversation]:
    """The cassette's model calls grouped into conversations, in recorded order. Each request joins the
    conversation it continues best (the one whose last reply it carries, then the one it repeats most
    of), so conversations that take turns (concurrent tests, several agents) stay whole; a request that
    cannot be read stands alone."""
    with collector_paused():  # reading builds a message or more per request, and no cycle
        return _conversations(cassette)


def _conversations(cassette: Cassette) -> list[Conversation]:
    found: list[Conversation] = []
    replied: dict[str, _Replied] = {}
    parallel = _ParallelReplies()
    earlier: dict[int, ModelCall] = {}
    ends = _Ends()
    for interaction in cassette.interactions:
        codec = interaction.codec
        if codec is None:
            continue
        request = _appended(interaction, codec, earlier, parallel) or _request(
            interaction, codec, replied, parallel
        )
        messages = request.messages
        position = None if request.problem else ends.grown(found, messages)
        if position is None and not request.problem:
            position = ends.continued(found, messages)
        if position is not None:
            conversation = found[position]
            new = _added(conversation.exchanges[-1].messages, messages)
        else:
            position, conversation = len(found), Conversation()
            found.append(conversation)
            new = list(messages)
        reply = _reply(interaction, codec)
        continuing = len(conversation.exchanges) > 0
        renamed = _renamed(conversation.exchanges[-1].reply, new) if continuing else {}
        exchange = ModelCall(
            interaction, codec, messages, new, request.tools, request.streamed, reply,
            request.problem, request.continues, request.unknown_previous, request.unknown_start, renamed,
        )  # fmt: skip
        conversation.exchanges.append(exchange)
        ends.moved(position, exchange)
        earlier[id(interaction.request)] = exchange
        if isinstance(reply, ModelReply):
            parallel.add(reply.message)
            if (served := _served_id(interaction, codec)) is not None:
                replied[served] = _Replied(messages, reply.message, request.unknown_start)
    return found


_NO_MESSAGES = hash(())


def _folded(start: int, messages: Iterable[ChatMessage]) -> int:
    """A hash of a dialogue, `start` being that of what comes before `messages` (equal dialogues hash
    alike; a dialogue that only differs hashes alike only by chance, and is then told apart by comparing)."""
    for message in messages:
        start = hash((start, message))
    return start


class _Prefixes:
    """The hash of each start of a dialogue (`_folded` of its first n messages), kept for each shared list
    of messages: requests that each grow one list hash each message once, not once per request."""

    def __init__(self) -> None:
        self._kept: dict[tuple[int, int], tuple[list[ChatMessage], list[int]]] = {}

    def of(self, messages: Sequence[ChatMessage], system: int, upto: int) -> list[int]:
        """The hashes of the first 0, 1... `upto` messages (at least) of the dialogue after `system`
        messages."""
        if isinstance(messages, SharedPrefix):
            kept = self._kept.get((id(messages.shared), system))
            if kept is None or kept[0] is not messages.shared:  # an id is only reused once a list is gone
                kept = self._kept[(id(messages.shared), system)] = (messages.shared, [_NO_MESSAGES])
            shared, hashes = kept
        else:
            shared, hashes = list(messages), [_NO_MESSAGES]
        while len(hashes) <= upto:
            hashes.append(hash((hashes[-1], shared[system + len(hashes) - 1])))
        return hashes


class _Ends:
    """Where each conversation's last request ends: by the shared list its messages are a view of, and by
    the length and hash of its dialogue. A request that grew from no conversation's list looks up the
    conversations whose dialogue is a prefix of its own, one lookup per prefix, instead of comparing itself
    with every conversation (5,000 branches from one request: 3 s, not 13), and only at the lengths some
    conversation ends at. Dialogues are hashed when a lookup needs them, the starts of each list once
    (`_Prefixes`): a session that grows one list costs what each request adds, carrying its reply or not."""

    def __init__(self) -> None:
        self._by_dialogue: dict[tuple[int, int], dict[int, int | None]] = {}
        """(length, hash) -> the conversations ending so, each with the hash of its last reply."""
        self._where: dict[int, tuple[int, int]] = {}
        self._folds: dict[int, tuple[int, int]] = {}
        """How much of each conversation's dialogue is hashed, and its hash (a dialogue only grows)."""
        self._moved: dict[int, ModelCall] = {}
        """Conversations that moved on since the last lookup, and where they end now."""
        self._by_list: dict[int, dict[int, None]] = {}
        """The conversations whose last request's messages are a view of a shared list, by the list's id."""
        self._lists: dict[int, int] = {}
        self._lengths: dict[int, int] = {}
        """How many conversations end at each length of dialogue (the lengths a lookup tries)."""
        self._prefixes = _Prefixes()

    def grown(self, found: list[Conversation], messages: Sequence[ChatMessage]) -> int | None:
        """The conversation whose last request `messages` grew from (a view of the same list, with its
        reply next), found without comparing the histories; None when there is none such."""
        if not isinstance(messages, SharedPrefix):
            return None
        for position in sorted(self._by_list.get(id(messages.shared), ()), reverse=True):
            last = found[position].exchanges[-1]
            grown = messages.new_since(last.messages)
            if grown and isinstance(last.reply, ModelReply) and grown[0] == last.reply.message:
                return position
        return None

    def continued(self, found: list[Conversation], messages: Sequence[ChatMessage]) -> int | None:
        """The conversation `messages` continue best: the one whose last reply they carry, then the one
        they repeat most of, then the newest (None when they continue none)."""
        self._index_moved()
        best: tuple[tuple[bool, int], int] | None = None
        system = _system_count(messages)
        dialogue = len(messages) - system
        # only the lengths some conversation ends at are looked up: a long session is one or a few
        few = len(self._lengths) < dialogue
        lengths = [n for n in self._lengths if n < dialogue] if few else range(dialogue)
        prefixes = self._prefixes.of(messages, system, max(lengths, default=0))
        for length in lengths:
            ending = self._by_dialogue.get((length, prefixes[length]))
            if not ending:
                continue
            following = hash(messages[system + length])
            for position in sorted(ending, key=lambda p: (ending[p] == following, p), reverse=True):
                scored = found[position].continued_by(messages)
                if scored is not None:  # else the hashes met by chance: the next is tried
                    best = max(best, (scored, position)) if best else (scored, position)
                    break
        return None if best is None else best[1]

    def moved(self, position: int, last: ModelCall) -> None:
        """Conversation `position` now ends with `last` (continued by nothing when its request could not
        be read)."""
        self._moved[position] = last
        _discard(self._by_list, self._lists.pop(position, None), position)
        if isinstance(last.messages, SharedPrefix) and not last.request_problem:
            self._lists[position] = id(last.messages.shared)
            self._by_list.setdefault(id(last.messages.shared), {})[position] = None

    def _index_moved(self) -> None:
        for position, last in self._moved.items():
            if (where := self._where.pop(position, None)) is not None:
                _discard(self._by_dialogue, where, position)
                if (left := self._lengths.pop(where[0]) - 1) > 0:
                    self._lengths[where[0]] = left
            if last.request_problem:
                continue
            system = _system_count(last.messages)  # read in place: a copy of the dialogue costs its length
            length, prefix = self._folds.get(position, (0, _NO_MESSAGES))
            key = (len(last.messages) - system, _folded(prefix, last.messages[system + length :]))
            reply = hash(last.reply.message) if isinstance(last.reply, ModelReply) else None
            self._by_dialogue.setdefault(key, {})[position] = reply
            self._lengths[key[0]] = self._lengths.get(key[0], 0) + 1
            self._where[position] = self._folds[position] = key
        self._moved.clear()


_Key = TypeVar("_Key")


def _discard(index: dict[_Key, dict[int, Any]], key: _Key | None, position: int) -> None:
    """Take conversation `position` out of `index` under `key` (None: it is not in it)."""
    if key is not None:
        under = index[key]
        del under[position]
        if not under:
            del index[key]
