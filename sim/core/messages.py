"""Chat messages (frozen, tagged by role) and the tool-call pairing contract."""

from __future__ import annotations

import collections
import itertools
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Annotated, Any, Literal, overload

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    model_serializer,
)

from sim.core.errors import MessageContractError, PairingBreak, PairingRule

NonEmpty = Annotated[str, Field(min_length=1)]


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SystemMessage(_Message):
    """Instructions sent first in every request; never stored in the history."""

    role: Literal["system"] = "system"
    content: str


class UserMessage(_Message):
    """What the user asked."""

    role: Literal["user"] = "user"
    content: str


class ToolCall(_Message):
    """One tool call the model asked for; `arguments` is the raw JSON text it sent, or for a call of a
    custom tool (`kind`), its free-form input text."""

    id: NonEmpty
    name: NonEmpty
    arguments: str
    kind: Literal["function", "custom"] = "function"

    @model_serializer(mode="wrap")
    def _function_calls_as_before(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # a function call dumps as it did before custom calls existed: transcripts and dumps stay byte-stable
        dumped: dict[str, Any] = handler(self)
        if self.kind == "function":
            dumped.pop("kind", None)
        return dumped


class Reasoning(_Message):
    """Reasoning the model returned with a reply (the Responses API's `reasoning` item): opaque to the
    loop, kept with its assistant turn and sent back unchanged, as stateless clients must."""

    id: str | None = None
    encrypted_content: str | None = None
    summary: tuple[str, ...] = ()
    content: tuple[str, ...] = ()
    """The reasoning text itself, where the server shows it."""


class TextItem(_Message):
    """One message item of a reply, for protocols whose replies hold several (the Responses API): its text,
    and what the server said of it (`id`, `phase`), which a stateless client sends back unchanged."""

    text: str
    id: str | None = None
    phase: str | None = None
    annotations: tuple[str, ...] = ()
    """What the server said of spans of the text (citations), each a JSON object as text, in order."""


class HostedItem(_Message):
    """An item of a reply that a tool run by the server produced, or that answers one (a search, a run of
    code, a tool list, a call or an approval asked or given): opaque to the loop, kept in its turn's
    order and sent back unchanged, as stateless clients must. `kind` is the item's type, `fields` the rest
    of it as JSON text (an object)."""

    kind: NonEmpty
    id: str | None = None
    fields: str = "{}"

    def data(self) -> dict[str, object]:
        """`fields` read back as an object."""
        value = json.loads(self.fields)
        return value if isinstance(value, dict) else {}


class AssistantMessage(_Message):
    """The model's reply: text, tool calls, or both; `content` is None when the model sent none."""

    role: Literal["assistant"] = "assistant"
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: tuple[Reasoning, ...] = ()
    """Reasoning items, for protocols that have them (Chat Completions has none)."""
    items: tuple[Reasoning | TextItem | HostedItem, ...] = ()
    """Reasoning, text and hosted tools' items in the order the model sent them, where the order or what the
    server said of each must be sent back (the Responses API); `content` joins the texts and `reasoning`
    lists the reasoning items, as the loop reads them. Empty when nothing more is known than those two say."""


class ToolMessage(_Message):
    """The result of one tool call, answering it by id."""

    role: Literal["tool"] = "tool"
    tool_call_id: NonEmpty
    content: str


ChatMessage = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")
]
"""Any message, discriminated by `role`."""

CHAT_MESSAGES: TypeAdapter[list[ChatMessage]] = TypeAdapter(list[ChatMessage])
"""Validates and dumps lists of messages (`CHAT_MESSAGES.validate_python(...)`)."""


class PairingChecker:
    """Checks the pairing contract a message at a time: O(1) per message of an append-only history.

    Every tool call of an assistant message must be answered by exactly one tool message with its
    id before any other message; results may come in any order.
    """

    __slots__ = ("_asked_at", "_calls", "_checked", "_ids", "_pending")

    def __init__(self) -> None:
        self._calls: frozenset[str] = frozenset()
        self._pending: set[str] = set()
        self._checked = 0
        """How many messages were checked: the index of the next one."""
        self._asked_at = 0
        """The index of the last assistant message with tool calls."""
        self._ids: Sequence[str] = ()
        """Its calls' ids, in order."""

    def check(self, message: ChatMessage) -> None:
        """Raise `MessageContractError` if `message` cannot follow the messages checked so far."""
        at = self._checked
        if isinstance(message, ToolMessage):
            call_id = message.tool_call_id
            if call_id in self._pending:
                self._pending.discard(call_id)
            elif call_id in self._calls:
                broken = PairingBreak(PairingRule.one_result_per_call, at, (call_id,), after_calls=True)
                raise MessageContractError(f"unexpected tool result id: {call_id}", pairing=broken)
            else:
                broken = PairingBreak(PairingRule.result_answers_a_call, at, (call_id,), bool(self._calls))
                raise MessageContractError(f"orphan tool result id: {call_id}", pairing=broken)
            self._checked = at + 1
            return
        self.require_complete()
        if isinstance(message, AssistantMessage) and message.tool_calls:
            ids = [call.id for call in message.tool_calls]
            if len(set(ids)) != len(ids):
                repeated = tuple(i for i, n in collections.Counter(ids).items() if n > 1)
                broken = PairingBreak(PairingRule.unique_call_ids, at, repeated)
                raise MessageContractError("assistant tool call ids must be unique", pairing=broken)
            self._calls = frozenset(ids)
            self._pending = set(ids)
            self._asked_at = at
            self._ids = ids
        else:
            self._calls = frozenset()
        self._checked = at + 1

    def require_complete(self) -> None:
        """Raise `MessageContractError` if some tool calls still wait for their results."""
        if self._pending:
            missing = json.dumps(sorted(self._pending), separators=(",", ":"))
            unanswered = tuple(i for i in self._ids if i in self._pending)
            broken = PairingBreak(PairingRule.every_call_answered, self._asked_at, unanswered)
            raise MessageContractError(f"missing tool results for ids: {missing}", pairing=broken)


def validate_pairing(messages: Iterable[ChatMessage]) -> None:
    """Raise `MessageContractError` unless each tool call has exactly one result, each result a call."""
    checker = PairingChecker()
    for message in messages:
        checker.check(message)
    checker.require_complete()


class HistoryView(Sequence[ChatMessage]):
    """`[system, *history[:length]]` without copying: valid because a run's history only grows."""

    __slots__ = ("_history", "_length", "system")

    def __init__(self, system: SystemMessage, history: list[ChatMessage], length: int) -> None:
        self.system = system
        self._history = history
        self._length = length

    def __len__(self) -> int:
        return self._length + 1

    @overload
    def __getitem__(self, index: int) -> ChatMessage: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[ChatMessage]: ...
    def __getitem__(self, index: int | slice) -> ChatMessage | Sequence[ChatMessage]:
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("message index out of range")
        return self.system if index == 0 else self._history[index - 1]

    def __iter__(self) -> Iterator[ChatMessage]:
        yield self.system
        yield from itertools.islice(self._history, self._length)

    def __repr__(self) -> str:
        return f"HistoryView({list(self)!r})"

    @property
    def dialogue(self) -> SharedPrefix:
        """The messages after the system prompt, as a view of the same list."""
        return SharedPrefix(self._history, self._length)

    def new_since(self, earlier: Sequence[ChatMessage]) -> Sequence[ChatMessage] | None:
        """The messages added after `earlier`, when this view extends it; None when it does not."""
        if (
            isinstance(earlier, HistoryView)
            and earlier._history is self._history
            and (earlier.system is self.system or earlier.system == self.system)
            and earlier._length <= self._length
        ):
            return self._history[earlier._length : self._length]
        return None


class SharedPrefix(Sequence[ChatMessage]):
    """The first `length` messages of a list that only grows, shared by histories that each extend the one
    before (a recorded session's requests): a view, so that a session of n requests holds n views of one
    list, not n copies of a growing one."""

    __slots__ = ("_length", "_messages")

    def __init__(self, messages: list[ChatMessage], length: int | None = None) -> None:
        self._messages = messages
        self._length = len(messages) if length is None else length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> ChatMessage: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[ChatMessage]: ...
    def __getitem__(self, index: int | slice) -> ChatMessage | Sequence[ChatMessage]:
        if isinstance(index, slice):
            return self._messages[slice(*index.indices(self._length))]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("message index out of range")
        return self._messages[index]

    def __iter__(self) -> Iterator[ChatMessage]:
        return itertools.islice(self._messages, self._length)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(other) == self._length and all(a == b for a, b in zip(self, other, strict=False))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SharedPrefix({list(self)!r})"

    @property
    def shared(self) -> list[ChatMessage]:
        """The list these messages are the start of, shared with the views that extend them."""
        return self._messages

    def extended(self, more: Iterable[ChatMessage]) -> SharedPrefix:
        """These messages, then `more`: the shared list grows in place when nothing extended this view
        before (else the view is copied once)."""
        if self._length == len(self._messages):
            self._messages.extend(more)
            return SharedPrefix(self._messages)
        return SharedPrefix([*self, *more])

    def new_since(self, earlier: Sequence[ChatMessage]) -> Sequence[ChatMessage] | None:
        """The messages added after `earlier`, when this view extends it; None when it does not."""
        if (
            isinstance(earlier, SharedPrefix)
            and earlier._messages is self._messages
            and earlier._length <= self._length
        ):
            return self._messages[earlier._length : self._length]
        return None


class RequestPairing:
    """Checks the pairing of each request's messages, as the API does before answering.

    A request whose messages extend the previous request's (a growing `HistoryView` or `SharedPrefix`)
    costs only its new messages; any other request is checked whole.
    """

    __slots__ = ("_checked", "_checker")

    def __init__(self) -> None:
        self._checked: Sequence[ChatMessage] = ()
        self._checker = PairingChecker()

    def check(self, messages: Sequence[ChatMessage]) -> None:
        """Raise `MessageContractError` unless every tool call in `messages` has exactly one result."""
        new = messages.new_since(self._checked) if isinstance(messages, (HistoryView, SharedPrefix)) else None
        if new is None:
            self._checker = PairingChecker()
            new = messages
        self._checked = ()
        for message in new:
            self._checker.check(message)
        self._checker.require_complete()
        self._checked = messages
