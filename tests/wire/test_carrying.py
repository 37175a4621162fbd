"""Drift's carry-forward, per API: a recorded reply read as what the next request carries back, and the next
recorded request rebuilt around the live reply (its tool results sent to the live call ids)."""

from __future__ import annotations

from typing import Any

import pytest

from sim.core.messages import AssistantMessage, ToolCall
from sim.core.model import ModelReply
from sim.wire import Api
from sim.wire.carrying import Answer, CannotResend, renamed
from sim.wire.registry import CODECS


def calls(*pairs: tuple[str, str]) -> list[ToolCall]:
    return [ToolCall(id=call_id, name=name, arguments="{}") for call_id, name in pairs]


def test_recorded_calls_pair_with_live_ones_of_the_same_tool_in_order() -> None:
    was = calls(("a", "ls"), ("b", "cat"), ("c", "ls"))
    now = calls(("x", "ls"), ("y", "ls"))
    assert renamed(was, now) == {"a": "x", "c": "y"}


def chat_answer(call_id: str) -> Answer:
    call = {"id": call_id, "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    choice = {"index": 0, "finish_reason": "tool_calls", "message": message}
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [choice],
    }
    return CODECS[Api.chat].answer(completion, False)


def test_chat_carries_the_live_assistant_message_and_answers_its_calls() -> None:
    was, now = chat_answer("call_recorded"), chat_answer("call_live")
    assert not now.refused and now.response_id is None
    added: list[Any] = [
        {"role": "assistant", "content": None, "tool_calls": was.carried[0]["tool_calls"]},
        {"role": "tool", "tool_call_id": "call_recorded", "content": "out"},
    ]
    carried = CODECS[Api.chat].carried_forward(added, was, now)
    assert carried[0]["tool_calls"][0]["id"] == "call_live"
    assert carried[1] == {"role": "tool", "tool_call_id": "call_live", "content": "out"}
    assert CODECS[Api.chat].chained({"messages": added}, was, now) is None


def test_chat_cannot_carry_a_reply_the_next_request_does_not_hold_first() -> None:
    was = now = chat_answer("call_1")
    with pytest.raises(CannotResend):
        CODECS[Api.chat].carried_forward([{"role": "user", "content": "again"}], was, now)


def responses_answer(response_id: str, call_id: str) -> Answer:
    response = {"id": response_id, "object": "response", "status": "completed", "model": "m", "output": [
        {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": "ls", "arguments": "{}",
         "status": "completed"}]}  # fmt: skip
    return CODECS[Api.responses].answer(response, False)


def test_responses_carries_the_live_output_items_and_names_the_live_response() -> None:
    was, now = responses_answer("resp_recorded", "call_recorded"), responses_answer("resp_live", "call_live")
    assert now.response_id == "resp_live"
    output = {"type": "function_call_output", "call_id": "call_recorded", "output": "out"}
    carried = CODECS[Api.responses].carried_forward([*was.carried, output], was, now)
    assert carried == [*now.carried, {**output, "call_id": "call_live"}]
    chained = CODECS[Api.responses].chained(
        {"previous_response_id": "resp_recorded", "input": [output]}, was, now
    )
    assert chained == {"previous_response_id": "resp_live", "input": [{**output, "call_id": "call_live"}]}
    assert CODECS[Api.responses].chained({"input": [output]}, was, now) is None


def test_a_chain_needs_a_live_response_id() -> None:
    was = responses_answer("resp_recorded", "call_1")
    now = Answer(ModelReply(message=AssistantMessage(content="hi"), finish_reason="stop"), False, [], None)
    with pytest.raises(CannotResend):
        CODECS[Api.responses].chained({"previous_response_id": "resp_recorded", "input": []}, was, now)
