"""How a served scenario ends: scripted errors that say how many retries they expect (each retry taking the
next reply), a retry nobody expected, and what `sim serve --once` answers once the scenario is finished or
failed. Spoken to through the real SDK with its own retries on, in process (an httpx2 ASGI transport stands
where the network would be)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI

from sim.core.errors import ScenarioError
from sim.host.app import Host
from sim.scenario import load_scenario
from sim.scenario.answerer import ScriptAnswerer
from tests.host.in_process import messages, simulator, talk

USER = [{"role": "user", "content": "p"}]


def served(tmp_path: Path, text: str) -> tuple[Host[ScriptAnswerer], list[int]]:
    """A simulator of `text` with `--once`'s end hook, and the list the hook marks when it fires."""
    fired: list[int] = []
    return simulator(tmp_path, text, on_finished=lambda: fired.append(1)), fired


def ask(sim: Host[ScriptAnswerer], *, retries: int, times: int = 1) -> list[Any]:
    """`times` requests by an SDK client that retries up to `retries` times: each reply or the error."""

    async def asking(client: AsyncOpenAI) -> list[Any]:
        got: list[Any] = []
        for _ in range(times):
            try:
                got.append(await client.chat.completions.create(model="m", messages=USER))  # type: ignore[arg-type]
            except openai.APIError as error:
                got.append(error)
        return got

    return talk(sim, asking, retries=retries)


ERROR = "status: {status}, message: Busy., retry_after: 0.001"


def test_a_retry_it_expects_takes_the_next_reply(tmp_path: Path) -> None:
    sim, fired = served(
        tmp_path, f"replies:\n  - error: {{{ERROR.format(status=429)}, retries: 1}}\n  - content: hi\n"
    )
    (reply,) = ask(sim, retries=2)
    assert reply.choices[0].message.content == "hi"
    assert messages(sim.answerer.problems) == [] and sim.received == 2 and fired == [1]


def test_a_retry_past_what_it_expects_is_its_own_failure_and_is_not_retried(tmp_path: Path) -> None:
    sim, fired = served(
        tmp_path,
        f"replies:\n  - error: {{{ERROR.format(status=500)}, retries: 1}}\n"
        f"  - error: {{{ERROR.format(status=500)}}}\n  - content: hi\n",
    )
    (error,) = ask(sim, retries=5)
    assert isinstance(error, openai.BadRequestError) and error.code == "sim_unexpected_retry"
    assert (
        sim.received == 3
    )  # the first request, the retry it expected, one more: then no retry (x-should-retry)
    assert messages(sim.answerer.problems) == ["request 3 retries request 1, but replies[0] expects 1 retry"]
    assert fired == [1]  # a failure ends the scenario too


def test_no_retry_where_it_expects_one_is_an_expectation_failure(tmp_path: Path) -> None:
    sim, _ = served(
        tmp_path, f"replies:\n  - error: {{{ERROR.format(status=429)}, retries: 1}}\n  - content: hi\n"
    )
    first, second = ask(sim, retries=0, times=2)
    assert isinstance(first, openai.RateLimitError)
    assert isinstance(second, openai.BadRequestError) and second.code == "sim_expectation_failed"
    assert messages(sim.answerer.problems) == [
        "replies[0] expects 1 retry of request 1, but the client made 0"
    ]


def test_retries_zero_says_no_retry_is_expected(tmp_path: Path) -> None:
    sim, fired = served(
        tmp_path, f"replies:\n  - content: hi\n  - error: {{{ERROR.format(status=500)}, retries: 0}}\n"
    )
    hello, failed = ask(sim, retries=3, times=2)
    assert hello.choices[0].message.content == "hi"
    assert isinstance(failed, openai.BadRequestError) and failed.code == "sim_unexpected_retry"
    assert sim.received == 3 and fired == [1]


def test_after_the_end_every_request_is_told_the_scenario_finished_and_not_to_retry(tmp_path: Path) -> None:
    sim, fired = served(tmp_path, f"replies:\n  - content: hi\n  - error: {{{ERROR.format(status=500)}}}\n")
    hello, ended = ask(sim, retries=4, times=2)
    assert hello.choices[0].message.content == "hi"
    assert isinstance(ended, openai.BadRequestError) and ended.code == "sim_scenario_finished"
    assert "is finished (its 2 replies were sent); request 3 gets no reply" in ended.message
    assert sim.received == 3 and fired == [1]  # the SDK's retry got one clear answer, and did not retry it
    assert (
        "request 3 came after scenario scenario finished (a retry it did not expect?"
        in messages(sim.answerer.problems)[0]
    )


def test_a_scenario_that_failed_first_ends_there(tmp_path: Path) -> None:
    sim, fired = served(
        tmp_path, "replies:\n  - content: hi\n    expect_request: {message_count: 5}\n  - content: more\n"
    )
    failed, after = ask(sim, retries=0, times=2)
    assert isinstance(failed, openai.BadRequestError) and failed.code == "sim_expectation_failed"
    assert fired == [1]
    assert isinstance(after, openai.BadRequestError) and after.code == "sim_scenario_finished"
    assert "(it failed: replies[0].expect_request.message_count" in after.message
    assert len(messages(sim.answerer.problems)) == 1  # what came after the failure adds nothing to it


def test_retries_that_no_reply_can_answer_are_refused_with_the_file_line(tmp_path: Path) -> None:
    path = tmp_path / "short.yaml"
    path.write_text(
        f"replies:\n  - content: hi\n  - error: {{{ERROR.format(status=429)}, retries: 2}}\n  - content: x\n"
    )
    with pytest.raises(ScenarioError, match=r"replies\[1\]\.error\.retries is 2, but 1 replies follow it"):
        load_scenario(path)
    path.write_text(f"replies:\n  - error: {{{ERROR.format(status=429)}, retries: -1}}\n  - content: x\n")
    with pytest.raises(ScenarioError, match=r"short\.yaml:2:.*retries"):
        load_scenario(path)
