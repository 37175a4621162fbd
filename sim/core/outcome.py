"""How a run ended, as one word: what scenarios expect and what fuzzing counts."""

from __future__ import annotations

from typing import Literal

from sim.core.errors import (
    AgentLimitError,
    AgentRunError,
    IncompleteModelReplyError,
    MessageContractError,
    ModelAPIError,
)

CONTENT_FILTERED = "Model response was blocked by the content filter"
NO_FINAL_TEXT = "Model stopped without final text or tool calls"

Outcome = Literal[
    "completed",
    "max_turns",
    "incomplete",
    "content_filter",
    "no_final_text",
    "api_error",
    "contract_error",
    "error",
]
"""`completed` is a final answer; every other word names the error the run raised."""


def outcome_of(error: BaseException | None) -> Outcome:
    """The outcome of a run that raised `error` (None: it completed)."""
    if error is None:
        return "completed"
    if isinstance(error, AgentLimitError):
        return "max_turns"
    if isinstance(error, IncompleteModelReplyError):
        return "incomplete"
    if isinstance(error, ModelAPIError):
        return "api_error"
    if isinstance(error, MessageContractError):
        return "contract_error"
    if type(error) is AgentRunError and error.message == CONTENT_FILTERED:
        return "content_filter"
    if type(error) is AgentRunError and error.message == NO_FINAL_TEXT:
        return "no_final_text"
    return "error"
