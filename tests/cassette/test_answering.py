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


def chained(previous: str | None, text: str) -> dict[str, Any]:
    return {"model": "m", "previous_response_id": previous, "input": [{"role": "user", "content": text}]}


def test_interleaved_chains_that_say_the_same_are_told_apart_by_their_previous_response() -> None:
    """Two chains send the same follow-up; only `previous_response_id` says which chain a request is."""
    path = "/v1/responses"
    answers = RecordedAnswers(
        [
            interaction(0, chained(None, "start A"), '{"id": "resp_A"}', path),
            interaction(1, chained(None, "start B"), '{"id": "resp_B"}', path),
            interaction(2, chained("resp_A", "go on"), "A's answer", path),
            interaction(3, chained("resp_B", "go on"), "B's answer", path),
        ]
    )
    for start in ("start A", "start B"):
        assert isinstance(
            answers.match("POST", path, json.dumps(chained(None, start)).encode()), RecordedInteraction
        )
    spaced = json.dumps(chained("resp_B", "go on"), indent=2).encode()  # not the recorded bytes: canonical
    found = answers.match("POST", path, spaced)
    assert isinstance(found, RecordedInteraction) and found.response.body == b"B's answer"


def test_bodies_whose_keys_come_in_another_order_match() -> None:
    recorded = {
        "model": "m",
        "previous_response_id": "resp_1",
        "input": [{"id": "rs_2", "type": "reasoning"}],
    }
    answers = RecordedAnswers([interaction(0, recorded, "it", "/v1/responses")])
    reordered = (
        b'{"input": [{"type": "reasoning", "id": "rs_2"}], "previous_response_id": "resp_1", "model": "m"}'
    )
    assert isinstance(answers.match("POST", "/v1/responses", reordered), RecordedInteraction)


def test_with_repeat_a_program_run_again_is_answered_again() -> None:
    recorded = [interaction(0, asking("a"), "first"), interaction(1, asking("a", "b"), "second")]
    answers = RecordedAnswers(recorded, repeat=True)
    for _ in range(3):  # the same program, three runs against one long-running server
        for body in (asking("a"), asking("a", "b")):
            assert isinstance(
                answers.match("POST", "/v1/chat/completions", json.dumps(body).encode()), RecordedInteraction
            )
    assert answers.rounds == 3 and answers.unplayed() == [] and answers.misses == []


def test_after_every_interaction_was_played_a_changed_request_still_names_its_difference() -> None:
    for repeat in (False, True):
        answers = RecordedAnswers([interaction(0, asking("weather in Paris"), "it")], repeat=repeat)
        body = json.dumps(asking("weather in Paris")).encode()
        assert isinstance(answers.match("POST", "/v1/chat/completions", body), RecordedInteraction)
        miss = answers.match("POST", "/v1/chat/completions", json.dumps(asking("weather in Oslo")).encode())
        assert isinstance(miss, Miss)
        assert miss.difference == (
            'messages[0].content: recorded "weather in Paris" != now "weather in Oslo" (all 1 were played)'
        )
    once = RecordedAnswers([interaction(0, asking("a"), "it")])
    assert isinstance(
        once.match("POST", "/v1/chat/completions", json.dumps(asking("a")).encode()), RecordedInteraction
    )
    again = once.match("POST", "/v1/chat/completions", json.dumps(asking("a")).encode())
    assert (
        isinstance(again, Miss)
        and again.difference == "a request the cassette does not hold (all 1 were played)"
    )


def test_where_a_miss_differs_is_the_path_found_whatever_the_body_says() -> None:
    key = "note: recorded twice != now"  # a body's own words imitating how a difference is told
    answers = RecordedAnswers([interaction(0, {**asking("a"), "metadata": {key: "1"}}, "it")])
    miss = answers.match(
        "POST", "/v1/chat/completions", json.dumps({**asking("a"), "metadata": {key: "2"}}).encode()
    )
    assert isinstance(miss, Miss)
    assert miss.where == f"metadata.{key}"
    assert miss.difference == f'metadata.{key}: recorded "1" != now "2"'
    again = answers.match(
        "POST", "/v1/chat/completions", json.dumps({**asking("a"), "metadata": {key: "1"}}).encode()
    )
    assert isinstance(again, RecordedInteraction)
    once_more = answers.match(
        "POST", "/v1/chat/completions", json.dumps({**asking("a"), "metadata": {key: "1"}}).encode()
    )
    assert isinstance(once_more, Miss)
    assert (
        once_more.where == once_more.difference == "a request the cassette does not hold (all 1 were played)"
    )
