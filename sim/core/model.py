"""The model boundary: what the loop sends (`ModelRequest`), what comes back (`ModelReply`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, NonNegativeInt

from sim.core.messages import AssistantMessage, ChatMessage, ToolCall

FinishReason = Literal["stop", "tool_calls", "length", "content_filter"]
"""Why the model stopped; the loop acts on `length` and `content_filter` itself."""


class Usage(BaseModel):
    """Token counts of one reply."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_tokens: NonNegativeInt = 0
    completion_tokens: NonNegativeInt = 0
    total_tokens: NonNegativeInt = 0


class ModelReply(BaseModel):
    """One model reply: the assistant message, why it ended, and the tokens it cost."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    message: AssistantMessage
    finish_reason: FinishReason
    usage: Usage | None = None

    @classmethod
    def final(cls, text: str | None) -> ModelReply:
        """A reply with text and no tool calls, ending with `stop`."""
        return cls(message=AssistantMessage(content=text), finish_reason="stop")

    @classmethod
    def calling(cls, *calls: ToolCall, content: str | None = None) -> ModelReply:
        """A reply asking for `calls`, ending with `tool_calls`."""
        return cls(message=AssistantMessage(content=content, tool_calls=calls), finish_reason="tool_calls")


ToolKind = Literal["function", "custom"]
"""A function takes JSON arguments shaped by a schema; a custom tool takes free-form text (its `input`)."""


@dataclass(frozen=True, slots=True)
class InputGrammar:
    """What a custom tool's input must be: text the grammar `definition` generates in its `syntax` (a
    `regex` the whole input matches, or a `lark` grammar from its `start` rule)."""

    syntax: Literal["lark", "regex"]
    definition: str


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it: name, description and the JSON Schema of its arguments; a custom tool
    (`kind`) has no schema but takes free-form text, constrained by its `grammar` when it has one."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    kind: ToolKind = "function"
    grammar: InputGrammar | None = None
    strict: bool = False
    """A strict function (Structured Outputs): its arguments always match `parameters`."""


@dataclass(frozen=True, slots=True)
class OutputFormat:
    """The structured format a run asks its text to take: JSON matching `schema`, held to it when
    `strict`."""

    name: str
    schema: Mapping[str, Any]
    strict: bool = False


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One request: `[system, *history]`, the tools offered this turn, and the format asked of the text."""

    messages: Sequence[ChatMessage]
    tools: tuple[ToolSpec, ...] = ()
    output: OutputFormat | None = None


class ModelClient(Protocol):
    """Anything that answers a `ModelRequest`; SDK objects never cross this boundary."""

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Send one request and return the reply, or raise an `AgentError` (`ModelAPIError`...)."""
        ...
