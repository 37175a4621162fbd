"""`sim run` through typer's runner; the real adapter and SDK talk to an in-process transport."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import Result

from sim.cli import live
from tests.adapters.endpoint import Endpoint, completion, function_call
from tests.commands import invoke

KEY = "sk-cli-secret-0123456789"


@pytest.fixture
def configured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://endpoint.test/v1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_MODEL", "gpt-env")
    return tmp_path


def serve(monkeypatch: pytest.MonkeyPatch, *bodies: dict) -> Endpoint:
    import httpx2

    endpoint = Endpoint(*(httpx2.Response(200, json=body) for body in bodies))
    monkeypatch.setattr(live, "http_client_factory", endpoint.client)
    return endpoint


def call_shell(command: str) -> dict:
    return completion(
        None,
        tool_calls=[function_call("call_1", "shell", json.dumps({"command": command}))],
        finish_reason="tool_calls",
    )


def run(*args: str) -> Result:
    return invoke("run", *args)


def test_transcript_and_final_text(configured: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = serve(monkeypatch, call_shell("echo 42"), completion("It printed 42."))
    result = run("--prompt", "Run echo 42", "--approve", "always")
    assert result.exit_code == 0, result.output
    assert "turn 1: request with 2 messages" in result.output
    assert '  call call_1: shell {"command": "echo 42"}' in result.output
    assert "  result call_1: 42" in result.output
    assert result.output.rstrip().endswith("It printed 42.")
    assert endpoint.bodies()[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "42"}
    assert KEY not in result.output


def test_environment_wins_over_dotenv(configured: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (configured / ".env").write_text("OPENAI_MODEL=gpt-file\nOPENAI_BASE_URL=http://elsewhere/v1\n")
    monkeypatch.delenv("OPENAI_BASE_URL")
    endpoint = serve(monkeypatch, completion("hi"))
    assert run("--prompt", "hello").exit_code == 0
    (request,) = endpoint.requests
    assert str(request.url) == "http://elsewhere/v1/chat/completions"
    assert json.loads(request.content)["model"] == "gpt-env"


def test_missing_settings_exit_2_before_any_request(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_MODEL", "m")
    endpoint = serve(monkeypatch)
    result = run("--prompt", "hello")
    assert result.exit_code == 2
    assert result.output.strip() == "error: Missing required settings: OPENAI_BASE_URL, OPENAI_API_KEY"
    assert endpoint.requests == []


def test_without_a_tty_the_approval_is_denied(configured: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = serve(monkeypatch, call_shell("rm -rf /"), completion("I was not allowed."))
    result = run("--prompt", "wipe it")
    assert result.exit_code == 0, result.output
    denied = "Error [permission_denied]: No interactive approval input was available"
    assert endpoint.bodies()[1]["messages"][-1]["content"] == denied
    assert "denied call_1: No interactive approval input was available" in result.output


def test_never_denies(configured: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = serve(monkeypatch, call_shell("ls"), completion("ok"))
    assert run("--prompt", "x", "--approve", "never").exit_code == 0
    assert "permission_denied" in endpoint.bodies()[1]["messages"][-1]["content"]


def test_json_report(configured: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    serve(monkeypatch, completion("done"))
    result = run("--prompt", "x", "--json")
    assert result.exit_code == 0
    report = json.loads(result.output)
    assert (report["outcome"], report["final_text"], report["turns"], report["error"]) == (
        "completed",
        "done",
        1,
        None,
    )
    assert [m["role"] for m in report["history"]] == ["user", "assistant"]


def test_api_error_is_one_line_and_exit_1(configured: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx2

    endpoint = Endpoint(
        httpx2.Response(429, json={"error": {"message": "Slow down", "type": "rate_limit_error"}})
    )
    monkeypatch.setattr(live, "http_client_factory", endpoint.client)
    result = run("--prompt", "x")
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == "error: api_error: HTTP 429: Slow down"


def test_max_turns_must_be_positive(configured: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = serve(monkeypatch)
    result = run("--prompt", "x", "--max-turns", "0")
    assert result.exit_code == 2
    assert "max_turns must be a positive integer" in result.output
    assert endpoint.requests == []


def test_stream_flag_streams(configured: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.adapters.endpoint import sse

    endpoint = Endpoint(
        sse({"choices": [{"index": 0, "delta": {"content": "streamed"}, "finish_reason": "stop"}]})
    )
    monkeypatch.setattr(live, "http_client_factory", endpoint.client)
    result = run("--prompt", "x", "--stream")
    assert result.exit_code == 0
    assert result.output.rstrip().endswith("streamed")
    assert endpoint.bodies()[0]["stream"] is True
