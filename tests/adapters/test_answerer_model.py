"""`AnswererModel` asks a scenario's script directly and hands the loop what the real SDK adapter over the
host hands it: the same replies, and the same typed errors (mapped once, by `sim.adapters.api_errors`)."""

from __future__ import annotations

import asyncio

import pytest
import yaml

from sim.adapters.answerer_model import AnswererModel
from sim.core.errors import MessageContractError, ModelAPIError, ModelConnectionError, ModelReplyError
from sim.core.messages import AssistantMessage, SystemMessage, ToolCall, UserMessage
from sim.core.model import ModelReply, ModelRequest, ToolSpec
from sim.host.answers import RawReply, Received
from sim.player import Via, connect
from sim.scenario.schema import Scenario

SHELL = ToolSpec(
    "shell", "Runs a command.", {"type": "object", "properties": {"command": {"type": "string"}}}
)
FIRST = ModelRequest([SystemMessage(content="s"), UserMessage(content="p")], (SHELL,))


def scenario(replies: str) -> Scenario:
    return Scenario.model_validate({"name": "case", **yaml.safe_load(f"prompt: p\nreplies:\n{replies}")})


def answered(script: Scenario, via: Via, request: ModelRequest = FIRST) -> tuple[object, ...]:
    """What the loop gets for `request` through the client `via` names: the reply, or the error's kind
    and everything it carries."""
    model, _ = connect(script, via=via)
    try:
        reply = asyncio.run(model.complete(request))
    except ModelAPIError as error:
        return (type(error), str(error), error.status, error.error_type, error.code, error.retry_after)
    return (reply,)


SCRIPTS = {
    "text": "  - content: done\n",
    "calls": "  - tool_calls: [{name: shell, arguments: {command: ls}}, {name: shell, arguments: '{'}]\n",
    "refusal": "  - refusal: I cannot help with that.\n",
    "length": "  - {content: cut, finish_reason: length}\n",
    "content filter": "  - {content: null, finish_reason: content_filter}\n",
    "reasoning": "  - {content: done, reasoning: thought about it}\n",
    "rate limited": (
        "  - error: {status: 429, message: Slow down, type: rate_limit_error, code: rate_limit_exceeded,"
        " retry_after: 2.5}\n"
    ),
    "server error": "  - error: {status: 500, message: Fell over}\n",
    "error in a stream": (
        "  - error: {status: 500, message: Mid-stream, type: server_error, in_stream: true}\n"
    ),
    "malformed": "  - {content: x, malformed: true}\n",
    "cut": "  - {content: x, cut_after_chunks: 1}\n",
    "drop before the headers": "  - {content: x, fault: drop}\n",
    "reset mid-body": "  - {content: x, fault: reset, fault_at: mid_body}\n",
    "error dropped mid-body": "  - error: {status: 500, message: Fell over}\n    cut_after_chunks: 1\n",
    "expectation failed": "  - content: x\n    expect_request: {message_count: 5}\n",
}


@pytest.mark.parametrize("name", SCRIPTS)
def test_the_loop_gets_what_the_sdk_over_the_host_gives_it(name: str) -> None:
    script = scenario(SCRIPTS[name])
    direct, sdk = answered(script, "direct"), answered(script, "sdk")
    assert direct == sdk


def test_an_error_carries_its_status_type_code_and_wait() -> None:
    script = scenario(SCRIPTS["rate limited"])
    assert answered(script, "direct") == (
        ModelAPIError,
        "HTTP 429: Slow down",
        429,
        "rate_limit_error",
        "rate_limit_exceeded",
        2.5,
    )


@pytest.mark.parametrize("name", ["malformed"])
def test_a_body_that_is_not_json_is_the_reply_error_the_adapter_raises(name: str) -> None:
    (kind, message, *_) = answered(scenario(SCRIPTS[name]), "direct")
    assert (kind, message) == (ModelReplyError, "Reply body is not JSON")


def test_a_cut_reply_is_the_dropped_connection_the_adapter_raises_without_retries() -> None:
    (kind, message, *_) = answered(scenario(SCRIPTS["cut"]), "direct")
    assert kind is ModelConnectionError
    assert message == (
        "Could not reach the model endpoint: peer closed connection without sending complete message body"
    )


def test_a_request_past_the_script_is_the_answerers_problem_as_an_error() -> None:
    script = scenario(SCRIPTS["text"])
    model, answerer = connect(script, via="direct")
    asyncio.run(model.complete(FIRST))
    done = AssistantMessage(content="done")
    with pytest.raises(ModelAPIError, match=r"^HTTP 400: scenario case has no reply left for request 2"):
        asyncio.run(model.complete(ModelRequest([*FIRST.messages, done, UserMessage(content="more")])))
    assert [problem.kind.value for problem in answerer.problems] == ["script_exhausted"]


def test_pairing_is_checked_before_asking() -> None:
    script = scenario(SCRIPTS["text"])
    model, answerer = connect(script, via="direct")
    call = AssistantMessage(tool_calls=(ToolCall(id="call_1", name="shell", arguments="{}"),))
    with pytest.raises(MessageContractError):
        asyncio.run(model.complete(ModelRequest([*FIRST.messages, call, UserMessage(content="again")])))
    assert answerer.answered == 0 and not answerer.requests


def test_the_answerer_reads_the_request_the_wire_carries() -> None:
    script = scenario(SCRIPTS["text"])
    model, answerer = connect(script, via="direct")
    reply = asyncio.run(model.complete(FIRST))
    assert isinstance(reply, ModelReply) and reply.usage is not None
    assert list(answerer.requests) == [FIRST]


def test_an_http_reply_needs_the_host() -> None:
    class Recorded:
        finished = False

        async def answer(self, request: Received) -> RawReply:
            return RawReply(200, (), b"{}")

    with pytest.raises(TypeError, match="needs the host"):
        asyncio.run(AnswererModel(Recorded(), "m").complete(FIRST))
