"""Hypothesis strategies for hostile model behaviour and the world's answers, as whole scenarios.

`scenarios()` draws a script (replies for up to `max_turns` requests: parallel calls, duplicate ids, call
ids reused across turns, unknown tools, invalid JSON, non-object and schema-violating arguments, empty and
null content, every finish reason, API errors, malformed and cut replies) and a world to match it
(command outputs, exit codes, timeouts, start failures, approval answers, scripted tools that raise or
appear once a shell or scripted call ran). Its `expect:` block is the oracle's, so a drawn scenario is a
complete test that `sim play` can run. Draws shrink toward few replies, few calls and the first choice of
every list, which reads as a small script.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from sim.core.calls import CallRef, call_key, keyed
from sim.core.messages import ToolCall
from sim.core.scripted import ScriptedCommand
from sim.core.tools import ToolRegistry
from sim.fuzz.oracle import Expected, expect
from sim.scenario.schema import Scenario, ScriptedResultSpec

COMMANDS = ("echo hi", "ls", "pwd", "cat notes.txt", "make test")
TEXTS = ("Done.", "", "It printed hi.", "All tests pass.")
UNKNOWN_TOOLS = ("browser", "read_file")
INVALID_JSON = ("{", "not json", "{'command': 'ls'}", "")
NON_OBJECTS = ("[]", "null", "42", '"ls"')
SCHEMA_VIOLATIONS: tuple[dict[str, Any], ...] = (
    {"cmd": "ls"},
    {"command": ""},
    {"command": 7},
    {"command": "ls", "cwd": "/"},
)
ERRORS: tuple[dict[str, Any], ...] = (
    {"status": 429, "message": "Rate limit reached", "type": "requests", "retry_after": 1},
    {"status": 500, "message": "Server error", "type": "server_error"},
    {"status": 400, "message": "Bad request", "type": "invalid_request_error"},
    {"status": 400, "message": "Your input exceeds the context window of this model.",
     "type": "invalid_request_error", "code": "context_length_exceeded", "param": "input"},
    {"status": 500, "message": "Server error", "type": "server_error", "in_stream": True},
)  # fmt: skip


def tool_calls() -> st.SearchStrategy[dict[str, Any]]:
    """One call as a scenario writes it: valid shell calls first (they shrink to those), then each mistake."""
    valid_shell = st.sampled_from(COMMANDS).map(lambda c: {"name": "shell", "arguments": {"command": c}})
    return st.one_of(
        valid_shell,
        valid_shell,  # twice: valid calls are as common as all the mistakes of one kind together
        st.just({"name": "install", "arguments": {}}),
        st.just({"name": "deploy", "arguments": {}}),
        st.sampled_from(UNKNOWN_TOOLS).map(lambda name: {"name": name, "arguments": {}}),
        st.sampled_from(INVALID_JSON).map(lambda raw: {"name": "shell", "arguments": raw}),
        st.sampled_from(NON_OBJECTS).map(lambda raw: {"name": "shell", "arguments": raw}),
        st.sampled_from(SCHEMA_VIOLATIONS).map(lambda args: {"name": "shell", "arguments": args}),
    )


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


_BY_TYPE: dict[str, st.SearchStrategy[Any]] = {
    "string": st.text(max_size=12),
    "integer": st.integers(),
    "number": st.floats(allow_nan=False, allow_infinity=False),
    "boolean": st.booleans(),
    "array": st.lists(_JSON, max_size=3),
    "object": st.dictionaries(st.text(max_size=8), _JSON, max_size=3),
    "null": st.none(),
}


def from_schema(schema: Any) -> st.SearchStrategy[Any]:
    """Values shaped like a JSON Schema asks (types, required and optional properties); not a validator:
    bounds and formats are left to chance, so some values still fail validation."""
    if not isinstance(schema, dict):
        return _JSON
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        required = set(schema.get("required", []))
        return st.fixed_dictionaries(
            {name: from_schema(sub) for name, sub in properties.items() if name in required},
            optional={name: from_schema(sub) for name, sub in properties.items() if name not in required},
        )
    kind = schema.get("type")
    return _BY_TYPE.get(kind, _JSON) if isinstance(kind, str) else _JSON


def calls_for(tools: ToolRegistry, unknown: tuple[str, ...] = UNKNOWN_TOOLS) -> st.SearchStrategy[ToolCall]:
    """Calls to the tools of `tools` (and to tools it lacks): arguments shaped by each tool's schema, or
    any JSON object, or JSON that is not an object, or text that is not JSON. For fuzzing your own tools."""
    specs = tools.snapshot().specs
    hostile = st.one_of(
        st.dictionaries(st.text(max_size=10), _JSON, max_size=4).map(json.dumps),
        _JSON.map(json.dumps),
        st.sampled_from(INVALID_JSON),
        st.text(max_size=20),
    )
    shaped = [
        st.tuples(st.just(spec.name), st.one_of(from_schema(spec.parameters).map(json.dumps), hostile))
        for spec in specs
    ]
    strangers = st.tuples(st.sampled_from(unknown), hostile) if unknown else st.nothing()
    return st.builds(
        lambda call_id, named: ToolCall(id=call_id, name=named[0], arguments=named[1]),
        st.sampled_from(("call_1", "call_2")),
        st.one_of(*shaped, strangers),
    )


def calling_replies() -> st.SearchStrategy[dict[str, Any]]:
    """A reply that asks for one to three calls, sometimes with text, sometimes ending with `stop`."""
    return st.fixed_dictionaries(
        {
            "tool_calls": st.lists(tool_calls(), min_size=1, max_size=3),
            "content": st.one_of(st.none(), st.sampled_from(TEXTS)),
            "finish_reason": st.sampled_from((None, None, None, "stop")),
            "duplicate_ids": st.sampled_from((False,) * 19 + (True,)),
        }
    ).map(lambda reply: {key: value for key, value in reply.items() if value is not None})


def final_replies() -> st.SearchStrategy[dict[str, Any]]:
    """A reply that ends the run: text (possibly empty), null content, length, content filter, or an error."""
    return st.one_of(
        st.sampled_from(TEXTS).map(lambda text: {"content": text}),
        st.just({"content": None}),
        st.sampled_from(TEXTS).map(lambda text: {"content": text or "cut", "finish_reason": "length"}),
        st.just({"content": None, "finish_reason": "content_filter"}),
        st.sampled_from(ERRORS).map(lambda error: {"error": dict(error)}),
        st.just({"malformed": True}),
        st.just({"content": "A reply that stops", "cut_after_chunks": 2}),
    )


def command_outcomes() -> st.SearchStrategy[dict[str, Any]]:
    """How a command ends: plain output first, then failures, timeouts, start failures, long output."""
    return st.one_of(
        st.sampled_from(("hi", "notes.txt\nREADME.md\n", "")).map(lambda out: {"output": out}),
        st.integers(1, 3).map(lambda code: {"output": "error: failed\n", "exit_code": code}),
        st.just({"output": "started...", "timed_out": True}),
        st.just({"start_fails": True}),
        st.just({"output": "x" * 80}),
    )


@st.composite
def scenarios(
    draw: st.DrawFn, max_turns: st.SearchStrategy[int] | None = None, ends_with_reply: bool = False
) -> Scenario:
    """A whole scenario: a script that always ends within `max_turns`, its world, and its expectations.

    With `ends_with_reply` the script always ends with a reply that stops the run (never by reaching
    max_turns), for loops whose own turn limit is unknown."""
    turns = draw(max_turns or st.integers(1, 4))
    calling = draw(st.integers(0, turns - 1 if ends_with_reply else turns))
    shapes = [draw(calling_replies()) for _ in range(calling)]
    if calling < turns:
        shapes.append(draw(final_replies()))
    # Some endpoints number calls afresh each turn (`call_1` every turn): ids are unique per message only.
    ids_per_turn = draw(st.sampled_from((False, False, True)))
    unlocker = draw(st.sampled_from(("install", "shell")))  # deploy is offered once such a call ran
    replies: list[dict[str, Any]] = []
    number = 0
    unlocking: CallRef | None = None
    for turn, shape in enumerate(shapes, 1):  # drawn values can be shared objects: build fresh ones
        reply = {key: value for key, value in shape.items() if key != "duplicate_ids"}
        if "tool_calls" in reply:
            first = 1 if ids_per_turn else number + 1
            reply["tool_calls"] = [
                {**call, "id": f"call_{first + n}"} for n, call in enumerate(reply["tool_calls"])
            ]
            number += len(reply["tool_calls"])
            unlocking = unlocking or next(
                ((c["id"], turn) for c in reply["tool_calls"] if c["name"] == unlocker and _runs(c)), None
            )
        replies.append(reply)
        if shape.get("duplicate_ids") and len(reply.get("tool_calls", [])) > 1:
            reply["tool_calls"][1]["id"] = reply["tool_calls"][0]["id"]
            break  # the loop stops at a reply with duplicate ids: nothing after it would be asked for
    data: dict[str, Any] = {
        "name": "fuzzed",
        "description": "Drawn by sim fuzz.",
        "prompt": "Get the project building.",
        "max_turns": turns,
        "tools": [
            "shell",
            {"name": "install", "description": "Installs the deploy tool."},
            {"name": "deploy", "description": "Deploys.", "available_after": _named(unlocking, ids_per_turn)},
        ],
        "approvals": [],
        "replies": replies,
    }
    drawn = _DrawnAnswers(draw)
    expected = expect(Scenario.model_validate(data), drawn)
    data.update(approvals=drawn.approvals, commands=drawn.commands, results=keyed(drawn.results))
    return Scenario.model_validate({**data, "expect": _expectations(expected)})


def _runs(call: dict[str, Any]) -> bool:
    """Whether a drawn call passes validation (so it runs when approved): `install`, or a valid shell call."""
    arguments = call["arguments"]
    return call["name"] == "install" or (isinstance(arguments, dict) and arguments.get("command") in COMMANDS)


def _named(call: CallRef | None, ids_per_turn: bool) -> str:
    """How a scenario names `call`: by `id@turn` where ids repeat across turns, else by its id."""
    if call is None:
        return "never"
    return call_key(*call) if ids_per_turn else call[0]


class _DrawnAnswers:
    """The world's answers, drawn as the oracle asks for them (so that they fit the script exactly), and
    kept to be written into the scenario."""

    def __init__(self, draw: st.DrawFn) -> None:
        self._draw = draw
        self.approvals: list[bool] = []
        self.commands: list[dict[str, Any]] = []
        self.results: dict[CallRef, Any] = {}

    def approve(self, call_id: str) -> bool:
        answer = self._draw(st.booleans().map(lambda denied: not denied))
        self.approvals.append(answer)
        return answer

    def command(self, command: str) -> ScriptedCommand:
        outcome = self._draw(command_outcomes())
        self.commands.append({"command": command, **outcome})
        return ScriptedCommand(command, **outcome)

    def result(self, call_id: str, turn: int) -> str | ScriptedResultSpec:
        result = self._draw(
            st.one_of(st.just(f"{call_id} done in turn {turn}"), st.just({"content": "boom", "raises": True}))
        )
        self.results[(call_id, turn)] = result
        return result if isinstance(result, str) else ScriptedResultSpec(**result)


def _expectations(expected: Expected) -> dict[str, Any]:
    return {
        "outcome": expected.outcome,
        "turns": expected.turns,
        "final_text": expected.final_text,
        "tool_results": {
            key: {"content": result.content, "is_error": result.error_code is not None,
                  "error_code": result.error_code}
            for key, result in keyed(expected.results).items()
        },
    }  # fmt: skip


def script_steps(scenario: Scenario) -> list[str]:
    """The shape of the script, reply by reply, for people: the first says the turn limit too."""
    shapes = []
    for reply in scenario.replies:
        if reply.tool_calls:
            shapes.append("calls(" + ", ".join(c.name for c in reply.tool_calls) + ")")
        else:
            shapes.append(json.dumps(reply.model_dump(exclude_defaults=True))[:40])
    shapes[:1] = [f"max_turns={scenario.max_turns}: {shapes[0] if shapes else ''}"]
    return shapes


def script_shape(scenario: Scenario) -> str:
    """One line for people: the shape of the script."""
    return " -> ".join(script_steps(scenario))
