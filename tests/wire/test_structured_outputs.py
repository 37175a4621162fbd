"""Structured outputs over both APIs, as the live API has them: a strict `response_format` / `text.format`
(and a strict function, `openai.pydantic_function_tool`) holds every completed text (and every call's
arguments) to its schema, so a script that breaks it is refused (`sim_script_mismatch`, naming the reply and
the first failing JSON path) instead of served to an SDK whose `.parse()` then raises what it never raises
live; malformed formats, strict schemas the API refuses and `json_object` mode without "json" are refused
in the API's words; the Responses API echoes the format; every body and event conforms to the spec."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI
from pydantic import BaseModel
from pydantic_ai.exceptions import ModelAPIError

from sim.wire.text_format import chat_format, json_path, responses_format, schema_failure, text_failure
from tests.host.in_process import messages, post, simulator, talk
from tests.spec import untolerated


class Step(BaseModel):
    explanation: str
    answer: str


class Math(BaseModel):
    steps: list[Step]
    final: int


class Lookup(BaseModel):
    city: str
    days: int


MATH = openai.lib._pydantic.to_strict_json_schema(Math)
"""`Math`'s schema as the SDK sends it, made strict."""
GOOD = '{"steps": [{"explanation": "subtract 31", "answer": "8x = -29"}], "final": 3}'
BAD = '{"steps": [{"explanation": "subtract 31", "answer": 5}], "final": 3}'
USER: Any = {"role": "user", "content": "Solve 8x + 31 = 2."}


def scenario(tmp_path: Path, *replies: str, file: str = "scenario.yaml") -> Any:
    """A simulator answering with `replies`, each a YAML flow mapping."""
    listed = "".join(f"  - {reply}\n" for reply in replies)
    return simulator(tmp_path, f"prompt: p\nreplies:\n{listed}", file=file)


def content(text: str) -> str:
    return "{content: " + json.dumps(text) + "}"


class TestParseOverChat:
    def test_matching_text_is_parsed(self, tmp_path: Path) -> None:
        sim = scenario(tmp_path, content(GOOD))

        async def ask(client: AsyncOpenAI) -> Any:
            return await client.chat.completions.parse(model="m", messages=[USER], response_format=Math)

        completion = talk(sim, ask)
        assert completion.choices[0].message.parsed == Math.model_validate_json(GOOD)

    def test_text_off_the_strict_schema_is_refused_naming_the_reply_and_path(self, tmp_path: Path) -> None:
        """Before: served 200, and `.parse()` raised pydantic's ValidationError, which it never does live."""
        sim = scenario(tmp_path, content(GOOD), content(BAD))

        async def ask(client: AsyncOpenAI) -> Any:
            await client.chat.completions.parse(model="m", messages=[USER], response_format=Math)
            return await client.chat.completions.parse(model="m", messages=[USER], response_format=Math)

        with pytest.raises(openai.BadRequestError) as raised:
            talk(sim, ask)
        assert raised.value.code == "sim_script_mismatch"
        (said,) = messages(sim.answerer.problems)
        assert said.startswith("request 2: script and request disagree: ")
        assert "replies[1]'s text fails at $.steps[0].answer: 5 is not of type 'string'" in said

    @pytest.mark.parametrize("stream", [False, True])
    def test_a_refusal_and_a_length_cut_text_are_not_judged(self, tmp_path: Path, stream: bool) -> None:
        sim = scenario(tmp_path, "{refusal: I can't help with that.}", content('{"steps": [{"expl'))
        sim2 = scenario(tmp_path, "{content: '{\"steps\": [', finish_reason: length}", file="cut.yaml")
        body = {"model": "m", "messages": [USER], "stream": stream, "response_format": {
            "type": "json_schema", "json_schema": {"name": "math", "strict": True,
                                                   "schema": MATH}}}  # fmt: skip
        (refused,) = post(sim, body)
        (cut,) = post(sim2, body)
        assert refused.status_code == 200 and cut.status_code == 200
        assert messages(sim.answerer.problems) == messages(sim2.answerer.problems) == []

    def test_a_non_strict_format_holds_nothing(self, tmp_path: Path) -> None:
        sim = scenario(tmp_path, content("plain words"))
        body = {"model": "m", "messages": [USER], "response_format": {
            "type": "json_schema", "json_schema": {"name": "math", "schema": {"type": "object"}},
        }}  # fmt: skip
        (response,) = post(sim, body)
        assert response.status_code == 200, response.text


class TestParseOverResponses:
    def test_matching_text_is_parsed_and_the_format_echoed(self, tmp_path: Path) -> None:
        sim = scenario(tmp_path, content(GOOD))

        async def ask(client: AsyncOpenAI) -> Any:
            return await client.responses.parse(model="m", input="Solve 8x + 31 = 2.", text_format=Math)

        response = talk(sim, ask)
        assert response.output_parsed == Math.model_validate_json(GOOD)
        echoed = response.text.format
        assert (echoed.type, echoed.name, echoed.strict) == ("json_schema", "Math", True)
        assert echoed.schema_["properties"]["final"] == {"title": "Final", "type": "integer"}

    def test_text_off_the_strict_schema_is_refused(self, tmp_path: Path) -> None:
        sim = scenario(tmp_path, content('{"steps": [], "final": "three"}'))

        async def ask(client: AsyncOpenAI) -> Any:
            return await client.responses.parse(model="m", input="Solve it.", text_format=Math)

        with pytest.raises(openai.BadRequestError) as raised:
            talk(sim, ask)
        assert raised.value.code == "sim_script_mismatch"
        assert "replies[0]'s text fails at $.final: 'three' is not of type 'integer'" in str(raised.value)


class TestStrictFunctions:
    def test_pydantic_function_tool_arguments_off_the_schema_are_refused(self, tmp_path: Path) -> None:
        """Before: a missing required property of a strict function was served."""
        sim = scenario(tmp_path, "{tool_calls: [{name: Lookup, arguments: {city: Paris}}]}")

        async def ask(client: AsyncOpenAI) -> Any:
            tools = [openai.pydantic_function_tool(Lookup)]
            return await client.chat.completions.parse(model="m", messages=[USER], tools=tools)

        with pytest.raises(openai.BadRequestError) as raised:
            talk(sim, ask)
        assert raised.value.code == "sim_script_mismatch"
        assert "'Lookup' is a strict function" in str(raised.value)
        assert "replies[0]'s arguments to it fail at $: 'days' is a required property" in str(raised.value)

    def test_matching_arguments_are_parsed(self, tmp_path: Path) -> None:
        sim = scenario(tmp_path, "{tool_calls: [{name: Lookup, arguments: {city: Paris, days: 2}}]}")

        async def ask(client: AsyncOpenAI) -> Any:
            tools = [openai.pydantic_function_tool(Lookup)]
            return await client.chat.completions.parse(model="m", messages=[USER], tools=tools)

        (call,) = talk(sim, ask).choices[0].message.tool_calls
        assert call.function.parsed_arguments == Lookup(city="Paris", days=2)

    def test_arguments_cut_at_the_token_limit_are_not_judged(self, tmp_path: Path) -> None:
        sim = scenario(tmp_path, "{tool_calls: [{name: Lookup, arguments: '{\"ci'}], finish_reason: length}")
        tool = openai.pydantic_function_tool(Lookup)
        (response,) = post(sim, {"model": "m", "messages": [USER], "tools": [tool]})
        assert response.status_code == 200, response.text

    def test_a_responses_function_made_strict_by_default_is_held_to_it(self, tmp_path: Path) -> None:
        sim = scenario(tmp_path, "{tool_calls: [{name: lookup, arguments: {town: Paris}}]}")
        tool = {"type": "function", "name": "lookup", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}, "additionalProperties": False,
        }}  # fmt: skip
        (response,) = post(sim, {"model": "m", "input": "p", "tools": [tool]}, path="/v1/responses")
        assert response.status_code == 400
        assert "fail at $: " in response.json()["error"]["message"]


STRICT = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
          "additionalProperties": False}  # fmt: skip


def chat_body(response_format: Any, text: str = "Answer in JSON.") -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], "response_format": response_format}


def responses_body(format_: Any, text: str = "Answer in JSON.") -> dict[str, Any]:
    return {"model": "m", "input": text, "text": {"format": format_}}


REFUSED = [
    ("chat", chat_body({"type": "json_schema"}), "response_format.json_schema",
     "Missing required parameter: 'response_format.json_schema'."),
    ("chat", chat_body({"type": "json_schema", "json_schema": {"schema": STRICT}}),
     "response_format.json_schema.name", "Missing required parameter: 'response_format.json_schema.name'."),
    ("chat", chat_body({"type": "xml"}), "response_format.type",
     "Invalid value: 'xml'. Supported values are: 'text', 'json_object', and 'json_schema'."),
    ("chat", chat_body("json"), "response_format",
     "Invalid type for 'response_format': expected an object, but got a string instead."),
    ("chat", chat_body({"type": "json_schema", "json_schema": {"name": "a b", "schema": STRICT}}),
     "response_format.json_schema.name", "Invalid 'response_format.json_schema.name': string does not match"),
    ("chat", chat_body({"type": "json_schema", "json_schema": {"name": "out", "strict": True,
                                                              "schema": {"type": "array"}}}),
     "response_format", "Invalid schema for response_format 'out': "),
    ("chat", chat_body({"type": "json_schema", "json_schema": {"name": "out", "strict": True, "schema": {
        "type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}}}),
     "response_format", "Invalid schema for response_format 'out': In context=(), 'additionalProperties'"),
    ("chat", chat_body({"type": "json_object"}, "Answer in a list."), "messages",
     "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'."),
    ("responses", responses_body({"type": "json_schema", "schema": STRICT}), "text.format.name",
     "Missing required parameter: 'text.format.name'."),
    ("responses", responses_body({"type": "json_schema", "name": "out"}), "text.format.schema",
     "Missing required parameter: 'text.format.schema'."),
    ("responses", responses_body({"type": "yaml"}), "text.format.type", "Invalid value: 'yaml'."),
    ("responses", responses_body({"type": "json_schema", "name": "out", "strict": True,
                                  "schema": {**STRICT, "additionalProperties": True}}),
     "text.format.schema", "Invalid schema for response_format 'out': In context=(), 'additionalProperties'"),
    ("responses", {**responses_body({"type": "json_object"}, "Answer."), "instructions": "Reply in JSON."},
     "input", "Response input messages must contain the word 'json' in some form to use 'text.format' of"
     " type 'json_object'."),
]  # fmt: skip


@pytest.mark.parametrize(("api", "body", "param", "says"), REFUSED)
def test_what_the_api_refuses_in_a_format_is_refused_in_its_words(
    tmp_path: Path, api: str, body: dict[str, Any], param: str, says: str
) -> None:
    sim = scenario(tmp_path, content("{}"))
    (response,) = post(sim, body, path="/v1/chat/completions" if api == "chat" else "/v1/responses")
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["param"], error["type"]) == (param, "invalid_request_error")
    assert error["message"].startswith(says)
    assert untolerated("ErrorResponse", response.json()) == []
    assert sim.answerer.answered == 0


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_json_object_mode_holds_text_to_a_json_object(tmp_path: Path, api: str) -> None:
    """`json_object` with "json" in the conversation is taken; its text must be a JSON object (unless cut)."""
    path = "/v1/chat/completions" if api == "chat" else "/v1/responses"
    body = chat_body({"type": "json_object"}) if api == "chat" else responses_body({"type": "json_object"})
    sim = scenario(
        tmp_path, content('{"a": 1}'), content("[1, 2]"), "{content: 'not json', finish_reason: length}"
    )
    first, second, third = post(sim, body, body, body, path=path)
    assert (first.status_code, second.status_code, third.status_code) == (200, 400, 200)
    assert (
        "replies[1]'s text fails at $: not a JSON object (a JSON array)" in second.json()["error"]["message"]
    )


SERVED = {
    "text": content(GOOD),
    "refusal": "{refusal: I can't help with that.}",
    "cut": "{content: '{\"steps\": [', finish_reason: length}",
}
FORMATS: dict[str, tuple[Any, ...]] = {
    "chat": ("/v1/chat/completions", "CreateChatCompletionResponse", "CreateChatCompletionStreamResponse",
             "CreateChatCompletionRequest", {"messages": [USER], "response_format": {
                 "type": "json_schema", "json_schema": {"name": "math", "schema": MATH, "strict": True}}}),
    "responses": ("/v1/responses", "Response", "ResponseStreamEvent", "CreateResponse", {
        "input": "Solve it.", "text": {"format": {"type": "json_schema", "name": "math", "schema": MATH,
                                                  "strict": True}}}),
    "responses json_object": ("/v1/responses", "Response", "ResponseStreamEvent", "CreateResponse", {
        "input": "Solve it in JSON.", "text": {"format": {"type": "json_object"}}}),
}  # fmt: skip


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("kind", sorted(SERVED))
@pytest.mark.parametrize("api", sorted(FORMATS))
def test_every_body_and_event_conforms_to_the_spec(tmp_path: Path, api: str, kind: str, stream: bool) -> None:
    path, body_schema, event_schema, request_schema, extra = FORMATS[api]
    body = {"model": "m", **extra, "stream": stream}
    assert untolerated(request_schema, body) == []
    (response,) = post(scenario(tmp_path, SERVED[kind]), body, path=path)
    assert response.status_code == 200, response.text
    if not stream:
        assert untolerated(body_schema, response.json()) == []
        return
    lines = [line[6:] for line in response.text.split("\n") if line.startswith("data: ")]
    events = [json.loads(line) for line in lines if line != "[DONE]"]
    assert events
    for event in events:
        assert untolerated(event_schema, event) == [], event


def test_the_echoed_format_has_the_apis_defaults(tmp_path: Path) -> None:
    format_ = {"type": "json_schema", "name": "math", "schema": MATH}
    (response,) = post(scenario(tmp_path, content(GOOD)), responses_body(format_), path="/v1/responses")
    assert response.json()["text"] == {"format": {**format_, "strict": False},
                                       "verbosity": "medium"}  # fmt: skip


class TestHostile:
    def test_deeply_nested_text_is_not_json_to_the_judge(self) -> None:
        deep = "[" * 100_000 + "]" * 100_000
        assert text_failure(STRICT, deep) is not None

    def test_a_runaway_pattern_is_not_judged(self) -> None:
        schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^(a|a)+$"}}}
        assert schema_failure(schema, {"a": "a" * 40 + "b"}) is None

    def test_untrusted_keys_are_quoted_in_paths(self) -> None:
        assert json_path(["a b", 0, "c", '"x"']) == '$["a b"][0].c["\\"x\\""]'

    def test_a_huge_text_is_judged(self) -> None:
        assert text_failure(STRICT, json.dumps({"a": "x" * 1_000_000})) is None
        assert text_failure(STRICT, json.dumps({"a": 1, "b": "x" * 1_000_000})) is not None

    def test_a_schema_the_draft_refuses_is_not_judged(self) -> None:
        assert schema_failure({"type": 7}, {"a": 1}) is None

    def test_a_reference_to_nothing_and_a_schema_nested_too_deep_are_not_judged(self) -> None:
        nowhere = {"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}}
        assert schema_failure(nowhere, {"a": 1}) is None
        deep: dict[str, Any] = {"type": "object"}
        for _ in range(5000):
            deep = {"type": "object", "properties": {"a": deep}}
        assert schema_failure(deep, {"a": {}}) is None

    @pytest.mark.parametrize("value", [None, 7, [], {"type": None}, {"type": "json_schema", "name": None}])
    def test_malformed_formats_never_raise(self, value: Any) -> None:
        chat_format({"response_format": value})
        responses_format({"text": {"format": value}})
        responses_format({"text": value})


FRAMEWORKS = [
    "agents_forecast",
    "agents_forecast_chat",
    "pydantic_ai_forecast",
    "pydantic_ai_forecast_responses",
]


@pytest.mark.parametrize("agent", FRAMEWORKS)
def test_framework_agents_with_output_type_against_a_scenario(tmp_path: Path, agent: str) -> None:
    """openai-agents and pydantic-ai agents with a strict `output_type`, served a scenario: the scenario's
    matching answer is their output; an answer off the schema is refused (before, it was served and the
    framework raised what it never raises live)."""
    from tests.fuzz import framework_targets

    run = getattr(framework_targets, agent)
    call = "{tool_calls: [{id: call_1, name: get_weather, arguments: {city: Paris}}]}"
    good = scenario(tmp_path, call, content('{"city": "Paris", "sunny": true}'))
    assert talk(good, lambda client: run(client, "Weather in Paris?")) == "Paris: True"
    bad = scenario(tmp_path, call, content('{"city": "Paris"}'), file="bad.yaml")
    with pytest.raises((openai.BadRequestError, ModelAPIError)) as raised:  # pydantic-ai wraps the 400
        talk(bad, lambda client: run(client, "Weather in Paris?"))
    assert "replies[1]'s text fails at $: 'sunny' is a required property" in str(raised.value)


def test_validators_of_large_schemas_are_kept_only_a_few_at_a_time() -> None:
    """A large strict schema's validator holds MB: kept by the hundred, distinct hostile schemas filled the
    memory; each large one is dropped once a few newer ones are kept."""
    import gc
    import weakref

    from sim.wire import json_schema, text_format

    kept = []
    for n in range(8):
        properties = {f"p{index}": {"type": "string", "description": f"{n}" * 50} for index in range(400)}
        schema = {"type": "object", "properties": properties, "required": list(properties),
                  "additionalProperties": False}  # fmt: skip
        text = json.dumps(schema, sort_keys=True)
        assert len(text) > json_schema.KEPT_SCHEMA_CHARS
        assert text_format.schema_failure(schema, {}) is not None
        kept.append(weakref.ref(json_schema.validator_of(text)))
    gc.collect()
    assert sum(validator() is not None for validator in kept) <= 4
