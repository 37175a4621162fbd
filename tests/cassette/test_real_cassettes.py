"""`sim show`, `sim check` and `sim convert` on every cassette in ../shared/real-cassettes (both folders:
Chat Completions and the Responses API), and on the bundled ones."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from sim.cassette.audit import audit
from sim.cassette.reader import read_cassette
from sim.cli import app
from sim.player import play_file
from sim.scenario import load_scenario
from sim.wire import Api
from tests.corpus import needs_corpus, real_cassettes

REAL = real_cassettes()
IDS = [p.stem.split("__")[0] + "/" + p.stem.split("__")[1] for p in REAL]
RESPONSES = real_cassettes("responses")
RESPONSES_IDS = ["responses/" + p.stem.split("__")[0] + "/" + p.stem.split("__")[1] for p in RESPONSES]
BUNDLED_ROOT = Path(__file__).resolve().parents[2] / "cassettes"
BUNDLED = sorted(BUNDLED_ROOT.rglob("*.yaml"))
BUNDLED_IDS = [str(p.relative_to(BUNDLED_ROOT).with_suffix("")) for p in BUNDLED]


@needs_corpus
@pytest.mark.parametrize("path", [*REAL, *RESPONSES], ids=[*IDS, *RESPONSES_IDS])
def test_show_tells_every_turn(path: Path) -> None:
    result = CliRunner().invoke(app, ["show", str(path)])
    assert result.exit_code == 0, result.output
    calls = [i for i in read_cassette(path).interactions if i.is_model_call]
    assert result.output.count("\nturn ") == len(calls)
    endings = ("  = finish_reason: ", "  = status: ", "  = HTTP ")
    assert sum(result.output.count(ending) for ending in endings) == len(calls)


@needs_corpus
def test_show_assembles_streamed_tool_calls() -> None:
    path = next(p for p in REAL if p.name.startswith("magentic"))
    output = CliRunner().invoke(app, ["show", str(path)]).output
    assert '  = calls call_8Sp49rZGndlZALo0uq1XvA7A: plus {"a": 2, "b": 3}' in output
    assert '  = calls call_u5dbdPz1mAis8zZVk4ZBqXgL: minus {"a": 3, "b": 2}' in output


@needs_corpus
def test_show_lists_what_is_ignored_and_http_errors() -> None:
    agno = CliRunner().invoke(app, ["show", str(next(p for p in REAL if "agno" in p.name))]).output
    assert "ignored interaction 3: POST https://os-api.agno.com/telemetry/runs (not a model call)" in agno
    vision = CliRunner().invoke(app, ["show", str(next(p for p in REAL if "vision" in p.name))]).output
    assert "  = HTTP 400: Error while downloading" in vision


EXPECTED_SERIOUS = {
    "dd-trace-py": True,
    "magentic": False,
    "mirascope": True,
    "openllmetry__agno": True,
    "openllmetry__azure": False,
    "openllmetry__openai": True,
    "otel-contrib": True,
    "pydantic-ai": False,
}


@needs_corpus
@pytest.mark.parametrize("path", REAL, ids=IDS)
def test_check_flags_what_a_careful_user_would_want_flagged(path: Path) -> None:
    findings = audit(read_cassette(path))
    serious = any(f.severity == "serious" for f in findings)
    prefix = next(p for p in EXPECTED_SERIOUS if path.name.startswith(p))
    assert serious is EXPECTED_SERIOUS[prefix], [f.what for f in findings]
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == (1 if serious else 0)
    assert all(line.startswith(str(path)) for line in result.output.splitlines()[:-2])


@needs_corpus
def test_specific_findings() -> None:
    def whats(prefix: str) -> list[str]:
        return [
            f"{f.severity}: {f.what}"
            for f in audit(read_cassette(next(p for p in REAL if p.name.startswith(prefix))))
        ]

    mirascope = whats("mirascope")
    assert "serious: response header openai-organization is recorded" in mirascope
    assert "serious: response header set-cookie is recorded" in mirascope
    assert "serious: project id in the response" in mirascope
    assert "info: request header cookie is kept, with a placeholder" in mirascope
    assert "serious: request header authorization is recorded" not in mirascope  # only <filtered> there
    assert "serious: bearer token in the request" in whats("otel-contrib")
    assert "warning: not a model call: POST https://os-api.agno.com/telemetry/runs" in whats(
        "openllmetry__agno"
    )
    assert any(w.startswith("warning: HTTP 400 recorded") for w in whats("openllmetry__openai"))
    assert "info: stale content-encoding: gzip on a body stored decoded" in whats("dd-trace-py")
    assert any(w.startswith("info: stale response content-length") for w in whats("openllmetry__azure"))


def test_bundled_cassettes_have_no_findings() -> None:
    result = CliRunner().invoke(app, ["check", *map(str, BUNDLED)])
    assert result.exit_code == 0
    assert result.output.strip().endswith(f"{len(BUNDLED)} ok, 0 failed")


def test_tool_messages_not_paired_are_serious(tmp_path: Path) -> None:
    text = (Path(BUNDLED[0])).read_text().replace('"tool_call_id":"call_1"', '"tool_call_id":"call_zz"', 1)
    assert "call_zz" in text
    (tmp_path / "broken.yaml").write_text(text)
    whats = [f.what for f in audit(read_cassette(tmp_path / "broken.yaml")) if f.severity == "serious"]
    assert any("tool messages not paired with calls: orphan tool result id: call_zz" in w for w in whats), (
        whats
    )


@pytest.mark.parametrize(
    "path", [*REAL, *RESPONSES, *BUNDLED], ids=[*IDS, *RESPONSES_IDS, *BUNDLED_IDS]
)  # fmt: skip
def test_converted_scenarios_play_the_recorded_conversation(path: Path, tmp_path: Path) -> None:
    output = tmp_path / "converted.yaml"
    result = CliRunner().invoke(app, ["convert", str(path), "-o", str(output)])
    assert result.exit_code == 0, result.output
    written = sorted(tmp_path.glob("converted*.yaml"))
    assert len(written) == result.output.count("wrote ")
    for scenario_file in written:
        scenario = load_scenario(scenario_file)
        for via, api in (("direct", Api.chat), ("sdk", Api.chat), ("sdk", Api.responses)):
            report = asyncio.run(play_file(scenario_file, via=via, api=api))  # type: ignore[arg-type]
            assert report.problems == (), (scenario_file.name, via, api)
            if scenario.expect.outcome == "completed":
                assert report.final_text == scenario.expect.final_text


@needs_corpus
def test_responses_specific_findings_and_no_false_alarm() -> None:
    def findings(prefix: str) -> list[tuple[str, str]]:
        path = next(p for p in RESPONSES if p.name.startswith(prefix))
        return [(f.severity, f.what) for f in audit(read_cassette(path))]

    renamed = findings("pydantic-ai__responses_tool_call__stream")
    assert ("info", "the request sends call id fc_67e554a1de488191af0831d35cbe082e0794405d35281ae2 for the"
            " model's call call_kL0PCQV7M2WMoVX8V8OtYSAL (paired by position)") in renamed  # fmt: skip
    assert findings("pydantic-ai__responses_reasoning") == []  # encrypted_content is no secret
    assert ("info", "request header cookie is kept, with a placeholder") in findings(
        "mirascope__responses_auth"
    )
    assert ("serious", "project id in the response") in findings(
        "pydantic-ai__responses_previous"
    )  # a real one


def test_a_function_call_output_answering_no_call_is_serious(tmp_path: Path) -> None:
    text = (BUNDLED_ROOT / "responses" / "echo-42.yaml").read_text()
    text = text.replace('"call_id":"call_1","output"', '"call_id":"call_zz","output"', 1)
    (tmp_path / "orphan.yaml").write_text(text)
    whats = [f.what for f in audit(read_cassette(tmp_path / "orphan.yaml")) if f.severity == "serious"]
    assert "tool messages not paired with calls: orphan tool result id: call_zz" in whats


def test_an_unknown_previous_response_id_is_a_warning(tmp_path: Path) -> None:
    text = (BUNDLED_ROOT / "responses" / "parallel-calls.yaml").read_text()
    (tmp_path / "chain.yaml").write_text(
        text.replace('"previous_response_id":"resp_sim000001"', '"previous_response_id":"resp_gone"')
    )
    found = [(f.severity, f.what) for f in audit(read_cassette(tmp_path / "chain.yaml"))]
    assert ("warning", "previous_response_id resp_gone names no response recorded here") in found


@needs_corpus
def test_conversion_keeps_the_recorded_replies_results_and_final_text(tmp_path: Path) -> None:
    path = next(p for p in REAL if p.name.startswith("pydantic-ai"))
    CliRunner().invoke(app, ["convert", str(path), "-o", str(tmp_path / "capital.yaml")])
    scenario = load_scenario(tmp_path / "capital.yaml")
    assert scenario.prompt == "What is the capital of the UK? Use the tool, then answer."
    assert [t.name for t in scenario.tools] == ["get_capital"]  # type: ignore[union-attr]
    call = scenario.replies[0].tool_calls[0]
    assert (call.id, call.name, call.arguments) == (
        "call_ZR5UUuTt3pf61kjwAJIYdVMj",
        "get_capital",
        '{"country":"UK"}',
    )
    assert scenario.results == {"call_ZR5UUuTt3pf61kjwAJIYdVMj": "London"}
    assert (scenario.expect.outcome, scenario.expect.final_text) == (
        "completed",
        "The capital of the UK is London.",
    )
    report = asyncio.run(play_file(tmp_path / "capital.yaml"))
    assert report.transcript[3].text == "  result call_ZR5UUuTt3pf61kjwAJIYdVMj: London"


def test_convert_refuses_to_overwrite(tmp_path: Path) -> None:
    (tmp_path / "out.yaml").write_text("mine")
    result = CliRunner().invoke(app, ["convert", str(BUNDLED[0]), "-o", str(tmp_path / "out.yaml")])
    assert result.exit_code == 2
    assert (tmp_path / "out.yaml").read_text() == "mine"


def test_convert_writes_no_credential_found_in_a_recording(tmp_path: Path) -> None:
    echo = next(p for p in BUNDLED if p.name == "echo-42.yaml").read_text()
    leaky = echo.replace("The command printed 42.", "Your key sk-proj-LEAKED0123456789abcdef works.")
    assert leaky != echo
    (tmp_path / "leaky.yaml").write_text(leaky)
    result = CliRunner().invoke(
        app, ["convert", str(tmp_path / "leaky.yaml"), "-o", str(tmp_path / "out.yaml")]
    )
    assert result.exit_code == 0, result.output
    written = (tmp_path / "out.yaml").read_text()
    assert "LEAKED0123456789abcdef" not in written
    assert "Your key <redacted> works." in written


def test_a_chain_whose_parent_is_missing_is_one_warning_not_unpaired_requests(tmp_path: Path) -> None:
    """The first request answers a call made in the response that is not recorded; so does every request
    chained after it. Only the missing parent is worth saying."""

    def exchange(previous: str, call_id: str, served: str, output: dict[str, Any]) -> dict[str, Any]:
        request = {
            "model": "m",
            "previous_response_id": previous,
            "input": [{"type": "function_call_output", "call_id": call_id, "output": "ok"}],
        }
        response = {"id": served, "object": "response", "status": "completed", "output": [output]}
        return {"request": {"method": "POST", "uri": "https://api.openai.com/v1/responses", "headers": {},
                            "body": json.dumps(request)},
                "response": {"status": {"code": 200, "message": "OK"}, "headers": {},
                             "body": {"string": json.dumps(response)}}}  # fmt: skip

    call = {"type": "function_call", "call_id": "call_y", "name": "lookup", "arguments": "{}"}
    text = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}
    interactions = [
        exchange("resp_gone", "call_x", "resp_1", call),
        exchange("resp_1", "call_y", "resp_2", text),
    ]
    path = tmp_path / "chain.yaml"
    path.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}))
    found = [(f.severity, f.what) for f in audit(read_cassette(path))]
    assert found == [("warning", "previous_response_id resp_gone names no response recorded here")]
