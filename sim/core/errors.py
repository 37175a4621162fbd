"""The one error tree of `sim`; every error a run raises carries the history so far.

    AgentError                        anything sim raises on purpose
    ├── AgentRunError                 a run stopped without a final answer
    │   ├── AgentLimitError           max_turns model requests made, still no answer
    │   ├── IncompleteModelReplyError the reply hit the token limit (finish_reason "length")
    │   └── ModelAPIError             the model endpoint answered with an error
    │       ├── ModelReplyError       ... or with a reply that breaks the Chat Completions contract
    │       └── ModelConnectionError  ... or could not be reached
    │           └── ModelTimeoutError ... in time
    ├── MessageContractError          tool calls and tool results are not paired (also ValueError)
    ├── ConfigurationError            a setting or argument is unusable (also ValueError)
    ├── ScenarioError                 a scripted fake was used against its script
    └── CassetteError                 a cassette cannot be read, or replay diverged from it

`history` and `turns` are filled in by `AgentRunner` when the error leaves a run; raised
elsewhere they stay empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sim.core.messages import ChatMessage


class AgentError(Exception):
    """Base of every error sim raises; carries the run's history and turn count."""

    def __init__(self, message: str, *, history: Sequence[ChatMessage] = (), turns: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.history: tuple[ChatMessage, ...] = tuple(history)
        self.turns = turns


class AgentRunError(AgentError):
    """A run stopped without a final answer."""


class AgentLimitError(AgentRunError):
    """The run made `max_turns` model requests without reaching a final answer."""


class IncompleteModelReplyError(AgentRunError):
    """The model's reply was cut off at the token limit; it was not stored."""


class ModelAPIError(AgentRunError):
    """The model endpoint answered with an error (HTTP status, error type and code)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error_type: str | None = None,
        code: str | None = None,
        retry_after: float | None = None,
        history: Sequence[ChatMessage] = (),
        turns: int = 0,
    ) -> None:
        super().__init__(message, history=history, turns=turns)
        self.status = status
        self.error_type = error_type
        self.code = code
        self.retry_after = retry_after

    @classmethod
    def from_status(
        cls,
        status: int,
        message: str,
        *,
        error_type: str | None = None,
        code: str | None = None,
        retry_after: float | None = None,
    ) -> ModelAPIError:
        """The error for an HTTP error response, worded `HTTP 429: Rate limited`."""
        return cls(
            f"HTTP {status}: {message}",
            status=status,
            error_type=error_type,
            code=code,
            retry_after=retry_after,
        )


class ModelReplyError(ModelAPIError):
    """The endpoint answered, but not with a reply the Chat Completions contract allows."""


class ModelConnectionError(ModelAPIError):
    """The model endpoint could not be reached."""


class ModelTimeoutError(ModelConnectionError):
    """The model endpoint did not answer in time."""


class PairingRule(StrEnum):
    """Which pairing rule a conversation breaks."""

    unique_call_ids = "unique_call_ids"
    """An assistant message's tool calls share an id."""
    every_call_answered = "every_call_answered"
    """Some tool calls got no result before the next message (or the end)."""
    one_result_per_call = "one_result_per_call"
    """A second result answers a call already answered."""
    result_answers_a_call = "result_answers_a_call"
    """A result answers no call of the assistant message before it."""


@dataclass(frozen=True, slots=True)
class PairingBreak:
    """Where and how a conversation breaks the pairing rules, for a server to say it in its API's words."""

    rule: PairingRule
    at: int
    """The index, among the messages checked, of the message that breaks it: the assistant message whose
    calls lack results (or share an id), or the tool message."""
    call_ids: tuple[str, ...]
    """The ids concerned, in the order of the calls (the one the tool message names, for a result)."""
    after_calls: bool = False
    """For a result without its call: whether an assistant message with tool calls came before it."""


class MessageContractError(AgentError, ValueError):
    """Tool calls and tool results break the pairing rules the API enforces (`pairing` says which, where,
    for a pairing rule; None for a malformed message)."""

    def __init__(
        self,
        message: str,
        *,
        pairing: PairingBreak | None = None,
        history: Sequence[ChatMessage] = (),
        turns: int = 0,
    ) -> None:
        super().__init__(message, history=history, turns=turns)
        self.pairing = pairing


class ConfigurationError(AgentError, ValueError):
    """A setting or constructor argument cannot be used."""


class ScenarioError(AgentError):
    """A scripted fake was asked for something its script does not provide, or left steps unused."""


class CassetteError(AgentError):
    """A cassette cannot be read, or a replay diverged from it."""
