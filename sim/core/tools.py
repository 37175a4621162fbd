"""Tools: definitions, the registry, its immutable snapshots, and turning calls into results."""

from __future__ import annotations

import copy
import functools
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, NoReturn

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core.core_schema import ModelSchema

from sim.core.errors import AgentError, ConfigurationError
from sim.core.json_text import loads
from sim.core.messages import ToolCall
from sim.core.model import InputGrammar, ToolKind, ToolSpec

ToolEffect = Literal["read", "write", "execute"]
"""What a tool does to the world; shown to the approver."""

TOOL_NAME = re.compile(r"^[A-Za-z0-9_]+$")
"""What a tool's name may be made of: letters, digits and `_`."""


CODE_IFF_ERROR = "error_code must be set exactly when is_error is true"


class ToolResult(BaseModel):
    """What a tool call produced; `error_code` is set exactly when `is_error`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    content: str
    is_error: bool = False
    error_code: str | None = None

    @model_validator(mode="after")
    def _code_iff_error(self) -> ToolResult:
        if self.is_error != (self.error_code is not None):
            raise ValueError(CODE_IFF_ERROR)
        return self

    @classmethod
    def ok(cls, content: str) -> ToolResult:
        """A successful result."""
        return cls(content=content)

    @classmethod
    def error(cls, code: str, message: str) -> ToolResult:
        """A failed result, worded `Error [code]: message` for the model."""
        return cls(content=f"Error [{code}]: {message}", is_error=True, error_code=code)


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a handler may know besides its arguments."""

    workspace: Path
    call: ToolCall
    turn: int = 0
    """The turn whose reply made the call (1 for the run's first request); 0 outside a run."""


ToolHandler = Callable[[Any, ToolContext], "ToolResult | Awaitable[ToolResult]"]
"""`handler(arguments, context)`: `arguments` is an instance of the tool's input model."""


class _SchemaWithoutTitles(GenerateJsonSchema):
    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def model_schema(self, schema: ModelSchema) -> JsonSchemaValue:
        generated = super().model_schema(schema)
        generated.pop("title", None)
        return generated


@functools.cache
def _schema_of(input_model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of an input model, generated once per model."""
    schema = input_model.model_json_schema(schema_generator=_SchemaWithoutTitles)
    schema.pop("description", None)  # the input model's docstring; the tool has its own description
    return schema


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool; its `input_model` is both the schema the model sees and the validator of its calls."""

    name: str
    description: str
    input_model: type[BaseModel]
    effect: ToolEffect
    handler: ToolHandler
    parameters: Mapping[str, Any] | None = None
    """A JSON Schema shown instead of the input model's, for tools scripted or replayed from a recording."""
    kind: ToolKind = "function"
    """A custom tool takes free-form input (its handler gets a `CustomInput`), not JSON arguments."""
    grammar: InputGrammar | None = None
    """The grammar a custom tool's input matches, shown to the model; None for free text."""
    strict: bool = False
    """A strict function: offered with `strict`, its arguments always match its `parameters`."""

    def __post_init__(self) -> None:
        if not TOOL_NAME.fullmatch(self.name):
            raise ConfigurationError(f"invalid tool name: {self.name}")
        if not self.description.strip():
            raise ConfigurationError(f"tool description must not be empty: {self.name}")

    def spec(self) -> ToolSpec:
        """The name, description and JSON Schema the model is offered (a custom tool's grammar instead)."""
        if self.kind == "custom":
            return ToolSpec(self.name, self.description, {}, "custom", self.grammar)
        if self.parameters is not None:
            return ToolSpec(self.name, self.description, dict(self.parameters), strict=self.strict)
        return ToolSpec(self.name, self.description, copy.deepcopy(_schema_of(self.input_model)))


class CustomInput(BaseModel):
    """What a custom tool's handler gets: the free-form text the model sent."""

    model_config = ConfigDict(frozen=True)

    input: str


class AnyArguments(BaseModel):
    """Input model of tools whose schema is given, not generated: any JSON object is accepted."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True, slots=True)
class PreparedCall:
    """A call whose tool exists and whose arguments parsed and validated."""

    call: ToolCall
    tool: ToolDefinition
    arguments: BaseModel


class ToolSnapshot:
    """The tools offered in one turn; it cannot change, whatever happens to the registry."""

    __slots__ = ("_tools", "specs")
    _tools: Mapping[str, ToolDefinition]
    specs: tuple[ToolSpec, ...]

    def __init__(self, tools: Mapping[str, ToolDefinition], specs: tuple[ToolSpec, ...]) -> None:
        object.__setattr__(self, "_tools", MappingProxyType(dict(tools)))
        object.__setattr__(self, "specs", specs)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise ConfigurationError("tool registry snapshot is immutable")

    def register(self, tool: ToolDefinition) -> NoReturn:
        """Always raises: a snapshot is immutable."""
        raise ConfigurationError("tool registry snapshot is immutable")

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> ToolDefinition | None:
        """The tool called `name`, if offered."""
        return self._tools.get(name)

    def prepare(self, call: ToolCall) -> PreparedCall | ToolResult:
        """Look the tool up, parse and validate the arguments; model mistakes become error results."""
        tool = self._tools.get(call.name)
        if tool is None:
            return ToolResult.error("unknown_tool", f"Unknown tool: {call.name}")
        if (tool.kind == "custom") != (call.kind == "custom"):
            takes = "free-form input" if tool.kind == "custom" else "JSON arguments"
            return ToolResult.error("invalid_arguments", f"Tool {call.name} takes {takes}")
        if tool.kind == "custom":
            return PreparedCall(call, tool, CustomInput(input=call.arguments))
        try:
            parsed = loads(call.arguments, strict=True)
        except ValueError:
            return ToolResult.error("invalid_json", "Tool arguments must be valid JSON")
        if not isinstance(parsed, dict):
            return ToolResult.error("invalid_arguments", "Tool arguments must be a JSON object")
        try:
            arguments = tool.input_model.model_validate_json(call.arguments, strict=True)
        except ValidationError as error:
            # sorted by where: pydantic's own order of extra and missing fields changes between releases
            details = "; ".join(
                sorted(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in error.errors())
            )
            return ToolResult.error(
                "invalid_arguments", f"Tool arguments failed schema validation: {details}"
            )
        return PreparedCall(call, tool, arguments)

    async def invoke(self, prepared: PreparedCall, workspace: Path, turn: int = 0) -> ToolResult:
        """Run the handler; an exception or a wrong return type becomes an error result.

        `AgentError`s (e.g. a scripted fake running out of script) are not results: they propagate.
        """
        try:
            outcome = prepared.tool.handler(prepared.arguments, ToolContext(workspace, prepared.call, turn))
            if inspect.isawaitable(outcome):
                outcome = await outcome
        except AgentError:
            raise
        except Exception:
            return ToolResult.error("tool_execution_error", "Tool execution failed")
        if not isinstance(outcome, ToolResult):
            return ToolResult.error("invalid_tool_result", "Tool handler returned an invalid result")
        return outcome


class ToolRegistry:
    """The tools an agent may call; `snapshot()` freezes them for one turn."""

    def __init__(self, tools: tuple[ToolDefinition, ...] | list[ToolDefinition] = ()) -> None:
        self._tools: dict[str, ToolDefinition] = {}
        self._specs: dict[str, ToolSpec] = {}
        self._snapshot: ToolSnapshot | None = None
        for tool in tools:
            self.register(tool)

    def register(self, tool: ToolDefinition) -> None:
        """Add a tool; its schema is generated once, here."""
        if tool.name in self._tools:
            raise ConfigurationError(f"tool already registered: {tool.name}")
        self._specs[tool.name] = tool.spec()
        self._tools[tool.name] = tool
        self._snapshot = None

    def replace(self, tool: ToolDefinition) -> None:
        """Put `tool` in place of the registered tool of the same name; later turns see the new one."""
        if tool.name not in self._tools:
            raise ConfigurationError(f"tool not registered: {tool.name}")
        self._specs[tool.name] = tool.spec()
        self._tools[tool.name] = tool
        self._snapshot = None

    def remove(self, name: str) -> None:
        """Stop offering the tool called `name` from the next turn on."""
        if name not in self._tools:
            raise ConfigurationError(f"tool not registered: {name}")
        del self._tools[name], self._specs[name]
        self._snapshot = None

    def snapshot(self) -> ToolSnapshot:
        """An immutable view of the current tools (reused until the registry changes)."""
        if self._snapshot is None:
            self._snapshot = ToolSnapshot(self._tools, tuple(self._specs.values()))
        return self._snapshot

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)
