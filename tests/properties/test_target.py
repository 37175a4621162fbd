"""Fuzzing a loop written directly on the OpenAI SDK, over real HTTP to a simulator on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from examples.openai_loop import TOOLS, run_agent, run_tool
from sim.cli import app
from sim.testing.target import fuzz_target


def test_the_example_loop_holds_every_observable_invariant() -> None:
    runs, failure, violations = fuzz_target(run_agent, examples=40, seed=0)
    assert (failure, violations) == (None, [])
    assert runs == 40


def keeps_going_after_the_answer(client: Any, prompt: str) -> None:
    """Broken: asks once more after the model's final answer."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(6):
        message = client.chat.completions.create(model="m", messages=messages, tools=TOOLS).choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls or []:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": run_tool(call.function.name, call.function.arguments),
                }
            )


def trusts_duplicate_ids(client: Any, prompt: str) -> None:
    """Broken: answers every call, even when the model reused an id."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(6):
        message = client.chat.completions.create(model="m", messages=messages, tools=TOOLS).choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "ok"})


@pytest.mark.parametrize(
    ("target", "invariant"),
    [(keeps_going_after_the_answer, "request_after_final"), (trusts_duplicate_ids, "pairing")],
)
def test_broken_user_loops_are_caught(target: Any, invariant: str) -> None:
    _, failure, violations = fuzz_target(target, examples=200, seed=0)
    assert failure is not None
    assert invariant in {v.invariant for v in violations}


def test_sim_fuzz_target_cli(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "brokenloop.py").write_text(
        "from tests.properties.test_target import keeps_going_after_the_answer as run\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    result = CliRunner().invoke(
        app, ["fuzz", "--examples", "60", "--target", "brokenloop:run", "--save", str(tmp_path / "out")]
    )
    assert result.exit_code == 1, result.output
    assert "request_after_final" in result.output
    assert list((tmp_path / "out").glob("fuzz-seed-0.yaml"))
    passing = CliRunner().invoke(
        app, ["fuzz", "--examples", "20", "--target", "examples.openai_loop:run_agent"]
    )
    assert passing.exit_code == 0, passing.output
    assert "every invariant held" in passing.output


def test_a_target_that_cannot_be_loaded_is_a_usage_error() -> None:
    for spec in ("nomodule", "no_such_module:run", "examples.openai_loop:missing"):
        result = CliRunner().invoke(app, ["fuzz", "--target", spec])
        assert result.exit_code == 2, spec
