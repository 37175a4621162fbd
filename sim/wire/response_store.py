"""The responses a Responses API endpoint keeps for `previous_response_id` chains: each as a view of a list
of messages shared along its chain (a chain of 6,000 requests holds one list, each message once, and
continuing a response costs what the request adds, not the conversation again), with what the lifecycle
endpoints answer from kept beside each (`keep`: its body as sent, its request), forgotten least recently
used first past a limit in bytes of memory that counts both. A list's messages count once, and are let go
with its last kept view: a conversation that outgrows the limit is forgotten whole, its newest response
too, and cannot be continued, as for any response the API does not have."""

from __future__ import annotations

import itertools
import sys
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from sim.core.messages import AssistantMessage, ChatMessage, HostedItem, SharedPrefix, TextItem, ToolMessage
from sim.wire import STORE_LIMIT_BYTES

_MESSAGE_BYTES = 500
"""What a message costs beyond its text (the model object, its dict and strings), as measured."""
_PART_BYTES = 600
"""What each tool call, reasoning or text item of a reply costs beyond its text."""
_EMPTY_TEXT = sys.getsizeof("")


def _text(text: str) -> int:
    """What `text` weighs beyond an empty string: its length in ASCII, up to 4 bytes a character beyond."""
    return sys.getsizeof(text) - _EMPTY_TEXT


def _size(message: ChatMessage) -> int:
    size = _MESSAGE_BYTES + _text(getattr(message, "content", None) or "")
    if isinstance(message, AssistantMessage):
        size += sum(
            _PART_BYTES + _text(call.arguments) + _text(call.name) + _text(call.id)
            for call in message.tool_calls
        )
        size += sum(
            _PART_BYTES
            + _text(item.encrypted_content or "")
            + sum(map(_text, item.summary))
            + sum(map(_text, item.content))
            for item in message.reasoning
        )
        size += sum(_PART_BYTES + _text(item.text) for item in message.items if isinstance(item, TextItem))
        if message.items:
            hosted = [part for part in message.items if isinstance(part, HostedItem)]
            size += sum(_PART_BYTES + _text(part.fields) for part in hosted)
            cited = [part for part in message.items if isinstance(part, TextItem) and part.annotations]
            size += sum(_text(annotation) for part in cited for annotation in part.annotations)
    elif isinstance(message, ToolMessage):
        size += _text(message.tool_call_id)
    return size


@dataclass(slots=True)
class _Shared:
    """A list that kept conversations are views of: how much of it they see, what that weighs, which."""

    counted: int = 0
    size: int = 0
    views: set[str] = field(default_factory=set)


class ResponseStore:
    """Stored conversations by response id, each a view of a list shared along its chain."""

    def __init__(self, limit_bytes: int = STORE_LIMIT_BYTES) -> None:
        self.limit_bytes = limit_bytes
        self.bytes = 0
        self._kept: OrderedDict[str, SharedPrefix] = OrderedDict()
        self._lists: dict[int, _Shared] = {}
        self._records: dict[str, tuple[object, int]] = {}
        """What is kept beside each response (`keep`), and what it weighs."""

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def messages_held(self) -> int:
        """How many messages are kept, all responses together (each once)."""
        return sum(shared.counted for shared in self._lists.values())

    def length(self, response_id: str) -> int | None:
        """How many messages the conversation `response_id` ends holds, or None when it is not kept."""
        view = self._kept.get(response_id)
        return None if view is None else len(view)

    def conversation(self, response_id: str) -> SharedPrefix | None:
        """The whole conversation `response_id` ends (its reply last), or None when it is not kept; a
        response asked for counts as used. Extending it (`extended`) grows the shared list in place."""
        view = self._kept.get(response_id)
        if view is not None:
            self._kept.move_to_end(response_id)
        return view

    def put(self, response_id: str, conversation: Sequence[ChatMessage]) -> None:
        """Keep `response_id`, ending `conversation` (its reply last): best a view that extends the one it
        continues, so that only what it adds is counted. Past the limit the least recently used responses
        are forgotten until the messages still held fit it: a conversation larger than the limit goes whole
        at once (every response of it, this one too), before any other is touched."""
        self._forget(response_id)
        view = conversation if isinstance(conversation, SharedPrefix) else SharedPrefix(list(conversation))
        shared = self._lists.setdefault(id(view.shared), _Shared())
        if len(view) > shared.counted:
            added = sum(map(_size, itertools.islice(view.shared, shared.counted, len(view))))
            shared.counted, shared.size = len(view), shared.size + added
            self.bytes += added
        shared.views.add(response_id)
        self._kept[response_id] = view
        if shared.size > self.limit_bytes:
            for kept in list(shared.views):
                self._forget(kept)
        while self.bytes > self.limit_bytes:
            self._forget(next(iter(self._kept)))

    def keep(self, response_id: str, record: object, size: int) -> None:
        """Keep `record` beside the kept response `response_id` (nothing when it is not kept), weighing `size`
        bytes, and forget the least recently used responses until all that is kept fits the limit."""
        if response_id not in self._kept:
            return
        _, was = self._records.pop(response_id, (None, 0))
        self._records[response_id] = (record, size)
        self.bytes += size - was
        while self.bytes > self.limit_bytes and self._kept:
            self._forget(next(iter(self._kept)))

    def record(self, response_id: str) -> object | None:
        """What `keep` kept beside `response_id` (None when nothing is); asking counts as a use."""
        kept = self._records.get(response_id)
        if kept is None:
            return None
        self._kept.move_to_end(response_id)
        return kept[0]

    def forget(self, response_id: str) -> bool:
        """Forget `response_id` and what is kept beside it (a deleted response); whether it was kept."""
        kept = response_id in self._kept
        self._forget(response_id)
        return kept

    def _forget(self, response_id: str) -> None:
        """Forget `response_id` (if kept), and its list's messages with the last response that sees them."""
        dropped = self._kept.pop(response_id, None)
        if dropped is None:
            return
        _, size = self._records.pop(response_id, (None, 0))
        self.bytes -= size
        left = self._lists[id(dropped.shared)]
        left.views.discard(response_id)
        if not left.views:
            del self._lists[id(dropped.shared)]
            self.bytes -= left.size
