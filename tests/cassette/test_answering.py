"""`RecordedAnswers`: which recorded interaction a request is, identical requests in recorded order, and
how a request that matches nothing differs from the nearest recorded one."""

from __future__ import annotations

import json
from typing import Any

from sim.cassette.answering import Miss, RecordedAnswers
from sim.cassette.reader import RecordedInteraction, RecordedRequest, RecordedResponse


def interaction(
    index: int, body: Any, answer: str, path: str = "/v1/chat/completions"
) -> RecordedInteraction:
    request = RecordedRequest("POST", f"https://api.openai.com{path}", {}, json.dumps(body).encode())
    return RecordedInteraction(index, request, RecordedResponse(200, "OK", {}, answer.encode()))


def asking(*contents: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text} for text in contents]}


def test_identical_requests_are_answered_in_recorded_order_each_once() -> None:
    answers = RecordedAnswers([interaction(0, asking("a"), "first"), interaction(1, asking("a"), "second")])
    body = json.dumps(asking("a")).encode()
    found = [answers.match("POST", "/v1/chat/completions", body) for _ in range(2)]
    assert [f.response.body for f in found if isinstance(f, RecordedInteraction)] == [b"first", b"second"]
    third = answers.match("POST", "/v1/chat/completions", body)
    assert isinstance(third, Miss)
    assert "all 2 were played" in third.difference
    assert answers.unplayed() == []


def test_bodies_match_by_canonical_json_and_paths_by_their_route() -> None:
    answers = RecordedAnswers([interaction(0, asking("a"), "it")])
    spaced = b'{ "messages": [ {"content": "a", "role": "user"} ], "model": "m" }'
    found = answers.match("post", "/v1/chat/completions/", spaced)
    assert isinstance(found, RecordedInteraction) and found.response.body == b"it"


def test_a_miss_names_the_first_difference_against_the_nearest_recorded_request() -> None:
    answers = RecordedAnswers(
        [
            interaction(0, asking("hello", "unrelated"), "0"),
            interaction(1, asking("weather in Paris", "and in Rome"), "1"),
        ]
    )
    miss = answers.match(
        "POST", "/v1/chat/completions", json.dumps(asking("weather in Paris", "and in Oslo")).encode()
    )
    assert isinstance(miss, Miss)
    assert str(miss) == 'turn 1: messages[1].content: recorded "and in Rome" != now "and in Oslo"'
    assert json.loads(miss.recorded_body)["messages"][1]["content"] == "and in Rome"
    assert answers.misses == [miss]
    assert [item.index for item in answers.unplayed()] == [0, 1]


def test_a_request_to_a_route_never_recorded_says_what_is_waiting() -> None:
    answers = RecordedAnswers([interaction(0, asking("a"), "it")])
    miss = answers.match("POST", "/v1/responses", b"{}")
    assert isinstance(miss, Miss)
    assert miss.difference == "POST /v1/responses is not recorded (waiting: POST /v1/chat/completions)"


def test_a_caching_hint_a_framework_draws_per_run_does_not_stop_a_match() -> None:
    recorded = {**asking("a"), "prompt_cache_key": "agents-sdk:run:1111"}
    answers = RecordedAnswers([interaction(0, recorded, "it")])
    now = {**asking("a"), "prompt_cache_key": "agents-sdk:run:2222"}
    assert isinstance(
        answers.match("POST", "/v1/chat/completions", json.dumps(now).encode()), RecordedInteraction
    )
