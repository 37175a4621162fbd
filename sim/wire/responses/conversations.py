"""The Conversations API (`/v1/conversations` and its items) and the `conversation` parameter of
`POST /v1/responses`: each conversation kept as the items the API lists, bounded in bytes (the least recently
used forgotten first), read back as the messages a response continues, and refused as the API refuses."""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sim.core.errors import MessageContractError
from sim.core.json_text import loads
from sim.core.messages import AssistantMessage, HistoryView, PairingChecker, SharedPrefix
from sim.wire import STORE_LIMIT_BYTES
from sim.wire.hosted import refused_include
from sim.wire.paging import listed, page, page_asked
from sim.wire.requests import CREATED, Asked, Refused, RefusedError, wrong_type
from sim.wire.resources import Called, JsonBody, Resource, ResourceAnswer
from sim.wire.responses.reading import messages_from_items

__all__ = ["Conversation", "ConversationStore", "Conversations"]

PREFIX = "conv"
"""What every conversation id begins with (`conv_...`): the API refuses any other."""
MOST_ITEMS = 20
"""The most items one create adds (the spec's `maxItems`)."""
MOST_METADATA = 16
METADATA_KEY = 64
METADATA_VALUE = 512
_ITEM_BYTES = 1000
"""What a kept item costs beyond its JSON (its dict, and its message as a continued request reads it), as
measured."""
_CONVERSATION_BYTES = 400
_MINTED = {"message": "msg", "function_call": "fc", "function_call_output": "fco", "reasoning": "rs",
           "custom_tool_call": "ctc", "custom_tool_call_output": "ctco"}  # fmt: skip
"""The prefix of the id an item added without one gets, after the API's."""


@dataclass(slots=True)
class Conversation:
    """One conversation: its metadata and its items in order (by id), and the messages they read as."""

    id: str
    metadata: dict[str, str]
    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    size: int = _CONVERSATION_BYTES
    messages: SharedPrefix | None = None
    """Its items read as messages, kept while nothing but a response continuing it changed them."""
    checked: bool = False
    """Whether `messages` are known to pair up to their last (a response's conversation and its reply)."""

    def resource(self) -> dict[str, Any]:
        """The `conversation` object the API answers with."""
        return {
            "id": self.id,
            "object": "conversation",
            "created_at": CREATED,
            "metadata": dict(self.metadata),
        }


def _weight(item: Mapping[str, Any]) -> int:
    return _ITEM_BYTES + len(json.dumps(item, ensure_ascii=False))


class ConversationStore:
    """Conversations by id, bounded to `limit_bytes`: past it the least recently used are forgotten (one
    larger than the limit alone too), and a forgotten conversation is not found, as one never made."""

    def __init__(self, limit_bytes: int = STORE_LIMIT_BYTES) -> None:
        self.limit_bytes = limit_bytes
        self.bytes = 0
        self._kept: OrderedDict[str, Conversation] = OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, conversation_id: str) -> Conversation | None:
        """The conversation, if kept (used: the last to be forgotten)."""
        found = self._kept.get(conversation_id)
        if found is not None:
            self._kept.move_to_end(conversation_id)
        return found

    def create(
        self, conversation_id: str, metadata: dict[str, str], items: list[dict[str, Any]]
    ) -> Conversation:
        """A new conversation holding `items`."""
        made = Conversation(conversation_id, metadata)
        made.size += len(json.dumps(metadata))
        self._kept[conversation_id] = made
        self.bytes += made.size
        self.add(made, items)
        return made

    def update(self, conversation: Conversation, metadata: dict[str, str]) -> None:
        """Its metadata replaced."""
        change = len(json.dumps(metadata)) - len(json.dumps(conversation.metadata))
        conversation.metadata = metadata
        conversation.size += change
        self.bytes += change
        self._fit()

    def add(self, conversation: Conversation, items: list[dict[str, Any]]) -> None:
        """`items` added at its end (read as messages again when next continued)."""
        self._added(conversation, items)
        conversation.messages = None
        conversation.checked = False
        self._fit()

    def _added(self, conversation: Conversation, items: list[dict[str, Any]]) -> None:
        added = 0
        for item in items:
            replaced = conversation.items.get(item["id"])
            conversation.items[item["id"]] = item
            added += _weight(item) - (0 if replaced is None else _weight(replaced))
        conversation.size += added
        if conversation.id in self._kept:
            self.bytes += added

    def continued(
        self, conversation: Conversation, items: list[dict[str, Any]], read: SharedPrefix | None
    ) -> None:
        """`items` added by a response that continued it, `read` what it now reads as (None: read again)."""
        self._added(conversation, items)
        conversation.messages = read
        conversation.checked = read is not None
        self._fit()

    def remove(self, conversation: Conversation, item_id: str) -> bool:
        """Forget one of its items; False when it has none by that id."""
        item = conversation.items.pop(item_id, None)
        if item is None:
            return False
        weight = _weight(item)
        conversation.size -= weight
        self.bytes -= weight
        conversation.messages = None
        conversation.checked = False
        return True

    def delete(self, conversation_id: str) -> bool:
        """Forget the conversation; False when it is not kept."""
        dropped = self._kept.pop(conversation_id, None)
        if dropped is None:
            return False
        self.bytes -= dropped.size
        return True

    def _fit(self) -> None:
        while self.bytes > self.limit_bytes and self._kept:
            self.delete(next(iter(self._kept)))


def not_found(conversation_id: str) -> Refused:
    """An unknown (or deleted, or forgotten) conversation, as the API refuses it."""
    return Refused(f"Conversation with id '{conversation_id}' not found.", None, None, status=404)


def _item_not_found(item_id: str) -> Refused:
    return Refused(f"Item with id '{item_id}' not found.", None, None, status=404)


def _bad_id(where: str, value: str) -> Refused:
    return Refused(
        f"Invalid '{where}': '{value}'. Expected an ID that begins with '{PREFIX}'.", where, "invalid_value"
    )


def refused_metadata(metadata: Any) -> Refused | None:
    """Metadata as the API bounds it: an object of at most 16 strings, keys of at most 64 characters and
    values of at most 512."""
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        return wrong_type("metadata", "a metadata object", metadata)
    if len(metadata) > MOST_METADATA:
        message = (f"Invalid 'metadata': too many properties. Expected an object with at most {MOST_METADATA}"
                   f" properties, but got an object with {len(metadata)} properties instead.")  # fmt: skip
        return Refused(message, "metadata", "object_above_max_properties")
    for key, value in metadata.items():
        if len(key) > METADATA_KEY:
            message = (f"Invalid 'metadata': key too long. Expected a key with maximum length {METADATA_KEY},"
                       f" but got a key with length {len(key)} instead.")  # fmt: skip
            return Refused(message, "metadata", "string_above_max_length")
        where = f"metadata.{key}"
        if not isinstance(value, str):
            return wrong_type(where, "a string", value)
        if len(value) > METADATA_VALUE:
            message = (f"Invalid '{where}': string too long. Expected a string with maximum length"
                       f" {METADATA_VALUE}, but got a string with length {len(value)} instead.")  # fmt: skip
            return Refused(message, where, "string_above_max_length")
    return None


def _refused_items(items: Any) -> Refused | None:
    if not isinstance(items, list):
        return wrong_type("items", "an array of input items", items)
    if len(items) > MOST_ITEMS:
        message = (f"Invalid 'items': array too long. Expected an array with maximum length {MOST_ITEMS}, but"
                   f" got an array with length {len(items)} instead.")  # fmt: skip
        return Refused(message, "items", "array_above_max_length")
    return None


def _duplicate(item_id: str) -> Refused:
    return Refused(
        f"Duplicate item found with id {item_id}. Remove duplicate items from your input and try again."
    )


def _body(called: Called, known: tuple[str, ...]) -> dict[str, Any] | Refused:
    """The call's JSON body (none read as `{}`), refused as the API refuses a body it cannot read or a
    parameter it does not know."""
    if not called.body.strip():
        return {}
    try:
        body = loads(called.body, strict=True)
    except ValueError:  # not JSON, or nested too deep to read
        return Refused("We could not parse the JSON body of your request.")
    if not isinstance(body, dict):
        return Refused("The request body must be a JSON object.")
    for name in body:
        if name not in known:
            return Refused(f"Unknown parameter: '{name}'.", name, "unknown_parameter")
    return body


def _conversation_id(body: Mapping[str, Any]) -> str | None:
    said = body.get("conversation")
    return said.get("id") if isinstance(said, dict) else said


class Conversations:
    """The Conversations API's endpoints (`resources`) and the `conversation` parameter's hooks for the
    Responses API's server side: `refused` (with `previous_response_id`, or a malformed id), `continued` (the
    conversation's messages a request continues) and `kept` (its input and reply added, the id echoed)."""

    def __init__(
        self,
        store_limit: int = STORE_LIMIT_BYTES,
        referenced: Callable[[str], Mapping[str, Any]] | None = None,
    ) -> None:
        self.store = ConversationStore(store_limit)
        """The conversations kept."""
        self._referenced = referenced
        conversation = "/conversations/{conversation_id}"
        item = f"{conversation}/items/{{item_id}}"
        self.resources: tuple[Resource, ...] = (
            Resource("POST", "/conversations", self._create, "conversations"),
            Resource("GET", conversation, self._retrieve, "conversations"),
            Resource("POST", conversation, self._update, "conversations"),
            Resource("DELETE", conversation, self._delete, "conversations"),
            Resource("POST", f"{conversation}/items", self._add_items, "conversations"),
            Resource("GET", f"{conversation}/items", self._list_items, "conversations"),
            Resource("GET", item, self._retrieve_item, "conversations"),
            Resource("DELETE", item, self._delete_item, "conversations"),
        )
        """Its endpoints."""

    # the `conversation` parameter of POST /v1/responses

    def refused(self, body: Mapping[str, Any]) -> Refused | None:
        """`conversation` with `previous_response_id` (which it cannot be combined with), or not an id."""
        said = body.get("conversation")
        if said is None:
            return None
        if body.get("previous_response_id") is not None:
            message = ("Mutually exclusive parameters: ''. Ensure you are only providing one of:"
                       " 'pre..._id' or 'conversation'.")  # fmt: skip
            return Refused(message, None, "mutually_exclusive_parameters")
        if isinstance(said, dict):
            if "id" not in said:
                return Refused("Missing required parameter: 'conversation.id'.", "conversation.id",
                               "missing_required_parameter")  # fmt: skip
            if not isinstance(said["id"], str):
                return wrong_type("conversation.id", "a string", said["id"])
            said = said["id"]
        elif not isinstance(said, str):
            return wrong_type("conversation", "one of a string or an object", said)
        return None if said.startswith(PREFIX) else _bad_id("conversation", said)

    def continued(self, body: Mapping[str, Any], pairing: PairingChecker) -> SharedPrefix:
        """The messages of the conversation `body` continues, each but the last checked by `pairing` (the
        caller checks the last with what the request adds); `RefusedError` when it is not kept, or when
        `input` repeats one of its items."""
        conversation_id = str(_conversation_id(body))
        found = self.store.get(conversation_id)
        if found is None:
            raise RefusedError(not_found(conversation_id))
        sent = body.get("input")
        for item in sent if isinstance(sent, list) else ():
            if isinstance(item, dict) and item.get("id") in found.items:  # an `item_reference` to one too
                raise RefusedError(_duplicate(str(item["id"])))
        if found.messages is None:
            found.messages = SharedPrefix(messages_from_items(list(found.items.values()), self._referenced))
        if not found.checked:  # items were added or deleted since a response last continued it
            for message in found.messages[:-1]:  # the last is checked with what the request adds
                pairing.check(message)
        return found.messages

    def kept(self, asked: Asked, wire: dict[str, Any], reply: AssistantMessage) -> None:
        """After a response to a request in a conversation: its input and its output items added to the
        conversation (what it now reads as kept when nothing else changed it since), and the conversation
        echoed as the API echoes it."""
        conversation_id = _conversation_id(asked.body)
        if not isinstance(conversation_id, str):
            return
        wire["conversation"] = {"id": conversation_id}
        found = self.store.get(conversation_id)
        if found is None:  # deleted (or forgotten) while it was answered
            return
        said = asked.body.get("input")
        sent = [{"type": "message", "role": "user", "content": said}] if isinstance(said, str) else said or []
        suffix = wire["id"].removeprefix("resp_")
        items = [*self._as_items(sent, f"{suffix}_in"), *copy.deepcopy(wire["output"])]  # as it is now
        messages = asked.decoded.messages
        history = messages.dialogue if isinstance(messages, HistoryView) else messages
        read = None
        if (
            isinstance(history, SharedPrefix)
            and found.messages is not None
            and history.shared is found.messages.shared
        ):
            # nothing changed it since it was read for this request: what it reads as is that and the reply
            # (already at the end of the same list when the response store kept this response)
            shared = history.shared
            grown = len(shared) == len(history) + 1 and shared[-1] is reply
            read = SharedPrefix(shared) if grown else history.extended([reply])
        self.store.continued(found, items, read)

    # items

    def _as_items(self, items: list[Any], minted: str) -> list[dict[str, Any]]:
        """Input items as the conversation's items: each with an id (its own, or one minted from `minted`)
        and a status, a message's text as content parts, an `item_reference` as the item it names."""
        kept = []
        for n, item in enumerate(items, 1):
            if item.get("type") == "item_reference" and self._referenced is not None:
                item = self._referenced(str(item.get("id")))
            kind = item.get("type", "message")
            made: dict[str, Any] = {"type": kind, **item}
            made.setdefault("id", f"{_MINTED.get(kind, 'item')}_{minted}{n}")
            if kind == "message":
                made.setdefault("status", "completed")
                made["content"] = _parts(item.get("content"), item.get("role") == "assistant")
            elif kind in ("function_call", "function_call_output"):
                made.setdefault("status", "completed")
            elif kind == "reasoning":
                made.setdefault("summary", [])
            kept.append(made)
        return kept

    def _read(self, items: Any, number: int, found: Conversation | None) -> list[dict[str, Any]] | Refused:
        """`items` of a create checked as the API checks input items and made the conversation's."""
        if (refused := _refused_items(items)) is not None:
            return refused
        try:
            messages_from_items(items, self._referenced)
        except RefusedError as error:
            return error.refused
        except MessageContractError as error:
            detail = str(error).replace("input[", "items[", 1)
            return Refused(f"Invalid request: {detail}", detail=detail)
        for index, item in enumerate(items):
            if "id" in item and not isinstance(item["id"], str):
                return wrong_type(f"items[{index}].id", "a string", item["id"])
        made = self._as_items(items, f"sim{number:06d}_")
        ids = [item["id"] for item in made]
        repeated = [i for n, i in enumerate(ids) if i in ids[:n] or (found is not None and i in found.items)]
        return _duplicate(str(repeated[0])) if repeated else made

    # the endpoints

    def _found(self, called: Called) -> Conversation | Refused:
        conversation_id = called.params["conversation_id"]
        if not conversation_id.startswith(PREFIX):
            return _bad_id("conversation_id", conversation_id)
        found = self.store.get(conversation_id)
        return not_found(conversation_id) if found is None else found

    async def _create(self, called: Called) -> ResourceAnswer:
        body = _body(called, ("items", "metadata"))
        if isinstance(body, Refused):
            return body
        if (refused := refused_metadata(body.get("metadata"))) is not None:
            return refused
        items = self._read(body.get("items") or [], called.number, None)
        if isinstance(items, Refused):
            return items
        made = self.store.create(f"{PREFIX}_sim{called.number:06d}", dict(body.get("metadata") or {}), items)
        return JsonBody(made.resource())

    async def _retrieve(self, called: Called) -> ResourceAnswer:
        found = self._found(called)
        return found if isinstance(found, Refused) else JsonBody(found.resource())

    async def _update(self, called: Called) -> ResourceAnswer:
        body = _body(called, ("metadata",))
        if isinstance(body, Refused):
            return body
        if "metadata" not in body:
            return Refused(
                "Missing required parameter: 'metadata'.", "metadata", "missing_required_parameter"
            )
        if (refused := refused_metadata(body["metadata"])) is not None:
            return refused
        found = self._found(called)
        if isinstance(found, Refused):
            return found
        self.store.update(found, dict(body["metadata"] or {}))
        return JsonBody(found.resource())

    async def _delete(self, called: Called) -> ResourceAnswer:
        found = self._found(called)
        if isinstance(found, Refused):
            return found
        self.store.delete(found.id)
        return JsonBody({"id": found.id, "object": "conversation.deleted", "deleted": True})

    async def _add_items(self, called: Called) -> ResourceAnswer:
        body = _body(called, ("items",))
        if isinstance(body, Refused):
            return body
        if (refused := refused_include(called.every("include"))) is not None:
            return refused
        if "items" not in body:
            return Refused("Missing required parameter: 'items'.", "items", "missing_required_parameter")
        found = self._found(called)
        if isinstance(found, Refused):
            return found
        items = self._read(body["items"], called.number, found)
        if isinstance(items, Refused):
            return items
        self.store.add(found, items)
        return JsonBody(listed(items, has_more=False))

    async def _list_items(self, called: Called) -> ResourceAnswer:
        if (refused := refused_include(called.every("include"))) is not None:
            return refused
        asked = page_asked(called)
        if isinstance(asked, Refused):
            return asked
        found = self._found(called)
        if isinstance(found, Refused):
            return found
        return page(list(found.items.values()), asked, _item_not_found)

    async def _retrieve_item(self, called: Called) -> ResourceAnswer:
        if (refused := refused_include(called.every("include"))) is not None:
            return refused
        found = self._found(called)
        if isinstance(found, Refused):
            return found
        item = found.items.get(called.params["item_id"])
        return _item_not_found(called.params["item_id"]) if item is None else JsonBody(item)

    async def _delete_item(self, called: Called) -> ResourceAnswer:
        found = self._found(called)
        if isinstance(found, Refused):
            return found
        if not self.store.remove(found, called.params["item_id"]):
            return _item_not_found(called.params["item_id"])
        return JsonBody(found.resource())


def _parts(content: Any, assistant: bool) -> list[Any]:
    """A message's content as the conversation lists it: text as an `input_text` part (an assistant's as
    `output_text`, with its annotations and log probabilities)."""
    if isinstance(content, str):
        content = [{"type": "output_text" if assistant else "input_text", "text": content}]
    parts = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") == "output_text":
            part = {"annotations": [], "logprobs": [], **part}
        parts.append(part)
    return parts
