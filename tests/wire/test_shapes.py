"""The shapes of issue 37, item 5, through the official SDK (async in process, sync against a real server,
its stream helpers and accumulators): a reasoning summary only when `reasoning.summary` asks for one
(`summary: []` otherwise, as real recordings show), `reasoning_tokens` counted in both APIs' usage for a
reply that reasons, and the `obfuscation` field on streamed deltas unless
`stream_options.include_obfuscation` is false."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from openai import AsyncOpenAI, OpenAI

from sim.host.transport import transport
from sim.wire.obfuscation import CHAT_WIDTH, RESPONSES_WIDTH
from tests.host.in_process import post, simulator
from tests.host.processes import served

RECORDINGS = Path(__file__).resolve().parents[3] / "shared" / "real-cassettes"
TOOL: Any = {"type": "function", "name": "lookup", "strict": False,
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}  # fmt: skip
CHAT_TOOL: Any = {"type": "function", "function": {"name": "lookup", "parameters": TOOL["parameters"]}}
THOUGHT = "The user wants the weather in Paris; look it up."
SCRIPT = f"""
prompt: p
tools: [{{name: lookup}}]
replies:
  - tool_calls: [{{name: lookup, arguments: {{city: Paris}}}}]
    reasoning: "{THOUGHT}"
    content: Looking it up for you now.
"""
PLAIN = "prompt: p\nreplies: [{content: It is sunny in Paris today.}]\n"
NO_OBFUSCATION = {"include_obfuscation": False}


def run(sim: Any, conversation: Any) -> Any:
    """`conversation` with an async SDK client whose requests `sim` answers in process."""
    import asyncio

    async def go() -> Any:
        http = httpx2.AsyncClient(transport=transport(sim))
        async with AsyncOpenAI(base_url="http://sim.test/v1", api_key="sk-test", max_retries=0,
                               http_client=http) as client:  # fmt: skip
            return await conversation(client)

    return asyncio.run(go())


def sse(text: str) -> list[dict[str, Any]]:
    """The JSON events of a stream's body."""
    lines = text.split("\n")
    return [json.loads(line[6:]) for line in lines if line.startswith("data: {")]


class TestReasoningSummaries:
    def test_no_summary_unless_asked_and_the_reasoning_counted(self, tmp_path: Path) -> None:
        async def conversation(client: AsyncOpenAI) -> Any:
            unasked = await client.responses.create(model="m", input="p", tools=[TOOL])
            asked = await client.responses.create(
                model="m", input="p", tools=[TOOL], reasoning={"effort": "low", "summary": "auto"}
            )
            return unasked, asked

        unasked, asked = run(simulator(tmp_path, SCRIPT, cycle=True), conversation)
        assert unasked.output[0].type == "reasoning" and unasked.output[0].summary == []
        assert [part.text for part in asked.output[0].summary] == [THOUGHT]
        for response in (unasked, asked):
            assert response.usage is not None
            reasoning = response.usage.output_tokens_details.reasoning_tokens
            assert reasoning == len(THOUGHT) // 4 + 1  # counted whether its summary is served or not
            assert response.usage.output_tokens > reasoning  # the output includes them, as the API's does
            assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens

    @pytest.mark.parametrize("summary", ["auto", "concise", "detailed", None])
    def test_summary_events_stream_only_when_asked(self, tmp_path: Path, summary: str | None) -> None:
        async def conversation(client: AsyncOpenAI) -> Any:
            kinds = []
            extra = {} if summary is None else {"reasoning": {"summary": summary}}
            async with client.responses.stream(model="m", input="p", tools=[TOOL], **extra) as stream:
                async for event in stream:
                    kinds.append(event.type)
                final = await stream.get_final_response()
            return kinds, final

        kinds, final = run(simulator(tmp_path, SCRIPT), conversation)
        summarized = [kind for kind in kinds if "reasoning_summary" in kind]
        if summary is None:
            assert summarized == [] and final.output[0].summary == []
        else:
            assert summarized[0] == "response.reasoning_summary_part.added"
            assert final.output[0].summary[0].text == THOUGHT
        assert final.usage is not None and final.usage.output_tokens_details.reasoning_tokens > 0

    def test_reasoning_served_without_summary_comes_back_as_served(self, tmp_path: Path) -> None:
        script = SCRIPT + "  - content: It is sunny.\n"

        async def conversation(client: AsyncOpenAI) -> Any:
            first = await client.responses.create(
                model="m", input="p", tools=[TOOL], store=False, include=["reasoning.encrypted_content"]
            )
            history: list[Any] = [{"role": "user", "content": "p"},
                                  *(item.model_dump(exclude_none=True) for item in first.output),
                                  {"type": "function_call_output", "call_id": first.output[-1].call_id,
                                   "output": "sunny"}]  # fmt: skip
            return await client.responses.create(model="m", input=history, tools=[TOOL], store=False)

        assert run(simulator(tmp_path, script), conversation).output_text == "It is sunny."

    def test_huge_unicode_reasoning_is_counted_and_summarized_when_asked(self, tmp_path: Path) -> None:
        thought = 'Ünïcødé 思考 🤔 "quoted" ' * 5_000
        script = (
            f"prompt: p\nreplies: [{{content: done, reasoning: {json.dumps(thought, ensure_ascii=False)}}}]\n"
        )
        body = {"model": "m", "input": "p", "reasoning": {"summary": "detailed"}}
        (response,) = post(simulator(tmp_path, script), body, path="/v1/responses")
        served_ = response.json()
        assert served_["output"][0]["summary"][0]["text"] == thought
        assert served_["usage"]["output_tokens_details"]["reasoning_tokens"] == len(thought) // 4 + 1

    def test_a_reply_that_does_not_reason_counts_no_reasoning_tokens(self, tmp_path: Path) -> None:
        (response,) = post(simulator(tmp_path, PLAIN), {"model": "m", "input": "p"}, path="/v1/responses")
        assert response.json()["usage"]["output_tokens_details"]["reasoning_tokens"] == 0


class TestChatReasoningTokens:
    def test_chat_usage_counts_the_reasoning_json_and_streamed(self, tmp_path: Path) -> None:
        async def conversation(client: AsyncOpenAI) -> Any:
            messages: Any = [{"role": "user", "content": "p"}]
            whole = await client.chat.completions.create(model="m", messages=messages, tools=[CHAT_TOOL])
            async with client.chat.completions.stream(
                model="m", messages=messages, tools=[CHAT_TOOL], stream_options={"include_usage": True}
            ) as stream:
                async for _ in stream:
                    pass
                streamed = await stream.get_final_completion()
            return whole, streamed

        whole, streamed = run(simulator(tmp_path, SCRIPT, cycle=True), conversation)
        for completion in (whole, streamed):
            assert completion.usage is not None and completion.usage.completion_tokens_details is not None
            reasoning = completion.usage.completion_tokens_details.reasoning_tokens
            assert reasoning == len(THOUGHT) // 4 + 1
            assert completion.usage.completion_tokens > reasoning
        assert streamed.choices[0].message.tool_calls[0].function.arguments == '{"city":"Paris"}'


class TestObfuscation:
    def test_responses_deltas_carry_it_and_the_sdk_accumulates(self, tmp_path: Path) -> None:
        async def conversation(client: AsyncOpenAI) -> Any:
            raw = [event async for event in await client.responses.create(
                model="m", input="p", tools=[TOOL], stream=True)]  # fmt: skip
            async with client.responses.stream(model="m", input="p", tools=[TOOL]) as stream:
                async for _ in stream:
                    pass
                final = await stream.get_final_response()
            return raw, final

        events, final = run(simulator(tmp_path, SCRIPT, cycle=True), conversation)
        deltas = [event for event in events if event.type.endswith(".delta")]
        assert {event.type for event in deltas} == {"response.output_text.delta",
                                                     "response.function_call_arguments.delta"}  # fmt: skip
        for event in deltas:
            padding = (event.model_extra or {})["obfuscation"]
            assert padding.isalnum() and len(event.delta) + len(padding) == RESPONSES_WIDTH
        assert all("obfuscation" not in (event.model_extra or {}) for event in events if event not in deltas)
        assert final.output_text == "Looking it up for you now."  # the helper's accumulator is not upset
        assert final.output[-1].arguments == '{"city":"Paris"}'

    def test_chat_chunks_carry_it_and_the_sdk_accumulates(self, tmp_path: Path) -> None:
        async def conversation(client: AsyncOpenAI) -> Any:
            asked: Any = {"model": "m", "messages": [{"role": "user", "content": "p"}], "tools": [CHAT_TOOL],
                          "stream_options": {"include_usage": True}}  # fmt: skip
            chunks = [chunk async for chunk in await client.chat.completions.create(**asked, stream=True)]
            async with client.chat.completions.stream(**asked) as stream:
                async for _ in stream:
                    pass
                final = await stream.get_final_completion()
            return chunks, final

        chunks, final = run(simulator(tmp_path, SCRIPT, cycle=True), conversation)
        paddings = [chunk.obfuscation for chunk in chunks]  # a field of the SDK's chunk type
        assert all(isinstance(padding, str) and padding.isalnum() for padding in paddings)
        texts = [chunk.choices[0].delta.content if chunk.choices else None for chunk in chunks]
        sized = [len(text) + len(padding) for text, padding in zip(texts, paddings, strict=True) if text]
        assert sized and set(sized) == {CHAT_WIDTH}
        assert final.choices[0].message.content == "Looking it up for you now."
        assert final.choices[0].message.tool_calls[0].function.arguments == '{"city":"Paris"}'

    @pytest.mark.parametrize("api", ["chat", "responses"])
    def test_include_obfuscation_false_turns_it_off(self, tmp_path: Path, api: str) -> None:
        sim = simulator(tmp_path, SCRIPT, cycle=True)
        body: dict[str, Any] = {"model": "m", "stream": True, "stream_options": NO_OBFUSCATION}
        body.update({"messages": [{"role": "user", "content": "p"}]} if api == "chat" else {"input": "p"})
        path = "/v1/chat/completions" if api == "chat" else "/v1/responses"
        off, on = post(sim, body, {**body, "stream_options": {"include_obfuscation": True}}, path=path)
        assert off.status_code == on.status_code == 200
        assert not any("obfuscation" in event for event in sse(off.text))
        assert any("obfuscation" in event for event in sse(on.text))

    def test_the_padding_is_the_same_for_the_same_request(self, tmp_path: Path) -> None:
        body = {"model": "m", "input": "p", "stream": True}
        first = post(simulator(tmp_path, PLAIN), body, path="/v1/responses")[0].text
        again = post(simulator(tmp_path, PLAIN), body, path="/v1/responses")[0].text
        assert first == again and "obfuscation" in first

    @pytest.mark.parametrize("api", ["chat", "responses"])
    @pytest.mark.parametrize("value", ["false", 0, [], {"on": False}])
    def test_include_obfuscation_of_the_wrong_type_is_refused(
        self, tmp_path: Path, api: str, value: Any
    ) -> None:
        sim = simulator(tmp_path, PLAIN)

        async def conversation(client: AsyncOpenAI) -> Any:
            options: Any = {"include_obfuscation": value}
            if api == "chat":
                return await client.chat.completions.create(
                    model="m",
                    messages=[{"role": "user", "content": "p"}],
                    stream=True,
                    stream_options=options,
                )
            return await client.responses.create(model="m", input="p", stream=True, stream_options=options)

        with pytest.raises(openai.BadRequestError) as raised:
            run(sim, conversation)
        error = raised.value.body
        assert isinstance(error, dict)
        assert error["param"] == "stream_options.include_obfuscation" and error["code"] == "invalid_type"
        assert error["type"] == "invalid_request_error"

    def test_null_include_obfuscation_keeps_the_default(self, tmp_path: Path) -> None:
        body = {"model": "m", "input": "p", "stream": True, "stream_options": {"include_obfuscation": None}}
        (response,) = post(simulator(tmp_path, PLAIN), body, path="/v1/responses")
        assert response.status_code == 200 and "obfuscation" in response.text

    def test_recordings_put_it_where_sim_does(self) -> None:
        """Every streamed Chat chunk and every Responses `.delta` event of the real recordings carries it,
        and no other event does."""
        if not RECORDINGS.is_dir():
            pytest.skip("the real recordings (../shared/real-cassettes) are not here")
        seen = set()
        for path in sorted(RECORDINGS.rglob("*.yaml")):
            for line in path.read_text(encoding="utf-8").splitlines():
                line = line.strip()
                if not line.startswith("data: {") or "obfuscation" not in line:
                    continue
                event = json.loads(line[6:])
                kind = event.get("type", "chat.completion.chunk")
                seen.add(kind)
                assert kind == "chat.completion.chunk" or kind.endswith(".delta"), kind
                assert event["obfuscation"].isalnum()
        assert "chat.completion.chunk" in seen and "response.output_text.delta" in seen


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`sim serve` on 127.0.0.1, its script played again and again."""
    file = tmp_path_factory.mktemp("shapes") / "scenario.yaml"
    file.write_text(SCRIPT)
    with served(file, "--cycle") as (_, base_url):
        yield base_url


class TestSync:
    def test_sync_client_reads_the_shapes(self, server: str) -> None:
        with OpenAI(base_url=server, api_key="sk-test", max_retries=0) as client:
            response = client.responses.create(model="m", input="p", tools=[TOOL])
            assert response.output[0].summary == []
            assert response.usage and response.usage.output_tokens_details.reasoning_tokens > 0
            with client.responses.stream(model="m", input="p", tools=[TOOL],
                                         reasoning={"summary": "concise"}) as stream:  # fmt: skip
                kinds = [event.type for event in stream]
                final = stream.get_final_response()
            assert "response.reasoning_summary_text.delta" in kinds
            assert final.output[0].summary[0].text == THOUGHT
            chunks = list(client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "p"}], stream=True,
                stream_options={"include_usage": True, "include_obfuscation": False}))  # fmt: skip
            assert chunks and all(chunk.obfuscation is None for chunk in chunks)
            assert chunks[-1].usage and chunks[-1].usage.completion_tokens_details
            assert chunks[-1].usage.completion_tokens_details.reasoning_tokens > 0
