"""Custom tool inputs drawn for the fuzzer: under the api profile a custom call's input is one its grammar
generates (or free text), unless the reply is cut inside it; a grammar hypothesis cannot draw from is
reported unhonoured and its inputs cut; the hostile profile also sends text off the grammar and function
arguments."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.core.messages import UserMessage
from sim.core.model import InputGrammar, ModelRequest, ToolSpec
from sim.fuzz.custom_inputs import draw_input
from sim.fuzz.replies import ReplyDrawer
from sim.fuzz.terms import Profile
from sim.wire.custom_tools import input_problem
from sim.wire.tool_choice import ReplyTerms, ToolChoice
from tests.fuzz.targets import COMMAND_REGEX, PATCH_GRAMMAR

TEXT = ToolSpec("note", "Notes.", {}, "custom")
REGEX = ToolSpec("run", "Runs.", {}, "custom", InputGrammar("regex", COMMAND_REGEX))
LARK = ToolSpec("apply_patch", "Patches.", {}, "custom", InputGrammar("lark", PATCH_GRAMMAR))
REQUEST = ModelRequest([UserMessage(content="Fix it.")], (TEXT, REGEX, LARK))
TOOLS = {tool.name: tool for tool in REQUEST.tools}


def test_the_api_profile_draws_inputs_the_grammar_generates() -> None:
    called: set[str] = set()

    @settings(max_examples=120, deadline=None)
    @given(st.data())
    def draw(data: st.DataObject) -> None:
        drawer = ReplyDrawer(data, Profile.api)
        reply = drawer.draw(REQUEST, ReplyTerms(choice=ToolChoice(required=True)))
        for index, call in enumerate(reply.tool_calls):
            assert call.input is not None and "arguments" not in call.model_fields_set
            grammar = TOOLS[call.name].grammar
            cut = reply.finish() == "length" and index == len(reply.tool_calls) - 1
            if grammar is not None and not cut:
                assert input_problem(grammar, call.input) is None, (call.name, call.input)
                called.add(call.name)
        assert drawer.unhonoured == set()

    draw()
    assert called == {"run", "apply_patch"}


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_grammar_hypothesis_cannot_draw_from_is_unhonoured_and_cut(data: st.DataObject) -> None:
    lookahead = ToolSpec("odd", "Odd.", {}, "custom", InputGrammar("regex", r"(?=a)\p{L}+"))
    drawn = draw_input(data, lookahead, Profile.api)
    assert drawn.cut and not drawn.honoured


def test_the_hostile_profile_breaks_the_grammar() -> None:
    found: set[str] = set()

    @settings(max_examples=150, deadline=None)
    @given(st.data())
    def draw(data: st.DataObject) -> None:
        drawn = draw_input(data, REGEX, Profile.hostile)
        if drawn.as_function:
            found.add("function arguments")
        elif not drawn.cut and input_problem(REGEX.grammar, drawn.text) is not None:  # type: ignore[arg-type]
            found.add("off the grammar")

    draw()
    assert found == {"function arguments", "off the grammar"}
