"""`OpenAIResponsesModel` in stateless mode sends the output items back as they came: message items apart and
in their order among reasoning items, each with its `id` and `phase` (the SDK asks clients to preserve and
resend `phase`), reasoning with its `content`. The transport is the only fake (an httpx2 MockTransport
where the network would be): the real SDK builds and parses everything."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2

from sim import AssistantMessage, ModelRequest, SystemMessage, ToolMessage, UserMessage
from sim.cassette.reader import read_cassette
from tests.adapters.endpoint import Endpoint
from tests.corpus import needs_corpus, real_cassettes

REASONING_1 = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [],
    "content": [{"type": "reasoning_text", "text": "Narrate, then call."}],
    "encrypted_content": "enc-1",
}
COMMENTARY = {
    "type": "message",
    "id": "msg_1",
    "status": "completed",
    "role": "assistant",
    "phase": "commentary",
    "content": [{"type": "output_text", "text": "I'll look it up.", "annotations": [], "logprobs": []}],
}
REASONING_2 = {
    "type": "reasoning",
    "id": "rs_2",
    "summary": [{"type": "summary_text", "text": "Call it."}],
    "encrypted_content": "enc-2",
}
CALL = {
    "type": "function_call",
    "id": "fc_1",
    "status": "completed",
    "call_id": "call_1",
    "name": "lookup",
    "arguments": "{}",
}


def response(*output: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": "m",
        "output": list(output),
        "usage": None,
    }


def second_request_input(first_output: list[dict[str, Any]]) -> list[Any]:
    """The `input` the adapter sends after a reply made of `first_output` and the result of its call."""
    endpoint = Endpoint(
        httpx2.Response(200, json=response(*first_output)), httpx2.Response(200, json=response(COMMENTARY))
    )
    model = endpoint.responses_model(model="m")
    system, user = SystemMessage(content="s"), UserMessage(content="Weather?")

    async def two_requests() -> None:
        first = await model.complete(ModelRequest([system, user]))
        assert isinstance(first.message, AssistantMessage)
        results = [ToolMessage(tool_call_id=c.id, content="sunny") for c in first.message.tool_calls]
        await model.complete(ModelRequest([system, user, first.message, *results]))

    asyncio.run(two_requests())
    return list(endpoint.bodies()[1]["input"])


def test_items_come_back_in_their_order_with_phase_ids_and_reasoning_content() -> None:
    sent = second_request_input([REASONING_1, COMMENTARY, REASONING_2, CALL])
    assert [item.get("type", "message") for item in sent] == [
        "message",
        "reasoning",
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    reasoning, message, later = sent[1], sent[2], sent[3]
    assert reasoning["content"] == REASONING_1["content"] and reasoning["encrypted_content"] == "enc-1"
    assert (message["id"], message["phase"], message["content"][0]["text"]) == (
        "msg_1",
        "commentary",
        "I'll look it up.",
    )
    assert later["id"] == "rs_2" and later["summary"] == REASONING_2["summary"]


def test_two_message_items_stay_two() -> None:
    other = {**COMMENTARY, "id": "msg_2", "phase": "final_answer"}
    sent = second_request_input([COMMENTARY, other, CALL])
    assert [(item.get("id"), item.get("phase")) for item in sent[1:3]] == [
        ("msg_1", "commentary"),
        ("msg_2", "final_answer"),
    ]


def test_a_plain_reply_is_sent_back_as_before() -> None:
    """Reasoning first and one text without an id: nothing to keep beyond `reasoning` and `content`."""
    plain = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]}
    sent = second_request_input([REASONING_2, plain, CALL])
    assert sent[2] == {"role": "assistant", "content": "Looking."}


@needs_corpus
def test_the_recorded_follow_up_is_what_the_adapter_sends() -> None:
    """pydantic-ai's recorded follow-up (against the live API) sends the reasoning, the commentary message
    with its phase and the call back in the order they came: the adapter sends them so too."""
    path = next(p for p in real_cassettes("responses") if "reasoning_tool_call" in p.name)
    first, follow_up = read_cassette(path).interactions
    events = first.response.events()
    final = next(e for e in events if isinstance(e, dict) and e.get("type") == "response.completed")
    sent = second_request_input(final["response"]["output"])
    recorded = follow_up.request.json()["input"]
    assert [item.get("type", "message") for item in sent] == [
        item.get("type", "message") for item in recorded
    ]
    kept = [item.get("id") for item in sent if item.get("type") in ("reasoning", "message")]
    assert kept == [item.get("id") for item in recorded if item.get("type") in ("reasoning", "message")]
    assert sent[2]["phase"] == recorded[2]["phase"] == "commentary"
