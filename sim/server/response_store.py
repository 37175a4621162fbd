"""The responses a Responses API endpoint keeps for `previous_response_id` chains: each once, as what it
added to the response it continues (a chain of 6,000 requests holds each message once, not 6,000 growing
copies), forgotten oldest first past a limit in bytes, as an LRU."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from sim.core.messages import AssistantMessage, ChatMessage, ToolMessage

STORE_LIMIT_BYTES = 256 * 1024 * 1024
"""How much conversation text the store keeps by default (`sim serve --store-limit`)."""
_MESSAGE_OVERHEAD = 200
"""What a message costs beyond its text, roughly (the objects that hold it)."""


def _size(message: ChatMessage) -> int:
    size = _MESSAGE_OVERHEAD + len(getattr(message, "content", None) or "")
    if isinstance(message, AssistantMessage):
        size += sum(len(call.arguments) + len(call.name) + len(call.id) for call in message.tool_calls)
        size += sum(
            len(item.encrypted_content or "") + sum(map(len, item.summary)) for item in message.reasoning
        )
    elif isinstance(message, ToolMessage):
        size += len(message.tool_call_id)
    return size


@dataclass(frozen=True, slots=True)
class _Stored:
    parent: str | None
    added: tuple[ChatMessage, ...]
    length: int
    """How many messages the whole conversation it ends holds."""
    size: int


class ResponseStore:
    """Stored conversations by response id, each kept by reference to the response it continues."""

    def __init__(self, limit_bytes: int = STORE_LIMIT_BYTES) -> None:
        self.limit_bytes = limit_bytes
        self.bytes = 0
        self._kept: OrderedDict[str, _Stored] = OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def messages_held(self) -> int:
        """How many messages are kept, all responses together (each once)."""
        return sum(len(stored.added) for stored in self._kept.values())

    def length(self, response_id: str) -> int | None:
        """How many messages the conversation `response_id` ends holds, or None when it is not kept."""
        stored = self._kept.get(response_id)
        return None if stored is None else stored.length

    def conversation(self, response_id: str) -> list[ChatMessage] | None:
        """The whole conversation `response_id` ends (its reply last), or None when it, or a response it
        continues, is not kept; a response asked for counts as used."""
        pieces: list[tuple[ChatMessage, ...]] = []
        at: str | None = response_id
        while at is not None:
            stored = self._kept.get(at)
            if stored is None:
                return None
            pieces.append(stored.added)
            at = stored.parent
        self._kept.move_to_end(response_id)
        return [message for piece in reversed(pieces) for message in piece]

    def put(self, response_id: str, parent: str | None, added: Sequence[ChatMessage]) -> None:
        """Keep `response_id`: the conversation of `parent` (None: none) followed by `added`."""
        base = self.length(parent) if parent is not None else 0
        stored = _Stored(parent, tuple(added), (base or 0) + len(added), sum(map(_size, added)))
        self._kept[response_id] = stored
        self.bytes += stored.size
        while self.bytes > self.limit_bytes and len(self._kept) > 1:
            _, dropped = self._kept.popitem(last=False)
            self.bytes -= dropped.size
