"""The resource endpoints' routing: templates matched with and without `/v1`, literal paths first, the
method checked, and the query read as sent."""

from __future__ import annotations

from sim.wire.requests import Refused
from sim.wire.resources import Called, JsonBody, Resource, ResourceAnswer, routed


async def _nothing(called: Called) -> ResourceAnswer:
    return Refused("never called")


RETRIEVE = Resource("GET", "/responses/{response_id}", _nothing, "responses")
COUNT = Resource("POST", "/responses/input_tokens", _nothing, "responses")
ITEMS = Resource("GET", "/conversations/{conversation_id}/items/{item_id}", _nothing, "responses")
ALL = [RETRIEVE, COUNT, ITEMS]


def test_a_template_matches_with_and_without_the_api_root() -> None:
    assert routed(ALL, "GET", "/v1/responses/resp_1") == (RETRIEVE, {"response_id": "resp_1"})
    assert routed(ALL, "GET", "/responses/resp_1") == (RETRIEVE, {"response_id": "resp_1"})
    assert routed(ALL, "GET", "/v1/conversations/conv_1/items/msg_2") == (
        ITEMS,
        {"conversation_id": "conv_1", "item_id": "msg_2"},
    )


def test_a_parameter_never_spans_a_slash_and_other_paths_are_not_routed() -> None:
    assert routed(ALL, "GET", "/v1/responses/a/b") is False
    assert routed(ALL, "GET", "/v2/responses/resp_1") is False
    assert routed(ALL, "GET", "/v1/responses/") is False


def test_a_literal_path_wins_and_another_method_is_a_405() -> None:
    assert routed(ALL, "POST", "/v1/responses/input_tokens") == (COUNT, {})
    assert routed(ALL, "GET", "/v1/responses/input_tokens") == (RETRIEVE, {"response_id": "input_tokens"})
    assert routed(ALL, "PUT", "/v1/responses/resp_1") is True
    assert routed(ALL, "HEAD", "/v1/responses/resp_1") == (RETRIEVE, {"response_id": "resp_1"})


def test_the_query_keeps_every_value_in_order() -> None:
    called = Called.of({}, "include[]=a&include[]=b&limit=5&after=", b"", 1, {})
    assert called.every("include") == ["a", "b"]
    assert called.first("limit") == "5"
    assert called.first("after") == ""
    assert called.first("order") is None
    assert JsonBody({"a": 1}).status == 200
