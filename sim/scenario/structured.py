"""A scenario's structured outputs checked when it loads (`sim check`): a strict response format's or a strict
scripted tool's schema is one the API takes (the strict subset), each scripted text that ends with `stop`
matches the strict format, and each scripted call of a strict tool has arguments that match its parameters
(but the last call of a reply cut at `length`), as the live API guarantees. Each mistake is one line that
says where it was written (`file:line:column: replies[1].content: ...`)."""

from __future__ import annotations

from sim.core.strict_schema import strict_problem
from sim.scenario.schema import Scenario, ScriptedToolSpec
from sim.scenario.yaml_source import DataPath, YamlDocument
from sim.wire.text_format import text_failure


def _dotted(at: DataPath) -> str:
    text = ""
    for part in at:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else part
    return text


def check_structured(document: YamlDocument, scenario: Scenario) -> None:
    """`ScenarioError` at the first schema the API would refuse, text off the strict format, or strict
    arguments off their schema."""
    strict_tools = {
        tool.name: (index, tool)
        for index, tool in enumerate(scenario.tools)
        if isinstance(tool, ScriptedToolSpec) and tool.strict
    }
    for name, (index, tool) in strict_tools.items():
        if (problem := strict_problem(tool.parameters)) is not None:
            at: DataPath = ("tools", index, "parameters")
            raise document.fail(at, f"{_dotted(at)}: Invalid schema for function '{name}': {problem}")
    format_ = scenario.response_format
    schema = format_.schema_ if format_ is not None and format_.strict else None
    if format_ is not None and schema is not None and (problem := strict_problem(schema)) is not None:
        at = ("response_format", "schema")
        raise document.fail(
            at, f"{_dotted(at)}: Invalid schema for response_format '{format_.name}': {problem}"
        )
    for number, reply in enumerate(scenario.replies):
        finish = reply.finish()
        text = reply.content
        judged = schema is not None and text is not None and finish == "stop" and not reply.tool_calls
        if judged and (failure := text_failure(schema, text or "")) is not None:
            at = ("replies", number, "content")
            said = (
                f"does not match the strict response format '{format_.name if format_ else ''}' at {failure}"
            )
            raise document.fail(at, f"{_dotted(at)}: {said}")
        for position, call in enumerate(reply.tool_calls):
            found = strict_tools.get(call.name)
            cut = finish == "length" and position == len(reply.tool_calls) - 1
            if found is None or cut or call.input is not None:
                continue
            if (
                failure := text_failure(found[1].parameters, call.raw_arguments(), json_object=True)
            ) is not None:
                at = ("replies", number, "tool_calls", position, "arguments")
                raise document.fail(
                    at,
                    f"{_dotted(at)}: do not match the parameters of strict tool '{call.name}' at {failure}",
                )
