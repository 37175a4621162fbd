from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from sim.player import PlayReport, Via, play_file, play_scenario
from sim.scenario import load_scenario
from sim.scenario.schema import RequestExpectation, Scenario
from sim.wire import Api

ECHO = """
prompt: Run `echo 42`.
commands:
  - {command: echo 42, output: "42"}
replies:
  - tool_calls: [{id: call_1, name: shell, arguments: {command: echo 42}}]
    expect_request:
      message_count: 2
      last_message: {role: user, content: Run `echo 42`.}
      tools: [shell]
  - content: It printed 42.
    expect_request:
      message_count: 4
      last_message: {role: tool, tool_call_id: call_1, content: "42"}
expect:
  outcome: completed
  final_text: It printed 42.
  turns: 2
  tool_results:
    call_1: {content: "42", is_error: false}
"""


def play(tmp_path: Path, text: str) -> PlayReport:
    path = tmp_path / "case.yaml"
    path.write_text(textwrap.dedent(text))
    return asyncio.run(play_file(path))


def test_matching_run_passes_with_a_transcript(tmp_path: Path) -> None:
    report = play(tmp_path, ECHO)
    assert report.problems == ()
    assert report.passed
    assert (report.outcome, report.final_text, report.turns) == ("completed", "It printed 42.", 2)
    told = [line.text for line in report.transcript]
    assert told[0] == "user: Run `echo 42`."
    assert "  result call_1: 42" in told
    assert told[-1] == "completed in 2 turns: It printed 42."


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ("outcome: completed", "outcome: max_turns", "expect.outcome: expected 'max_turns', got 'completed'"),
        ("final_text: It printed 42.", "final_text: It printed 43.",
         "expect.final_text: expected 'It printed 43.', got 'It printed 42.'"),
        ("turns: 2", "turns: 3", "expect.turns: expected 3, got 2"),
        ('call_1: {content: "42", is_error: false}', 'call_1: {content: "43"}',
         "expect.tool_results.call_1.content: expected '43', got '42'"),
        ('call_1: {content: "42", is_error: false}', "call_1: {is_error: true}",
         "expect.tool_results.call_1.is_error: expected True, got False"),
        ('call_1: {content: "42", is_error: false}', "call_1: {error_code: shell_failed}",
         "expect.tool_results.call_1.error_code: expected 'shell_failed', got None"),
        ('call_1: {content: "42", is_error: false}', "call_9: {content: x}",
         "expect.tool_results.call_9: no call with this id ran"),
    ],
    ids=[
        "outcome", "final_text", "turns", "result content", "result is_error", "result error_code",
        "result of a call that never ran",
    ],
)  # fmt: skip
def test_each_differing_field_is_reported(tmp_path: Path, old: str, new: str, problem: str) -> None:
    assert old in ECHO
    report = play(tmp_path, ECHO.replace(old, new))
    assert not report.passed
    assert report.problems == (problem,)


def refused(problem: str, *, number: int) -> tuple[str, ...]:
    """The problems of ECHO's run when its request `number` differs from its `expect_request`: the
    difference, and what a run that ends with the 400 answering it leaves undone, in the order reported."""
    ended = f"expect.outcome: expected 'completed', got 'api_error' (HTTP 400: {problem})"
    missing = "expect.final_text: expected 'It printed 42.', got None"
    if number == 2:
        return (problem, ended, missing)
    unused = (
        "simulator for case has 1 unused of 2 scripted replies",
        "scripted commands never run: 'echo 42'",
    )
    never = ("expect.turns: expected 2, got 1", "expect.tool_results.call_1: no call with this id ran")
    return (problem, *unused, ended, missing, *never)


@pytest.mark.parametrize("via", ["direct", "sdk"])
@pytest.mark.parametrize(
    ("old", "new", "problem", "number"),
    [
        ("message_count: 4", "message_count: 5",
         "replies[1].expect_request.message_count: expected 5, got 4", 2),
        ('tool_call_id: call_1, content: "42"}', 'tool_call_id: call_1, content: "41"}',
         "replies[1].expect_request.last_message.content: expected '41', got '42'", 2),
        ("last_message: {role: user,", "last_message: {role: assistant,",
         "replies[0].expect_request.last_message.role: expected 'assistant', got 'user'", 1),
        ("tools: [shell]", "tools: []", "replies[0].expect_request.tools: expected [], got ['shell']", 1),
    ],
    ids=["message_count", "last content", "last role", "tools"],
)  # fmt: skip
def test_a_request_that_differs_from_its_expect_request_is_answered_with_the_difference(
    tmp_path: Path, via: Via, old: str, new: str, problem: str, number: int
) -> None:
    """The script's answerer checks each request as it comes and answers a differing one with a 400 saying
    how it differs: the run ends there, whichever client the loop asks it through."""
    assert old in ECHO
    path = tmp_path / "case.yaml"
    path.write_text(textwrap.dedent(ECHO.replace(old, new)))
    report = asyncio.run(play_file(path, via=via))
    assert report.problems == refused(problem, number=number)


def test_several_differences_are_all_reported(tmp_path: Path) -> None:
    report = play(
        tmp_path, ECHO.replace("turns: 2", "turns: 5").replace("It printed 42.\n  turns", "x\n  turns")
    )
    assert len(report.problems) == 2


def test_outcome_difference_says_why(tmp_path: Path) -> None:
    report = play(tmp_path, "prompt: p\nreplies: [{content: null}]\n")
    assert report.problems == (
        "expect.outcome: expected 'completed', got 'no_final_text'"
        " (Model stopped without final text or tool calls)",
    )


def test_expect_request_for_a_reply_never_requested(tmp_path: Path) -> None:
    text = """
    prompt: p
    replies:
      - {content: cut, finish_reason: length}
      - content: never
        expect_request: {message_count: 3}
    expect: {outcome: incomplete}
    """
    report = play(tmp_path, text)
    assert report.problems == ("simulator for case has 1 unused of 2 scripted replies",)


class TestStrictness:
    def test_unused_reply(self, tmp_path: Path) -> None:
        report = play(tmp_path, "prompt: p\nreplies: [{content: one}, {content: two}]\n")
        assert report.problems == ("simulator for case has 1 unused of 2 scripted replies",)

    def test_request_without_a_reply(self, tmp_path: Path) -> None:
        text = """
        prompt: p
        commands: [{command: ls}]
        replies:
          - tool_calls: [{name: shell, arguments: {command: ls}}]
        """
        report = play(tmp_path, text)
        assert report.outcome == "api_error"
        exhausted = "scenario case has no reply left for request 2 (it scripts 1)"
        assert report.problems == (
            exhausted,
            f"expect.outcome: expected 'completed', got 'api_error' (HTTP 400: {exhausted})",
        )

    def test_unscripted_command_is_named(self, tmp_path: Path) -> None:
        text = """
        prompt: p
        replies:
          - tool_calls: [{name: shell, arguments: {command: rm -rf /}}]
          - content: done
        """
        report = play(tmp_path, text)
        assert report.problems == ("unscripted command: 'rm -rf /'",)

    def test_unused_command(self, tmp_path: Path) -> None:
        report = play(tmp_path, "prompt: p\ncommands: [{command: ls}]\nreplies: [{content: done}]\n")
        assert report.problems == ("scripted commands never run: 'ls'",)

    def test_approvals_running_out(self, tmp_path: Path) -> None:
        text = """
        prompt: p
        approvals: [yes]
        commands: [{command: ls}, {command: pwd}]
        replies:
          - tool_calls: [{name: shell, arguments: {command: ls}}, {name: shell, arguments: {command: pwd}}]
          - content: done
        """
        report = play(tmp_path, text)
        assert report.problems == ("approval request 2 (call call_2, shell) has no scripted answer",)

    def test_unused_approval_answers(self, tmp_path: Path) -> None:
        report = play(tmp_path, "prompt: p\napprovals: [yes, no]\nreplies: [{content: done}]\n")
        assert report.problems == ("2 scripted approval answer(s) never used",)

    def test_deny_all(self, tmp_path: Path) -> None:
        text = """
        prompt: p
        approvals: deny
        replies:
          - tool_calls: [{name: shell, arguments: {command: ls}}]
          - content: done
        expect:
          tool_results: {call_1: {content: "Error [permission_denied]: The call was denied"}}
        """
        assert play(tmp_path, text).passed


def test_file_that_does_not_load_is_a_failed_report(tmp_path: Path) -> None:
    report = play(tmp_path, "prompt: p\n")
    assert not report.passed
    assert report.problems == (f"{tmp_path / 'case.yaml'}:1:1: missing required key 'replies'",)


def test_system_prompt_and_tools_are_offered_as_written(tmp_path: Path) -> None:
    text = """
    prompt: p
    system_prompt: Be terse.
    tools: []
    replies:
      - content: ok
        expect_request: {message_count: 2, tools: []}
    """
    assert play(tmp_path, text).passed


BUNDLED = sorted((Path(__file__).resolve().parents[1] / "scenarios").glob("*.yaml"))


def test_bundled_scenarios_cover_every_outcome_and_shell_error_code() -> None:
    reports = [asyncio.run(play_file(path)) for path in BUNDLED]
    assert all(report.passed for report in reports), [r.problems for r in reports if not r.passed]
    outcomes = {report.outcome for report in reports}
    assert outcomes >= {
        "completed",
        "max_turns",
        "incomplete",
        "content_filter",
        "no_final_text",
        "api_error",
    }
    codes = {
        text.split("Error [")[1].split("]")[0]
        for r in reports
        for text in (line.text for line in r.transcript)
        if "Error [" in text
    }
    assert codes >= {
        "unknown_tool",
        "invalid_json",
        "invalid_arguments",
        "permission_denied",
        "shell_start_failed",
        "shell_timeout",
        "shell_failed",
    }
    for path in BUNDLED:
        assert "description:" in path.read_text(), f"{path.name} has no description"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_bundled_scenario_passes_through_the_real_sdk_and_simulator(path: Path, stream: bool) -> None:
    report = asyncio.run(play_file(path, via="sdk", stream=stream))
    assert report.problems == ()
    direct = asyncio.run(play_file(path))
    assert (report.outcome, report.final_text, report.turns) == (
        direct.outcome,
        direct.final_text,
        direct.turns,
    )


@pytest.mark.parametrize(
    ("stream", "chain"), [(False, False), (True, False), (False, True), (True, True)],
    ids=["json", "sse", "json-chained", "sse-chained"],
)  # fmt: skip
@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_bundled_scenario_ends_over_the_responses_api_as_over_chat(
    path: Path, stream: bool, chain: bool
) -> None:
    report = asyncio.run(play_file(path, via="sdk", stream=stream, api=Api.responses, chain=chain))
    assert report.problems == ()
    chat = asyncio.run(play_file(path, via="sdk", stream=stream))
    same = ("outcome", "final_text", "turns", "transcript")
    assert [getattr(report, name) for name in same] == [getattr(chat, name) for name in same]


def failing(scenario: Scenario) -> Scenario:
    """`scenario` with expectations it cannot meet: a first request of one message more than it sends,
    and a final text no script ends with."""
    first, *rest = scenario.replies
    expectation = RequestExpectation(message_count=1 + (3 if scenario.system_prompt != "" else 2))
    expect = scenario.expect.model_copy(update={"final_text": "no script ends with this"})
    return scenario.model_copy(
        update={
            "replies": [first.model_copy(update={"expect_request": expectation}), *rest],
            "expect": expect,
        }
    )


@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_both_clients_find_the_same_problems_in_a_bundled_scenario(path: Path) -> None:
    """Asked directly or through the real SDK and the host, the script judges the run alike: the same
    problems, worded the same, as it is written and with expectations it cannot meet."""
    scenario = load_scenario(path)
    for variant in (scenario, failing(scenario)):
        direct, sdk = (asyncio.run(play_scenario(variant, path=path, via=via)) for via in ("direct", "sdk"))
        assert direct.problems == sdk.problems
        assert (direct.outcome, direct.final_text, direct.turns) == (sdk.outcome, sdk.final_text, sdk.turns)
        assert bool(direct.problems) is (variant is not scenario)


def test_via_sdk_reports_what_the_simulator_saw(tmp_path: Path) -> None:
    text = """
    prompt: p
    replies:
      - content: one
        expect_request: {message_count: 5}
      - content: never asked for
    """
    report = play(tmp_path, text)
    path = tmp_path / "case.yaml"
    report = asyncio.run(play_file(path, via="sdk"))
    assert "replies[0].expect_request.message_count: expected 5, got 2" in report.problems
    assert "simulator for case has 1 unused of 2 scripted replies" in report.problems
    assert report.outcome == "api_error"


class TestScriptedTools:
    TEXT = """
    prompt: What is 2 + 2?
    tools:
      - name: add
        description: Adds two numbers.
        parameters: {type: object, properties: {a: {type: integer}, b: {type: integer}}, required: [a, b]}
    results:
      call_1: "4"
      call_2: {content: "Error [tool_execution_error]: Tool execution failed", is_error: true,
               error_code: tool_execution_error}
    replies:
      - tool_calls:
          - {id: call_1, name: add, arguments: {a: 2, b: 2}}
          - {id: call_2, name: add, arguments: {a: 1}}
        expect_request:
          tools: [add]
      - content: It is 4.
    expect:
      final_text: It is 4.
      tool_results:
        call_1: {content: "4", is_error: false}
        call_2: {is_error: true, error_code: tool_execution_error}
    """

    def test_results_answer_calls_by_id_and_the_schema_is_shown_as_given(self, tmp_path: Path) -> None:
        report = play(tmp_path, self.TEXT)
        assert report.problems == ()
        sdk = asyncio.run(play_file(tmp_path / "case.yaml", via="sdk"))
        assert sdk.problems == ()

    def test_a_call_without_a_scripted_result(self, tmp_path: Path) -> None:
        report = play(tmp_path, self.TEXT.replace("call_2: {content", "call_9: {content"))
        assert report.problems == ("no scripted result for call call_2 (add) in turn 1",)

    def test_unused_results(self, tmp_path: Path) -> None:
        text = self.TEXT.replace('call_1: "4"', 'call_1: "4"\n      spare: "never"')
        assert play(tmp_path, text).problems == ("scripted results never used: spare",)


def test_a_scripted_handler_can_raise(tmp_path: Path) -> None:
    text = """
    prompt: p
    tools: [{name: flaky}]
    results: {call_1: {raises: true}}
    replies:
      - tool_calls: [{name: flaky}]
      - content: ok
    expect:
      tool_results: {call_1: {content: "Error [tool_execution_error]: Tool execution failed", is_error: true}}
    """
    assert play(tmp_path, text).problems == ()


def test_a_tool_can_become_available_after_a_call(tmp_path: Path) -> None:
    text = """
    prompt: p
    tools:
      - {name: install}
      - {name: deploy, available_after: call_1}
    results: {call_1: installed, call_3: deployed}
    replies:
      - tool_calls: [{name: install}, {name: deploy}]
        expect_request: {tools: [install]}
      - tool_calls: [{name: deploy}]
        expect_request: {tools: [install, deploy]}
      - content: ok
    expect:
      tool_results:
        call_2: {error_code: unknown_tool}
        call_3: {content: deployed}
    """
    assert play(tmp_path, text).problems == ()
    assert asyncio.run(play_file(tmp_path / "case.yaml", via="sdk")).problems == ()


def test_a_tool_becomes_available_after_a_shell_call(tmp_path: Path) -> None:
    text = """
    prompt: p
    tools:
      - shell
      - {name: deploy, available_after: call_1}
    commands: [{command: make, output: built}]
    results: {call_2: deployed}
    replies:
      - tool_calls: [{name: shell, arguments: {command: make}}]
        expect_request: {tools: [shell]}
      - tool_calls: [{name: deploy}]
        expect_request: {tools: [shell, deploy]}
      - content: ok
    expect: {tool_results: {call_2: {content: deployed}}}
    """
    assert play(tmp_path, text).problems == ()
    assert asyncio.run(play_file(tmp_path / "case.yaml", via="sdk")).problems == ()


def test_reused_ids_get_each_turns_result_and_unlock_by_turn(tmp_path: Path) -> None:
    text = """
    prompt: p
    tools:
      - {name: step}
      - {name: deploy, available_after: call_0@2}
    results: {call_0@1: first, call_0@2: second, call_0@3: deployed}
    replies:
      - tool_calls: [{id: call_0, name: step}]
        expect_request: {tools: [step]}
      - tool_calls: [{id: call_0, name: step}]
        expect_request: {tools: [step]}
      - tool_calls: [{id: call_0, name: deploy}]
        expect_request: {tools: [step, deploy]}
      - content: ok
    expect:
      tool_results:
        call_0@1: {content: first}
        call_0@2: {content: second}
        call_0@3: {content: deployed}
    """
    assert play(tmp_path, text).problems == ()
    assert asyncio.run(play_file(tmp_path / "case.yaml", via="sdk")).problems == ()


@pytest.mark.parametrize("api", list(Api))
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_scripted_error_can_fail_a_stream_after_it_started(tmp_path: Path, api: Api, stream: bool) -> None:
    text = """
    prompt: p
    replies:
      - error: {status: 500, message: The model fell over mid-stream., type: server_error, in_stream: true}
    expect: {outcome: api_error}
    """
    report = play(tmp_path, text)
    assert report.problems == ()
    over_sdk = asyncio.run(play_file(tmp_path / "case.yaml", via="sdk", api=api, stream=stream))
    assert over_sdk.problems == ()
    assert "The model fell over mid-stream." in over_sdk.transcript[-1].text
    assert ("HTTP 500" in over_sdk.transcript[-1].text) is not stream  # in the stream, the status is 200


REPEATED_IDS_WITH_REASONING = """
prompt: Weather in Paris, then Rome?
tools: [{name: lookup, parameters: {type: object}}]
results: {call_0@1: Paris is sunny, call_0@2: Rome is rainy}
replies:
  - tool_calls: [{id: call_0, name: lookup, arguments: {city: Paris}}]
    reasoning: Paris first.
  - tool_calls: [{id: call_0, name: lookup, arguments: {city: Rome}}]
    reasoning: Now Rome.
  - content: Sunny in Paris, rainy in Rome.
expect: {final_text: "Sunny in Paris, rainy in Rome.", turns: 3}
"""


@pytest.mark.parametrize("chain", [False, True], ids=["stateless", "chained"])
def test_reasoning_with_a_call_id_repeated_across_turns_plays_over_the_responses_api(
    tmp_path: Path, chain: bool
) -> None:
    """Ids need only be unique within one reply; the reasoning served with each comes back unchanged."""
    path = tmp_path / "repeated.yaml"
    path.write_text(REPEATED_IDS_WITH_REASONING)
    for stream in (False, True):
        report = asyncio.run(play_file(path, via="sdk", stream=stream, api=Api.responses, chain=chain))
        assert report.problems == (), report.problems
