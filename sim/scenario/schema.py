"""The scenario file format: what people write to script a model, the world, and what must come out."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator, model_validator

from sim.core.calls import CallRef
from sim.core.commands import DEFAULT_MAX_CHARS, DEFAULT_TIMEOUT_SECONDS
from sim.core.errors import ScenarioError
from sim.core.messages import HostedItem
from sim.core.model import FinishReason, OutputFormat
from sim.core.outcome import Outcome
from sim.core.scripted import ScriptedCommand
from sim.core.tools import CODE_IFF_ERROR, TOOL_NAME
from sim.host.rate_limit import RateLimit, RateLimitError
from sim.scenario.yaml_source import DataPath
from sim.wire.hosted import scripted_annotation, scripted_hosted

BuiltinTool = Literal["shell"]
"""The built-in tools a scenario can offer by name."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True)


class ScriptedToolCallSpec(_Strict):
    """One tool call the model makes."""

    id: Annotated[str, Field(min_length=1)] | None = Field(
        None, description="The call id; `call_<n>` (n counting calls in the file from 1) when left out."
    )
    name: Annotated[str, Field(min_length=1)] = Field(description="The tool the model calls.")
    arguments: Any = Field(
        default_factory=dict,
        description="A mapping (sent as the JSON the model would write) or a string (sent as is, "
        "so `'{'` scripts invalid JSON).",
    )

    input: str | None = Field(
        None,
        description="The free-form input of a call of a custom tool, instead of `arguments`: the call is sent"
        " as the API sends a custom tool call.",
    )

    @model_validator(mode="after")
    def _arguments_or_input(self) -> ScriptedToolCallSpec:
        if self.input is not None and "arguments" in self.model_fields_set:
            raise ValueError(
                "a call has `arguments` (a function call) or `input` (a custom tool call), not both"
            )
        return self

    def raw_arguments(self) -> str:
        """The arguments as the model sends them: a string unchanged, anything else as compact JSON (a custom
        tool call's input as it is)."""
        if self.input is not None:
            return self.input
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))


class ScriptedErrorSpec(_Strict):
    """An error response from the API instead of a reply, raised as the OpenAI adapter would."""

    status: int = Field(ge=400, le=599, description="The HTTP status, e.g. 429.")
    message: str = Field(description="The error message the API sends.")
    type: str | None = Field(
        None,
        description="The API's error type, e.g. `requests` (a 429); left out: the one the API gives the"
        " status and code (docs/errors.md).",
    )
    code: str | None = Field(None, description="The API's error code.")
    param: str | None = Field(
        None, description="The parameter the error names, e.g. `messages` (Chat) or `input` (Responses)."
    )
    retry_after: float | None = Field(None, ge=0, description="Seconds, as sent in `Retry-After`.")
    in_stream: bool = Field(
        False,
        description="When the request streams, send the error inside a 200 stream (Chat's error chunk, the"
        " Responses API's `response.failed`) instead of as the HTTP status.",
    )
    retries: int | None = Field(
        None,
        ge=0,
        le=100,
        description="How many times the client is expected to retry this request (the same body again); each"
        " retry takes the next scripted reply. A retry past them, or another request first, is an"
        " expectation failure. Left out: retries are not checked.",
    )


class MessageExpectation(_Strict):
    """Fields a message must have; those left out are not checked."""

    role: Literal["system", "user", "assistant", "tool"] | None = None
    content: str | None = None
    tool_call_id: str | None = None


class RequestExpectation(_Strict):
    """What the request answered by this reply must look like."""

    message_count: PositiveInt | None = Field(None, description="Messages sent, system prompt included.")
    last_message: MessageExpectation | None = Field(None, description="The last message sent.")
    tools: list[str] | None = Field(None, description="Names of the tools offered, in order.")


MAX_LATENCY = 600.0
"""The longest latency a scenario may script, in seconds (the SDK's own default timeout): a finite wait."""


class Latency(_Strict):
    """How slowly the simulator answers (the loop run directly does not wait); each at most
    `MAX_LATENCY` seconds."""

    first_byte: float = Field(
        0.0, ge=0, le=MAX_LATENCY, allow_inf_nan=False,
        description="Seconds before the reply, or before a stream's first chunk.",
    )  # fmt: skip
    between_chunks: float = Field(
        0.0, ge=0, le=MAX_LATENCY, allow_inf_nan=False, description="Seconds between a stream's chunks."
    )


class ScriptedReplySpec(_Strict):
    """What the model answers to one request: text and/or tool calls, or an API error."""

    content: str | None = Field(None, description="The reply's text; null (or left out) for none.")
    tool_calls: list[ScriptedToolCallSpec] = Field(default_factory=list, description="Calls, in order.")
    reasoning: str | None = Field(
        None,
        description="Reasoning served over the Responses API as a reasoning item (with a synthetic"
        " `encrypted_content` when the request asks for it); ignored over Chat Completions.",
    )
    refusal: str | None = Field(
        None,
        description="The model declines: sent as the API sends a refusal (Chat's `message.refusal`, a"
        " Responses `refusal` content part) instead of text. The loop reads it as the reply's text.",
    )
    finish_reason: FinishReason | None = Field(
        None, description="Derived when left out: `tool_calls` when there are calls, else `stop`."
    )
    hosted: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Items of hosted tools (Responses API), in order, before the text and calls: each a"
        " mapping with `type` (`web_search_call`, `file_search_call`, `code_interpreter_call`,"
        " `mcp_list_tools`, `mcp_call`, `mcp_approval_request`, `image_generation_call`) and the item's"
        " fields in the spec's shape; sim fills each `id` left out, and `status`.",
    )
    annotations: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Citations on `content` (Responses API): `url_citation` (start_index, end_index, url,"
        " title) or `file_citation` (file_id, filename, index).",
    )
    error: ScriptedErrorSpec | None = Field(None, description="An API error instead of a reply.")
    malformed: bool = Field(False, description="Send a body that is not JSON instead of the reply.")
    cut_after_chunks: Annotated[int, Field(ge=0)] | None = Field(
        None,
        description="End the stream after this many chunks, before the finish reason "
        "(a reply that is not streamed is cut in half).",
    )
    latency: Latency | None = Field(None, description="This reply's latency; the scenario's when left out.")
    expect_request: RequestExpectation | None = Field(
        None, description="Checks on the request the loop sent for this reply."
    )
    fault: Literal["drop", "reset", "stall"] | None = Field(
        None,
        description="A network fault on the way (`cut_after_chunks` alone is a `drop`): the connection"
        " closed, reset, or silent for `stall_seconds` (past the client's timeout). The SDK meets it as the"
        " live API's dropped connection: it retries, then raises `APIConnectionError` (`APITimeoutError`).",
    )
    fault_at: Literal["before_headers", "mid_body"] | None = Field(
        None,
        description="Where the fault strikes: `before_headers` (the default), or `mid_body`: halfway through"
        " a body that is not streamed (its whole Content-Length announced), a stream after `cut_after_chunks`"
        " events (half of them when left out). `cut_after_chunks` says `mid_body`.",
    )
    drops: int | None = Field(
        None,
        ge=1,
        le=100,
        description="How many attempts at this request meet the fault before the reply is sent whole: each"
        " retry (the same body, `x-stainless-retry-count` counting) takes the next attempt. Left out, the"
        " fault is this reply's answer, and a retry takes the next reply.",
    )
    stall_seconds: float | None = Field(
        None, gt=0, le=MAX_LATENCY, allow_inf_nan=False,
        description="How long a `stall` lasts (600, the SDK's default timeout, when left out).",
    )  # fmt: skip

    @model_validator(mode="after")
    def _fault_fits(self) -> ScriptedReplySpec:
        faulted = self.fault is not None or self.cut_after_chunks is not None
        if not faulted and (self.fault_at or self.drops is not None or self.stall_seconds is not None):
            raise ValueError("`fault_at`, `drops` and `stall_seconds` need a `fault` (drop, reset or stall)")
        if self.cut_after_chunks is not None and self.fault_at == "before_headers":
            raise ValueError("`cut_after_chunks` drops the connection mid-body, not `before_headers`")
        if self.stall_seconds is not None and self.fault != "stall":
            raise ValueError("`stall_seconds` is how long a `fault: stall` lasts")
        if faulted and self.malformed:
            raise ValueError("a reply that meets a `fault` cannot also be `malformed`")
        return self

    @model_validator(mode="after")
    def _error_stands_alone(self) -> ScriptedReplySpec:
        if self.error is not None and (self.content is not None or self.tool_calls or self.finish_reason):
            raise ValueError("a reply with `error` cannot also have content, tool_calls or finish_reason")
        if self.error is not None and self.malformed:
            raise ValueError("a reply with `error` cannot also be malformed")
        if self.refusal is not None and (
            self.content is not None or self.tool_calls or self.error is not None
        ):
            raise ValueError("a reply with `refusal` cannot also have content, tool_calls or error")
        return self

    @field_validator("hosted")
    @classmethod
    def _hosted_shapes(cls, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for index, entry in enumerate(entries):
            try:
                scripted_hosted(entry)
            except ValueError as error:
                raise ValueError(f"hosted[{index}]: {error}") from None
        return entries

    @model_validator(mode="after")
    def _hosted_fits(self) -> ScriptedReplySpec:
        if self.error is not None and (self.hosted or self.annotations):
            raise ValueError("a reply with `error` cannot also have hosted items or annotations")
        for index, entry in enumerate(self.annotations):
            try:
                scripted_annotation(entry, self.content or "")
            except ValueError as error:
                raise ValueError(f"annotations[{index}]: {error}") from None
        return self

    def hosted_items(self) -> list[HostedItem]:
        """The hosted items, checked (ids left out are filled when served)."""
        return [scripted_hosted(entry) for entry in self.hosted]

    def finish(self) -> FinishReason:
        """The finish reason, derived when not written."""
        return self.finish_reason or ("tool_calls" if self.tool_calls else "stop")


class ScriptedCommandSpec(_Strict):
    """What one shell command "prints"; it is never executed."""

    command: str = Field(min_length=1, description="The exact command the model sends.")
    output: str = Field("", description="Its stdout and stderr, merged.")
    exit_code: int = Field(0, description="Its exit code.")
    timed_out: bool = Field(False, description="Whether it ran past the timeout.")
    start_fails: bool = Field(False, description="Whether the shell could not even be started.")

    def scripted(self) -> ScriptedCommand:
        """The entry as the scripted command runner takes it."""
        return ScriptedCommand(self.command, self.output, self.exit_code, self.timed_out, self.start_fails)


class ShellSettings(_Strict):
    """Settings of the scenario's shell tool."""

    timeout: float = Field(DEFAULT_TIMEOUT_SECONDS, gt=0, description="Seconds, shown in timeout errors.")
    max_chars: PositiveInt = Field(DEFAULT_MAX_CHARS, description="Output kept before `[output truncated]`.")


class CustomFormatSpec(_Strict):
    """A custom tool's input format: free text, or a grammar (`lark` or `regex`) its input always matches."""

    type: Literal["text", "grammar"] = Field(description="`text` (free-form) or `grammar`.")
    syntax: Literal["lark", "regex"] | None = Field(None, description="The grammar's syntax.")
    definition: str | None = Field(None, description="The grammar itself.")

    @model_validator(mode="after")
    def _grammar_complete(self) -> CustomFormatSpec:
        if (self.type == "grammar") != (self.syntax is not None and self.definition is not None):
            raise ValueError("a `grammar` format needs `syntax` and `definition`; `text` has neither")
        return self


class ScriptedToolSpec(_Strict):
    """A tool offered to the model whose calls are answered from the scenario's `results`, by call id."""

    name: Annotated[str, Field(min_length=1)] = Field(
        description="The tool's name: letters, digits and `_`.", pattern=TOOL_NAME.pattern
    )
    description: str = Field("", description="What the model is told the tool does.")
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="The JSON Schema of its arguments, shown to the model as is.",
    )
    strict: bool = Field(
        False,
        description="A strict function (Structured Outputs): `parameters` must be in the strict subset, and"
        " every scripted call's arguments must match them (but the last call of a reply cut at `length`).",
    )
    format: CustomFormatSpec | None = Field(
        None,
        description="Makes the tool a custom tool, whose calls carry free-form `input`: `{type: text}`, or"
        " `{type: grammar, syntax: lark | regex, definition: ...}`, which every scripted input must match.",
    )
    effect: Literal["read", "write", "execute"] = Field("read", description="Shown to the approver.")
    available_after: str | None = Field(
        None,
        description="Offered only from the turn after the call with this id ran (a tool being installed).",
    )


class ScriptedResultSpec(_Strict):
    """What a scripted tool returns for one call."""

    content: str = Field("", description="The text the model reads.")
    is_error: bool = Field(False, description="Whether the call failed.")
    error_code: str | None = Field(None, description="The error code, when it failed.")
    raises: bool = Field(False, description="The handler raises instead of returning (the loop must cope).")

    @model_validator(mode="after")
    def _code_iff_error(self) -> ScriptedResultSpec:
        if not self.raises and self.is_error != (self.error_code is not None):
            raise ValueError(CODE_IFF_ERROR)
        return self


class ToolResultExpectation(_Strict):
    """What one call's result must be; fields left out are not checked."""

    content: str | None = None
    is_error: bool | None = None
    error_code: str | None = None


class Expectation(_Strict):
    """What must come out of the run; fields left out are not checked, except `outcome`."""

    outcome: Outcome = Field("completed", description="How the run must end.")
    final_text: str | None = Field(None, description="The final answer, exactly.")
    turns: PositiveInt | None = Field(None, description="Model requests made.")
    tool_results: dict[str, ToolResultExpectation] = Field(
        default_factory=dict, description="Results by call id."
    )


Approvals = Literal["allow", "deny"] | list[bool]


def _default_tools() -> list[BuiltinTool | ScriptedToolSpec]:
    return ["shell"]


class ResponseFormatSpec(_Strict):
    """The structured format the scenario's program asks its final text to take (`json_schema`)."""

    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$", description="The format's name.")
    schema_: dict[str, Any] = Field(alias="schema", description="The JSON Schema the text is JSON of.")
    strict: bool = Field(
        False,
        description="Strict (Structured Outputs): the schema must be in the strict subset, and every scripted"
        " text that ends with `stop` must match it.",
    )

    def output(self) -> OutputFormat:
        """The format as the loop asks it of every request."""
        return OutputFormat(self.name, self.schema_, self.strict)


class Scenario(_Strict):
    """One scripted run: the prompt, the model's replies, the world's answers, and the expectations."""

    name: str | None = Field(None, description="A short name; the file name when left out.")
    description: str | None = Field(None, description="What the scenario shows, in a sentence or two.")
    prompt: str | None = Field(
        None, description="The user's message; needed to play the scenario, not to serve it."
    )
    system_prompt: Annotated[str, Field(min_length=1)] | None = Field(
        None, description="The system prompt; the loop's default when left out."
    )
    model: Annotated[str, Field(min_length=1)] = Field(
        "sim-model", description="The model the simulator reports in replies and /v1/models."
    )
    max_turns: PositiveInt = Field(20, description="The most model requests the run may make.")
    tools: list[BuiltinTool | ScriptedToolSpec] = Field(
        default_factory=_default_tools, description="Tools offered: built-in names, or scripted tools."
    )
    response_format: ResponseFormatSpec | None = Field(
        None,
        description="The structured format the program asks for (name, schema, strict): scripted final texts"
        " are checked against a strict one when the scenario loads.",
    )
    results: dict[str, str | ScriptedResultSpec] = Field(
        default_factory=dict, description="What scripted tools return, by call id: text, or a result."
    )
    approvals: Approvals = Field(
        "allow", description="`allow`, `deny`, or one answer per approval request, in order: [yes, no]."
    )
    shell: ShellSettings = Field(default_factory=ShellSettings, description="The shell tool's settings.")
    commands: list[ScriptedCommandSpec] = Field(
        default_factory=list, description="What the shell prints for each command; each answers one run."
    )
    latency: Latency = Field(default_factory=Latency, description="The simulator's latency for every reply.")
    replies: list[ScriptedReplySpec] = Field(min_length=1, description="One entry per model request.")
    expect: Expectation = Field(default_factory=Expectation, description="What must come out.")
    rate_limit: str | None = Field(
        None,
        description="The API's rate limits simulated, as `sim serve --rate-limit` takes them:"
        " `requests=N/min,tokens=N/min` (either or both). Every answer carries the x-ratelimit-* headers;"
        " a request past the budget is answered 429 `rate_limit_exceeded` without taking a reply.",
    )

    @field_validator("rate_limit")
    @classmethod
    def _rate_limit_read(cls, said: str | None) -> str | None:
        if said is not None:
            try:
                RateLimit.parse(said)
            except RateLimitError as error:
                raise ValueError(str(error)) from None
        return said

    @property
    def rate_limits(self) -> RateLimit | None:
        """The rate limits the scenario asks to be simulated (None: none)."""
        return None if self.rate_limit is None else RateLimit.parse(self.rate_limit)

    @field_validator("approvals", mode="before")
    @classmethod
    def _approvals_word(cls, value: Any) -> Any:
        if isinstance(value, str) and value not in ("allow", "deny"):
            raise ValueError(f"must be allow, deny, or a list of answers like [yes, no], not {value!r}")
        return value

    @field_validator("tools", mode="before")
    @classmethod
    def _builtin_names(cls, tools: Any) -> Any:
        for tool in tools if isinstance(tools, list) else []:
            if isinstance(tool, str) and tool != "shell":
                raise ValueError(
                    f"unknown built-in tool {tool!r} (built-in: shell; scripted tools are mappings"
                    " with name, description, parameters)"
                )
        return tools

    @field_validator("replies")
    @classmethod
    def _retries_answered(cls, replies: list[ScriptedReplySpec]) -> list[ScriptedReplySpec]:
        for index, reply in enumerate(replies):
            expected = reply.error.retries if reply.error is not None else None
            if expected and len(replies) - index - 1 < expected:
                raise ValueError(
                    f"replies[{index}].error.retries is {expected}, but {len(replies) - index - 1} replies"
                    " follow it: each retry takes the next scripted reply"
                )
        return replies

    @field_validator("replies")
    @classmethod
    def _hosted_ids_once(cls, replies: list[ScriptedReplySpec]) -> list[ScriptedReplySpec]:
        seen: set[str] = set()
        for index, reply in enumerate(replies):
            for entry in reply.hosted:
                item_id = entry.get("id")
                if isinstance(item_id, str) and item_id in seen:
                    raise ValueError(
                        f"replies[{index}] reuses the hosted item id {item_id!r}: the API gives each item"
                        " an id of its own"
                    )
                if isinstance(item_id, str):
                    seen.add(item_id)
        return replies

    @field_validator("tools")
    @classmethod
    def _tools_once(cls, tools: list[BuiltinTool | ScriptedToolSpec]) -> list[BuiltinTool | ScriptedToolSpec]:
        names = [tool if isinstance(tool, str) else tool.name for tool in tools]
        if len(set(names)) != len(names):
            raise ValueError("each tool may be listed once")
        return tools

    def require_prompt(self) -> str:
        """The prompt; `ScenarioError` when the scenario has none (it can only be served)."""
        if self.prompt is None:
            raise ScenarioError(
                f"scenario {self.name}: missing required key 'prompt' (a scenario without one can only be"
                " served by `sim serve`)"
            )
        return self.prompt

    def calls(self) -> list[CallRef]:
        """Every scripted call as `(id, turn)`: reply n answers request n, so its calls are turn n's."""
        return [(call_id, turn) for turn, ids in enumerate(self.call_ids(), 1) for call_id in ids]

    def call_keys(self) -> list[tuple[DataPath, str]]:
        """Where the file names a call by key (results, expected results, `available_after`), and the key."""
        named: list[tuple[DataPath, str]] = [(("results", key), key) for key in self.results]
        named += [(("expect", "tool_results", key), key) for key in self.expect.tool_results]
        named += [
            (("tools", index, "available_after"), tool.available_after)
            for index, tool in enumerate(self.tools)
            if isinstance(tool, ScriptedToolSpec) and tool.available_after is not None
        ]
        return named

    def call_ids(self) -> list[list[str]]:
        """The id of every call, reply by reply, with `call_<n>` filled in where none was written."""
        ids: list[list[str]] = []
        number = 0
        for reply in self.replies:
            row = []
            for call in reply.tool_calls:
                number += 1
                row.append(call.id or f"call_{number}")
            ids.append(row)
        return ids
