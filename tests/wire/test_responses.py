"""The Responses API's module: its server side and its reader of recorded bodies read a request alike."""

from __future__ import annotations

import pytest

from sim.core.messages import SystemMessage, UserMessage
from sim.wire import Api
from sim.wire.registry import CODECS
from sim.wire.responses.protocol import ResponsesProtocol
from sim.wire.responses.recorded import history


@pytest.mark.parametrize("instructions", ["", "Be brief."])
def test_instructions_are_the_system_message_for_server_and_reader_alike(instructions: str) -> None:
    """`instructions` is a system message placed first, an empty string too (the API takes any string and
    the SDK sends it as given): the server and the reader of recordings read the same conversation."""
    body = {"model": "m", "instructions": instructions, "input": "Hi"}
    expected = [SystemMessage(content=instructions), UserMessage(content="Hi")]
    assert history(body) == expected
    assert CODECS[Api.responses].history(body) == expected
    assert list(ResponsesProtocol().decode(body).messages) == expected


def test_no_instructions_is_no_system_message() -> None:
    """Without `instructions` (or with null) the conversation is the input alone, for both readers."""
    for body in ({"model": "m", "input": "Hi"}, {"model": "m", "instructions": None, "input": "Hi"}):
        assert history(body) == [UserMessage(content="Hi")]
        assert list(ResponsesProtocol().decode(body).messages) == [UserMessage(content="Hi")]
