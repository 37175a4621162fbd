"""Every Responses API response recorded in ../shared/real-cassettes/responses, served to the real SDK
through `OpenAIResponsesModel`.

The transport is the only fake: it answers with the recorded status, content type and body (JSON,
`parsed_body`, or SSE); the adapter must turn each into the right `ModelReply` or typed error.
"""

from __future__ import annotations

import asyncio

import pytest

from sim import ModelAPIError, ModelReply, ModelRequest, SystemMessage, UserMessage
from sim.cassette.reader import RecordedInteraction, read_cassette
from tests.adapters.endpoint import Endpoint, recorded
from tests.corpus import needs_corpus, real_cassettes

pytestmark = needs_corpus

Calls = list[tuple[str, str]]
# cassette name prefix -> per interaction: (finish_reason, start of text, [(tool, arguments)]), or a status
EXPECTED: dict[str, list[tuple[str, str, Calls] | int]] = {
    "mirascope__responses_auth_error": [401],
    # three rounds of the same exchange
    "mirascope__responses_parallel": [
        (
            "tool_calls",
            "",
            [
                ("secret_retrieval_tool", '{"password":"mellon"}'),
                ("secret_retrieval_tool", '{"password":"radiance"}'),
            ],
        ),
        ("stop", "Here are the secrets associated with ", []),
    ]
    * 3,
    "pydantic-ai__responses_previous_response_id": [
        ("stop", "Hello", []),
        ("tool_calls", "", [("get_weather", '{"city":"New York"}')]),
        ("tool_calls", "", [("get_weather", '{"city":"NYC"}')]),
        ("stop", "The weather in New York is sunny and 72°F.", []),
    ],
    "pydantic-ai__responses_reasoning": [
        (
            "tool_calls",
            "I\u2019ll check the capital lookup tool",
            [("get_capital", '{"country":"PotatoLand"}')],
        ),
        ("stop", "The capital of PotatoLand is **Potato City**.", []),
    ],
    "pydantic-ai__responses_simple_tool_call": [
        ("tool_calls", "", [("get_capital", '{"country":"PotatoLand"}')]),
        ("stop", "The capital of PotatoLand is Potato City.", []),
    ],
    "pydantic-ai__responses_tool_call__stream": [
        ("tool_calls", "", [("get_capital", '{"country":"France"}')]),
        ("stop", "The capital of France is Paris.", []),
    ],
}
CASES = [
    (path.name, interaction, EXPECTED[prefix][interaction.index])
    for path in real_cassettes("responses")
    for prefix in EXPECTED
    if path.name.startswith(prefix)
    for interaction in read_cassette(path).interactions
]


def served(interaction: RecordedInteraction) -> ModelReply:
    stream = bool((interaction.request.json() or {}).get("stream"))
    model = Endpoint(recorded(interaction)).responses_model(stream=stream)
    return asyncio.run(model.complete(ModelRequest([SystemMessage(content="s"), UserMessage(content="u")])))


def test_every_real_responses_cassette_is_covered() -> None:
    names = {path.name for path in real_cassettes("responses")}
    assert len(names) == 6
    assert all(any(name.startswith(prefix) for prefix in EXPECTED) for name in names)
    assert len(CASES) == 1 + 6 + 4 + 2 + 2 + 2


@pytest.mark.parametrize(
    ("name", "interaction", "expected"), CASES, ids=[f"{n[:40]}-{i.index}" for n, i, _ in CASES]
)
def test_each_recorded_response_becomes_the_right_reply(
    name: str, interaction: RecordedInteraction, expected: tuple[str, str, Calls] | int
) -> None:
    if isinstance(expected, int):
        with pytest.raises(ModelAPIError) as caught:
            served(interaction)
        assert caught.value.status == expected
        return
    finish, text, calls = expected
    reply = served(interaction)
    assert reply.finish_reason == finish
    assert (reply.message.content or "").startswith(text)
    assert [(call.name, call.arguments) for call in reply.message.tool_calls] == calls
    assert all(call.id.startswith("call_") for call in reply.message.tool_calls)


def test_reasoning_with_encrypted_content_is_kept_for_the_next_request() -> None:
    path = next(p for p in real_cassettes("responses") if "reasoning" in p.name)
    reply = served(read_cassette(path).interactions[0])
    (reasoning,) = reply.message.reasoning
    assert reasoning.id is not None and reasoning.id.startswith("rs_")
    assert (
        reasoning.encrypted_content is not None and len(reasoning.encrypted_content) == 1080
    )  # output_item.done's
