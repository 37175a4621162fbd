"""Comparing what a scenario expects with what its run did: one line per differing field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sim.core.calls import CallRef, ambiguity, find, turns_by_id
from sim.core.model import ModelRequest
from sim.core.outcome import Outcome
from sim.core.tools import ToolResult
from sim.scenario.schema import RequestExpectation, Scenario


def _differs(field: str, expected: Any, actual: Any) -> list[str]:
    if expected is None or expected == actual:
        return []
    return [f"{field}: expected {expected!r}, got {actual!r}"]


def unmet_expectations(
    scenario: Scenario,
    *,
    outcome: Outcome,
    error: str | None,
    final_text: str | None,
    turns: int,
    tool_results: Mapping[CallRef, ToolResult],
) -> list[str]:
    """Every way the run differs from `scenario.expect` (the replies' `expect_request`s are the script's
    answerer's to check, as each request comes)."""
    expect = scenario.expect
    problems = []
    if expect.outcome != outcome:
        because = f" ({error})" if error else ""
        problems.append(f"expect.outcome: expected {expect.outcome!r}, got {outcome!r}{because}")
    problems += _differs("expect.final_text", expect.final_text, final_text)
    problems += _differs("expect.turns", expect.turns, turns)
    used = turns_by_id(tool_results)
    for key, wanted in expect.tool_results.items():
        field = f"expect.tool_results.{key}"
        got = find(tool_results, key)
        if got is None:
            unclear = ambiguity(key, used)
            problems.append(f"{field}: {unclear}" if unclear else f"{field}: no call with this id ran")
            continue
        problems += _differs(f"{field}.content", wanted.content, got.content)
        problems += _differs(f"{field}.is_error", wanted.is_error, got.is_error)
        problems += _differs(f"{field}.error_code", wanted.error_code, got.error_code)
    return problems


def check_request(field: str, expected: RequestExpectation, request: ModelRequest) -> list[str]:
    """How `request` differs from what `expected` asks of it, one line per field."""
    problems = _differs(f"{field}.message_count", expected.message_count, len(request.messages))
    problems += _differs(f"{field}.tools", expected.tools, [spec.name for spec in request.tools])
    if expected.last_message is not None:
        last = request.messages[-1]
        for name, wanted in expected.last_message.model_dump(exclude_none=True).items():
            problems += _differs(f"{field}.last_message.{name}", wanted, getattr(last, name, None))
    return problems
