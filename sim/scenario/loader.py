"""Loading scenario files: YAML to a validated `Scenario`, every mistake told as `file:line:column: what`."""

from __future__ import annotations

import difflib
import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from sim.core.calls import ambiguity, turns_by_id
from sim.core.errors import ScenarioError
from sim.core.model import InputGrammar
from sim.scenario.schema import Scenario, ScriptedToolSpec
from sim.scenario.structured import check_structured
from sim.scenario.yaml_source import DataPath, YamlDocument, read_yaml
from sim.wire.custom_tools import grammar_problem, input_problem

SCENARIO_SUFFIXES = (".yaml", ".yml")


def load_scenario(path: Path | str) -> Scenario:
    """Read and validate one scenario file; `ScenarioError("file:line:column: ...")` when it is wrong."""
    path = Path(path)
    document = read_yaml(path)
    if not isinstance(document.data, dict):
        raise document.fail((), "a scenario must be a mapping of keys (prompt, replies, ...)")
    if "interactions" in document.data and "replies" not in document.data:
        raise ScenarioError(
            f"{path}: a cassette (it has `interactions:`), not a scenario: `sim replay` replays it,"
            " `sim convert` turns it into a scenario"
        )
    try:
        scenario = Scenario.model_validate(document.data)
    except ValidationError as error:
        raise _explain(document, error) from None
    used = turns_by_id(scenario.calls())
    for at, key in scenario.call_keys():
        if (unclear := ambiguity(key, used)) is not None:
            raise document.fail(at, f"{_dotted(at)}: {unclear}", key=at[-1] == key)
    _check_custom_inputs(document, scenario)
    check_structured(document, scenario)
    if scenario.name is None:
        scenario = scenario.model_copy(update={"name": path.stem})
    return scenario


def _check_custom_inputs(document: YamlDocument, scenario: Scenario) -> None:
    """Each custom tool's grammar can be read, and each scripted call of a custom tool the scenario declares
    has `input` its grammar generates, as the API guarantees (the last call of a reply cut at the token limit
    may be cut short); a declared function is called with `arguments`."""
    declared: dict[str, tuple[int, ScriptedToolSpec]] = {
        tool.name: (index, tool)
        for index, tool in enumerate(scenario.tools)
        if isinstance(tool, ScriptedToolSpec)
    }
    grammars: dict[str, InputGrammar | None] = {}
    for name, (index, tool) in declared.items():
        form = tool.format
        if form is None or form.syntax is None or form.definition is None:
            continue
        grammar = InputGrammar(form.syntax, form.definition)
        if (problem := grammar_problem(grammar)) is not None:
            at: DataPath = ("tools", index, "format", "definition")
            raise document.fail(at, f"{_dotted(at)}: the {form.syntax} grammar cannot be read: {problem}")
        grammars[name] = grammar
    for number, reply in enumerate(scenario.replies):
        for position, call in enumerate(reply.tool_calls):
            found = declared.get(call.name)
            if found is None:
                continue
            at = ("replies", number, "tool_calls", position)
            custom = found[1].format is not None
            if custom != (call.input is not None):
                said = "a custom tool: calls have `input`" if custom else "a function: calls have `arguments`"
                raise document.fail(at, f"{_dotted(at)}: {call.name!r} is {said}")
            found_grammar = grammars.get(call.name)
            cut = reply.finish() == "length" and position == len(reply.tool_calls) - 1
            if found_grammar is None or call.input is None or cut:
                continue
            if (problem := input_problem(found_grammar, call.input)) is not None:
                at = (*at, "input")
                raise document.fail(at, f"{_dotted(at)}: the input of custom tool {call.name!r} {problem}")


def scenario_files(paths: list[Path]) -> list[Path]:
    """The scenario files named, folders searched recursively, in a stable order."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if p.suffix in SCENARIO_SUFFIXES and p.is_file()))
        else:
            found.append(path)
    return found


_SCALAR_MISMATCH = frozenset({"string_type", "literal_error", "int_type", "bool_type", "float_type"})


def _explain(document: YamlDocument, error: ValidationError) -> ScenarioError:
    problems = error.errors()
    # an unknown key usually explains a missing one (a typo), so it is told first; then what a mapping or
    # list was meant to be (not that it is not the text another branch of a union takes); then file order
    first = min(
        problems,
        key=lambda p: (
            p["type"] != "extra_forbidden",
            p["type"] in _SCALAR_MISMATCH and isinstance(p.get("input"), dict | list),
            document.position(_data_path(document.data, p["loc"])),
        ),
    )
    at = _data_path(document.data, first["loc"])
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    where = _dotted(at)
    if first["type"] == "extra_forbidden":
        key = str(first["loc"][-1])
        close = difflib.get_close_matches(key, _allowed_keys(at[:-1]), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return document.fail(at, f"unknown key '{key}'{hint}{more}", key=True)
    if first["type"] == "missing":
        at = at[:-1]
        place = f"{_dotted(at)}: " if at else ""
        return document.fail(at, f"{place}missing required key '{first['loc'][-1]}'{more}")
    return document.fail(at, f"{where or 'scenario'}: {_message(first)}{more}")


def _message(problem: ErrorDetails) -> str:
    message = problem["msg"]
    return message.removeprefix("Value error, ")


def _data_path(data: Any, loc: tuple[int | str, ...]) -> DataPath:
    """The part of pydantic's `loc` that names places in the data (union and validator tags dropped)."""
    at: list[str | int] = []
    for part in loc:
        if isinstance(data, dict) and part in data:
            data = data[part]
            at.append(str(part))
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
            at.append(part)
        elif isinstance(data, dict) and isinstance(part, str) and part == loc[-1] and "[" not in part:
            at.append(part)  # a key that is missing or not allowed: not in the data, but it names the place
            break
    return tuple(at)


def _dotted(at: DataPath) -> str:
    text = ""
    for part in at:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else part
    return text


def _allowed_keys(at: DataPath) -> list[str]:
    """The keys the format allows in the mapping at `at`."""
    kind: Any = Scenario
    for part in at:
        kind = _step(kind, part)
    options = [k for k in _alternatives(kind) if isinstance(k, type) and issubclass(k, BaseModel)]
    return [field.alias or name for option in options for name, field in option.model_fields.items()]


def _step(kind: Any, part: str | int) -> Any:
    for option in _alternatives(kind):
        if isinstance(part, int) and get_origin(option) is list:
            return get_args(option)[0]
        if isinstance(part, str) and get_origin(option) is dict:
            return get_args(option)[1]
        if isinstance(option, type) and issubclass(option, BaseModel) and part in option.model_fields:
            return option.model_fields[part].annotation
    return None


def _alternatives(kind: Any) -> list[Any]:
    if get_origin(kind) in (Union, types.UnionType):
        return [option for arg in get_args(kind) for option in _alternatives(arg)]
    if hasattr(kind, "__metadata__"):  # Annotated[X, ...]
        return _alternatives(get_args(kind)[0])
    return [kind]
