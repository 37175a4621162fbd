"""How a live reply differs from the recorded one, structurally: `same` (the same tools called, arguments
equal as JSON, the same ending), `compatible` (the same tools with other arguments that the tool's schema
takes, or other wording), or `breaking` (another tool or none, a call added or dropped, arguments the
schema refuses, another ending, a refusal, an error). Other arguments that the schema cannot judge (a
pattern that runs away on them, or one no engine reads) are compatible, and said to be unjudged."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import jsonschema

from sim.core.json_text import loads
from sim.core.messages import ToolCall
from sim.core.model import ModelReply, ToolSpec
from sim.core.transcript import preview
from sim.wire.json_schema import UnjudgedPattern, validator_class


class Drift(StrEnum):
    """How far a live reply is from the recorded one."""

    same = "same"
    compatible = "compatible"
    breaking = "breaking"


@dataclass(frozen=True, slots=True)
class Compared:
    """A live reply beside the recorded one: the class, why, and how alike their texts are (word overlap,
    0 to 1, when both have text that differs)."""

    drift: Drift
    why: str
    similarity: float | None = None


def summary(reply: ModelReply, *, refused: bool = False) -> str:
    """A reply in a few words: its calls, its text (or refusal), its ending."""
    message = reply.message
    parts = [f"{call.name} {preview(call.arguments, 60)}" for call in message.tool_calls]
    if message.content:
        parts.append(f"{'refusal' if refused else 'text'} {preview(message.content, 60)!r}")
    return "; ".join(parts or ["(nothing)"]) + f" [{reply.finish_reason}]"


def _normal(arguments: str) -> Any:
    try:
        return loads(arguments, strict=True)
    except ValueError:
        return arguments  # not JSON: compared as written


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def similarity(recorded: str, live: str) -> float:
    """How many words the two texts share, of all the words either uses (1: the same words)."""
    mine, theirs = _words(recorded), _words(live)
    return 1.0 if not mine | theirs else len(mine & theirs) / len(mine | theirs)


def _schema_problem(call: ToolCall, tools: Sequence[ToolSpec]) -> str | None:
    """Why the schema refuses the call's arguments, or None; `UnjudgedPattern` when a pattern cannot say."""
    spec = next((tool for tool in tools if tool.name == call.name), None)
    arguments = _normal(call.arguments)
    if not isinstance(arguments, dict):
        return f"{call.name}'s arguments are not a JSON object"
    if spec is None or not spec.parameters:
        return None
    cls = validator_class(spec.parameters)
    try:
        error = jsonschema.exceptions.best_match(cls(dict(spec.parameters)).iter_errors(arguments))
    except (jsonschema.SchemaError, jsonschema.exceptions.UnknownType, TypeError, ValueError, RecursionError):
        return None  # a schema the validator cannot read judges nothing
    return None if error is None else f"{call.name}'s arguments fail its schema: {error.message}"


def _paired(recorded: Sequence[ToolCall], live: Sequence[ToolCall]) -> list[tuple[ToolCall, ToolCall]]:
    """Calls of the same tool paired in the order they come (the multisets of names are equal)."""
    waiting: dict[str, list[ToolCall]] = {}
    for call in live:
        waiting.setdefault(call.name, []).append(call)
    return [(call, waiting[call.name].pop(0)) for call in recorded]


def compare(
    recorded: ModelReply,
    live: ModelReply,
    tools: Sequence[ToolSpec],
    *,
    recorded_refused: bool = False,
    live_refused: bool = False,
) -> Compared:
    """How `live` differs from `recorded`, the request's `tools` judging changed arguments (a refusal's
    text is the reply's content: whether each was one is said apart)."""
    was, now = recorded.message, live.message
    if live_refused and not recorded_refused:
        return Compared(Drift.breaking, f"a refusal: {preview(now.content or '', 80)}")
    names_was, names_now = (
        Counter(c.name for c in was.tool_calls),
        Counter(c.name for c in live.message.tool_calls),
    )
    if names_was != names_now:
        return Compared(Drift.breaking, _calls_changed(names_was, names_now))
    if recorded.finish_reason != live.finish_reason:
        return Compared(Drift.breaking, f"finish {recorded.finish_reason} -> {live.finish_reason}")
    changed, unjudged = [], []
    for old, new in _paired(was.tool_calls, now.tool_calls):
        if _normal(old.arguments) != _normal(new.arguments):
            try:
                problem = _schema_problem(new, tools)
            except UnjudgedPattern as error:
                problem = None
                unjudged.append(f"{new.name}: {error}")
            if problem is not None:
                return Compared(Drift.breaking, problem)
            changed.append(f"{new.name} {preview(old.arguments, 40)} -> {preview(new.arguments, 40)}")
    texts = (was.content or "", now.content or "")
    alike = None if " ".join(texts[0].split()) == " ".join(texts[1].split()) else similarity(*texts)
    if changed:
        judged = f"could not judge them ({'; '.join(unjudged)})" if unjudged else "takes them"
        return Compared(
            Drift.compatible, f"arguments differ, the schema {judged}: " + "; ".join(changed), alike
        )
    if alike is not None:
        return Compared(Drift.compatible, f"other wording ({alike:.0%} of the words shared)", alike)
    return Compared(Drift.same, "same")


def _calls_changed(was: Counter[str], now: Counter[str]) -> str:
    added, dropped = now - was, was - now
    if not was:
        return f"calls {', '.join(sorted(now.elements()))} where the recording answered"
    if not now:
        return f"answers where the recording called {', '.join(sorted(was.elements()))}"
    said = []
    if added:
        said.append(f"adds {', '.join(sorted(added.elements()))}")
    if dropped:
        said.append(f"drops {', '.join(sorted(dropped.elements()))}")
    return (
        "calls another tool: " + " and ".join(said) if added and dropped else "a call " + " and ".join(said)
    )


def compared_json(compared: Compared) -> dict[str, Any]:
    """The comparison as JSON."""
    return {"drift": compared.drift.value, "why": compared.why, "similarity": compared.similarity}
