"""What a request costs against a tokens-per-minute limit, estimated as the API estimates it before answering:
the characters of its input over four, plus the output it may ask for (`max_tokens`,
`max_completion_tokens`, `max_output_tokens`); and the model it names (the 429's message names it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Estimate", "estimate"]

_INPUT = ("messages", "input", "instructions", "prompt")
"""Where a request's input is: Chat's messages, the Responses API's input and instructions (and the
legacy completions' prompt)."""
_OUTPUT_BUDGET = ("max_tokens", "max_completion_tokens", "max_output_tokens")
_CHARACTERS_PER_TOKEN = 4
_DEEPEST = 64
"""Nesting deeper than this is not counted (no request the API answers nests so deep)."""


@dataclass(frozen=True, slots=True)
class Estimate:
    """A request's estimated tokens, and the model it names (None: none)."""

    tokens: int
    model: str | None


def estimate(body: Mapping[str, Any]) -> Estimate:
    """The estimate of a request's parsed `body`."""
    characters = sum(_characters(body.get(name), 0) for name in _INPUT)
    budget = 0
    for name in _OUTPUT_BUDGET:
        value = body.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            budget = max(budget, value)
    model = body.get("model")
    tokens = -(-characters // _CHARACTERS_PER_TOKEN) + budget  # the characters' quarter, rounded up
    return Estimate(tokens, model if isinstance(model, str) else None)


def _characters(value: Any, depth: int) -> int:
    """The characters of every string in `value` (texts, and the names and arguments beside them)."""
    if isinstance(value, str):
        return len(value)
    if depth >= _DEEPEST:
        return 0
    if isinstance(value, list):
        return sum(_characters(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return sum(_characters(item, depth + 1) for item in value.values())
    return 0
