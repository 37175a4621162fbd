"""The classes of drift, reply against reply: what is the same, what a careful program survives, what
breaks the recording."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sim.core.messages import ToolCall
from sim.core.model import ModelReply, ToolSpec
from sim.drift.compare import Drift, compare, similarity
from tests.hangs import within

SHELL = ToolSpec("shell", "Runs.", {"type": "object", "properties": {"command": {"type": "string"}},
                                    "required": ["command"], "additionalProperties": False})  # fmt: skip
TOOLS = (SHELL, ToolSpec("read_file", "Reads.", {"type": "object"}))


def calling(*calls: tuple[str, str]) -> ModelReply:
    return ModelReply.calling(
        *(ToolCall(id=f"call_{n}", name=name, arguments=args) for n, (name, args) in enumerate(calls))
    )


RECORDED = calling(("shell", '{"command": "echo 42"}'))


@pytest.mark.parametrize(
    ("live", "drift", "said"),
    [
        (calling(("shell", '{"command":"echo 42"}')), Drift.same, "same"),  # JSON-equal arguments, other ids
        (calling(("shell", '{"command": "echo  42"}')), Drift.compatible, "the schema takes them"),
        (calling(("shell", '{"cmd": "echo 42"}')), Drift.breaking, "fail its schema"),
        (calling(("shell", "echo 42")), Drift.breaking, "not a JSON object"),
        (calling(("read_file", '{"path": "x"}')), Drift.breaking, "adds read_file and drops shell"),
        (calling(("shell", '{"command": "echo 42"}'), ("shell", '{"command": "ls"}')), Drift.breaking,
         "a call adds shell"),
        (ModelReply.final("42"), Drift.breaking, "answers where the recording called shell"),
        (ModelReply(message=RECORDED.message, finish_reason="length"), Drift.breaking, "-> length"),
    ],
    ids=["same", "valid other arguments", "renamed argument", "not JSON", "another tool", "parallel call",
         "answers early", "cut"],
)  # fmt: skip
def test_a_calling_turn(live: ModelReply, drift: Drift, said: str) -> None:
    compared = compare(RECORDED, live, TOOLS)
    assert compared.drift is drift and said in compared.why, compared


def test_a_text_turn() -> None:
    recorded = ModelReply.final("The command printed 42.")
    assert compare(recorded, ModelReply.final("The  command printed 42."), TOOLS).drift is Drift.same
    reworded = compare(recorded, ModelReply.final("The command printed 42 for you."), TOOLS)
    assert reworded.drift is Drift.compatible and reworded.similarity == pytest.approx(4 / 6)
    refused = compare(recorded, ModelReply.final("I can't help with that."), TOOLS, live_refused=True)
    assert refused.drift is Drift.breaking and "a refusal" in refused.why
    assert compare(calling(), ModelReply.final("x"), TOOLS).drift is not Drift.same


def test_similarity_is_word_overlap() -> None:
    assert similarity("", "") == 1.0
    assert similarity("Sunny in Paris", "sunny in paris!") == 1.0
    assert similarity("a b", "c d") == 0.0


def test_hostile_arguments_and_schemas_never_crash_the_comparison() -> None:
    odd = ToolSpec("shell", "", {"type": "object", "properties": {"command": {"type": "strnig"}}})  # a typo
    live = calling(("shell", '{"command": ' * 5_000 + "1" + "}" * 5_000))
    assert compare(RECORDED, live, (odd,)).drift is Drift.breaking  # too deep to read: not an object
    assert compare(RECORDED, calling(("shell", '{"command": "ls"}')), (odd,)).drift is Drift.compatible


def patterned(pattern: str, *, where: str = "pattern") -> ToolSpec:
    """`shell` whose `command` must match `pattern` (or whose keys must, for `patternProperties`)."""
    if where == "pattern":
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {"command": {"type": "string", "pattern": pattern}},
        }
    else:
        schema = {
            "type": "object",
            "patternProperties": {pattern: {"type": "string"}},
            "additionalProperties": False,
        }
    return ToolSpec("shell", "Runs.", schema)


@pytest.mark.parametrize("where", ["pattern", "patternProperties"])
def test_a_catastrophic_recorded_pattern_against_a_hostile_argument_is_judged_or_said_unjudged(
    where: str,
) -> None:
    """`^(a|a)+$` backtracks 2**40 times on forty `a`s and a `!`: the comparison says it could not judge
    (compatible: nothing proves the arguments wrong); `^(a+)+$`, which `regex` searches at once, is judged."""
    hostile = "a" * 40 + "!"
    live = calling(("shell", json.dumps({"command": hostile} if where == "pattern" else {hostile: "x"})))
    with within(10, "judging a catastrophic pattern"):
        unjudged = compare(RECORDED, live, (patterned("^(a|a)+$", where=where),))
        judged = compare(RECORDED, live, (patterned("^(a+)+$", where=where),))
    assert unjudged.drift is Drift.compatible, unjudged
    assert "could not judge" in unjudged.why and "ran past" in unjudged.why, unjudged
    assert judged.drift is Drift.breaking and "fail its schema" in judged.why, judged


def test_a_pattern_no_engine_reads_is_said_unjudged() -> None:
    compared = compare(RECORDED, calling(("shell", '{"command": "ls"}')), (patterned("(unclosed"),))
    assert compared.drift is Drift.compatible and "cannot be read" in compared.why, compared
