from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from sim import ModelAPIError, ScenarioError
from sim.adapters.answerer_model import AnswererModel
from sim.core.messages import UserMessage
from sim.core.model import ModelReply, ModelRequest
from sim.scenario import load_scenario, scenario_files
from sim.scenario.answerer import ScriptAnswerer
from sim.scenario.schema import Scenario
from sim.scenario.world import scripted_reply
from tests.commands import in_process

MALFORMED = sorted((Path(__file__).parent / "malformed").glob("*.yaml"))


def write(tmp_path: Path, text: str, name: str = "scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def scripted_replies(scenario: Scenario) -> list[ModelReply]:
    """The reply each scripted entry stands for."""
    return [
        scripted_reply(spec, ids) for spec, ids in zip(scenario.replies, scenario.call_ids(), strict=True)
    ]


def first_answer(scenario: Scenario) -> ModelReply | Exception:
    """What the loop gets for its first request, asking the scenario's script directly."""
    model = AnswererModel(ScriptAnswerer(scenario), scenario.model)
    try:
        return asyncio.run(model.complete(ModelRequest([UserMessage(content="p")])))
    except ModelAPIError as error:
        return error


@pytest.mark.parametrize("path", MALFORMED, ids=[p.stem for p in MALFORMED])
def test_malformed_file_is_rejected_with_file_line_column(path: Path) -> None:
    """Each file's first line says the error it must produce: `# error: LINE:COLUMN: what`."""
    expected = path.read_text().splitlines()[0].removeprefix("# error: ")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(caught.value) == f"{path}:{expected}"
    assert "\n" not in str(caught.value)


def test_there_are_at_least_ten_malformed_files() -> None:
    assert len(MALFORMED) >= 10


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"missing\.yaml: cannot read"):
        load_scenario(tmp_path / "missing.yaml")


def test_empty_file(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r":1:1: a scenario must be a mapping"):
        load_scenario(write(tmp_path, ""))


class TestArguments:
    def test_mapping_becomes_the_compact_json_the_model_would_send(self, tmp_path: Path) -> None:
        scenario = load_scenario(
            write(
                tmp_path, "prompt: p\nreplies:\n  - tool_calls: [{name: shell, arguments: {command: é 1}}]\n"
            )
        )
        (reply,) = scripted_replies(scenario)
        assert reply.message.tool_calls[0].arguments == '{"command":"é 1"}'
        assert json.loads(reply.message.tool_calls[0].arguments) == {"command": "é 1"}

    @pytest.mark.parametrize("raw", ["{", "[1, 2]", "", "null", '{"command": "ls"}'])
    def test_string_is_kept_raw(self, tmp_path: Path, raw: str) -> None:
        text = f"prompt: p\nreplies:\n  - tool_calls: [{{name: shell, arguments: {json.dumps(raw)}}}]\n"
        (reply,) = scripted_replies(load_scenario(write(tmp_path, text)))
        assert reply.message.tool_calls[0].arguments == raw

    def test_ids_default_to_call_n_counting_across_the_file(self, tmp_path: Path) -> None:
        text = (
            "prompt: p\nreplies:\n"
            "  - tool_calls: [{name: a}, {id: mine, name: b}]\n"
            "  - tool_calls: [{name: c}]\n"
        )
        scenario = load_scenario(write(tmp_path, text))
        assert scenario.call_ids() == [["call_1", "mine"], ["call_3"]]


class TestReplies:
    def test_finish_reason_is_derived_or_scripted(self, tmp_path: Path) -> None:
        text = (
            "prompt: p\nreplies:\n"
            "  - tool_calls: [{name: shell}]\n"
            "  - content: done\n"
            "  - {content: cut, finish_reason: length}\n"
            "  - {content: x, tool_calls: [{name: shell}], finish_reason: stop}\n"
        )
        reasons = [r.finish_reason for r in scripted_replies(load_scenario(write(tmp_path, text)))]
        assert reasons == ["tool_calls", "stop", "length", "stop"]

    def test_error_reply_is_the_typed_error_the_adapter_raises(self, tmp_path: Path) -> None:
        text = (
            "prompt: p\nreplies:\n  - error: {status: 429, message: Slow down, type: rate_limit_error,"
            " code: rate_limit_exceeded, retry_after: 2.5}\n"
        )
        error = first_answer(load_scenario(write(tmp_path, text)))
        assert isinstance(error, ModelAPIError)
        assert str(error) == "HTTP 429: Slow down"
        assert (error.status, error.error_type, error.code, error.retry_after) == (
            429,
            "rate_limit_error",
            "rate_limit_exceeded",
            2.5,
        )

    def test_numbers_in_text_fields_are_text(self, tmp_path: Path) -> None:
        scenario = load_scenario(
            write(tmp_path, "prompt: p\nreplies:\n  - content: 42\nexpect: {final_text: 42}\n")
        )
        assert scenario.replies[0].content == "42"
        assert scenario.expect.final_text == "42"


def test_name_defaults_to_the_file_name(tmp_path: Path) -> None:
    assert (
        load_scenario(write(tmp_path, "prompt: p\nreplies: [{content: x}]\n", "my-case.yml")).name
        == "my-case"
    )


def test_scenario_files_searches_folders_recursively_in_order(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    for name in ["b/z.yaml", "a.yml", "b/notes.txt", "c.yaml"]:
        (tmp_path / name).write_text("x")
    found = scenario_files([tmp_path])
    assert [p.relative_to(tmp_path).as_posix() for p in found] == ["a.yml", "b/z.yaml", "c.yaml"]


def test_a_plain_id_used_in_several_turns_must_say_which(tmp_path: Path) -> None:
    path = tmp_path / "ambiguous.yaml"
    path.write_text(
        "prompt: p\n"
        "tools: [{name: add}]\n"
        "results:\n"
        "  call_0: three\n"
        "replies:\n"
        "  - tool_calls: [{id: call_0, name: add}]\n"
        "  - tool_calls: [{id: call_0, name: add}]\n"
        "  - content: done\n"
    )
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(caught.value) == (
        f"{path}:4:3: results.call_0: the call id call_0 is used in turns 1, 2: write call_0@1 or call_0@2"
    )


def test_turn_keys_name_each_turns_call(tmp_path: Path) -> None:
    path = tmp_path / "turns.yaml"
    path.write_text(
        "prompt: p\n"
        "tools: [{name: add}]\n"
        "results: {call_0@1: three, call_0@2: five}\n"
        "replies:\n"
        "  - tool_calls: [{id: call_0, name: add}]\n"
        "  - tool_calls: [{id: call_0, name: add}]\n"
        "  - content: done\n"
        "expect: {tool_results: {call_0@1: {content: three}, call_0@2: {content: five}}}\n"
    )
    assert load_scenario(path).results == {"call_0@1": "three", "call_0@2": "five"}


def test_unquoted_number_like_text_keeps_its_spelling(tmp_path: Path) -> None:
    path = tmp_path / "numbers.yaml"
    path.write_text(
        "prompt: 1.50\n"
        "max_turns: 3\n"
        "commands:\n"
        "  - {command: python --version, output: 3.10, exit_code: 0}\n"
        "  - {command: stat, output: 010}\n"
        "  - {command: printf, output: 0x1F}\n"
        "replies:\n"
        "  - content: 3.10\n"
        "expect: {final_text: 3.10, tool_results: {call_1: {content: 007}}}\n"
    )
    scenario = load_scenario(path)
    assert [c.output for c in scenario.commands] == ["3.10", "010", "0x1F"]
    assert (scenario.prompt, scenario.replies[0].content, scenario.expect.final_text) == (
        "1.50",
        "3.10",
        "3.10",
    )
    assert scenario.expect.tool_results["call_1"].content == "007"
    assert (scenario.max_turns, scenario.commands[0].exit_code) == (3, 0)  # numbers stay numbers
    assert type(scenario.max_turns) is int


def test_a_spelling_that_differs_still_fails_the_expectation(tmp_path: Path) -> None:
    import asyncio

    from sim.player import play_file

    path = tmp_path / "differs.yaml"
    path.write_text("prompt: p\nreplies:\n  - content: '3.1'\nexpect: {final_text: 3.10}\n")
    assert asyncio.run(play_file(path)).problems == ("expect.final_text: expected '3.10', got '3.1'",)


@pytest.mark.parametrize(
    ("value", "says"),
    [(".inf", "finite number"), ("-.inf", "finite number"), (".nan", "finite number"),
     ("1e308", "less than or equal to 600"), ("601", "less than or equal to 600")],
)  # fmt: skip
@pytest.mark.parametrize("field", ["first_byte", "between_chunks"])
def test_latency_is_finite_and_bounded(tmp_path: Path, value: str, says: str, field: str) -> None:
    """An endless latency would pass `sim check` and hang whatever plays the scenario."""
    path = tmp_path / "slow.yaml"
    path.write_text(f"prompt: p\nreplies:\n  - content: hi\n    latency: {{{field}: {value}}}\n")
    with pytest.raises(ScenarioError, match=rf"slow\.yaml:4:\d+: replies\[0\]\.latency\.{field}: .*{says}"):
        load_scenario(path)


LOOKUP = "tools: [{name: lookup}]"
CODE_IFF_ERROR = "3:19: results.call_1: error_code must be set exactly when is_error is true"
CHECK_WHAT_PLAY_CHECKS = {
    "is_error without error_code": ("results: {call_1: {is_error: true}}", LOOKUP, CODE_IFF_ERROR),
    "error_code without is_error": ("results: {call_1: {content: x, error_code: e}}", LOOKUP, CODE_IFF_ERROR),
    "a tool name with a space": ("results: {call_1: fine}", "tools: [{name: look up}]",
                                 "2:16: tools[0].name: String should match pattern"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CHECK_WHAT_PLAY_CHECKS))
def test_check_refuses_what_play_would_crash_on_in_one_line(tmp_path: Path, case: str) -> None:
    results, tools, says = CHECK_WHAT_PLAY_CHECKS[case]
    path = tmp_path / "case.yaml"
    replies = "replies:\n  - tool_calls: [{id: call_1, name: lookup}]\n  - content: done\n"
    path.write_text(f"prompt: p\n{tools}\n{results}\n{replies}")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert f"case.yaml:{says}" in str(caught.value)
    report = tmp_path / "play.html"
    played = in_process("play", path, "--report", report)
    assert played.returncode == 1 and "Traceback" not in played.stdout + played.stderr
    assert report.is_file()
