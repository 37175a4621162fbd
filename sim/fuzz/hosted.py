"""Hosted tools' items drawn into a reply under the api profile: a web search cited in the text, a file
search, a run of code, each in the spec's shapes (`sim.wire.hosted`); where sim cannot make up
what the API would send (an MCP server's tool list, an image), the run is not simulated (`NotSimulated`),
never a finding."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import strategies as st

from sim.scenario.schema import ScriptedReplySpec
from sim.wire.hosted import UNDRAWN_CALLS, WEB_ACTIONS, drawn_call, tool_kind, undrawable

_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", min_size=1, max_size=30).filter(str.strip)
_URLS = st.sampled_from(["https://example.com/", "https://example.org/news", "https://example.net/a?b=c"])


class NotSimulated(Exception):
    """A reply sim cannot draw as the API would send it: the run is counted as not simulated."""


def draw_hosted(
    data: Any, hosted: Sequence[Mapping[str, Any]], spec: ScriptedReplySpec, forced: str | None = None
) -> ScriptedReplySpec:
    """`spec` with a hosted tool's call before its text and calls: sometimes one of the tools offered, always
    the one `tool_choice` forces (`forced`); `NotSimulated` where the request, or the call drawn, asks what
    sim cannot make up."""
    if (why := undrawable(hosted)) is not None:
        raise NotSimulated(why)
    if spec.malformed:
        return spec
    kinds = sorted({tool_kind(tool) for tool in hosted})
    kind = forced or data.draw(st.sampled_from([None, None, *kinds]), label="hosted tool called")
    if kind is None:
        return spec
    if kind in UNDRAWN_CALLS:
        raise NotSimulated(UNDRAWN_CALLS[kind])
    words = data.draw(_WORDS, label="hosted words")
    url = data.draw(_URLS, label="hosted url")
    then = data.draw(st.sampled_from(WEB_ACTIONS), label="web search then") if kind == "web_search" else ""
    entries, cited = drawn_call(kind, words, url, spec.content if spec.refusal is None else None, then)
    return spec.model_copy(update={"hosted": entries, "annotations": cited})
