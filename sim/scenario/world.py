"""The scripted world of a scenario: the reply each scripted entry stands for, and its shell, approver and
tools, all strict fakes."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, replace
from typing import Any

from sim.core.approval import AllowAllApprover, Approver, DenyAllApprover
from sim.core.calls import call_key
from sim.core.errors import ScenarioError
from sim.core.messages import AssistantMessage, HostedItem, Reasoning, TextItem, ToolCall
from sim.core.model import InputGrammar, ModelReply
from sim.core.scripted import (
    ScriptedApprover,
    ScriptedCommandRunner,
    ScriptedHandlerFailure,
    ScriptedToolResults,
)
from sim.core.tools import AnyArguments, ToolContext, ToolDefinition, ToolRegistry, ToolResult
from sim.scenario.schema import Scenario, ScriptedReplySpec, ScriptedResultSpec, ScriptedToolSpec
from sim.tools.shell import shell_tool
from sim.wire.hosted import scripted_annotation


def scripted_reply(spec: ScriptedReplySpec, call_ids: list[str]) -> ModelReply:
    """The reply a scripted entry stands for (its content and calls, even when it is cut or malformed)."""
    calls = tuple(
        ToolCall(
            id=call_id,
            name=call.name,
            arguments=call.raw_arguments(),
            kind="function" if call.input is None else "custom",
        )
        for call, call_id in zip(spec.tool_calls, call_ids, strict=True)
    )
    reasoning = (Reasoning(summary=(spec.reasoning,)),) if spec.reasoning is not None else ()
    # a refusal reaches the loop as text, as the OpenAI adapters read it
    content = spec.refusal if spec.refusal is not None else spec.content
    message = AssistantMessage(content=content, tool_calls=calls, reasoning=reasoning)
    if spec.hosted or spec.annotations:
        message = message.model_copy(update={"items": _ordered_items(spec, reasoning, content)})
    return ModelReply(message=message, finish_reason=spec.finish())


def _ordered_items(
    spec: ScriptedReplySpec, reasoning: tuple[Reasoning, ...], content: str | None
) -> tuple[Reasoning | TextItem | HostedItem, ...]:
    """A reply's items in the order the API sends them: reasoning, the hosted tools' items, the text (with
    its citations)."""
    annotations = tuple(scripted_annotation(entry, content or "") for entry in spec.annotations)
    text = () if content is None else (TextItem(text=content, annotations=annotations),)
    return (*reasoning, *spec.hosted_items(), *text)


@dataclass(frozen=True, slots=True)
class ScriptedWorld:
    """What a scenario's run talks to besides the model: its shell, approver and tools."""

    commands: ScriptedCommandRunner
    approver: Approver
    tools: ToolRegistry
    results: ScriptedToolResults

    def unused(self) -> list[str]:
        """What the shell's and approver's scripts held that the run never used, one line each."""
        problems = _unused(self.commands) + _unused(self.results)
        if isinstance(self.approver, ScriptedApprover):
            problems += _unused(self.approver)
        return problems


def _unused(fake: ScriptedCommandRunner | ScriptedApprover | ScriptedToolResults) -> list[str]:
    """What `fake`'s script held that the run never used, as lines."""
    try:
        fake.assert_complete()
    except ScenarioError as error:
        return [str(error)]
    return []


def build_world(scenario: Scenario) -> ScriptedWorld:
    """Strict fakes loaded with the scenario's script."""
    commands = ScriptedCommandRunner(c.scripted() for c in scenario.commands)
    approver: Approver
    if scenario.approvals == "allow":
        approver = AllowAllApprover()
    elif scenario.approvals == "deny":
        approver = DenyAllApprover()
    else:
        approver = ScriptedApprover(scenario.approvals)
    tools = ToolRegistry()
    waiting: dict[str, list[ToolDefinition]] = {}

    def unlocking(tool: ToolDefinition) -> ToolDefinition:
        """`tool`, and once one of its calls ran, the tools waiting for that call are offered."""

        async def handler(arguments: Any, context: ToolContext) -> ToolResult:
            try:
                outcome = tool.handler(arguments, context)
                return await outcome if inspect.isawaitable(outcome) else outcome
            finally:
                call = context.call
                for waiting_tool in waiting.pop(call_key(call.id, context.turn), []) + waiting.pop(
                    call.id, []
                ):
                    tools.register(waiting_tool)

        return replace(tool, handler=handler)

    results = ScriptedToolResults({key: _result(spec) for key, spec in scenario.results.items()})
    for tool in scenario.tools:
        if tool == "shell":
            tools.register(
                unlocking(
                    shell_tool(commands, timeout=scenario.shell.timeout, max_chars=scenario.shell.max_chars)
                )
            )
        elif isinstance(tool, ScriptedToolSpec):
            definition = unlocking(
                ToolDefinition(
                    tool.name,
                    tool.description or f"The scripted tool {tool.name}.",
                    AnyArguments,
                    tool.effect,
                    results.answer,
                    parameters=tool.parameters,
                    kind="function" if tool.format is None else "custom",
                    grammar=_grammar(tool),
                    strict=tool.strict,
                )
            )
            if tool.available_after is None:
                tools.register(definition)
            else:
                waiting.setdefault(tool.available_after, []).append(definition)
    return ScriptedWorld(commands, approver, tools, results)


def _grammar(tool: ScriptedToolSpec) -> InputGrammar | None:
    """The grammar a scripted custom tool declares, or None (free text, or a function)."""
    form = tool.format
    if form is None or form.syntax is None or form.definition is None:
        return None
    return InputGrammar(form.syntax, form.definition)


def _result(spec: str | ScriptedResultSpec) -> ToolResult | Exception:
    if isinstance(spec, str):
        return ToolResult.ok(spec)
    if spec.raises:
        return ScriptedHandlerFailure(f"scripted failure: {spec.content}")
    return ToolResult(content=spec.content, is_error=spec.is_error, error_code=spec.error_code)
