"""A request body parsed once, for either API: the request being answered (`Asked`, with its messages and
the reply's terms) or the refusal the API would send (`Refused`), whichever check refuses it first."""

from __future__ import annotations

from typing import Any

import pytest

from sim.core.messages import SystemMessage, UserMessage
from sim.wire.chat.protocol import ChatProtocol
from sim.wire.requests import Asked, Refused, WireProtocol
from sim.wire.responses.protocol import ResponsesProtocol

TOOL = {"type": "function", "function": {"name": "shell", "parameters": {"type": "object", "properties": {}}}}
FLAT_TOOL = {"type": "function", "name": "shell", "parameters": {"type": "object", "properties": {}}}


def both() -> list[tuple[WireProtocol, dict[str, Any]]]:
    """Each API's server side with a well-formed body asking the same thing."""
    chat = {"model": "m", "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}],
            "tools": [TOOL], "tool_choice": "required"}  # fmt: skip
    responses = {
        "model": "m",
        "instructions": "S",
        "input": "Hi",
        "tools": [FLAT_TOOL],
        "tool_choice": "required",
    }
    return [(ChatProtocol(), chat), (ResponsesProtocol(), responses)]


@pytest.mark.parametrize(("protocol", "body"), both(), ids=["chat", "responses"])
def test_a_well_formed_body_is_the_request_with_its_terms(
    protocol: WireProtocol, body: dict[str, Any]
) -> None:
    asked = protocol.parse(body, 7)
    assert isinstance(asked, Asked)
    assert (asked.number, asked.model, asked.body) == (7, "m", body)
    assert list(asked.decoded.messages) == [SystemMessage(content="S"), UserMessage(content="Hi")]
    assert [tool.name for tool in asked.decoded.tools] == ["shell"]
    assert asked.terms.choice.required and asked.terms.parallel


@pytest.mark.parametrize(("protocol", "body"), both(), ids=["chat", "responses"])
def test_a_parameter_of_the_wrong_type_is_refused_naming_it(
    protocol: WireProtocol, body: dict[str, Any]
) -> None:
    refused = protocol.parse({**body, "stream": "yes"}, 1)
    assert refused == Refused(
        "Invalid type for 'stream': expected a boolean, but got a string instead.", "stream", "invalid_type"
    )
    assert refused.problem == refused.message


@pytest.mark.parametrize(("protocol", "body"), both(), ids=["chat", "responses"])
def test_a_tool_choice_naming_no_offered_tool_is_refused(
    protocol: WireProtocol, body: dict[str, Any]
) -> None:
    named = {"type": "function", "function": {"name": "nope"}} if protocol.name == "chat" else {
        "type": "function", "name": "nope"}  # fmt: skip
    refused = protocol.parse({**body, "tool_choice": named}, 1)
    assert isinstance(refused, Refused) and refused.param == "tool_choice"


def test_a_malformed_conversation_is_refused_as_an_invalid_request() -> None:
    """A conversation the loop's contract refuses is a 400 whose problem is the contract broken: a malformed
    message in sim's words ("Invalid request: ..."), a tool result answering no call in the API's, with its
    `param` (the live API's wording replaced sim's here)."""
    body = {"model": "m", "messages": [{"role": "robot", "content": "out"}]}
    refused = ChatProtocol().parse(body, 3)
    assert isinstance(refused, Refused)
    assert refused.message == f"Invalid request: {refused.problem}"
    assert refused.detail == refused.problem and "robot" in refused.problem
    assert (refused.status, refused.code, refused.param, refused.unsimulated) == (400, None, None, False)
    body = {"model": "m", "messages": [{"role": "tool", "tool_call_id": "call_1", "content": "out"}]}
    refused = ChatProtocol().parse(body, 3)
    assert isinstance(refused, Refused)
    assert refused.message.startswith("Invalid parameter: messages with role")
    assert refused.detail == refused.problem == "orphan tool result id: call_1"
    assert (refused.status, refused.code, refused.param) == (400, None, "messages.[0].role")


def test_a_chain_to_an_unknown_response_is_refused_with_the_apis_code() -> None:
    refused = ResponsesProtocol().parse({"model": "m", "input": "Hi", "previous_response_id": "resp_x"}, 1)
    assert refused == Refused(
        "Previous response with id 'resp_x' not found.", "previous_response_id", "previous_response_not_found"
    )


def test_a_reasoning_item_never_served_is_refused_as_not_found() -> None:
    """What a well-formed request carries back is checked last: a reasoning item sent by id alone that the
    server never served is a 404."""
    body = {"model": "m", "input": [{"type": "reasoning", "id": "rs_unknown", "summary": []},
                                    {"role": "user", "content": "Hi"}]}  # fmt: skip
    refused = ResponsesProtocol().parse(body, 1)
    assert isinstance(refused, Refused)
    assert (refused.status, refused.param) == (404, "input")
    assert "rs_unknown" in refused.message


def test_sim_s_own_limit_is_refused_as_not_simulated() -> None:
    refused = ChatProtocol().parse({"model": "m", "messages": [{"role": "user", "content": "Hi"}], "n": 2}, 1)
    assert isinstance(refused, Refused) and refused.unsimulated and refused.param == "n"


ALL_OF = {"type": "object", "properties": {"x": {"type": "string", "allOf": [{"type": "string"}]}},
          "required": ["x"], "additionalProperties": False}  # fmt: skip


def test_a_strict_function_outside_the_subset_is_refused_in_the_apis_words() -> None:
    said = "Invalid schema for function 'shell': In context=('properties', 'x'), 'allOf' is not permitted."
    function = {"name": "shell", "parameters": ALL_OF, "strict": True}
    chat = {"model": "m", "messages": [{"role": "user", "content": "Hi"}],
            "tools": [{"type": "function", "function": function}]}  # fmt: skip
    refused = Refused(said, "tools[0].function.parameters", "invalid_function_parameters")
    assert ChatProtocol().parse(chat, 1) == refused
    responses = {"model": "m", "input": "Hi", "tools": [{"type": "function", **function}]}
    refused = Refused(said, "tools[0].parameters", "invalid_function_parameters")
    assert ResponsesProtocol().parse(responses, 1) == refused


def test_a_responses_function_that_cannot_be_strict_is_neither_enforced_nor_echoed_strict() -> None:
    from sim.wire.responses.rendering import echoed_fields

    loose = {"type": "function", "name": "shell", "parameters": ALL_OF}  # `strict` left out
    taken = {"type": "function", "name": "shell", "parameters": {"type": "object", "properties": {}}}
    for tool, strict in ((loose, False), (taken, True)):
        body = {"model": "m", "input": "Hi", "tools": [tool]}
        asked = ResponsesProtocol().parse(body, 1)
        assert isinstance(asked, Asked)
        assert ("shell" in asked.terms.strict) is strict  # the API falls back to best effort where it must
        assert echoed_fields(body)["tools"][0]["strict"] is strict
