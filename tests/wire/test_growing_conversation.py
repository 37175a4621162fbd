"""The Chat wire module's shortcuts for a client in process give what writing and reading gives:
`GrowingConversation.parse` what `ChatProtocol.parse` gives for each body of a growing conversation,
`message_as_read` what `message_from_wire(message_to_wire(...))` gives, and `reply_as_read` what a client
reads of the reply `ChatProtocol.reply` writes; each with the same errors."""

from __future__ import annotations

from typing import Any

import pytest

from sim.core.errors import MessageContractError, ModelReplyError
from sim.core.messages import (
    AssistantMessage,
    ChatMessage,
    Reasoning,
    SystemMessage,
    TextItem,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from sim.core.model import ModelReply, ToolSpec
from sim.wire.chat.client import message_to_wire, reply_from_wire, tool_to_wire
from sim.wire.chat.growing import GrowingConversation, message_as_read, reply_as_read
from sim.wire.chat.protocol import ChatProtocol
from sim.wire.chat.reading import message_from_wire
from sim.wire.requests import Asked, Refused

SHELL = ToolSpec(
    "shell", "Runs a command.", {"type": "object", "properties": {"command": {"type": "string"}}}
)
CALL = ToolCall(id="call_1", name="shell", arguments='{"command": "ls"}')
LONE = "half \ud83d of a pair"

MESSAGES: list[ChatMessage] = [
    SystemMessage(content="s"),
    UserMessage(content="p"),
    AssistantMessage(content=None, tool_calls=(CALL,)),
    ToolMessage(tool_call_id="call_1", content="a.txt"),
    AssistantMessage(content="thinking", reasoning=(Reasoning(id="r", summary=("x",)),)),
    AssistantMessage(content="said", items=(TextItem(text="said", id="m"),)),
    AssistantMessage(content=LONE, tool_calls=(ToolCall(id="call_2", name="shell", arguments=LONE),)),
    ToolMessage(tool_call_id="call_2", content=LONE),
    UserMessage(content=""),
]

NO_ID = ToolCall.model_construct(id="", name="shell", arguments="{}")
NOT_TEXT = ToolCall.model_construct(id="c", name="shell", arguments=None)  # type: ignore[arg-type]
BROKEN: list[ChatMessage] = [
    ToolMessage.model_construct(tool_call_id="", content="x"),
    AssistantMessage(tool_calls=(NO_ID,)),
    AssistantMessage(tool_calls=(ToolCall.model_construct(id="c", name="", arguments="{}"),)),
    AssistantMessage(tool_calls=(NOT_TEXT,)),
]


def outcome(read: Any, *args: Any) -> tuple[str, Any]:
    try:
        return ("read", read(*args))
    except (MessageContractError, ModelReplyError, TypeError) as error:
        return (type(error).__name__, str(error))


@pytest.mark.parametrize("message", MESSAGES + BROKEN)
def test_a_message_as_read_is_the_message_written_and_read(message: ChatMessage) -> None:
    where = "messages[3]"
    assert outcome(message_as_read, message, where) == outcome(
        message_from_wire, message_to_wire(message), where
    )


def body(messages: list[ChatMessage], **fields: Any) -> dict[str, Any]:
    return {"model": "m", **fields, "messages": [message_to_wire(m) for m in messages]}


def same(a: Asked | Refused, b: Asked | Refused) -> bool:
    if isinstance(a, Refused) or isinstance(b, Refused):
        return a == b
    return (a.body, list(a.decoded.messages), a.decoded.tools, a.number, a.terms) == (
        b.body, list(b.decoded.messages), b.decoded.tools, b.number, b.terms
    )  # fmt: skip


def growing(messages: list[ChatMessage], **fields: Any) -> list[tuple[dict[str, Any], list[ChatMessage]]]:
    """A client's bodies for each longer prefix of `messages` (from two on), sharing the messages and the
    other fields already sent as the same objects, with the messages each was written from."""
    sent: list[dict[str, Any]] = []
    bodies = []
    for length in range(1, len(messages) + 1):
        sent.append(message_to_wire(messages[length - 1]))
        if length >= 2:
            bodies.append(({"model": "m", **fields, "messages": list(sent)}, messages[:length]))
    return bodies


TOOLS = [tool_to_wire(SHELL)]
NOT_OFFERED = {"type": "function", "function": {"name": "other"}}
CONVERSATIONS: dict[str, tuple[list[ChatMessage], dict[str, Any]]] = {
    "well formed": (MESSAGES, {"tools": TOOLS}),
    "no tools": (MESSAGES[:4], {}),
    "an orphan result": (
        [*MESSAGES[:2], ToolMessage(tool_call_id="nobody", content="x"), *MESSAGES[2:4]],
        {},
    ),
    "a result missing": ([*MESSAGES[:3], UserMessage(content="again"), *MESSAGES[3:5]], {}),
    "a broken call": ([*MESSAGES[:2], BROKEN[1], UserMessage(content="more")], {}),
    "a refused parameter": (MESSAGES[:4], {"n": 2}),
    "a tool choice not offered": (MESSAGES[:4], {"tools": TOOLS, "tool_choice": NOT_OFFERED}),
    "a bad tool name": (MESSAGES[:4], {"tools": [{"type": "function", "function": {"name": "a b"}}]}),
}


@pytest.mark.parametrize("name", CONVERSATIONS)
@pytest.mark.parametrize("written", [True, False], ids=["written", "sent only"])
def test_a_growing_conversation_reads_as_each_body_alone(name: str, written: bool) -> None:
    messages, fields = CONVERSATIONS[name]
    reader, protocol = GrowingConversation(ChatProtocol()), ChatProtocol()
    for number, (sent, source) in enumerate(growing(messages, **fields), 1):
        read = reader.parse(sent, number, source if written else None)
        assert same(read, protocol.parse(sent, number)), (number, read)


def test_a_body_that_shares_less_is_read_whole() -> None:
    reader, protocol = GrowingConversation(ChatProtocol()), ChatProtocol()
    first = body(MESSAGES[:2], tools=TOOLS)
    more = {"role": "user", "content": "more"}
    others = [
        {**first, "messages": [*first["messages"], more], "tools": [{"type": "x"}]},  # other tools
        {**first, "messages": [*first["messages"], more], "model": 5},  # another value
        {**first, "messages": [*first["messages"], more], "tools": [*TOOLS, *TOOLS]},
        {**first, "messages": first["messages"][:1]},  # shorter: one message does not pair a conversation
        body(MESSAGES[:2], n=2),  # another field
        {**first, "messages": [message_to_wire(UserMessage(content="other")), *first["messages"][1:]]},
        {**first, "messages": "not a list"},
        {**first, "messages": []},
        {**first, "messages": [*first["messages"], {"role": "robot"}]},
    ]
    for number, sent in enumerate([first, *others], 1):
        reader.parse(first, 0)
        assert same(reader.parse(sent, number), protocol.parse(sent, number)), number


def test_written_messages_that_do_not_match_in_number_are_not_used() -> None:
    sent = body(MESSAGES[:2])
    read = GrowingConversation(ChatProtocol()).parse(sent, 1, [MESSAGES[0]])
    assert same(read, ChatProtocol().parse(sent, 1))


REPLIES = [
    ModelReply.final("done"),
    ModelReply.final(None),
    ModelReply.final(LONE),
    ModelReply.calling(CALL, ToolCall(id="call_2", name="shell", arguments=LONE), content="both"),
    ModelReply(message=AssistantMessage(content="r", reasoning=(Reasoning(id="r"),)), finish_reason="stop"),
    ModelReply(message=AssistantMessage(content="t", items=(TextItem(text="t"),)), finish_reason="length"),
    ModelReply(message=AssistantMessage(content=None), finish_reason="content_filter"),
    ModelReply.model_construct(message=AssistantMessage(content="x"), finish_reason="function_call"),  # type: ignore[arg-type]
    ModelReply.model_construct(message=AssistantMessage(content="x"), finish_reason="other"),  # type: ignore[arg-type]
    ModelReply(message=AssistantMessage(tool_calls=(NO_ID,)), finish_reason="tool_calls"),
    ModelReply(message=AssistantMessage(tool_calls=(NOT_TEXT,)), finish_reason="tool_calls"),
]


@pytest.mark.parametrize("reply", REPLIES)
@pytest.mark.parametrize("refusal", [False, True])
def test_a_reply_as_read_is_the_reply_written_and_read(reply: ModelReply, refusal: bool) -> None:
    asked = ChatProtocol().parse(body(MESSAGES[:4], tools=TOOLS), 7)
    assert isinstance(asked, Asked)

    def written_and_read() -> ModelReply:
        return reply_from_wire(ChatProtocol().reply(reply, asked, refusal=refusal))

    assert outcome(reply_as_read, reply, asked) == outcome(written_and_read)
