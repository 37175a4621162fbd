"""Every chat-completion response recorded in ../shared/real-cassettes, served to the real SDK.

The transport is the only fake: it answers with the recorded status, content type and (decompressed)
body; the adapter must turn each into the right `ModelReply` or typed error.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from sim import ModelAPIError, ModelRequest, SystemMessage, UserMessage
from sim.cassette.reader import read_cassette
from tests.adapters.endpoint import Endpoint, recorded
from tests.corpus import needs_corpus, real_cassettes

pytestmark = needs_corpus

Calls = list[tuple[str, str, str]]
# cassette name prefix -> per chat interaction: (finish_reason, start of content or None, calls),
# or the HTTP status of a recorded error
EXPECTED: dict[str, list[tuple[str, str | None, Calls] | int]] = {
    "dd-trace-py": [("tool_calls", None, [("call_iCOm6DD573YR20VIOuY97fZo", "add", '{"a":2,"b":2}')])],
    "magentic": [
        (
            "tool_calls",
            None,
            [
                ("call_8Sp49rZGndlZALo0uq1XvA7A", "plus", '{"a": 2, "b": 3}'),
                ("call_u5dbdPz1mAis8zZVk4ZBqXgL", "minus", '{"a": 3, "b": 2}'),
            ],
        )
    ],
    "mirascope": [
        (
            "tool_calls",
            None,
            [
                ("call_v6LacIrChvs6ITVpIZqy5tFc", "secret_retrieval_tool", '{"password": "mellon"}'),
                ("call_onyWzk4mLTGKzW9cthmf4Llq", "secret_retrieval_tool", '{"password": "radiance"}'),
            ],
        ),
        ("stop", "The secrets associated with the passwords are as follows:", []),
        (
            "tool_calls",
            None,
            [
                ("call_kORjJVpmh91BGUtfuEyWTNHq", "secret_retrieval_tool", '{"password": "mellon"}'),
                ("call_rwWftDkV0SjAa03c30QMCbHv", "secret_retrieval_tool", '{"password": "radiance"}'),
            ],
        ),
        ("stop", "Here are the secrets associated with the passwords you provi", []),
        (
            "tool_calls",
            None,
            [
                ("call_9WLrrxKdNop28QihgVejs7vX", "secret_retrieval_tool", '{"password": "mellon"}'),
                ("call_FvwByGJHFMUkSCsWZ30WgOYh", "secret_retrieval_tool", '{"password": "radiance"}'),
            ],
        ),
        ("stop", "Here are the secrets associated with the passwords:", []),
    ],
    "openllmetry__agno": [
        ("tool_calls", None, [("call_K1e5DeMhf00qONjSQD0B4h9C", "add_numbers", '{"a":5,"b":7}')]),
        ("stop", "The sum of 5 and 7 is 12.", []),
    ],
    "openllmetry__azure": [
        ("content_filter", None, []),
        ("stop", "Why did the developer bring OpenTelemetry to the party?", []),
        ("stop", "Why did the developer break up with OpenTelemetry?", []),
        ("stop", "Why did the developer bring OpenTelemetry to the party?", []),
    ],
    "openllmetry__openai": [
        ("length", "This image depicts a series of smooth, undulating shapes", []),
        ("length", "The image shows a series of undulating forms", []),
        400,
    ],
    "otel-contrib": [
        (
            "tool_calls",
            None,
            [
                ("call_JpNb8OiAkbIbHzDggfpdDHpi", "get_current_weather", '{"location": "Seattle, WA"}'),
                ("call_vaFQc3zK6hHTRZKXRI5Eo2cJ", "get_current_weather", '{"location": "San Francisco, CA"}'),
            ],
        ),
        ("stop", "Today, the weather in Seattle is 50 degrees and raining", []),
    ],
    "pydantic-ai": [
        ("tool_calls", None, [("call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", '{"country":"UK"}')]),
        ("stop", "The capital of the UK is London.", []),
    ],
}

CASES = [
    pytest.param(path, prefix, id=path.stem.split("__")[0] + "/" + path.stem.split("__")[1])
    for path in real_cassettes()
    for prefix in [next(p for p in EXPECTED if path.name.startswith(p))]
]


def test_every_real_cassette_is_covered() -> None:
    assert len(CASES) == len(real_cassettes()) == 8


@pytest.mark.parametrize(("path", "prefix"), CASES)
def test_recorded_responses_become_replies_or_typed_errors(path: Path, prefix: str) -> None:
    chats = [i for i in read_cassette(path).interactions if i.calls("/chat/completions")]
    expected = EXPECTED[prefix]
    assert len(chats) == len(expected)
    request = ModelRequest([SystemMessage(content="s"), UserMessage(content="u")])
    for interaction, wanted in zip(chats, expected, strict=True):
        streamed: Any = (interaction.request.json() or {}).get("stream", False)
        model = Endpoint(recorded(interaction)).model(stream=bool(streamed))
        if isinstance(wanted, int):
            with pytest.raises(ModelAPIError) as caught:
                asyncio.run(model.complete(request))
            assert caught.value.status == wanted
            assert (caught.value.error_type, caught.value.code) == (
                "invalid_request_error",
                "invalid_image_url",
            )
            continue
        reply = asyncio.run(model.complete(request))
        finish_reason, text, calls = wanted
        assert reply.finish_reason == finish_reason
        if text is None:
            assert not reply.message.content
        else:
            assert reply.message.content is not None
            assert reply.message.content.startswith(text)
        assert [(c.id, c.name, c.arguments) for c in reply.message.tool_calls] == calls
        assert reply.usage is not None
