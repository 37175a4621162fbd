"""Inputs of custom tool calls drawn for the fuzzer: free text for a `text` tool, and for a grammar tool the
inputs its grammar generates (`hypothesis.extra.lark.from_lark` for `lark`, `st.from_regex(fullmatch=True)`
for `regex`), each judged by the same reader that judges scripts (`sim.wire.custom_tools.input_problem`).

Under the api profile an input always matches its grammar, as the API guarantees, or is cut at the token
limit (where no matching input can be drawn, it is cut and the tool is reported unhonoured); the hostile
profile may also send text off the grammar, or call the custom tool with function arguments."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import HypothesisException
from hypothesis.extra.lark import from_lark

from sim.core.model import InputGrammar, ToolSpec
from sim.fuzz.terms import Profile
from sim.wire.custom_tools import input_problem, lark_parser

_HOW = {
    Profile.api: ["valid"] * 6 + ["cut"],
    Profile.hostile: ["valid"] * 3 + ["cut", "off_grammar", "as_function"],
}
_FREE_TEXT = st.text(max_size=60)
_OFF_GRAMMAR = ["", "{", '{"input": 1}', "*** Begin Patch", "\x00", "DROP TABLE users;", "ls -la\n" * 3]


@dataclass(frozen=True, slots=True)
class DrawnInput:
    """One custom call's input as drawn: the text, whether the reply is cut inside it (finish `length`),
    whether it is sent as function arguments instead (hostile), and whether a matching input could be
    drawn (`honoured`)."""

    text: str
    cut: bool = False
    as_function: bool = False
    honoured: bool = True


def _grammar_inputs(grammar: InputGrammar) -> st.SearchStrategy[str]:
    """The inputs a grammar generates, as hypothesis draws them."""
    if grammar.syntax == "regex":
        return st.from_regex(grammar.definition, fullmatch=True)
    return from_lark(lark_parser(grammar))


def draw_input(data: Any, tool: ToolSpec, profile: Profile) -> DrawnInput:
    """An input for a call of the custom `tool` (`data`: hypothesis's `st.data()` object)."""
    how = data.draw(st.sampled_from(_HOW[profile]), label="custom input")
    if how == "off_grammar":
        return DrawnInput(data.draw(st.sampled_from(_OFF_GRAMMAR), label="off-grammar input"))
    if how == "as_function":
        return DrawnInput('{"input": "x"}', as_function=True)
    grammar = tool.grammar
    honoured = True
    if grammar is None:
        text = data.draw(_FREE_TEXT, label="free-form input")
    else:
        try:
            text = data.draw(_grammar_inputs(grammar), label="grammar input")
        except (HypothesisException, re.error, ValueError, TypeError, RecursionError, NotImplementedError):
            text = ""  # a grammar hypothesis cannot draw from
            honoured = False
        else:
            honoured = input_problem(grammar, text) is None
    if how == "cut" or not honoured:  # the API sends nothing off the grammar, but may cut an input short
        end = data.draw(st.integers(0, max(0, len(text) - 1)), label="input cut at")
        return DrawnInput(text[:end], cut=True, honoured=honoured)
    return DrawnInput(text)
