"""The API's refusal of a conversation longer than the model's context window, in each API's words: a 400
`invalid_request_error`, code `context_length_exceeded`, naming the conversation's parameter (Chat's
`messages`, the Responses API's `input`).

The wording is the live API's as users quote it: Chat says "This model's maximum context length is N
tokens. However, your messages resulted in M tokens. Please reduce the length of the messages.", the
Responses API "Your input exceeds the context window of this model. Please adjust your input and try
again." (docs/errors.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sim.wire.chat import CONVERSATION as CHAT_CONVERSATION
from sim.wire.responses import CONVERSATION as RESPONSES_CONVERSATION

CONTEXT_TOKENS = 128_000
"""The context window Chat's message names (that of the models sim is most often asked to stand for)."""
CODE = "context_length_exceeded"


@dataclass(frozen=True, slots=True)
class ContextExceeded:
    """The error's message and the parameter it names."""

    message: str
    param: str


def context_exceeded(body: Mapping[str, Any], over: int = 1) -> ContextExceeded:
    """The refusal of `body` as too long for the context window (by `over` tokens, in Chat's words)."""
    if CHAT_CONVERSATION in body:
        message = (
            f"This model's maximum context length is {CONTEXT_TOKENS} tokens. However, your messages"
            f" resulted in {CONTEXT_TOKENS + over} tokens. Please reduce the length of the messages."
        )
        return ContextExceeded(message, CHAT_CONVERSATION)
    message = "Your input exceeds the context window of this model. Please adjust your input and try again."
    return ContextExceeded(message, RESPONSES_CONVERSATION)
