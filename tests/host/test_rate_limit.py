"""Rate limits simulated as the API applies them: the limiter with a fake clock (refill, the token estimate,
the window reset, the API's duration format and 429 wording), the host answering 429 before any answerer
sees a request, a scenario's `rate_limit:`, and the real SDK against a real `sim serve --rate-limit` on
127.0.0.1: a loop that honours `retry-after` passes, one that hammers is visibly throttled."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from openai import AsyncOpenAI, OpenAI

from sim.core.errors import ScenarioError
from sim.host.rate_limit import MAX_PER_MINUTE, SIMULATED, Limiter, RateLimit, RateLimitError, duration
from sim.host.transport import transport
from sim.scenario import load_scenario
from sim.wire.rate_estimate import estimate
from tests.host.in_process import simulator
from tests.host.processes import served

CHAT = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
ANSWERS_ANYTHING = """
name: answers anything
replies:
  - content: ok
"""


class FakeClock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def headers_of(limiter: Limiter) -> dict[str, str]:
    return {name.decode(): value.decode() for name, value in limiter.headers()}


# --- the limiter, alone -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (0, "0s"),
        (-1, "0s"),
        (0.0001, "1ms"),
        (0.002, "2ms"),
        (0.012, "12ms"),
        (0.084, "84ms"),
        (1, "1s"),
        (1.146, "1.146s"),
        (11.054, "11.054s"),
        (20, "20s"),
        (30.375, "30.375s"),
        (59.9999, "1m0s"),
        (360, "6m0s"),
        (90.5, "1m30.5s"),
        (3600, "1h0m0s"),
    ],
)
def test_waits_are_written_as_the_api_writes_them(seconds: float, said: str) -> None:
    assert duration(seconds) == said


def test_one_request_of_5000_per_minute_resets_in_12ms_as_the_recordings_show() -> None:
    clock = FakeClock()
    limiter = Limiter(RateLimit(requests=5000, tokens=160000), clock)
    assert limiter.take(24) is None
    assert headers_of(limiter) == {
        "x-ratelimit-limit-requests": "5000",
        "x-ratelimit-limit-tokens": "160000",
        "x-ratelimit-remaining-requests": "4999",
        "x-ratelimit-remaining-tokens": "159976",
        "x-ratelimit-reset-requests": "12ms",
        "x-ratelimit-reset-tokens": "9ms",
    }


def test_the_bucket_refills_continuously_and_resets_within_the_minute() -> None:
    clock = FakeClock()
    limiter = Limiter(RateLimit(requests=3), clock)
    assert [limiter.take(0) for _ in range(3)] == [None, None, None]
    past = limiter.take(0)
    assert past is not None
    assert (past.kind, past.limit, past.used, past.requested) == ("requests", 3, 3, 1)
    assert past.wait == pytest.approx(20.0)
    assert headers_of(limiter)["x-ratelimit-reset-requests"] == "1m0s"
    clock.now += 19.9
    assert limiter.take(0) is not None  # not yet a whole request back
    clock.now += 0.1
    assert limiter.take(0) is None
    assert headers_of(limiter)["x-ratelimit-remaining-requests"] == "0"
    clock.now += 60
    assert headers_of(limiter) == {
        "x-ratelimit-limit-requests": "3",
        "x-ratelimit-remaining-requests": "3",
        "x-ratelimit-reset-requests": "0s",
    }
    clock.now += 3600  # never more than the limit
    assert [limiter.take(0) for _ in range(4)][-1] is not None


def test_a_throttled_request_spends_nothing() -> None:
    clock = FakeClock()
    limiter = Limiter(RateLimit(requests=10, tokens=100), clock)
    assert limiter.take(90) is None
    past = limiter.take(20)
    assert past is not None and past.kind == "tokens"
    assert (past.limit, past.used, past.requested) == (100, 90, 20)
    assert past.wait == pytest.approx(6.0)  # 10 short at 100/60 a second
    said = headers_of(limiter)
    assert (said["x-ratelimit-remaining-requests"], said["x-ratelimit-remaining-tokens"]) == ("9", "10")
    assert limiter.take(10) is None


def test_a_request_larger_than_the_limit_never_fits() -> None:
    limiter = Limiter(RateLimit(tokens=100), FakeClock())
    past = limiter.take(101)
    assert past is not None and past.wait is None
    assert past.retry_headers() == {}
    assert past.message("gpt-4o") == (
        f"Request too large for gpt-4o ({SIMULATED}) on tokens per min (TPM): Limit 100, Requested 101."
        " The input or output tokens must be reduced in order to run successfully. Visit"
        " https://platform.openai.com/account/rate-limits to learn more."
    )


def test_the_429_says_what_the_api_says_and_how_long_to_wait() -> None:
    limiter = Limiter(RateLimit(requests=3), FakeClock())
    for _ in range(3):
        limiter.take(0)
    past = limiter.take(0)
    assert past is not None
    assert past.message("gpt-4o-mini") == (
        f"Rate limit reached for gpt-4o-mini ({SIMULATED}) on requests per min (RPM): Limit 3, Used 3,"
        " Requested 1. Please try again in 20s. Visit https://platform.openai.com/account/rate-limits to"
        " learn more."
    )
    assert past.retry_headers() == {"retry-after": "20", "retry-after-ms": "20000"}
    assert "org-" not in past.message(None)  # sim names no organization it does not have


def test_tokens_are_input_characters_over_four_plus_the_output_budget() -> None:
    chat = {"model": "m", "messages": [{"role": "user", "content": "x" * 400}], "max_tokens": 50}
    assert estimate(chat).tokens == (4 + 400) // 4 + 50  # "user" counts too
    responses = {"model": "m", "input": "y" * 40, "instructions": "z" * 4, "max_output_tokens": 7}
    assert estimate(responses).tokens == 11 + 7
    reasoning = {"model": "o3", "messages": [], "max_completion_tokens": 1000}
    assert estimate(reasoning).tokens == 1000
    assert estimate({"messages": "x"}).tokens == 1  # a quarter token is a whole one
    assert estimate(chat).model == "m"
    assert estimate({"max_tokens": True, "model": 5, "input": [{"a": None, "b": 1.5}]}) == estimate({})


def test_deep_input_is_estimated_without_recursion() -> None:
    deep: Any = "xxxxxxxx"
    for _ in range(5000):
        deep = [deep]
    assert estimate({"messages": deep, "max_tokens": 3}).tokens == 3  # deeper than any request: not counted


@pytest.mark.parametrize(
    "body",
    [b"", b"not json", b"[1, 2]", b'"text"', b"{" * 100_000, b'{"model": "m", "messages": "\\ud800"}'],
)
def test_a_body_the_api_refuses_spends_a_request_and_is_refused_as_before(
    tmp_path: Path, body: bytes
) -> None:
    host = simulator(tmp_path, ANSWERS_ANYTHING, cycle=True, rate_limit=RateLimit(requests=2, tokens=10))

    async def run() -> list[httpx2.Response]:
        async with httpx2.AsyncClient(transport=transport(host), base_url="http://sim.test") as client:
            return [await client.post("/v1/chat/completions", content=body) for _ in range(3)]

    refused, again, limited = asyncio.run(run())
    assert refused.status_code == again.status_code == 400
    assert refused.headers["x-ratelimit-remaining-tokens"] == "10"
    assert (limited.status_code, limited.json()["error"]["type"]) == (429, "requests")
    assert "Rate limit reached for the model (" in limited.json()["error"]["message"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "expected requests=N/min"),
        ("requests", "expected requests=N/min"),
        ("requests=", "whole number per minute"),
        ("requests=10", "whole number per minute"),
        ("requests=10/s", "whole number per minute"),
        ("requests=10/hour", "whole number per minute"),
        ("requests=-1/min", "whole number per minute"),
        ("requests=1.5/min", "whole number per minute"),
        ("requests=\u0661\u0660/min", "whole number per minute"),
        ("requests=0/min", "from 1 to"),
        (f"tokens={MAX_PER_MINUTE + 1}/min", "from 1 to"),
        ("requests=1/min,requests=2/min", "twice"),
        ("rpm=10/min", "expected requests=N/min"),
        ("requests=1/min,", "expected requests=N/min"),
        ("requests=1/min;tokens=2/min", "whole number per minute"),
    ],
)
def test_malformed_limits_are_refused_saying_why(text: str, says: str) -> None:
    with pytest.raises(RateLimitError, match=re.escape(says)) as raised:
        RateLimit.parse(text)
    assert "\n" not in str(raised.value)


def test_limits_read_with_spaces_and_either_or_both() -> None:
    assert RateLimit.parse(" requests = 60/min , tokens=150_000/min ") == RateLimit(60, 150000)
    assert RateLimit.parse("tokens=10/min") == RateLimit(None, 10)
    assert RateLimit.parse(f"requests={MAX_PER_MINUTE}/min") == RateLimit(MAX_PER_MINUTE, None)
    assert str(RateLimit(60, 150000)) == "requests=60/min,tokens=150000/min"


def test_a_huge_limit_reports_exact_numbers() -> None:
    clock = FakeClock()
    limiter = Limiter(RateLimit(requests=MAX_PER_MINUTE, tokens=MAX_PER_MINUTE), clock)
    assert limiter.take(12345) is None
    said = headers_of(limiter)
    assert said["x-ratelimit-remaining-requests"] == str(MAX_PER_MINUTE - 1)
    assert said["x-ratelimit-remaining-tokens"] == str(MAX_PER_MINUTE - 12345)


# --- the host ---------------------------------------------------------------------------------------------


def _post_many(host: Any, bodies: list[dict[str, Any]]) -> list[httpx2.Response]:
    async def run() -> list[httpx2.Response]:
        async with httpx2.AsyncClient(transport=transport(host), base_url="http://sim.test") as client:
            return list(
                await asyncio.gather(*(client.post("/v1/chat/completions", json=body) for body in bodies))
            )

    return asyncio.run(run())


def test_concurrent_requests_never_overspend_the_budget(tmp_path: Path) -> None:
    host = simulator(tmp_path, ANSWERS_ANYTHING, cycle=True, rate_limit=RateLimit(requests=7))
    answers = _post_many(host, [CHAT] * 60)
    statuses = [answer.status_code for answer in answers]
    assert statuses.count(200) == 7
    assert statuses.count(429) == 53
    assert host.answerer.answered == 7  # the throttled never reached the script
    remaining = {answer.headers["x-ratelimit-remaining-requests"] for answer in answers}
    assert remaining <= {str(left) for left in range(7)}


def test_concurrent_token_spending_never_overspends(tmp_path: Path) -> None:
    host = simulator(tmp_path, ANSWERS_ANYTHING, cycle=True, rate_limit=RateLimit(tokens=1000))
    assert host.limiter is not None
    host.limiter.clock = lambda: 0.0  # no refill while they run
    for bucket in host.limiter.buckets.values():
        bucket.at = 0.0
    answers = _post_many(host, [{**CHAT, "max_tokens": 98}] * 40)  # "user", "hi": 2 + 98 tokens each
    assert [answer.status_code for answer in answers].count(200) == 10
    throttled = [answer.json()["error"] for answer in answers if answer.status_code == 429]
    assert {error["type"] for error in throttled} == {"tokens"}
    assert {error["code"] for error in throttled} == {"rate_limit_exceeded"}
    assert "on tokens per min (TPM): Limit 1000, Used 1000, Requested 100." in throttled[0]["message"]


def test_a_throttled_request_does_not_take_a_scripted_reply(tmp_path: Path) -> None:
    text = """
    replies:
      - content: first
      - content: second
    """
    host = simulator(tmp_path, text, rate_limit=RateLimit(requests=1))
    first, second = _post_many(host, [CHAT]), _post_many(host, [CHAT])
    assert first[0].json()["choices"][0]["message"]["content"] == "first"
    assert second[0].status_code == 429
    assert second[0].headers["retry-after"] == "60"
    assert 59_000 < int(second[0].headers["retry-after-ms"]) <= 60_000
    assert host.answerer.answered == 1
    assert host.received == 2  # numbered, as the access log numbers it


def test_no_rate_limit_no_ratelimit_headers(tmp_path: Path) -> None:
    host = simulator(tmp_path, ANSWERS_ANYTHING, cycle=True)
    (answer,) = _post_many(host, [CHAT])
    assert not [name for name in answer.headers if name.startswith("x-ratelimit")]


def test_a_scenario_can_ask_for_rate_limits(tmp_path: Path) -> None:
    host = simulator(tmp_path, ANSWERS_ANYTHING + "rate_limit: requests=2/min,tokens=10000/min\n", cycle=True)
    answers = _post_many(host, [CHAT] * 3)
    assert [answer.status_code for answer in answers] == [200, 200, 429]
    assert answers[0].headers["x-ratelimit-limit-tokens"] == "10000"
    models = asyncio.run(_get(host, "/v1/models"))  # every answer says where the limits stand
    assert models.headers["x-ratelimit-remaining-requests"] == "0"


async def _get(host: Any, path: str) -> httpx2.Response:
    async with httpx2.AsyncClient(transport=transport(host), base_url="http://sim.test") as client:
        return await client.get(path)


@pytest.mark.parametrize("said", ["requests=0/min", "requests=ten/min", "tokens=5"])
def test_a_scenario_with_a_malformed_rate_limit_is_refused(tmp_path: Path, said: str) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(ANSWERS_ANYTHING + f"rate_limit: {said}\n")
    with pytest.raises(ScenarioError, match="rate_limit"):
        load_scenario(path)


def test_a_scripted_429_with_headers_still_works_under_a_limit(tmp_path: Path) -> None:
    text = """
    replies:
      - error: {status: 429, message: Slow down, code: rate_limit_exceeded, retry_after: 2}
    """
    host = simulator(tmp_path, text, rate_limit=RateLimit(requests=100))
    (answer,) = _post_many(host, [CHAT])
    assert answer.status_code == 429
    assert answer.json()["error"]["message"] == "Slow down"
    assert answer.headers["retry-after"] == "2"
    assert answer.headers["x-ratelimit-remaining-requests"] == "99"


def test_the_sdk_sees_the_429_as_a_rate_limit_error_with_its_request_id(tmp_path: Path) -> None:
    host = simulator(tmp_path, ANSWERS_ANYTHING, cycle=True, rate_limit=RateLimit(requests=1))

    async def run() -> None:
        client = AsyncOpenAI(
            base_url="http://sim.test/v1", api_key="sk-test", max_retries=0,
            http_client=httpx2.AsyncClient(transport=transport(host)),
        )  # fmt: skip
        async with client:
            await client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "a"}])
            with pytest.raises(openai.RateLimitError) as raised:
                await client.responses.create(model="gpt-4o", input="b", stream=True)
            assert raised.value.code == "rate_limit_exceeded"
            assert raised.value.type == "requests"
            assert re.fullmatch(r"req_[0-9a-f]{32}", raised.value.request_id or "")
            assert re.search(r"Please try again in (59\.\d+s|1m0s)\. Visit", raised.value.message)

    asyncio.run(run())


# --- over a real `sim serve --rate-limit` ------------------------------------------------------------------

LIMIT = 300
"""Requests per minute the served simulator allows: a burst of 300, then one every 200ms."""


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    scenario = tmp_path_factory.mktemp("limited") / "scenario.yaml"
    scenario.write_text(ANSWERS_ANYTHING)
    options = ("--cycle", "--quiet", "--rate-limit", f"requests={LIMIT}/min,tokens=100000000/min")
    with served(scenario, *options) as (_, base_url):
        yield base_url


def test_a_loop_that_hammers_is_visibly_throttled(limited: str) -> None:
    client = OpenAI(base_url=limited, api_key="sk-test", max_retries=0)
    statuses = []
    throttled: list[openai.RateLimitError] = []
    for _ in range(LIMIT + 40):
        try:
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "go"}])
            statuses.append(200)
        except openai.RateLimitError as error:
            throttled.append(error)
            statuses.append(429)
    assert statuses.count(429) >= 20, statuses.count(429)
    assert {(error.type, error.code) for error in throttled} == {("requests", "rate_limit_exceeded")}
    assert {error.response.headers["x-ratelimit-remaining-requests"] for error in throttled} == {"0"}


def test_the_sdks_own_retries_honour_retry_after_ms(limited: str) -> None:
    attempts: list[tuple[float, int, str | None]] = []

    def seen(response: httpx2.Response) -> None:
        attempts.append((time.monotonic(), response.status_code, response.headers.get("retry-after-ms")))

    http = httpx2.Client(event_hooks={"response": [seen]})
    client = OpenAI(base_url=limited, api_key="sk-test", max_retries=5, http_client=http)
    for _ in range(LIMIT + 20):  # drains the burst, whatever ran before, until 3 retries were told to wait
        client.chat.completions.with_raw_response.create(
            model="gpt-4o", messages=[{"role": "user", "content": "go"}], max_tokens=5
        )
        if [status for _, status, _ in attempts].count(429) >= 3:
            break
    throttled = [index for index, (_, status, _) in enumerate(attempts) if status == 429]
    assert throttled, "the SDK never met a 429"
    for index in throttled:
        at, _, wait_ms = attempts[index]
        assert wait_ms is not None and 0 < int(wait_ms) <= 60_000 / LIMIT
        assert attempts[index + 1][0] - at >= int(wait_ms) / 1000 * 0.9  # it waited as told
    assert attempts[-1][1] == 200


def test_a_loop_that_honours_retry_after_passes(limited: str) -> None:
    client = OpenAI(base_url=limited, api_key="sk-test", max_retries=0)
    answered = 0
    waited = 0.0
    after_waiting = 0
    for _ in range(LIMIT + 20):  # until the budget ran out and 5 more came through
        if after_waiting >= 5:
            break
        while True:
            try:
                response = client.chat.completions.with_raw_response.create(
                    model="gpt-4o", messages=[{"role": "user", "content": "go"}]
                )
            except openai.RateLimitError as error:
                seconds = int(error.response.headers["retry-after-ms"]) / 1000
                assert seconds <= 60 / LIMIT + 0.01
                waited += seconds
                time.sleep(seconds)
                continue
            assert response.parse().choices[0].message.content == "ok"
            answered += 1
            after_waiting += 1 if waited else 0
            break
    assert waited > 0  # the budget ran out, and the loop came through
    assert after_waiting == 5


def test_the_429_body_is_the_specs_error_response(tmp_path: Path) -> None:
    from tests.spec import untolerated

    host = simulator(tmp_path, ANSWERS_ANYTHING, cycle=True, rate_limit=RateLimit(requests=1, tokens=10))
    answers = _post_many(
        host, [{**CHAT, "max_tokens": 5}, {**CHAT, "max_tokens": 5}, {**CHAT, "max_tokens": 50}]
    )
    assert [answer.status_code for answer in answers] == [200, 429, 429]
    for answer in answers[1:]:
        assert untolerated("ErrorResponse", answer.json()) == []
    too_large = answers[2].json()["error"]
    assert too_large["message"].startswith("Request too large for gpt-4o")
    assert "retry-after" not in answers[2].headers
