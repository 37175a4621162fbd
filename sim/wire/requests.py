"""A request body as a server of either API reads it: parsed once into the typed request being answered
(`Asked`) or the refusal the API would send (`Refused`), with the checks both APIs share (parameter types,
what sim does not simulate, `tool_choice`, strict function schemas) and the interface each API's server
side offers (`WireProtocol`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sim.core.errors import MessageContractError
from sim.core.model import ModelReply, ModelRequest
from sim.core.strict_schema import strict_problem
from sim.wire.custom_tools import refused_format
from sim.wire.tool_choice import ReplyTerms, ToolChoiceError, read_tool_choice

if TYPE_CHECKING:
    from sim.wire.resources import Resource

CREATED = 1_700_000_000
"""The creation time of every reply: fixed, so that replies are byte-stable."""

TOP_LOGPROBS = 20
"""The most alternatives per token the API lists."""


@dataclass(frozen=True, slots=True)
class Refused:
    """A request the API would refuse with a 400 (or that sim cannot honour), saying which parameter."""

    message: str
    param: str | None = None
    code: str | None = None
    status: int = 400
    unsimulated: bool = False
    """Whether it is sim's own limit (the API would answer): a run that meets it is not simulated."""
    detail: str | None = None
    """What is wrong, when `message` says more than that (a malformed conversation: `message` is the API's
    "Invalid request: ..." and `detail` the contract broken)."""

    @property
    def problem(self) -> str:
        """What is wrong, for a run's problems (without the API's framing)."""
        return self.detail if self.detail is not None else self.message


class MissingParameterError(MessageContractError):
    """A message (or input item) lacks a field the API requires; `param` names it as the API does."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


def refused_malformed(error: MessageContractError) -> Refused:
    """A malformed conversation refused: a missing field in the API's words ("Missing required parameter:
    '...'."), anything else in sim's ("Invalid request: ..."); `detail` keeps sim's words, for a run's
    problems."""
    detail = str(error)
    if isinstance(error, MissingParameterError):
        message = f"Missing required parameter: '{error.param}'."
        return Refused(message, error.param, "missing_required_parameter", detail=detail)
    return Refused(f"Invalid request: {detail}", detail=detail)


class RefusedError(Exception):
    """A request refused with a 400 and a code (e.g. `previous_response_not_found`)."""

    def __init__(self, refused: Refused) -> None:
        super().__init__(refused.message)
        self.refused = refused


@dataclass(frozen=True, slots=True)
class Asked:
    """A request being answered: its JSON body, what it says as messages and tools, and its number."""

    body: dict[str, Any]
    decoded: ModelRequest
    number: int
    terms: ReplyTerms
    """What the API guarantees the reply (`tool_choice`, `parallel_tool_calls`, strict functions)."""
    deferred: bool = False
    """Run in the background (answered at once, the reply kept to be polled): its latency is not waited."""
    latency: float = 0.0
    """How long a deferred reply takes to be ready (its scripted latency), seconds."""
    size: int = 0
    """How many bytes the body was sent as (0 when not read from bytes): what keeping it weighs, at least."""

    @property
    def model(self) -> str:
        """The model the request names (echoed in replies)."""
        return str(self.body.get("model") or "sim-model")


class WireProtocol(Protocol):
    """One API as a server serves it."""

    name: str
    paths: tuple[str, ...]
    closing: bytes
    """What ends a stream after its last event (`data: [DONE]` for Chat, nothing for Responses)."""
    resources: tuple[Resource, ...]
    """Its endpoints beyond asking the model (retrieve, delete, cancel ...), answered from what it keeps."""

    def parse(self, body: dict[str, Any], number: int) -> Asked | Refused:
        """The request body read once: the request being answered, or the API's refusal."""
        ...

    def refused(self, body: dict[str, Any]) -> Refused | None:
        """A parameter the API (or sim) refuses, before anything else is read."""
        ...

    def decode(self, body: dict[str, Any]) -> ModelRequest:
        """The request as the loop's messages and tools; `MessageContractError` or `RefusedError` as the
        API would refuse it."""
        ...

    def check(self, body: dict[str, Any], decoded: ModelRequest) -> Refused | None:
        """What the API refuses in what a well-formed request carries back (reasoning items)."""
        ...

    def terms(self, body: dict[str, Any]) -> ReplyTerms:
        """What the API guarantees the reply to this request."""
        ...

    def reply(self, reply: ModelReply, asked: Asked, *, refusal: bool = False) -> dict[str, Any]:
        """The reply as the API's JSON body (and, for a store, kept for later requests); with `refusal`,
        its text sent as the API sends a refusal."""
        ...

    def stream(self, reply: ModelReply, asked: Asked, *, refusal: bool = False) -> list[bytes]:
        """The reply as the stream of events the API would send, each a complete SSE frame."""
        ...

    def broken(self, stream: bool) -> bytes:
        """A body that is not JSON, or a stream whose first event is cut."""
        ...

    def failed(self, error: dict[str, Any], asked: Asked) -> list[bytes]:
        """A stream that fails after it started, carrying `error` (`message`, `type`, `code`)."""
        ...


def parse(protocol: WireProtocol, body: dict[str, Any], number: int) -> Asked | Refused:
    """`body` read once by `protocol`: its refused parameters, its conversation (a malformed one refused as
    the simulator refuses it, "Invalid request: ..."), what it carries back, and the reply's terms."""
    if (refused := protocol.refused(body)) is not None:
        return refused
    try:
        decoded = protocol.decode(body)
    except RefusedError as error:
        return error.refused
    except MessageContractError as error:
        return refused_malformed(error)
    if (refused := protocol.check(body, decoded)) is not None:
        return refused
    return Asked(body, decoded, number, protocol.terms(body))


_TYPED = (
    ("model", str, "a string"), ("stream", bool, "a boolean"), ("n", int, "an integer"),
    ("logprobs", bool, "a boolean"), ("top_logprobs", int, "an integer"), ("max_tokens", int, "an integer"),
    ("max_completion_tokens", int, "an integer"), ("max_output_tokens", int, "an integer"),
    ("stream_options", dict, "an object"), ("previous_response_id", str, "a string"),
    ("store", bool, "a boolean"), ("include", list, "an array"), ("instructions", str, "a string"),
)  # fmt: skip


_JSON_KINDS = {str: "a string", bool: "a boolean", int: "an integer", float: "a decimal number",
               list: "an array", dict: "an object", type(None): "null"}  # fmt: skip


def wrong_type(param: str, expected: str, value: Any) -> Refused:
    """`param` of the wrong JSON type, refused in the API's words ("Invalid type for 'stream': expected a
    boolean, but got a string instead.", as clients quote it)."""
    got = _JSON_KINDS.get(type(value), "a value")
    message = f"Invalid type for '{param}': expected {expected}, but got {got} instead."
    return Refused(message, param, "invalid_type")


def refused_type(body: dict[str, Any]) -> Refused | None:
    """The first parameter of the wrong JSON type."""
    for name, kind, label in _TYPED:
        value = body.get(name)
        if value is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
            return wrong_type(name, label, value)
    return None


def refused_unsupported(body: dict[str, Any]) -> Refused | None:
    """What sim does not simulate, refused rather than faked (one choice for `n: 2`), and log probabilities
    asked for out of the API's range."""
    if body.get("n") not in (None, 1):
        return Refused(
            f"sim serves one choice per request: n must be 1, not {body['n']}.",
            "n",
            "unsupported_value",
            unsimulated=True,
        )
    top = body.get("top_logprobs")
    if top is not None and not 0 <= top <= TOP_LOGPROBS:
        message = f"Invalid 'top_logprobs': integer above maximum value. Expected a value <= {TOP_LOGPROBS}"
        return Refused(message if top > 0 else "Invalid 'top_logprobs': must be >= 0.", "top_logprobs",
                       "integer_above_max_value" if top > 0 else "integer_below_min_value")  # fmt: skip
    return None


def refused_tool_choice(choice: Any, offered: list[str]) -> Refused | None:
    """A `tool_choice` that is malformed or names a tool not offered."""
    try:
        read_tool_choice(choice, offered)
    except ToolChoiceError as error:
        return Refused(str(error), "tool_choice", "invalid_value", unsimulated=error.unsimulated)
    return None


def refused_strict(functions: list[tuple[str, Any]]) -> Refused | None:
    """The first function (each given with where it sits, e.g. `tools[0].function`) that says
    `strict: true` of parameters strict mode cannot take, refused as the API refuses it."""
    for where, function in functions:
        parameters = function.get("parameters")
        said = function.get("strict") is True and parameters is not None
        if said and (problem := strict_problem(parameters)) is not None:
            message = f"Invalid schema for function '{function.get('name')}': {problem}"
            return Refused(message, f"{where}.parameters", "invalid_function_parameters")
    return None


def refused_custom_format(tools: Any) -> Refused | None:
    """The first custom tool whose input format the API refuses (a grammar that cannot be read), or that sim
    cannot read (`unsimulated`)."""
    error = refused_format(tools)
    if error is None:
        return None
    code = "unsupported_value" if error.unsimulated else "invalid_value"
    return Refused(str(error), error.where, code, unsimulated=error.unsimulated)
