"""The `sim:` block of a cassette: what replay needs besides the HTTP interactions."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt

from sim.core.calls import CallRef, results_in_history
from sim.core.errors import MessageContractError
from sim.core.json_text import loads
from sim.core.outcome import Outcome
from sim.core.tools import ToolResult
from sim.wire import Api
from sim.wire.registry import CODECS


class RecordedTool(BaseModel):
    """A tool as the model was offered it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    parameters: dict[str, Any]


class RecordedSession(BaseModel):
    """How the recorded run was set up and how it ended."""

    model_config = ConfigDict(extra="forbid")

    prompt: str
    system_prompt: Annotated[str, Field(min_length=1)]
    model: Annotated[str, Field(min_length=1)]
    api: Api = Api.chat
    """The API the session spoke."""
    chain: bool = False
    """Whether its Responses requests chained through `previous_response_id`."""
    max_turns: PositiveInt
    stream: bool = False
    max_tokens: PositiveInt | None = Field(
        default=None, validation_alias=AliasChoices("max_tokens", "max_completion_tokens")
    )
    """The most tokens a reply could hold: Chat's `max_completion_tokens`, Responses' `max_output_tokens`
    (files written before it had this name say `max_completion_tokens`, for either API)."""
    tools: list[RecordedTool] = Field(default_factory=list)
    outcome: Outcome
    final_text: str | None = None
    turns: NonNegativeInt
    error: str | None = None
    tool_results: dict[str, ToolResult] = Field(
        default_factory=dict,
        description="Results no later request echoes (e.g. of a last turn), by call key (`id`, or"
        " `id@turn` when the id is reused across turns).",
    )


_ERROR_TEXT = re.compile(r"^Error \[([A-Za-z0-9_]+)\]: ")


def result_from_text(content: str) -> ToolResult:
    """A tool result as the model read it; `Error [code]: ...` is an error with that code."""
    found = _ERROR_TEXT.match(content)
    return ToolResult(content=content, is_error=bool(found), error_code=found.group(1) if found else None)


def echoed_results(request_bodies: Iterable[bytes | None], api: Api = Api.chat) -> dict[CallRef, str]:
    """The tool results a session's requests send back, by call and turn: those in its largest request
    body (a run's history only grows, so it holds every earlier one; parsing every body would cost the
    square of the session)."""
    largest = max(request_bodies, key=lambda body: len(body or b""), default=None)
    try:
        body = loads(largest) if largest else None
        messages = CODECS[api].history(body if isinstance(body, dict) else {})
    except (ValueError, MessageContractError):
        return {}
    # a chained request holds results for calls made before its own history began: no turn to pair them
    return {call: text for call, text in results_in_history(messages).items() if call[1] >= 1}
