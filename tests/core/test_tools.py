from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from sim import (
    ConfigurationError,
    ScenarioError,
    ToolCall,
    ToolContext,
    ToolDefinition,
    ToolRegistry,
    ToolResult,
    shell_tool,
)
from sim.core.tools import PreparedCall
from tests.scripts import call


class Point(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: int
    y: int = 0


def point_tool(handler: Any = None, name: str = "point") -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description="Takes a point.",
        input_model=Point,
        effect="read",
        handler=handler or (lambda args, ctx: ToolResult.ok(f"{args.x},{args.y}")),
    )


def invoke(registry: ToolRegistry, tool_call: ToolCall) -> ToolResult:
    snapshot = registry.snapshot()
    prepared = snapshot.prepare(tool_call)
    assert isinstance(prepared, PreparedCall), prepared
    return asyncio.run(snapshot.invoke(prepared, Path(".")))


class TestRegistry:
    @pytest.mark.parametrize("name", ["bad-name", "with space", "", "dot.ted", "ünï"])
    def test_invalid_names(self, name: str) -> None:
        with pytest.raises(ConfigurationError) as caught:
            point_tool(name=name)
        assert str(caught.value) == f"invalid tool name: {name}"

    def test_name_alphabet(self) -> None:
        assert point_tool(name="Read_File2").name == "Read_File2"

    def test_description_must_not_be_empty(self) -> None:
        with pytest.raises(ConfigurationError, match="description"):
            ToolDefinition("t", "  ", Point, "read", lambda a, c: ToolResult.ok(""))

    def test_duplicate_registration(self) -> None:
        registry = ToolRegistry([point_tool()])
        with pytest.raises(ConfigurationError, match=r"^tool already registered: point$"):
            registry.register(point_tool())

    def test_snapshot_is_immutable(self) -> None:
        snapshot = ToolRegistry([point_tool()]).snapshot()
        with pytest.raises(ConfigurationError, match=r"^tool registry snapshot is immutable$"):
            snapshot.register(point_tool(name="other"))
        with pytest.raises(ConfigurationError, match=r"^tool registry snapshot is immutable$"):
            snapshot.specs = ()  # type: ignore[misc]

    def test_snapshot_does_not_see_later_registrations(self) -> None:
        registry = ToolRegistry([point_tool()])
        before = registry.snapshot()
        registry.register(point_tool(name="later"))
        assert "later" not in before
        assert [spec.name for spec in before.specs] == ["point"]
        assert [spec.name for spec in registry.snapshot().specs] == ["point", "later"]

    def test_snapshot_is_reused_while_nothing_changes(self) -> None:
        registry = ToolRegistry([point_tool()])
        assert registry.snapshot() is registry.snapshot()


class TestSchema:
    def test_shell_schema_is_exactly_the_seeds(self) -> None:
        (spec,) = ToolRegistry([shell_tool()]).snapshot().specs
        assert dict(spec.parameters) == {
            "type": "object",
            "properties": {"command": {"type": "string", "minLength": 1}},
            "required": ["command"],
            "additionalProperties": False,
        }

    def test_schema_and_validation_come_from_one_model(self) -> None:
        (spec,) = ToolRegistry([point_tool()]).snapshot().specs
        assert spec.parameters["required"] == ["x"]
        assert set(spec.parameters["properties"]) == {"x", "y"}
        snapshot = ToolRegistry([point_tool()]).snapshot()
        assert isinstance(snapshot.prepare(call("c", "point", {"x": 1})), PreparedCall)
        assert isinstance(snapshot.prepare(call("c", "point", {"y": 1})), ToolResult)


class TestPrepare:
    snapshot = ToolRegistry([point_tool(), shell_tool()]).snapshot()

    def error(self, tool_call: ToolCall) -> ToolResult:
        prepared = self.snapshot.prepare(tool_call)
        assert isinstance(prepared, ToolResult)
        assert prepared.is_error
        return prepared

    def test_unknown_tool(self) -> None:
        result = self.error(call("c", "nope", {}))
        assert result.content == "Error [unknown_tool]: Unknown tool: nope"
        assert result.error_code == "unknown_tool"

    @pytest.mark.parametrize("raw", ["{", "", "{'x': 1}", "NaN", '{"x": Infinity}', "{} extra"])
    def test_invalid_json(self, raw: str) -> None:
        result = self.error(call("c", "point", raw))
        assert result.content == "Error [invalid_json]: Tool arguments must be valid JSON"

    @pytest.mark.parametrize("raw", ["null", "[]", "[1]", "3", '"x"', "true"])
    def test_json_that_is_not_an_object(self, raw: str) -> None:
        result = self.error(call("c", "point", raw))
        assert result.content == "Error [invalid_arguments]: Tool arguments must be a JSON object"

    @pytest.mark.parametrize(
        ("name", "arguments"),
        [
            ("point", {}),
            ("point", {"x": "1"}),
            ("point", {"x": 1.5}),
            ("point", {"x": 1, "z": 2}),
            ("shell", {"command": ""}),
            ("shell", {"command": 42}),
            ("shell", {"command": "ls", "cwd": "/"}),
        ],
    )
    def test_schema_failure(self, name: str, arguments: dict[str, Any]) -> None:
        result = self.error(call("c", name, arguments))
        assert result.content.startswith("Error [invalid_arguments]: Tool arguments failed schema validation")
        assert result.error_code == "invalid_arguments"

    @pytest.mark.parametrize("arguments", ['{"zzz": 1, "aaa": 2}', '{"aaa": 2, "zzz": 1}'])
    def test_schema_failure_details_come_in_one_order_whatever_the_arguments_order(
        self, arguments: str
    ) -> None:
        """Sorted by where they are: pydantic's own order (of extra and missing fields) is not stable."""
        details = self.error(call("c", "shell", arguments)).content.split("validation: ", 1)[1].split("; ")
        assert [detail.split(":")[0] for detail in details] == ["aaa", "command", "zzz"]

    def test_valid_call_is_prepared_with_typed_arguments(self) -> None:
        prepared = self.snapshot.prepare(call("c", "point", {"x": 3}))
        assert isinstance(prepared, PreparedCall)
        assert prepared.arguments == Point(x=3)


class TestInvoke:
    def test_sync_and_async_handlers(self) -> None:
        async def handler(args: Point, ctx: ToolContext) -> ToolResult:
            return ToolResult.ok(f"async {args.x} {ctx.call.id}")

        assert invoke(ToolRegistry([point_tool()]), call("c1", "point", {"x": 1})).content == "1,0"
        result = invoke(ToolRegistry([point_tool(handler)]), call("c2", "point", {"x": 2}))
        assert result.content == "async 2 c2"

    def test_handler_exception_is_a_result_and_does_not_leak(self) -> None:
        def handler(args: Point, ctx: ToolContext) -> ToolResult:
            raise RuntimeError("secret internal detail")

        result = invoke(ToolRegistry([point_tool(handler)]), call("c", "point", {"x": 1}))
        assert result == ToolResult.error("tool_execution_error", "Tool execution failed")
        assert result.content == "Error [tool_execution_error]: Tool execution failed"
        assert "secret" not in result.content

    @pytest.mark.parametrize("returned", [None, "text", {"content": "x"}, 42])
    def test_handler_returning_something_else(self, returned: object) -> None:
        result = invoke(ToolRegistry([point_tool(lambda a, c: returned)]), call("c", "point", {"x": 1}))
        assert result.content == "Error [invalid_tool_result]: Tool handler returned an invalid result"
        assert result.error_code == "invalid_tool_result"

    def test_sim_errors_propagate_instead_of_becoming_results(self) -> None:
        def handler(args: Point, ctx: ToolContext) -> ToolResult:
            raise ScenarioError("script ran out")

        with pytest.raises(ScenarioError, match="script ran out"):
            invoke(ToolRegistry([point_tool(handler)]), call("c", "point", {"x": 1}))


class TestToolResult:
    def test_error_code_present_exactly_when_is_error(self) -> None:
        assert ToolResult.ok("x").error_code is None
        assert ToolResult.error("shell_failed", "m").error_code == "shell_failed"
        with pytest.raises(ValidationError):
            ToolResult(content="x", is_error=True)
        with pytest.raises(ValidationError):
            ToolResult(content="x", error_code="shell_failed")


def test_schemas_are_generated_once_but_never_shared() -> None:
    first, second = (ToolRegistry([shell_tool()]).snapshot().specs[0] for _ in range(2))
    assert first.parameters == second.parameters
    assert first.parameters is not second.parameters
    first.parameters["properties"]["command"]["minLength"] = 99  # type: ignore[index]
    assert (
        ToolRegistry([shell_tool()]).snapshot().specs[0].parameters["properties"]["command"]["minLength"] == 1
    )


@pytest.mark.parametrize(
    "arguments", ['{"command": "\\ud800"}', '{"command": "ls", "x": NaN}', '{"a": Infinity}']
)
def test_json_only_python_accepts_is_invalid_json_for_the_loop_and_the_oracle(arguments: str) -> None:
    from sim.fuzz.oracle import expect
    from sim.scenario.schema import Scenario

    snapshot = ToolRegistry([shell_tool()]).snapshot()
    result = snapshot.prepare(ToolCall(id="c1", name="shell", arguments=arguments))
    assert result == ToolResult.error("invalid_json", "Tool arguments must be valid JSON")
    scenario = Scenario.model_validate(
        {"prompt": "p", "replies": [{"tool_calls": [{"id": "c1", "name": "shell", "arguments": arguments}]},
                                    {"content": "ok"}]}
    )  # fmt: skip
    assert expect(scenario).results[("c1", 1)].error_code == "invalid_json"
