"""The registry of APIs: each named, found by the path a request posts to, and asked the same questions
through its `Codec`, whose answers are its own module's."""

from __future__ import annotations

import pytest

from sim.core.errors import ConfigurationError
from sim.core.messages import AssistantMessage
from sim.core.model import ModelReply
from sim.wire import Api, chat, responses
from sim.wire.chat import protocol as chat_protocol
from sim.wire.chat import recorded as chat_recorded
from sim.wire.registry import CODECS, ENDPOINTS, api_asked, codec_for
from sim.wire.responses import protocol as responses_protocol
from sim.wire.responses import recorded as responses_recorded


def test_an_api_is_named_in_any_case_and_a_wrong_name_says_the_choices() -> None:
    assert Api.named(" Responses ") is Api.responses and Api.named("chat") is Api.chat
    with pytest.raises(ConfigurationError, match="chat or responses"):
        Api.named("completions")


@pytest.mark.parametrize(
    ("path", "api"),
    [
        ("/v1/chat/completions", Api.chat),
        ("/openai/deployments/gpt/chat/completions/", Api.chat),
        ("/v1/responses", Api.responses),
        ("/responses", Api.responses),
        ("/v1/embeddings", None),
        ("/v1/responses/resp_1/input_items", None),
    ],
)
def test_the_api_a_path_posts_to(path: str, api: Api | None) -> None:
    codec = codec_for(path)
    assert (codec.api if codec is not None else None) == api


def test_each_codec_is_its_modules_own() -> None:
    for api, module, recorded in (
        (Api.chat, chat, chat_recorded),
        (Api.responses, responses, responses_recorded),
    ):
        codec = CODECS[api]
        assert codec.api is api and ENDPOINTS[api] == codec.endpoint == module.ENDPOINT
        assert codec.paths == module.PATHS and all(path.endswith(codec.endpoint) for path in codec.paths)
        assert codec.conversation == module.CONVERSATION
        assert codec.history is recorded.history and codec.answer is recorded.answer_from_wire
        assert codec.stream_text_pieces is recorded.stream_text_pieces
        served = codec.server(1024)
        assert served.name == api.value and served.paths == codec.paths
    assert {codec.conversation for codec in CODECS.values()} == {"messages", "input"}


def test_each_server_side_is_new_with_its_own_store() -> None:
    first, second = CODECS[Api.responses].server(1024), CODECS[Api.responses].server(1024)
    assert isinstance(first, responses_protocol.ResponsesProtocol) and first.store is not second.store
    assert isinstance(CODECS[Api.chat].server(1024), chat_protocol.ChatProtocol)


def test_each_api_says_how_a_reply_ended_in_its_own_words() -> None:
    stopped = ModelReply(message=AssistantMessage(content="ok"), finish_reason="stop")
    cut = ModelReply(message=AssistantMessage(content="o"), finish_reason="length")
    assert CODECS[Api.chat].ending(cut) == "finish_reason: length"
    assert CODECS[Api.responses].ending(stopped) == "status: completed"
    assert CODECS[Api.responses].ending(cut) == "status: incomplete (max_output_tokens)"


def test_only_the_responses_api_chains() -> None:
    body = {"previous_response_id": "resp_1", "input": []}
    assert CODECS[Api.responses].chained_to(body) == "resp_1"
    assert CODECS[Api.chat].chained_to(body) is None
    assert CODECS[Api.responses].response_id({"id": "resp_1", "object": "response"}) == "resp_1"
    assert CODECS[Api.chat].response_id({"id": "chatcmpl-1"}) is None


@pytest.mark.parametrize(
    ("path", "api"),
    [
        ("/v1/chat/completions", Api.chat),
        ("/v1/responses", Api.responses),
        ("/v1/responses/resp_1", Api.responses),
        ("/v1/responses/resp_1/input_items", Api.responses),
        ("/v1/models", None),
        ("/v1/embeddings", None),
    ],
)
def test_the_api_a_path_asks_includes_a_stored_response(path: str, api: Api | None) -> None:
    assert api_asked(path) is api
