"""Model replies drawn one request at a time, from what that request shows: the tools it offers (arguments
shaped by their JSON Schemas: valid most often, then each kind of mistake) and the calls made so far.

A `Profile` says what may be drawn. `api`: only what the real API would send for this request (valid and
schema-violating arguments, arguments that are not JSON, JSON cut at the token limit, a tool name it was not
offered, empty text, `length`, `content_filter`, refusals, 429/500/503 with `Retry-After`, a failure
mid-stream (`response.failed`, Chat's error frame), `context_length_exceeded`, a connection dropped or reset
before the headers, halfway through a body or after a stream's first events, which the SDK retries as it
retries the live API's), within what the request's terms guarantee: a tool called when `tool_choice` requires
it (the named one, one of `allowed_tools`), none when it says `none`, one call at a time under
`parallel_tool_calls: false`, and a strict function's arguments always its schema's unless the reply is cut at
the token limit, or holds several calls (where `parallel_tool_calls` is not false the API does not guarantee
strict arguments: `sim.wire.guarantees.PARALLEL_STRICT`). `hostile`: everything, whatever the request says,
duplicate call ids, arguments that are JSON but not an object, and bodies that are not JSON included. Every
draw goes through hypothesis's `data.draw`, so a failing run shrinks to its simplest replies.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from sim.core.model import ModelRequest, ToolSpec
from sim.fuzz.custom_inputs import draw_input
from sim.fuzz.hosted import NotSimulated, draw_hosted
from sim.fuzz.schema_values import arguments as valid_arguments
from sim.fuzz.schema_values import mistaken, satisfies
from sim.fuzz.terms import Profile
from sim.scenario.schema import ScriptedErrorSpec, ScriptedReplySpec, ScriptedToolCallSpec
from sim.wire.context_window import CODE as CONTEXT_LENGTH_EXCEEDED
from sim.wire.context_window import context_exceeded
from sim.wire.hosted import undrawable
from sim.wire.tool_choice import ReplyTerms

COUNTED = ("error", "malformed", "cut")
"""Reply kinds after which a target may raise: its exception is counted, not a finding."""

_TROUBLE = {
    Profile.api: [
        "empty",
        "length",
        "content_filter",
        "refusal",
        "error",
        "cut",
        "stream_error",
        "context_length",
    ],
    Profile.hostile: [
        "context_length",
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
    Profile.api: ["valid"] * 6 + ["schema", "not_json", "cut_json", "unknown_tool"],
    Profile.hostile: ["valid"] * 4
    + ["schema", "not_json", "cut_json", "unknown_tool", "not_object", "reused_id"],
}
_STRICT = ("valid", "cut_json")
"""What a strict function's arguments may be under the api profile: the schema's, or cut at the limit."""
_STRICT_IN_PARALLEL = (*_STRICT, "schema")
"""... and in a reply of several calls where `parallel_tool_calls` is not false: also off its schema."""
_NEEDS_BODY = frozenset({"context_length"})
"""Trouble whose words depend on the API: drawn only where the request's body is known."""
_TEXT_TROUBLE = frozenset({"empty", "length", "content_filter", "refusal"})
"""Trouble that is a text reply: never drawn where the request requires a call."""
_ERRORS = [
    ScriptedErrorSpec(status=429, message="Rate limit reached for requests.", type="requests",
                      code="rate_limit_exceeded", retry_after=0.001),
    ScriptedErrorSpec(status=500, message="The server had an error while processing your request.",
                      type="server_error", retry_after=0.001),
    ScriptedErrorSpec(status=503, message="The engine is currently overloaded, please try again later.",
                      type="server_error", retry_after=0.001),
]  # fmt: skip
_FAILED_IN_STREAM = ScriptedErrorSpec(
    status=500, message="The server had an error while processing your request. Sorry about that!",
    type="server_error", code="server_error", retry_after=0.001, in_stream=True,
)  # fmt: skip
"""How the API fails a stream it started (a request that does not stream gets it as a 500)."""
_REFUSALS = ["I'm sorry, but I can't help with that.", "I can't assist with that request."]
_TEXT = st.text(min_size=1, max_size=40).filter(str.strip)
_JSON_VALUES = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=12)
_JSON_OBJECTS = st.dictionaries(st.text(max_size=8), _JSON_VALUES, max_size=4)
_FORMAT_KINDS = st.sampled_from(["valid"] * 4 + ["mistaken", "plain"])
"""What a text under a non-strict format may be: its schema's most often, off it now and then."""
FORMAT_NAME = "(response format)"
"""How `ReplyDrawer.unhonoured` names a response format whose schema the generator cannot meet."""


def kind_of(spec: ScriptedReplySpec) -> str:
    """What a reply is: `error`, `malformed`, `cut` (a network fault on its way), `calls`, `final` (text
    that ends a run), or `other`."""
    if spec.error is not None:
        return "error"
    if spec.malformed:
        return "malformed"
    if spec.cut_after_chunks is not None or spec.fault is not None:
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
        self.unhonoured: set[str] = set()
        self.format = ReplyTerms()
        """The terms of the request being answered, for its text's format."""
        """Tools whose valid arguments could not be drawn: their schema asks what the generator cannot meet
        (the call was sent off its schema where the function is not strict, cut at the limit where it is)."""
        self.body: Mapping[str, Any] | None = None
        """The body of the request being answered, where known: what an error's words depend on."""

    def draw(
        self, request: ModelRequest, terms: ReplyTerms | None = None, body: Mapping[str, Any] | None = None
    ) -> ScriptedReplySpec:
        """The reply to `request`, within `terms` under the api profile (what the API guarantees it); with
        hosted tools offered, the items they produce in the spec's shapes (`NotSimulated` where sim cannot
        draw what the API would send). `body`, the request as sent, lets errors be drawn in its API's
        words (`context_length_exceeded`). A request offering a hosted tool sim cannot simulate is not
        simulated whatever the reply (an error drawn for it would only put off saying so)."""
        self.body = body
        spec = self._drawn(request, terms)
        hosted = terms.hosted if self.profile is Profile.api and terms is not None else None
        if hosted and (why := undrawable(hosted)) is not None:
            raise NotSimulated(why)
        if hosted and terms is not None and spec.error is None:
            spec = draw_hosted(self.data, hosted, spec, terms.hosted_choice)
        return spec

    def _drawn(self, request: ModelRequest, terms: ReplyTerms | None = None) -> ScriptedReplySpec:
        """The reply to `request` without hosted tools' items."""
        data = self.data
        self.format = terms or ReplyTerms()  # a text takes the request's format under every profile
        if terms is not None and self.profile is Profile.hostile:  # anything, in the shape a reply must take
            terms = ReplyTerms(parallel=terms.legacy_call_id is None, legacy_call_id=terms.legacy_call_id)
        terms = ReplyTerms() if terms is None else terms
        tools = self._callable(request, terms)
        required = terms.choice.required and bool(tools)
        if self.planned is None:
            self.planned = data.draw(st.integers(0, 4), label="turns with calls")
        troubles = [t for t in _TROUBLE[self.profile] if not (required and t in _TEXT_TROUBLE)
                    and (self.body is not None or t not in _NEEDS_BODY)]  # fmt: skip
        if self.format.text_schema is not None or self.format.json_object:
            troubles = [t for t in troubles if t != "empty"]  # a structured text is never empty
        trouble = data.draw(st.sampled_from([None] * 8 + troubles), label="trouble")
        if trouble is not None:
            return self._trouble(trouble, tools, terms)
        if required or (self.calling_turns < self.planned and tools):
            self.calling_turns += 1
            return self._calls(tools, terms)
        return self._final()

    @staticmethod
    def _callable(request: ModelRequest, terms: ReplyTerms) -> list[ToolSpec]:
        """The offered tools a reply may call under `terms`."""
        if terms.choice.forbidden:
            return []
        allowed = terms.choice.allowed
        return [tool for tool in request.tools if allowed is None or tool.name in allowed]

    def _trouble(self, trouble: str, tools: list[ToolSpec], terms: ReplyTerms) -> ScriptedReplySpec:
        data = self.data
        if trouble == "empty":
            return ScriptedReplySpec(content="")
        if trouble == "length":
            text = self._final().content or data.draw(_TEXT, label="cut text")
            cut = data.draw(st.integers(1, max(1, len(text) - 1)), label="cut text at")
            return ScriptedReplySpec(content=text[:cut], finish_reason="length")
        if trouble == "content_filter":
            return ScriptedReplySpec(finish_reason="content_filter")
        if trouble == "refusal":
            return ScriptedReplySpec(refusal=data.draw(st.sampled_from(_REFUSALS), label="refusal"))
        if trouble == "error":
            return ScriptedReplySpec(error=data.draw(st.sampled_from(_ERRORS), label="error"))
        if trouble == "stream_error" and self.profile is Profile.api:
            return ScriptedReplySpec(error=_FAILED_IN_STREAM)
        if trouble == "stream_error":
            error = data.draw(st.sampled_from(_ERRORS), label="error").model_copy(update={"in_stream": True})
            return ScriptedReplySpec(error=error)
        if trouble == "context_length":
            over = data.draw(st.integers(1, 50_000), label="tokens over")
            exceeded = context_exceeded(self.body or {}, over)
            return ScriptedReplySpec(error=ScriptedErrorSpec(
                status=400, message=exceeded.message, type="invalid_request_error",
                code=CONTEXT_LENGTH_EXCEEDED, param=exceeded.param))  # fmt: skip
        if trouble == "malformed":
            return ScriptedReplySpec(content="(never sent)", malformed=True)
        replied = self._calls(tools, terms) if tools else self._final()
        fault = data.draw(st.sampled_from(["drop", "reset"]), label="network fault")
        if data.draw(st.booleans(), label="before the headers"):
            return replied.model_copy(update={"fault": fault})
        cut = data.draw(st.integers(0, 3), label="chunks before the fault")  # a body: halfway
        return replied.model_copy(update={"fault": fault, "cut_after_chunks": cut})

    def _calls(self, tools: list[ToolSpec], terms: ReplyTerms) -> ScriptedReplySpec:
        data = self.data
        count = data.draw(st.integers(1, 3), label="parallel calls") if terms.parallel else 1
        calls = []
        cut_short = False
        for _ in range(count):
            tool = data.draw(st.sampled_from(tools), label="tool")
            if tool.kind == "custom":
                call, cut_short = self._custom_call(tool, terms)
                calls.append(call)
                if cut_short:
                    break  # the token limit ends the reply inside this call's input
                continue
            kinds = _ARGUMENTS[self.profile]
            if self.profile is Profile.api and tool.name in terms.strict:
                kinds = [kind for kind in kinds if kind in (_STRICT_IN_PARALLEL if count > 1 else _STRICT)]
            if self.profile is Profile.api and (terms.choice.required or terms.choice.allowed is not None):
                kinds = [kind for kind in kinds if kind != "unknown_tool"]  # the request says what is called
            how = data.draw(st.sampled_from(kinds), label="arguments")
            enforced = terms.strict.get(tool.name)
            schema = dict(enforced if enforced is not None else tool.parameters)
            name, arguments = tool.name, data.draw(valid_arguments(schema), label="arguments")
            if how == "valid" and not satisfies(schema, arguments):
                self.unhonoured.add(tool.name)
                if enforced is not None:
                    how = "cut_json"  # the API sends a strict function no other arguments, but may cut them
            if how == "schema":
                arguments = data.draw(mistaken(dict(tool.parameters)), label="mistaken arguments")[1]
            elif how == "not_json":
                text = json.dumps(arguments, ensure_ascii=False)
                arguments = data.draw(
                    st.sampled_from([text[:-1], text + "}", text.replace('"', "'")]), label="not JSON"
                )
            elif how == "cut_json":
                text = json.dumps(arguments, ensure_ascii=False)
                arguments = text[: data.draw(st.integers(1, max(1, len(text) - 1)), label="cut at")]
                cut_short = True
            elif how == "unknown_tool":
                name = data.draw(st.sampled_from(["search", "browser", "read_file", f"{tool.name}_v2"]))
            elif how == "not_object":
                arguments = data.draw(st.sampled_from(['["Paris"]', '"Paris"', "42", "null", "true"]))
            call_id = terms.legacy_call_id or f"call_{self.calls_made + 1}"  # a legacy call: where it stands
            if how == "reused_id" and self.ids:
                call_id = data.draw(st.sampled_from(self.ids), label="reused id")
            self.calls_made += 1
            self.ids.append(call_id)
            calls.append(ScriptedToolCallSpec(id=call_id, name=name, arguments=arguments))
            if cut_short:
                break  # the token limit ends the reply inside this call's arguments
        return ScriptedReplySpec(tool_calls=calls, finish_reason="length" if cut_short else None)

    def _custom_call(self, tool: ToolSpec, terms: ReplyTerms) -> tuple[ScriptedToolCallSpec, bool]:
        """A call of a custom tool, its input drawn from the tool's grammar (`sim.fuzz.custom_inputs`), and
        whether the reply is cut inside it."""
        drawn = draw_input(self.data, tool, self.profile)
        if not drawn.honoured:
            self.unhonoured.add(tool.name)
        call_id = f"call_{self.calls_made + 1}"
        self.calls_made += 1
        self.ids.append(call_id)
        if drawn.as_function:
            return ScriptedToolCallSpec(id=call_id, name=tool.name, arguments=drawn.text), False
        return ScriptedToolCallSpec(id=call_id, name=tool.name, input=drawn.text), drawn.cut

    def _final(self) -> ScriptedReplySpec:
        """A text that ends the run, in the request's format: a strict format's schema (cut at the token
        limit where its values cannot be drawn, as for a strict function), any JSON object in `json_object`
        mode; a non-strict format's schema most often, and now and then JSON off it or plain text."""
        data, terms = self.data, self.format
        schema = terms.text_schema if terms.text_schema is not None else terms.text_wanted
        if schema is not None:
            how = "valid" if terms.text_schema is not None else data.draw(_FORMAT_KINDS, label="text format")
            if how == "plain":
                return ScriptedReplySpec(content=data.draw(_TEXT, label="final text"))
            if how == "mistaken":
                value: Any = data.draw(mistaken(dict(schema)), label="mistaken text")[1]
            else:
                value = data.draw(valid_arguments(dict(schema)), label="structured text")
            text = json.dumps(value, ensure_ascii=False)
            if how == "valid" and not satisfies(dict(schema), value):
                self.unhonoured.add(FORMAT_NAME)
                if terms.text_schema is not None:
                    cut = data.draw(st.integers(1, max(1, len(text) - 1)), label="cut text at")
                    return ScriptedReplySpec(content=text[:cut], finish_reason="length")
            return ScriptedReplySpec(content=text)
        if terms.json_object:
            return ScriptedReplySpec(content=json.dumps(data.draw(_JSON_OBJECTS, label="json object")))
        return ScriptedReplySpec(content=data.draw(_TEXT, label="final text"))
