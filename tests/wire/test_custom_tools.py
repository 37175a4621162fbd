"""Custom tools over both APIs, as the live API has them: free-form (`text`) and grammar (`lark`, `regex`)
tools offered, scripted custom calls served (JSON and streamed) in the spec's shapes and read by the real
SDK and its stream accumulator, their calls and outputs sent back, the grammar a scripted input must match,
`tool_choice` naming a custom tool, and grammars the API refuses (or that would hang a reader) refused."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from openai import AsyncOpenAI
from typer.testing import CliRunner

from sim.cli import app
from sim.core.errors import ScenarioError
from sim.core.messages import (
    AssistantMessage,
    ChatMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from sim.core.model import InputGrammar, ModelReply, ModelRequest, ToolSpec
from sim.core.tools import AnyArguments, CustomInput, PreparedCall, ToolDefinition, ToolRegistry, ToolResult
from sim.player import Via, play_file
from sim.scenario import load_scenario
from sim.wire import Api
from sim.wire.chat.client import reply_from_wire as chat_reply
from sim.wire.chat.client import tool_to_wire as chat_tool
from sim.wire.custom_tools import GRAMMAR_CHARS, input_problem
from sim.wire.responses.client import ItemEncoder
from sim.wire.responses.client import reply_from_wire as responses_reply
from sim.wire.responses.client import tool_to_wire as responses_tool
from tests.host.in_process import post, simulator, talk
from tests.spec import untolerated

PATCH_GRAMMAR = r"""
start: "*** Begin Patch\n" hunk+ "*** End Patch"
hunk: "*** Update File: " PATH "\n" LINE+
PATH: /[A-Za-z0-9_.\/-]+/
LINE: /[ +-][^\n]*\n/
"""
PATCH = "*** Begin Patch\n*** Update File: a.py\n-x = 1\n+x = 2\n*** End Patch"
REGEX = r"[a-z]+ \d+"

CHAT_REGEX = {
    "type": "custom",
    "custom": {
        "name": "cmd",
        "description": "Runs a command.",
        "format": {"type": "grammar", "grammar": {"syntax": "regex", "definition": REGEX}},
    },
}
CHAT_PATCH = {
    "type": "custom",
    "custom": {
        "name": "apply_patch",
        "format": {"type": "grammar", "grammar": {"syntax": "lark", "definition": PATCH_GRAMMAR}},
    },
}
CHAT_TEXT = {"type": "custom", "custom": {"name": "note", "format": {"type": "text"}}}
RESP_REGEX = {
    "type": "custom",
    "name": "cmd",
    "description": "Runs a command.",
    "format": {"type": "grammar", "syntax": "regex", "definition": REGEX},
}
RESP_PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "format": {"type": "grammar", "syntax": "lark", "definition": PATCH_GRAMMAR},
}
RESP_TEXT = {"type": "custom", "name": "note"}
USER = [{"role": "user", "content": "p"}]


def script(*replies: str) -> str:
    lines = "\n".join(f"  - {reply}" for reply in replies)
    return f"prompt: p\ntools: []\nreplies:\n{lines}\n"


CALLS = script(
    '{content: Patching., tool_calls: [{name: apply_patch, input: "' + PATCH.replace("\n", "\\n") + '"},'
    ' {name: cmd, input: "ls 3"}, {name: note, input: "free {text"}]}',
    "{content: done}",
)


class TestChat:
    def test_the_sdk_reads_custom_calls_and_sends_them_back(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, CALLS)

        async def conversation(client: AsyncOpenAI) -> Any:
            tools: Any = [CHAT_PATCH, CHAT_REGEX, CHAT_TEXT]
            first = await client.chat.completions.create(model="m", messages=USER, tools=tools)  # type: ignore[arg-type]
            message = first.choices[0].message
            assert first.choices[0].finish_reason == "tool_calls"
            assert [call.type for call in message.tool_calls or []] == ["custom"] * 3
            calls = [call for call in message.tool_calls or [] if call.type == "custom"]
            assert [(c.custom.name, c.custom.input) for c in calls] == [
                ("apply_patch", PATCH),
                ("cmd", "ls 3"),
                ("note", "free {text"),
            ]
            results = [{"role": "tool", "tool_call_id": call.id, "content": "ok"} for call in calls]
            history = [*USER, message.model_dump(exclude_none=True), *results]
            return await client.chat.completions.create(model="m", messages=history, tools=tools)  # type: ignore[arg-type]

        assert talk(sim, conversation).choices[0].message.content == "done"

    def test_the_body_and_the_request_conform_to_the_spec(self, tmp_path: Path) -> None:
        body = {
            "model": "m",
            "messages": USER,
            "tools": [CHAT_PATCH, CHAT_REGEX, CHAT_TEXT],
            "tool_choice": "required",
        }
        assert untolerated("CreateChatCompletionRequest", body) == []
        (response,) = post(simulator(tmp_path, CALLS), body)
        assert response.status_code == 200, response.text
        assert untolerated("CreateChatCompletionResponse", response.json()) == []
        assert response.json()["choices"][0]["message"]["tool_calls"][1] == {
            "id": "call_2",
            "type": "custom",
            "custom": {"name": "cmd", "input": "ls 3"},
        }

    def test_a_stream_that_could_carry_a_custom_call_is_not_simulated(self, tmp_path: Path) -> None:
        """The spec's chunk schema has tool call deltas for functions only: sim cannot say how the API
        streams a custom call, so it says so (a run that meets it is not simulated)."""
        body = {"model": "m", "messages": USER, "tools": [CHAT_TEXT], "stream": True}
        (response,) = post(simulator(tmp_path, CALLS), body)
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["param"] == "stream" and error["code"] == "unsupported_value"
        assert "custom tool calls" in error["message"]
        (plain,) = post(simulator(tmp_path, script("{content: hi}")), {**body, "tool_choice": "none"})
        assert plain.status_code == 200

    def test_a_custom_call_in_the_history_is_checked(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, script("{content: a}", "{content: b}"))
        bad = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "custom"}]}
        unanswered = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "custom", "custom": {"name": "note", "input": "x"}}],
        }
        responses = post(
            sim,
            {"model": "m", "messages": [*USER, bad], "tools": [CHAT_TEXT]},
            {"model": "m", "messages": [*USER, unanswered], "tools": [CHAT_TEXT]},
        )
        assert [r.status_code for r in responses] == [400, 400]
        assert "custom" in responses[0].json()["error"]["message"]
        assert "did not have response messages: c1" in responses[1].json()["error"]["message"]

    def test_the_client_side_reads_a_custom_call(self) -> None:
        completion = {
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"id": "c1", "type": "custom", "custom": {"name": "note", "input": "hi"}}
                        ],
                    },
                }
            ]
        }
        (call,) = chat_reply(completion).message.tool_calls
        assert (call.kind, call.name, call.arguments) == ("custom", "note", "hi")
        spec = ToolSpec("cmd", "Runs.", {}, "custom", InputGrammar("regex", REGEX))
        assert chat_tool(spec)["custom"]["format"]["grammar"] == {"syntax": "regex", "definition": REGEX}


class TestResponses:
    def test_the_sdk_stream_accumulator_reads_custom_calls(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, CALLS)

        async def conversation(client: AsyncOpenAI) -> Any:
            tools: Any = [RESP_PATCH, RESP_REGEX, RESP_TEXT]
            seen: list[str] = []
            async with client.responses.stream(model="m", input="p", tools=tools) as stream:
                async for event in stream:
                    seen.append(event.type)
                final = await stream.get_final_response()
            assert "response.custom_tool_call_input.delta" in seen
            assert seen.count("response.custom_tool_call_input.done") == 3
            calls = [item for item in final.output if item.type == "custom_tool_call"]
            assert [(c.name, c.input) for c in calls] == [
                ("apply_patch", PATCH),
                ("cmd", "ls 3"),
                ("note", "free {text"),
            ]
            outputs = [
                {"type": "custom_tool_call_output", "call_id": c.call_id, "output": "ok"} for c in calls
            ]
            sent = [*USER, *(item.model_dump(exclude_none=True) for item in final.output), *outputs]
            return await client.responses.create(model="m", input=sent, tools=tools)  # type: ignore[arg-type]

        assert talk(sim, conversation).output_text == "done"

    @pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
    def test_the_response_and_its_events_conform_to_the_spec(self, tmp_path: Path, stream: bool) -> None:
        body = {
            "model": "m",
            "input": "p",
            "tools": [RESP_PATCH, RESP_REGEX, RESP_TEXT],
            "stream": stream,
            "tool_choice": {
                "type": "allowed_tools",
                "mode": "required",
                "tools": [{"type": "custom", "name": n} for n in ("apply_patch", "cmd", "note")],
            },
        }
        assert untolerated("CreateResponse", body) == []
        (response,) = post(simulator(tmp_path, CALLS), body, path="/v1/responses")
        assert response.status_code == 200, response.text
        if not stream:
            assert untolerated("Response", response.json()) == []
            assert response.json()["output"][2] == {
                "id": "ctc_sim000001_2",
                "type": "custom_tool_call",
                "call_id": "call_2",
                "name": "cmd",
                "input": "ls 3",
            }
            return

        sent = [json.loads(line[6:]) for line in response.text.split("\n") if line.startswith("data: ")]
        for event in sent:
            assert untolerated("ResponseStreamEvent", event) == [], event
        done = [e for e in sent if e["type"] == "response.custom_tool_call_input.done"]
        assert [e["input"] for e in done] == [PATCH, "ls 3", "free {text"]

    def test_pairing_treats_custom_calls_like_function_calls(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, script("{content: a}", "{content: b}", "{content: c}"))
        call = {"type": "custom_tool_call", "call_id": "c1", "name": "note", "input": "x"}
        answer = {"type": "custom_tool_call_output", "call_id": "c1", "output": "ok"}
        orphan = {"type": "custom_tool_call_output", "call_id": "ghost", "output": "ok"}
        malformed = {"type": "custom_tool_call", "call_id": "c2", "name": "note"}
        responses = post(
            sim,
            *(
                {"model": "m", "input": items, "tools": [RESP_TEXT]}
                for items in ([call, answer], [call], [orphan], [malformed])
            ),
            path="/v1/responses",
        )
        assert [r.status_code for r in responses] == [200, 400, 400, 400]
        assert "custom_tool_call input must be a string" in responses[3].json()["error"]["message"]

    def test_the_client_side_reads_a_custom_call(self) -> None:
        response = {
            "status": "completed",
            "output": [
                {"type": "custom_tool_call", "id": "ctc_1", "call_id": "c1", "name": "note", "input": "hi"}
            ],
        }
        reply = responses_reply(response)
        assert reply.finish_reason == "tool_calls"
        assert reply.message.tool_calls == (ToolCall(id="c1", name="note", arguments="hi", kind="custom"),)
        assert responses_tool(ToolSpec("note", "", {}, "custom"))["format"] == {"type": "text"}


class TestTheGuarantee:
    """The API guarantees a custom call's input matches its grammar: a script that does not is refused,
    naming the reply."""

    @pytest.mark.parametrize(
        ("tool", "called"),
        [(RESP_REGEX, '{name: cmd, input: "LS"}'), (RESP_PATCH, '{name: apply_patch, input: "rm -rf /"}')],
        ids=["regex", "lark"],
    )
    def test_an_input_off_its_grammar_is_a_script_mismatch(
        self, tmp_path: Path, tool: dict[str, Any], called: str
    ) -> None:
        sim = simulator(tmp_path, script(f"{{tool_calls: [{called}]}}"))
        (response,) = post(sim, {"model": "m", "input": "p", "tools": [tool]}, path="/v1/responses")
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == "sim_script_mismatch"
        assert "custom tool" in error["message"] and "grammar" in error["message"]

    def test_a_cut_reply_may_end_inside_the_input(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, script('{tool_calls: [{name: cmd, input: "ls"}], finish_reason: length}'))
        (response,) = post(sim, {"model": "m", "input": "p", "tools": [RESP_REGEX]}, path="/v1/responses")
        assert response.status_code == 200, response.text
        assert response.json()["status"] == "incomplete"

    def test_function_arguments_to_a_custom_tool_are_a_script_mismatch(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, script("{tool_calls: [{name: note, arguments: {text: hi}}]}"))
        (response,) = post(sim, {"model": "m", "messages": USER, "tools": [CHAT_TEXT]})
        assert response.json()["error"]["code"] == "sim_script_mismatch"
        assert "with function arguments" in response.json()["error"]["message"]

    def test_a_forced_custom_tool_must_be_called(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, script("{content: hi}", "{content: hi}", "{content: hi}"))
        chat, responses, ghost = post(
            sim,
            {
                "model": "m",
                "messages": USER,
                "tools": [CHAT_TEXT],
                "tool_choice": {"type": "custom", "custom": {"name": "note"}},
            },
            {
                "model": "m",
                "input": "p",
                "tools": [RESP_TEXT],
                "tool_choice": {"type": "custom", "name": "note"},
            },
            {
                "model": "m",
                "messages": USER,
                "tools": [CHAT_TEXT],
                "tool_choice": {"type": "custom", "custom": {"name": "ghost"}},
            },
        )
        assert chat.json()["error"]["code"] == "sim_script_mismatch"
        assert ghost.status_code == 400 and ghost.json()["error"]["param"] == "tool_choice"
        (responses,) = post(
            simulator(tmp_path, script("{content: hi}")),
            {
                "model": "m",
                "input": "p",
                "tools": [RESP_TEXT],
                "tool_choice": {"type": "custom", "name": "note"},
            },
            path="/v1/responses",
        )
        assert responses.json()["error"]["code"] == "sim_script_mismatch"


class TestHostileGrammars:
    @pytest.mark.parametrize(
        ("syntax", "definition"),
        [
            ("regex", "(unclosed"),
            ("regex", "a{2,1}"),
            ("lark", "start: undefined_rule"),
            ("lark", "start: ("),
            ("lark", ""),
        ],
    )
    def test_a_grammar_that_cannot_be_read_is_refused_at_request_time(
        self, tmp_path: Path, syntax: str, definition: str
    ) -> None:
        sim = simulator(tmp_path, script("{content: a}", "{content: b}"))
        chat_tool_body = {
            "type": "custom",
            "custom": {
                "name": "g",
                "format": {"type": "grammar", "grammar": {"syntax": syntax, "definition": definition}},
            },
        }
        flat = {
            "type": "custom",
            "name": "g",
            "format": {"type": "grammar", "syntax": syntax, "definition": definition},
        }
        chat, responses = (
            post(sim, {"model": "m", "messages": USER, "tools": [chat_tool_body]})[0],
            post(sim, {"model": "m", "input": "p", "tools": [flat]}, path="/v1/responses")[0],
        )
        assert chat.status_code == responses.status_code == 400
        assert chat.json()["error"]["param"] == "tools[0].custom.format.grammar.definition"
        assert responses.json()["error"]["param"] == "tools[0].format.definition"
        assert f"Invalid grammar for custom tool 'g' ({syntax})" in responses.json()["error"]["message"]

    def test_a_lark_import_of_files_is_not_read(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, script("{content: a}"))
        form = {"type": "grammar", "syntax": "lark", "definition": '%import secrets.KEY\nstart: "a"'}
        tool = {"type": "custom", "name": "g", "format": form}
        (response,) = post(sim, {"model": "m", "input": "p", "tools": [tool]}, path="/v1/responses")
        assert response.status_code == 400 and response.json()["error"]["code"] == "unsupported_value"
        assert "%import" in response.json()["error"]["message"]

    def test_an_unknown_syntax_is_refused(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, script("{content: a}"))
        tool = {
            "type": "custom",
            "name": "g",
            "format": {"type": "grammar", "syntax": "ebnf", "definition": "x"},
        }
        (response,) = post(sim, {"model": "m", "input": "p", "tools": [tool]}, path="/v1/responses")
        assert response.status_code == 400 and response.json()["error"]["param"] == "tools[0].format.syntax"

    def test_a_huge_grammar_is_not_read(self, tmp_path: Path) -> None:
        sim = simulator(tmp_path, script("{content: a}"))
        huge = "start: " + " | ".join(f'"w{n}"' for n in range(GRAMMAR_CHARS // 5))
        tool = {
            "type": "custom",
            "name": "g",
            "format": {"type": "grammar", "syntax": "lark", "definition": huge},
        }
        started = time.perf_counter()
        (response,) = post(sim, {"model": "m", "input": "p", "tools": [tool]}, path="/v1/responses")
        assert time.perf_counter() - started < 5
        assert response.status_code == 400 and response.json()["error"]["code"] == "unsupported_value"
        assert "sim reads grammars of at most" in response.json()["error"]["message"]

    @pytest.mark.parametrize(
        ("syntax", "definition"),
        [("regex", "((a{1000}){1000}){100}"), ("regex", r"((\p{L}{1000}){1000}){100}"),
         ("lark", "start: /((a{1000}){1000}){100}/")],
    )  # fmt: skip
    def test_a_grammar_whose_repeats_would_take_gigabytes_is_not_read(
        self, tmp_path: Path, syntax: str, definition: str
    ) -> None:
        """`regex` writes counted repeats out when it compiles: sim refuses to, as its own limit."""
        sim = simulator(tmp_path, script("{content: a}"))
        tool = {"type": "custom", "name": "g", "format": {"type": "grammar", "syntax": syntax,
                                                          "definition": definition}}  # fmt: skip
        started = time.perf_counter()
        (response,) = post(sim, {"model": "m", "input": "p", "tools": [tool]}, path="/v1/responses")
        assert time.perf_counter() - started < 5
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["code"] == "unsupported_value" and "more than 100000 copies" in error["message"]

    def test_a_backtracking_lark_terminal_is_judged_in_time(self) -> None:
        grammar = InputGrammar("lark", "start: /(a|aa|a?a)*c/ | /(a|a)*b/")
        started = time.perf_counter()
        for text in ("a" * 30 + "!", "a" * 2_000 + "!", "aab"):
            input_problem(grammar, text)
        assert time.perf_counter() - started < 10
        assert input_problem(grammar, "aab") is None

    def test_a_large_lark_grammar_under_the_limit_is_read_in_time(self) -> None:
        rules = "\n".join(f'r{n}: "k{n}" r{n + 1}?' for n in range(1500)) + '\nr1500: "end"'
        grammar = InputGrammar("lark", "start: r0\n" + rules)
        started = time.perf_counter()
        assert input_problem(grammar, "k0k1") is None
        assert input_problem(grammar, "k0end") is not None
        assert time.perf_counter() - started < 20

    def test_a_catastrophic_regex_does_not_hang_the_judge(self, tmp_path: Path) -> None:
        grammar = InputGrammar("regex", "(a|a|aa)+$b")
        started = time.perf_counter()
        assert input_problem(grammar, "a" * 5_000 + "!") is None  # cannot be judged in time: not refused
        assert time.perf_counter() - started < 5
        assert input_problem(InputGrammar("regex", "(a|a)+"), "b") is not None

    def test_untrusted_input_is_judged_as_text(self) -> None:
        grammar = InputGrammar("lark", PATCH_GRAMMAR)
        assert input_problem(grammar, PATCH) is None
        for hostile in ("\x00" * 100, "*** Begin Patch\n" * 5_000, "\ud800", "{" * 50_000):
            assert input_problem(grammar, hostile) is not None


class TestScenarios:
    def test_a_call_with_arguments_and_input_is_rejected(self, tmp_path: Path) -> None:
        path = tmp_path / "s.yaml"
        path.write_text(script("{tool_calls: [{name: note, input: hi, arguments: {a: 1}}]}"))
        with pytest.raises(ScenarioError, match=r"`arguments` .* or `input` .*not both"):
            load_scenario(path)

    def test_a_declared_grammar_checks_scripted_inputs_when_the_scenario_loads(self, tmp_path: Path) -> None:
        path = tmp_path / "s.yaml"
        tools = f"tools: [{{name: cmd, format: {{type: grammar, syntax: regex, definition: '{REGEX}'}}}}]"
        path.write_text(f"prompt: p\n{tools}\nreplies:\n  - tool_calls: [{{name: cmd, input: 'ls 1'}}]\n")
        assert load_scenario(path).replies[0].tool_calls[0].input == "ls 1"
        path.write_text(f"prompt: p\n{tools}\nreplies:\n  - tool_calls: [{{name: cmd, input: LS}}]\n")
        with pytest.raises(ScenarioError, match=r"replies\[0\]\.tool_calls\[0\]\.input: .*regex grammar"):
            load_scenario(path)
        path.write_text(f"prompt: p\n{tools}\nreplies:\n  - tool_calls: [{{name: cmd, arguments: {{}}}}]\n")
        with pytest.raises(ScenarioError, match="custom tool: calls have `input`"):
            load_scenario(path)
        path.write_text(
            "prompt: p\ntools: [{name: g, format: {type: grammar, syntax: regex, definition: '('}}]"
            "\nreplies: [{content: hi}]\n"
        )
        with pytest.raises(ScenarioError, match=r"tools\[0\]\.format\.definition: the regex grammar cannot"):
            load_scenario(path)


PLAYED = f"""
prompt: p
tools:
  - {{name: cmd, format: {{type: grammar, syntax: regex, definition: '{REGEX}'}}}}
  - {{name: note, format: {{type: text}}}}
results: {{call_1: listed, call_2: noted}}
replies:
  - tool_calls: [{{name: cmd, input: ls 1}}, {{name: note, input: "not {{json"}}]
    expect_request: {{tools: [cmd, note]}}
  - content: done
expect:
  final_text: done
  tool_results: {{call_1: {{content: listed}}, call_2: {{content: noted}}}}
"""


@pytest.mark.parametrize("api", [Api.chat, Api.responses])
@pytest.mark.parametrize("via", ["direct", "sdk"])
def test_the_loop_plays_a_scenario_with_custom_tools(tmp_path: Path, api: Api, via: Via) -> None:
    """sim's own loop offers the scenario's custom tools as custom tools and hands their input over as text;
    over the Responses API their results go back as `custom_tool_call_output` items."""
    path = tmp_path / "s.yaml"
    path.write_text(PLAYED)
    report = asyncio.run(play_file(path, via=via, api=api))
    assert report.problems == () and report.outcome == "completed", report.problems


def test_the_responses_client_answers_custom_calls_with_their_own_items() -> None:
    custom = ToolCall(id="c1", name="note", arguments="x", kind="custom")
    function = ToolCall(id="c2", name="f", arguments="{}")
    messages: list[ChatMessage] = [
        SystemMessage(content="s"),
        UserMessage(content="p"),
        AssistantMessage(tool_calls=(custom, function)),
        ToolMessage(tool_call_id="c1", content="a"),
        ToolMessage(tool_call_id="c2", content="b"),
    ]
    body = json.loads(ItemEncoder().body(ModelRequest(messages), {"model": "m"}))
    assert [item.get("type") for item in body["input"]][-4:] == [
        "custom_tool_call",
        "function_call",
        "custom_tool_call_output",
        "function_call_output",
    ]
    assert untolerated("CreateResponse", body) == []


def test_a_custom_tool_gets_its_input_and_a_function_call_of_it_is_an_error_result() -> None:
    tool = ToolDefinition(
        "note", "Notes.", AnyArguments, "read", lambda arguments, context: ToolResult.ok("ok"), kind="custom"
    )
    snapshot = ToolRegistry([tool]).snapshot()
    prepared = snapshot.prepare(ToolCall(id="c", name="note", arguments="{not json", kind="custom"))
    assert isinstance(prepared, PreparedCall) and prepared.arguments == CustomInput(input="{not json")
    refused = snapshot.prepare(ToolCall(id="c", name="note", arguments="{}"))
    assert isinstance(refused, ToolResult) and refused.error_code == "invalid_arguments"
    assert tool.spec() == ToolSpec("note", "Notes.", {}, "custom")


def test_function_calls_dump_as_before() -> None:
    """Transcripts and dumps of function calls stay byte-stable; a custom call says what it is."""
    call = ToolCall(id="c", name="f", arguments="{}")
    assert call.model_dump_json() == '{"id":"c","name":"f","arguments":"{}"}'
    custom = ToolCall(id="c", name="f", arguments="x", kind="custom")
    assert ToolCall.model_validate_json(custom.model_dump_json()) == custom
    reply = ModelReply.calling(custom)
    assert isinstance(reply.message, AssistantMessage) and ModelRequest([]).tools == ()


def test_a_recorded_conversation_with_custom_calls_converts_to_a_scenario_that_serves(tmp_path: Path) -> None:
    """`sim convert` writes a custom call as `input:` and its tool with its `format`: the scenario loads,
    its input checked against the grammar, and plays."""
    user = {"role": "user", "content": "List."}
    call = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": "cmd", "input": "ls 1"}
    output = {"type": "custom_tool_call_output", "call_id": "call_1", "output": "a.py"}
    text = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "a.py", "annotations": []}]}  # fmt: skip

    def interaction(items: list[Any], out: list[Any], number: int) -> dict[str, Any]:
        body = {"id": f"resp_{number}", "object": "response", "status": "completed", "output": out}
        request = json.dumps({"model": "m", "input": items, "tools": [RESP_REGEX]})
        return {
            "request": {"method": "POST", "uri": "https://api.openai.com/v1/responses", "headers": {},
                        "body": request},
            "response": {"status": {"code": 200, "message": "OK"}, "headers": {},
                         "body": {"string": json.dumps(body)}},
        }  # fmt: skip

    cassette = tmp_path / "cassette.yaml"
    interactions = [interaction([user], [call], 1), interaction([user, call, output], [text], 2)]
    cassette.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}))
    result = CliRunner().invoke(app, ["convert", str(cassette), "-o", str(tmp_path / "out.yaml")])
    assert result.exit_code == 0, result.output
    scenario = load_scenario(tmp_path / "out.yaml")
    assert scenario.replies[0].tool_calls[0].input == "ls 1"
    assert asyncio.run(play_file(tmp_path / "out.yaml", api=Api.responses)).problems == ()


_DOUBLING = "\n".join(f"R{n}: R{n + 1} R{n + 1}" for n in range(40)) + '\nR40: "a"\nstart: R0'
_RULES = range(1000)
_CUBIC = "start: " + " ".join(f"r{n}" for n in _RULES) + "\n" + "\n".join(f'r{n}: "x"' for n in _RULES)


@pytest.mark.parametrize(
    "definition",
    ['%import common.WORD.X\nstart: "a"', "start: /(?R)/", r"start: /\p{L}+/", '%declare X\nstart: X | "a"',
     _DOUBLING, _CUBIC],
    ids=["import opening a file", "recursive terminal", "terminal re cannot read", "declared terminal",
         "terminals doubling", "cubic earley build"],
)  # fmt: skip
def test_a_lark_grammar_that_crashed_or_hung_the_reader_is_not_read(
    tmp_path: Path, definition: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each was a 500 (a file opened by `%import`, `MemoryError`, `re.error`, `KeyError` when an input was
    judged) or took minutes to read; now sim's own refusal, in time, and the host answers the next request."""
    from sim.wire import custom_tools

    monkeypatch.setattr(custom_tools, "READ_SECONDS", 1.0)  # the bound's own size is not what is shown
    sim = simulator(tmp_path, script("{content: a}", "{content: b}"))
    form = {"type": "grammar", "syntax": "lark", "definition": definition}
    tool = {"type": "custom", "name": "g", "format": form}
    started = time.perf_counter()
    refused, after = post(
        sim, {"model": "m", "input": "p", "tools": [tool]}, {"model": "m", "input": "p"}, path="/v1/responses"
    )
    assert time.perf_counter() - started < 15
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == "unsupported_value"
    assert refused.json()["error"]["param"] == "tools[0].format.definition"
    assert after.status_code == 200


def test_large_grammars_read_are_kept_only_a_few_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A read lark grammar near the length limit holds tens of MB: kept by the hundred, distinct hostile
    grammars filled the memory; each large one judged is dropped once a few newer ones are kept (what counts
    as large made smaller here, so that the grammars read fast)."""
    import gc
    import weakref

    from sim.wire import custom_tools

    monkeypatch.setattr(custom_tools, "KEPT_CHARS", 2_000)
    read = []
    for n in range(8):
        definition = "start: " + " | ".join(f'"w{word}x{n}"' for word in range(200))
        assert len(definition) > custom_tools.KEPT_CHARS
        grammar = InputGrammar("lark", definition)
        assert input_problem(grammar, f"w1x{n}") is None
        read.append(weakref.ref(custom_tools.lark_parser(grammar)))
    gc.collect()
    assert sum(parser() is not None for parser in read) <= 4


def test_the_grammars_of_one_request_are_read_within_a_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each grammar read within its own limit, a request offering many slow ones was read one after another
    (a minute and more for a dozen); now sim's own refusal once the request's budget is spent (the budget
    made smaller here: its size is not what is shown)."""
    from sim.wire import custom_tools

    monkeypatch.setattr(custom_tools, "REQUEST_READ_SECONDS", 1.5)

    sim = simulator(tmp_path, script("{content: a}"))

    def slow(n: int) -> dict[str, Any]:
        rules = range(150)  # a quarter second each: far from its own limit on a slow, busy box
        definition = "start: " + " ".join(f"r{k}x{n}" for k in rules) + "\n"
        definition += "\n".join(f'r{k}x{n}: "x"' for k in rules)
        return {"type": "custom", "name": f"g{n}",
                "format": {"type": "grammar", "syntax": "lark", "definition": definition}}  # fmt: skip

    started = time.perf_counter()
    body = {"model": "m", "input": "p", "tools": [slow(n) for n in range(40)]}
    (response,) = post(sim, body, path="/v1/responses")
    assert time.perf_counter() - started < custom_tools.REQUEST_READ_SECONDS + 2 * custom_tools.READ_SECONDS
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "unsupported_value" and "grammars of one request" in error["message"]
