"""Model replies drawn one request at a time, from what that request shows: the tools it offers (arguments
shaped by their JSON Schemas: valid most often, then each kind of mistake) and the calls made so far.

A `Profile` says what may be drawn. `api`: only what the real API has been seen to send (valid and
schema-violating arguments, JSON cut at the token limit, a tool name it was not offered, empty text,
`length`, `content_filter`, refusals, 429/500/503 with `Retry-After`, cut streams). `hostile`:
everything, duplicate call ids, arguments that are JSON but not an object, and bodies that are not JSON
included. Every draw goes through hypothesis's `data.draw`, so a failing run shrinks to its simplest
replies.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

from hypothesis import strategies as st

from sim.core.model import ModelRequest
from sim.scenario.schema import ScriptedErrorSpec, ScriptedReplySpec, ScriptedToolCallSpec
from sim.testing.schema_values import arguments as valid_arguments
from sim.testing.schema_values import mistaken


class Profile(StrEnum):
    """What a campaign may draw."""

    api = "api"
    """Only what the real API has been seen to send."""
    hostile = "hostile"
    """Everything, duplicate ids and non-object arguments included."""


COUNTED = ("error", "malformed", "cut")
"""Reply kinds after which a target may raise: its exception is counted, not a finding."""

_TROUBLE = {
    Profile.api: ["empty", "length", "content_filter", "refusal", "error", "cut"],
    Profile.hostile: [
        "empty",
        "length",
        "content_filter",
        "refusal",
        "error",
        "cut",
        "malformed",
        "stream_error",
    ],
}
_ARGUMENTS = {
    Profile.api: ["valid"] * 6 + ["schema", "cut_json", "unknown_tool"],
    Profile.hostile: ["valid"] * 4 + ["schema", "cut_json", "unknown_tool", "not_object", "reused_id"],
}
_ERRORS = [
    ScriptedErrorSpec(status=429, message="Rate limit reached for requests.", type="requests",
                      code="rate_limit_exceeded", retry_after=0.001),
    ScriptedErrorSpec(status=500, message="The server had an error while processing your request.",
                      type="server_error", retry_after=0.001),
    ScriptedErrorSpec(status=503, message="The engine is currently overloaded, please try again later.",
                      type="server_error", retry_after=0.001),
]  # fmt: skip
_REFUSALS = ["I'm sorry, but I can't help with that.", "I can't assist with that request."]
_TEXT = st.text(min_size=1, max_size=40).filter(str.strip)


def kind_of(spec: ScriptedReplySpec) -> str:
    """What a reply is: `error`, `malformed`, `cut`, `calls`, `final` (text that ends a run), or `other`."""
    if spec.error is not None:
        return "error"
    if spec.malformed:
        return "malformed"
    if spec.cut_after_chunks is not None:
        return "cut"
    if spec.tool_calls:
        return "calls"
    if spec.content and spec.finish() == "stop":
        return "final"
    return "other"


class ReplyDrawer:
    """Draws the replies of one run, request by request (`data` is hypothesis's `st.data()` object)."""

    def __init__(self, data: Any, profile: Profile) -> None:
        self.data = data
        self.profile = profile
        self.planned: int | None = None
        self.calling_turns = 0
        self.calls_made = 0
        self.ids: list[str] = []

    def draw(self, request: ModelRequest) -> ScriptedReplySpec:
        """The reply to `request`."""
        data = self.data
        if self.planned is None:
            self.planned = data.draw(st.integers(0, 4), label="turns with calls")
        trouble = data.draw(st.sampled_from([None] * 8 + _TROUBLE[self.profile]), label="trouble")
        if trouble is not None:
            return self._trouble(trouble, request)
        if self.calling_turns < self.planned and request.tools:
            self.calling_turns += 1
            return self._calls(request)
        return ScriptedReplySpec(content=data.draw(_TEXT, label="final text"))

    def _trouble(self, trouble: str, request: ModelRequest) -> ScriptedReplySpec:
        data = self.data
        if trouble == "empty":
            return ScriptedReplySpec(content="")
        if trouble == "length":
            return ScriptedReplySpec(content=data.draw(_TEXT, label="cut text"), finish_reason="length")
        if trouble == "content_filter":
            return ScriptedReplySpec(finish_reason="content_filter")
        if trouble == "refusal":
            return ScriptedReplySpec(refusal=data.draw(st.sampled_from(_REFUSALS), label="refusal"))
        if trouble == "error":
            return ScriptedReplySpec(error=data.draw(st.sampled_from(_ERRORS), label="error"))
        if trouble == "stream_error":
            error = data.draw(st.sampled_from(_ERRORS), label="error").model_copy(update={"in_stream": True})
            return ScriptedReplySpec(error=error)
        if trouble == "malformed":
            return ScriptedReplySpec(content="(never sent)", malformed=True)
        replied = self._calls(request) if request.tools else ScriptedReplySpec(content="(cut)")
        cut = data.draw(st.integers(0, 3), label="chunks before the cut")
        return replied.model_copy(update={"cut_after_chunks": cut})

    def _calls(self, request: ModelRequest) -> ScriptedReplySpec:
        data = self.data
        count = data.draw(st.integers(1, 3), label="parallel calls")
        calls = []
        cut_short = False
        for _ in range(count):
            tool = data.draw(st.sampled_from(request.tools), label="tool")
            how = data.draw(st.sampled_from(_ARGUMENTS[self.profile]), label="arguments")
            name, arguments = tool.name, data.draw(valid_arguments(dict(tool.parameters)), label="arguments")
            if how == "schema":
                arguments = data.draw(mistaken(dict(tool.parameters)), label="mistaken arguments")[1]
            elif how == "cut_json":
                text = json.dumps(arguments, ensure_ascii=False)
                arguments = text[: data.draw(st.integers(1, max(1, len(text) - 1)), label="cut at")]
                cut_short = True
            elif how == "unknown_tool":
                name = data.draw(st.sampled_from(["search", "browser", "read_file", f"{tool.name}_v2"]))
            elif how == "not_object":
                arguments = data.draw(st.sampled_from(['["Paris"]', '"Paris"', "42", "null", "true"]))
            call_id = f"call_{self.calls_made + 1}"
            if how == "reused_id" and self.ids:
                call_id = data.draw(st.sampled_from(self.ids), label="reused id")
            self.calls_made += 1
            self.ids.append(call_id)
            calls.append(ScriptedToolCallSpec(id=call_id, name=name, arguments=arguments))
            if cut_short:
                break  # the token limit ends the reply inside this call's arguments
        return ScriptedReplySpec(tool_calls=calls, finish_reason="length" if cut_short else None)
