"""The simulator answers as the live API does where careful programs depend on it: `store: false`,
reasoning sent back by id, what a response echoes, `allowed_tools`, log probabilities, cut items, streamed
reasoning summaries and failed streams. Spoken to through the real SDK and its own stream accumulators,
in process (an httpx2 ASGI transport stands in for the network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from openai import AsyncOpenAI

from tests.host.in_process import messages, simulator, talk

LOOKUP = {
    "type": "function",
    "name": "lookup",
    "description": "Looks up.",
    "strict": False,
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
CHAT_LOOKUP = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
CHAT_OTHER = {"type": "function", "function": {"name": "other", "parameters": {"type": "object"}}}
REASONING = """
prompt: p
tools: [{name: lookup}]
replies:
  - tool_calls: [{id: call_1, name: lookup, arguments: {city: Paris}}]
    reasoning: Look it up.
  - tool_calls: [{id: call_1, name: lookup, arguments: {city: Rome}}]
    reasoning: And Rome too.
  - content: Sunny in both.
"""


def call_item(call: Any, *, with_id: bool = False) -> dict[str, Any]:
    item = {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments}
    return {**item, "id": call.id} if with_id else item


def output(call: Any, text: str = "sunny") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call.call_id, "output": text}


class TestStoreFalse:
    """`store: false` responses are not kept: the API cannot chain to them or look their items up."""

    def test_a_chain_to_an_unstored_response_is_previous_response_not_found(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, REASONING)

        async def conversation(client: AsyncOpenAI) -> Any:
            first = await client.responses.create(model="m", input="p", tools=[LOOKUP], store=False)
            with pytest.raises(openai.BadRequestError) as caught:
                await client.responses.create(
                    model="m", previous_response_id=first.id, tools=[LOOKUP], input=[output(first.output[-1])]
                )
            return first, caught.value

        first, error = talk(sim, conversation)
        assert first.store is False
        assert error.code == "previous_response_not_found" and error.param == "previous_response_id"
        assert error.body["message"] == f"Previous response with id '{first.id}' not found."

    @pytest.mark.parametrize("store", [True, None])
    def test_a_stored_response_chains(self, tmp_path: Path, store: bool | None) -> None:
        sim = simulator(tmp_path, REASONING)

        async def conversation(client: AsyncOpenAI) -> Any:
            stored = {} if store is None else {"store": store}
            first = await client.responses.create(model="m", input="p", tools=[LOOKUP], **stored)
            return await client.responses.create(
                model="m", previous_response_id=first.id, tools=[LOOKUP], input=[output(first.output[-1])]
            )

        assert talk(sim, conversation).previous_response_id == "resp_sim000001"

    def test_reasoning_sent_back_by_id_alone_after_store_false_is_not_found(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, REASONING)

        async def conversation(client: AsyncOpenAI) -> Any:
            first = await client.responses.create(model="m", input="p", tools=[LOOKUP], store=False)
            reasoning, call = first.output
            by_id = {"type": "reasoning", "id": reasoning.id, "summary": []}
            with pytest.raises(openai.NotFoundError) as caught:
                await client.responses.create(
                    model="m",
                    tools=[LOOKUP],
                    store=False,
                    input=[{"role": "user", "content": "p"}, by_id, call_item(call), output(call)],
                )
            return reasoning, caught.value

        reasoning, error = talk(sim, conversation)
        assert error.status_code == 404 and error.param == "input"
        assert error.body["message"].startswith(
            f"Item with id '{reasoning.id}' not found. Items are not persisted"
        )
        assert (
            messages(sim.answerer.problems)
            and "not persisted when `store` is set to false" in messages(sim.answerer.problems)[0]
        )

    def test_reasoning_sent_back_with_its_encrypted_content_after_store_false_is_served(
        self, tmp_path: Path
    ) -> None:
        sim = simulator(tmp_path, REASONING)

        async def conversation(client: AsyncOpenAI) -> Any:
            encrypted = {"store": False, "include": ["reasoning.encrypted_content"]}
            first = await client.responses.create(model="m", input="p", tools=[LOOKUP], **encrypted)
            reasoning, call = first.output
            return await client.responses.create(
                model="m",
                tools=[LOOKUP],
                **encrypted,
                input=[
                    {"role": "user", "content": "p"},
                    reasoning.model_dump(exclude_none=True),
                    call_item(call),
                    output(call),
                ],
            )

        assert talk(sim, conversation).output[-1].arguments == '{"city":"Rome"}'
        assert messages(sim.answerer.problems) == []

    def test_reasoning_sent_back_by_id_after_a_stored_response_is_served(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, REASONING)

        async def conversation(client: AsyncOpenAI) -> Any:
            first = await client.responses.create(model="m", input="p", tools=[LOOKUP])
            reasoning, call = first.output
            by_id = {
                "type": "reasoning",
                "id": reasoning.id,
                "summary": [s.model_dump() for s in reasoning.summary],
            }
            return await client.responses.create(
                model="m",
                tools=[LOOKUP],
                input=[{"role": "user", "content": "p"}, by_id, call_item(call), output(call)],
            )

        assert talk(sim, conversation).status == "completed"

    def test_a_reasoning_id_never_served_is_not_found(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, REASONING)

        async def conversation(client: AsyncOpenAI) -> Any:
            with pytest.raises(openai.NotFoundError) as caught:
                await client.responses.create(
                    model="m",
                    input=[
                        {"role": "user", "content": "p"},
                        {"type": "reasoning", "id": "rs_never", "summary": []},
                    ],
                )
            return caught.value

        assert talk(sim, conversation).body["message"] == "Item with id 'rs_never' not found."


class TestReasoningById:
    """Served reasoning is known by its item id: call ids may repeat across turns, and a call may be sent
    back right before its output."""

    def test_a_call_id_repeated_across_turns_with_its_reasoning_unchanged(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, REASONING)

        async def conversation(client: AsyncOpenAI) -> Any:
            asked = {"model": "m", "tools": [LOOKUP], "include": ["reasoning.encrypted_content"]}
            history: list[Any] = [{"role": "user", "content": "p"}]
            for _ in range(2):
                reply = await client.responses.create(input=history, **asked)
                reasoning, call = reply.output
                assert call.call_id == "call_1"  # the same call id every turn, as some endpoints send
                history += [reasoning.model_dump(exclude_none=True), call_item(call), output(call)]
            final = await client.responses.create(input=history, **asked)
            assert final.output_text == "Sunny in both."

        talk(sim, conversation)
        assert messages(sim.answerer.problems) == []

    def test_a_function_call_sent_back_by_item_id_needs_the_reasoning_served_before_it(
        self, tmp_path: Path
    ) -> None:
        sim = simulator(tmp_path, REASONING)

        async def conversation(client: AsyncOpenAI) -> Any:
            first = await client.responses.create(model="m", input="p", tools=[LOOKUP])
            reasoning, call = first.output
            with pytest.raises(openai.BadRequestError) as caught:
                await client.responses.create(
                    model="m",
                    tools=[LOOKUP],
                    input=[{"role": "user", "content": "p"}, call_item(call, with_id=True), output(call)],
                )
            return reasoning, call, caught.value

        reasoning, call, error = talk(sim, conversation)
        assert error.body["message"] == (
            f"Item '{call.id}' of type 'function_call' was provided without its required 'reasoning' item:"
            f" '{reasoning.id}'."
        )


class TestEcho:
    """A response repeats what its request set, with the API's defaults for what it left out."""

    def test_a_response_echoes_its_request(self, tmp_path: Path) -> None:
        sim = simulator(
            tmp_path, "prompt: p\ntools: [{name: lookup}]\nreplies: [{content: hi}, {content: hi}]\n"
        )
        asked = {
            "instructions": "Be brief.",
            "tools": [LOOKUP],
            "tool_choice": "none",
            "parallel_tool_calls": False,
            "max_output_tokens": 99,
            "metadata": {"run": "7"},
            "temperature": 0.2,
            "top_p": 0.5,
            "store": False,
            "text": {"format": {"type": "text"}, "verbosity": "low"},
            "truncation": "auto",
            "user": "u-1",
        }

        async def conversation(client: AsyncOpenAI) -> Any:
            set_ = await client.responses.create(model="m", input="p", **asked)  # type: ignore[call-overload]
            left_out = await client.responses.create(model="m", input="p")
            return set_, left_out

        set_, left_out = talk(sim, conversation)
        shown = set_.model_dump()
        for key, value in asked.items():
            if key != "tools":
                assert shown[key] == value, key
        assert (
            shown["tools"][0] | {"description": "Looks up."}
            == {**LOOKUP, "strict": False} | shown["tools"][0]
        )
        defaults = left_out.model_dump()
        assert (
            defaults["metadata"],
            defaults["temperature"],
            defaults["top_p"],
            defaults["tool_choice"],
        ) == ({}, 1.0, 1.0, "auto")
        assert (defaults["store"], defaults["parallel_tool_calls"], defaults["instructions"]) == (
            True,
            True,
            None,
        )
        assert defaults["truncation"] == "disabled" and defaults["tools"] == []


class TestAllowedTools:
    """`tool_choice: {type: allowed_tools}` is valid on both APIs, and honoured."""

    SCRIPT = "prompt: p\ntools: [{name: lookup}, {name: other}]\nreplies:\n  - tool_calls: [{name: NAME}]\n"

    @pytest.mark.parametrize(
        ("called", "mode", "served"),
        [("lookup", "auto", True), ("lookup", "required", True), ("other", "auto", False)],
    )
    def test_responses(self, tmp_path: Path, called: str, mode: str, served: bool) -> None:
        sim = simulator(tmp_path, self.SCRIPT.replace("NAME", called))
        other = {**LOOKUP, "name": "other"}
        choice = {"type": "allowed_tools", "mode": mode, "tools": [{"type": "function", "name": "lookup"}]}

        async def conversation(client: AsyncOpenAI) -> Any:
            return await client.responses.create(
                model="m", input="p", tools=[LOOKUP, other], tool_choice=choice
            )  # type: ignore[arg-type]

        if served:
            assert talk(sim, conversation).output[0].name == "lookup"
        else:
            with pytest.raises(openai.BadRequestError, match="allowed_tools") as caught:
                talk(sim, conversation)
            assert caught.value.code == "sim_script_mismatch"

    @pytest.mark.parametrize(("called", "served"), [("lookup", True), ("other", False)])
    def test_chat(self, tmp_path: Path, called: str, served: bool) -> None:
        sim = simulator(tmp_path, self.SCRIPT.replace("NAME", called))
        choice = {
            "type": "allowed_tools",
            "allowed_tools": {
                "mode": "required",
                "tools": [{"type": "function", "function": {"name": "lookup"}}],
            },
        }

        async def conversation(client: AsyncOpenAI) -> Any:
            return await client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": "p"}],
                tools=[CHAT_LOOKUP, CHAT_OTHER],
                tool_choice=choice,
            )  # type: ignore[arg-type]

        if served:
            assert talk(sim, conversation).choices[0].message.tool_calls[0].function.name == "lookup"
        else:
            with pytest.raises(openai.BadRequestError) as caught:
                talk(sim, conversation)
            assert caught.value.code == "sim_script_mismatch"

    def test_a_required_mode_with_a_text_script_is_a_mismatch(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, "prompt: p\ntools: [{name: lookup}]\nreplies: [{content: hi}]\n")
        choice = {
            "type": "allowed_tools",
            "mode": "required",
            "tools": [{"type": "function", "name": "lookup"}],
        }

        async def conversation(client: AsyncOpenAI) -> Any:
            return await client.responses.create(model="m", input="p", tools=[LOOKUP], tool_choice=choice)  # type: ignore[arg-type]

        with pytest.raises(openai.BadRequestError) as caught:
            talk(sim, conversation)
        assert caught.value.code == "sim_script_mismatch"

    def test_an_allowed_tool_that_is_not_offered_is_refused(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, "prompt: p\ntools: [{name: lookup}]\nreplies: [{content: hi}]\n")
        choice = {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "ghost"}]}

        async def conversation(client: AsyncOpenAI) -> Any:
            return await client.responses.create(model="m", input="p", tools=[LOOKUP], tool_choice=choice)  # type: ignore[arg-type]

        with pytest.raises(openai.BadRequestError, match="no function named 'ghost'"):
            talk(sim, conversation)


LOOSE = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
"""A schema strict mode refuses as given (no `additionalProperties: false`), and can make strict."""
OPEN = {"type": "object", "properties": {"city": {"type": "string"}}, "additionalProperties": True}
"""A schema that cannot be made strict."""


class TestStrict:
    """`strict: true` with a schema strict mode cannot take is a 400 naming the function; a Responses
    function that leaves `strict` out is made strict where it can be, best-effort where not."""

    ONE = "prompt: p\ntools: [{name: lookup}]\nreplies: [{content: hi}]\n"

    def test_chat_refuses_a_strict_function_whose_schema_strict_mode_cannot_take(
        self, tmp_path: Path
    ) -> None:
        sim = simulator(tmp_path, self.ONE)
        tools = [
            CHAT_OTHER,
            {"type": "function", "function": {"name": "lookup", "strict": True, "parameters": LOOSE}},
        ]

        async def conversation(client: AsyncOpenAI) -> Any:
            asked = [{"role": "user", "content": "p"}]
            return await client.chat.completions.create(model="m", messages=asked, tools=tools)  # type: ignore[arg-type]

        with pytest.raises(openai.BadRequestError) as caught:
            talk(sim, conversation)
        assert (caught.value.code, caught.value.param) == (
            "invalid_function_parameters",
            "tools[1].function.parameters",
        )
        assert caught.value.body["message"] == (  # type: ignore[index]
            "Invalid schema for function 'lookup': In context=(), 'additionalProperties' is required to be"
            " supplied and to be false."
        )

    def test_responses_refuses_the_same_and_serves_what_leaves_strict_out(self, tmp_path: Path) -> None:
        sim = simulator(
            tmp_path, "prompt: p\ntools: [{name: lookup}]\nreplies: [{content: hi}, {content: hi}]\n"
        )
        said = {"type": "function", "name": "lookup", "strict": True, "parameters": LOOSE}
        unsaid = [{"type": "function", "name": "lookup", "parameters": LOOSE},
                  {"type": "function", "name": "other", "parameters": OPEN}]  # fmt: skip

        async def conversation(client: AsyncOpenAI) -> Any:
            with pytest.raises(openai.BadRequestError) as caught:
                await client.responses.create(model="m", input="p", tools=[said])  # type: ignore[list-item]
            served = await client.responses.create(model="m", input="p", tools=unsaid)  # type: ignore[arg-type]
            return caught.value, served

        error, served = talk(sim, conversation)
        assert (error.code, error.param) == ("invalid_function_parameters", "tools[0].parameters")
        assert [tool.strict for tool in served.tools] == [True, False]  # made strict; best-effort


class TestLogprobs:
    """The scripted model is certain: each token of its text has `logprob: 0.0`."""

    TEXT = "The command printed 42."

    def test_chat_json_and_stream(self, tmp_path: Path) -> None:
        sim = simulator(
            tmp_path, f"prompt: p\nreplies: [{{content: {self.TEXT}}}, {{content: {self.TEXT}}}]\n"
        )
        messages = [{"role": "user", "content": "p"}]

        async def conversation(client: AsyncOpenAI) -> Any:
            whole = await client.chat.completions.create(
                model="m",
                messages=messages,
                logprobs=True,  # type: ignore[arg-type]
                top_logprobs=2,
            )
            async with client.chat.completions.stream(model="m", messages=messages, logprobs=True) as stream:  # type: ignore[arg-type]
                streamed = await stream.get_final_completion()
            return whole, streamed

        whole, streamed = talk(sim, conversation)
        for completion in (whole, streamed):
            tokens = completion.choices[0].logprobs.content
            assert "".join(t.token for t in tokens) == self.TEXT
            assert {t.logprob for t in tokens} == {0.0}
            assert all(bytes(t.bytes) == t.token.encode() for t in tokens)
        assert [len(t.top_logprobs) for t in whole.choices[0].logprobs.content] == [1] * 3
        assert whole.choices[0].logprobs.content[0].top_logprobs[0].token == "The comm"

    def test_responses_json_and_stream(self, tmp_path: Path) -> None:
        sim = simulator(
            tmp_path, f"prompt: p\nreplies: [{{content: {self.TEXT}}}, {{content: {self.TEXT}}}]\n"
        )
        asked = {"model": "m", "input": "p", "include": ["message.output_text.logprobs"], "top_logprobs": 3}

        async def conversation(client: AsyncOpenAI) -> Any:
            whole = await client.responses.create(**asked)  # type: ignore[call-overload]
            async with client.responses.stream(**asked) as stream:
                streamed = await stream.get_final_response()
            return whole, streamed

        for response in talk(sim, conversation):
            tokens = response.output[0].content[0].logprobs
            assert "".join(t.token for t in tokens) == self.TEXT and {t.logprob for t in tokens} == {0.0}

    def test_logprobs_is_chats_word_only(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, "prompt: p\nreplies: [{content: hi}]\n")

        async def conversation(client: AsyncOpenAI) -> Any:
            return await client.post(
                "/responses", cast_to=httpx2.Response, body={"model": "m", "input": "p", "logprobs": True}
            )

        with pytest.raises(openai.BadRequestError, match="Unknown parameter: 'logprobs'"):
            talk(sim, conversation)


class TestResponsesShape:
    def test_a_cut_message_is_incomplete(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, "prompt: p\nreplies: [{content: half an ans, finish_reason: length}]\n")

        async def conversation(client: AsyncOpenAI) -> Any:
            return await client.responses.create(model="m", input="p", max_output_tokens=16)

        response = talk(sim, conversation)
        assert response.status == "incomplete" and response.output[0].status == "incomplete"
        assert (
            response.incomplete_details is not None
            and response.incomplete_details.reason == "max_output_tokens"
        )

    def test_streamed_reasoning_summaries_have_their_events(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, REASONING)

        async def conversation(client: AsyncOpenAI) -> Any:
            kinds, added = [], []
            asked = {"summary": "auto"}  # the API streams a summary only when asked
            async with client.responses.stream(
                model="m", input="p", tools=[LOOKUP], reasoning=asked
            ) as stream:
                async for event in stream:
                    kinds.append(event.type)
                    if event.type == "response.output_item.added" and event.item.type == "reasoning":
                        added.append(event.item)
                final = await stream.get_final_response()
            return kinds, added, final

        kinds, added, final = talk(sim, conversation)
        assert added[0].summary == []  # the summary streams after the item is added
        summary_events = list(dict.fromkeys(k for k in kinds if "reasoning_summary" in k))
        assert summary_events == [
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
        ]
        assert final.output[0].summary[0].text == "Look it up."

    def test_a_failed_stream_carries_a_whole_response_and_an_error_code(self, tmp_path: Path) -> None:
        text = "prompt: p\nreplies: [{error: {status: 500, message: Boom, in_stream: true}}]\n"
        sim = simulator(tmp_path, text)

        async def conversation(client: AsyncOpenAI) -> Any:
            events = []
            stream = await client.responses.create(model="m", input="p", stream=True, metadata={"k": "v"})
            async for event in stream:
                events.append(event)
            return events

        failed = talk(sim, conversation)[-1]
        assert failed.type == "response.failed"
        response = failed.response
        assert response.status == "failed" and response.error is not None
        assert (response.error.code, response.error.message) == ("server_error", "Boom")
        assert response.metadata == {"k": "v"} and response.temperature == 1.0 and response.tools == []
