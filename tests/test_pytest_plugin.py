from __future__ import annotations

import pytest

PASSING = """
prompt: hi
replies:
  - content: hello
expect: {final_text: hello}
"""

FAILING = """
prompt: hi
replies:
  - content: hello
expect: {final_text: goodbye, turns: 1}
"""

MALFORMED = "prompt: hi\nreplies:\n  - contnet: x\n"


@pytest.fixture
def scenario_dir(pytester: pytest.Pytester) -> pytest.Pytester:
    folder = pytester.mkdir("cases")
    (folder / "greets.yaml").write_text(PASSING)
    (folder / "nested").mkdir()
    (folder / "nested" / "says-goodbye.yml").write_text(FAILING)
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    return pytester


def test_option_collects_each_file_as_a_test_named_after_it(scenario_dir: pytest.Pytester) -> None:
    result = scenario_dir.runpytest("--sim-scenarios=cases", "-v")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*cases/greets.yaml::greets PASSED*", "*says-goodbye.yml::says-goodbye FAILED*"]
    )


def test_failure_shows_each_differing_field(scenario_dir: pytest.Pytester) -> None:
    result = scenario_dir.runpytest("--sim-scenarios=cases")
    result.stdout.fnmatch_lines(["*expect.final_text: expected 'goodbye', got 'hello'*", "*transcript:*"])


def test_malformed_file_fails_its_test_with_file_line_column(pytester: pytest.Pytester) -> None:
    (pytester.mkdir("cases") / "broken.yaml").write_text(MALFORMED)
    result = pytester.runpytest("--sim-scenarios=cases")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*broken.yaml:3:5: unknown key 'contnet' (did you mean 'content'?)*"])


def test_ini_option(scenario_dir: pytest.Pytester) -> None:
    scenario_dir.makeini("[pytest]\nsim_scenarios = cases\n")
    scenario_dir.runpytest().assert_outcomes(passed=2, failed=1)
    scenario_dir.runpytest("test_plain.py").assert_outcomes(passed=1)
    scenario_dir.runpytest("cases/greets.yaml").assert_outcomes(passed=1)


def test_without_the_option_yaml_files_are_not_tests(scenario_dir: pytest.Pytester) -> None:
    scenario_dir.runpytest().assert_outcomes(passed=1)


def test_works_under_xdist(scenario_dir: pytest.Pytester) -> None:
    result = scenario_dir.runpytest_subprocess("--sim-scenarios=cases", "-n", "2", "-p", "xdist")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*2 workers*"])


def test_cassettes_are_replayed_as_tests_of_either_api(pytester: pytest.Pytester) -> None:
    from pathlib import Path

    import yaml

    bundled = Path(__file__).resolve().parents[1] / "cassettes"
    folder = pytester.mkdir("recorded")
    for source in ("echo-42.yaml", "responses/parallel-calls.yaml"):
        (folder / source.replace("/", "-")).write_text((bundled / source).read_text())
    diverging = yaml.safe_load((bundled / "responses" / "echo-42.yaml").read_text())
    diverging["sim"]["prompt"] = "Something else."
    (folder / "diverges.yaml").write_text(yaml.safe_dump(diverging, sort_keys=False))
    result = pytester.runpytest("--sim-cassettes=recorded", "-v", "-p", "no:randomly")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*recorded/diverges.yaml::diverges FAILED*",
            "*recorded/echo-42.yaml::echo-42 PASSED*",
            "*recorded/responses-parallel-calls.yaml::responses-parallel-calls PASSED*",
            "*cassette *diverges.yaml replayed differently:",
            '*turn 1: input[[]0[]].content: recorded "Run `echo 42` and tell me the result." != now "Some*',
            "*transcript:",
        ]
    )


MARKER_CASSETTE = """interactions:
- request: {method: POST, uri: 'https://api.openai.com/v1/chat/completions', body: '{}', headers: {}}
  response: {status: {code: 200, message: OK}, headers: {}, body: {string: '{}'}}
version: 1
"""


def test_only_cassettes_sim_recorded_are_items_not_the_markers_own(pytester: pytest.Pytester) -> None:
    """`sim_cassettes = cassettes`, as the docs suggest, beside the marker's default
    `cassettes/<module>/<test>.yaml`: the marker's cassettes and other YAML there are not items."""
    from pathlib import Path

    bundled = Path(__file__).resolve().parents[1] / "cassettes"
    folder = pytester.mkdir("cassettes")
    (folder / "echo-42.yaml").write_text((bundled / "echo-42.yaml").read_text())
    (folder / "test_agent").mkdir()
    (folder / "test_agent" / "test_answers.yaml").write_text(MARKER_CASSETTE)
    (folder / "notes.yaml").write_text("owner: someone\nsimilar: true\n")
    (folder / "empty.yml").write_text("")
    pytester.makeini("[pytest]\nsim_cassettes = cassettes\n")
    result = pytester.runpytest("-v", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*cassettes/echo-42.yaml::echo-42 PASSED*"])
    assert "test_answers" not in result.stdout.str()
