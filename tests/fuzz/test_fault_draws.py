"""The api profile draws network faults as the wire shows them (a connection dropped or reset before the
headers, halfway through a body, after a stream's first events), never a body cut short that the SDK reads
as a bare `JSONDecodeError`; the SDK's retry of a dropped request is the API's behaviour, not a finding."""

from __future__ import annotations

import asyncio

import httpx2
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.core.messages import UserMessage
from sim.core.model import ModelRequest, ToolSpec
from sim.fuzz.drawn import DrawnAnswerer
from sim.fuzz.replies import ReplyDrawer, kind_of
from sim.fuzz.target import fuzz_target
from sim.fuzz.terms import Profile
from sim.host.app import Host
from sim.host.transport import transport
from sim.scenario.schema import ScriptedReplySpec
from tests.fuzz import targets

PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
REQUEST = ModelRequest(
    [UserMessage(content="Weather?")], (ToolSpec("get_weather", "The weather.", PARAMETERS),)
)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_cut_is_drawn_as_a_dropped_or_reset_connection(data: st.DataObject) -> None:
    for profile in Profile:
        drawer = ReplyDrawer(data, profile)
        for _ in range(6):
            reply = drawer.draw(REQUEST)
            if kind_of(reply) == "cut":
                assert reply.fault in ("drop", "reset"), reply  # never a body cut short and sent whole
                assert reply.drops is None and reply.stall_seconds is None


def test_the_api_profile_draws_faults_at_every_place() -> None:
    seen: set[tuple[str | None, bool]] = set()

    @settings(max_examples=400, deadline=None, database=None)
    @given(st.data())
    def draw(data: st.DataObject) -> None:
        drawer = ReplyDrawer(data, Profile.api)
        for _ in range(4):
            reply = drawer.draw(REQUEST)
            if reply.fault is not None:
                seen.add((reply.fault, reply.cut_after_chunks is not None))

    draw()
    assert seen == {("drop", False), ("drop", True), ("reset", False), ("reset", True)}


def client_of(answerer: DrawnAnswerer) -> openai.AsyncOpenAI:
    http = httpx2.AsyncClient(transport=transport(Host(answerer)))
    return openai.AsyncOpenAI(base_url="http://sim.test/v1", api_key="sk-sim", http_client=http)


@pytest.mark.parametrize("stream", [False, True])
def test_a_drawn_fault_is_retried_by_the_sdk_and_the_retry_gets_a_drawn_reply(stream: bool) -> None:
    drawn = iter([ScriptedReplySpec(content="never", fault="drop"),
                  ScriptedReplySpec(content="never", fault="reset", cut_after_chunks=1),
                  ScriptedReplySpec(content="at last")])  # fmt: skip
    answerer = DrawnAnswerer(lambda asked: next(drawn))

    async def ask() -> str | None:
        client = client_of(answerer)
        completion = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "p"}]
        )
        return completion.choices[0].message.content

    if stream:  # a stream dropped after it started is not retried: it raises as it is read
        answerer.draw = lambda asked: ScriptedReplySpec(content="one two three", cut_after_chunks=1)

        async def read() -> None:
            client = client_of(answerer)
            events = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "p"}], stream=True
            )
            async for _ in events:
                pass

        with pytest.raises(openai.APIConnectionError):
            asyncio.run(read())
        return
    assert asyncio.run(ask()) == "at last"
    assert answerer.problems == [] and answerer.received == 3


def test_a_careful_target_passes_and_never_raises_a_bare_json_error() -> None:
    careful = fuzz_target(targets.careful, examples=40, seed=0)
    assert careful.violations == []
    assert "JSONDecodeError" not in careful.raised  # a cut body is a dropped connection the SDK retries
    broken = fuzz_target(targets.crashes_on_non_objects, examples=60, seed=6, profile=Profile.hostile)
    assert broken.violations  # its broken twin is still found
