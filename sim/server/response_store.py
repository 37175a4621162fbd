"""The responses a Responses API endpoint keeps for `previous_response_id` chains: each as a view of a list
of messages shared along its chain (a chain of 6,000 requests holds one list, each message once, and
continuing a response costs what the request adds, not the conversation again), forgotten least recently
used first past a limit in bytes. A list's messages count once, and are let go with its last kept view: a
conversation that outgrows the limit cannot be continued, as for any response the API does not have."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from sim.core.messages import AssistantMessage, ChatMessage, SharedPrefix, TextItem, ToolMessage

STORE_LIMIT_BYTES = 256 * 1024 * 1024
"""How much conversation text the store keeps by default (`sim serve --store-limit`)."""
_MESSAGE_BYTES = 500
"""What a message costs beyond its text (the model object, its dict and strings), as measured."""
_PART_BYTES = 600
"""What each tool call, reasoning or text item of a reply costs beyond its text."""


def _size(message: ChatMessage) -> int:
    size = _MESSAGE_BYTES + len(getattr(message, "content", None) or "")
    if isinstance(message, AssistantMessage):
        size += sum(
            _PART_BYTES + len(call.arguments) + len(call.name) + len(call.id) for call in message.tool_calls
        )
        size += sum(
            _PART_BYTES
            + len(item.encrypted_content or "")
            + sum(map(len, item.summary))
            + sum(map(len, item.content))
            for item in message.reasoning
        )
        size += sum(_PART_BYTES + len(item.text) for item in message.items if isinstance(item, TextItem))
    elif isinstance(message, ToolMessage):
        size += len(message.tool_call_id)
    return size


@dataclass(slots=True)
class _Shared:
    """A list that kept conversations are views of: how much of it they see, what that weighs, how many."""

    counted: int = 0
    size: int = 0
    views: int = 0


class ResponseStore:
    """Stored conversations by response id, each a view of a list shared along its chain."""

    def __init__(self, limit_bytes: int = STORE_LIMIT_BYTES) -> None:
        self.limit_bytes = limit_bytes
        self.bytes = 0
        self._kept: OrderedDict[str, SharedPrefix] = OrderedDict()
        self._lists: dict[int, _Shared] = {}

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
        continues, so that only what it adds is counted."""
        view = conversation if isinstance(conversation, SharedPrefix) else SharedPrefix(list(conversation))
        shared = self._lists.setdefault(id(view.shared), _Shared())
        if len(view) > shared.counted:
            added = sum(map(_size, itertools.islice(view.shared, shared.counted, len(view))))
            shared.counted, shared.size = len(view), shared.size + added
            self.bytes += added
        shared.views += 1
        self._kept[response_id] = view
        while self.bytes > self.limit_bytes and len(self._kept) > 1:
            _, dropped = self._kept.popitem(last=False)
            left = self._lists[id(dropped.shared)]
            left.views -= 1
            if left.views == 0:
                del self._lists[id(dropped.shared)]
                self.bytes -= left.size
