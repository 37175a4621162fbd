from __future__ import annotations

import asyncio
from pathlib import Path

from hypothesis import given, settings
from pydantic import BaseModel

from sim import ToolCall, ToolDefinition, ToolRegistry, ToolResult, shell_tool
from sim.core.tools import PreparedCall
from sim.fuzz.strategies import calls_for, scenarios, script_shape


class Forecast(BaseModel):
    city: str
    days: int = 1


def forecast(args: Forecast, context: object) -> ToolResult:
    return ToolResult.ok(f"{args.city}: 21°C for {args.days} days")


def test_calls_for_a_registry_reach_every_path_and_handlers_always_give_results() -> None:
    registry = ToolRegistry(
        [shell_tool(), ToolDefinition("forecast", "Weather.", Forecast, "read", forecast)]
    )
    seen: dict[str, int] = {}

    @settings(max_examples=300, database=None, derandomize=True, deadline=None)
    @given(calls_for(registry))
    def handlers_never_raise(call: ToolCall) -> None:
        snapshot = registry.snapshot()
        prepared = snapshot.prepare(call)
        if isinstance(prepared, PreparedCall) and prepared.tool.name == "shell":
            return  # a drawn command is not something to run here
        result = (
            prepared
            if isinstance(prepared, ToolResult)
            else asyncio.run(snapshot.invoke(prepared, Path(".")))
        )
        assert isinstance(result, ToolResult)
        seen[result.error_code or "ok"] = seen.get(result.error_code or "ok", 0) + 1

    handlers_never_raise()
    assert set(seen) >= {"ok", "unknown_tool", "invalid_json", "invalid_arguments"}, seen


@settings(max_examples=20, database=None, derandomize=True, deadline=None)
@given(scenarios())
def test_scenarios_describe_themselves_in_one_line(drawn: object) -> None:
    line = script_shape(drawn)  # type: ignore[arg-type]
    assert line.startswith(f"max_turns={drawn.max_turns}: ")  # type: ignore[attr-defined]
    assert "\n" not in line
