"""The loop's invariants, checked on one run: each broken one is named, with what was seen.

Given the script, the oracle's account of it, the requests the model received, how the run ended, and
what the world was asked (commands run, approvals asked), `broken_invariants` returns every violation of:

- `pairing`: every request pairs tool calls and results as the API requires;
- `append_only`: each request extends the one before, the system prompt first and unchanged;
- `turns`: turns taken == requests made <= max_turns;
- `outcome`: the run ends as the script determines (limit only when calls go on past max_turns, length
  -> incomplete, content_filter, null content -> no_final_text, API error -> api_error, ...);
- `reply_not_stored`: a reply cut at the token limit or filtered is not in the history;
- `one_result_per_call`: exactly one tool message per call id, in call order, right after its call;
- `results`: each call's result is the one the rules give (a denial gives permission_denied, ...);
- `validation_first`: no approval asked and no command run for a call that failed validation;
- `fresh_snapshot`: each request offers the tools registered when its turn began;
- `history_on_error`: an error raised carries the history so far.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sim.core.calls import results_in_history
from sim.core.errors import AgentError, MessageContractError
from sim.core.loop import RunEnding
from sim.core.messages import (
    AssistantMessage,
    ChatMessage,
    SystemMessage,
    ToolMessage,
    UserMessage,
    validate_pairing,
)
from sim.core.model import ModelRequest
from sim.fuzz.oracle import Expected
from sim.scenario.schema import Scenario


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken invariant, and what was seen."""

    invariant: str
    detail: str

    def __str__(self) -> str:
        return f"{self.invariant}: {self.detail}"


def check_requests(requests: Sequence[ModelRequest], *, handoffs: bool = False) -> list[Violation]:
    """The invariants a request stream shows on its own: pairing, and an append-only history. With
    `handoffs` (anyone's loop) a request may change the system prompt (`instructions`) and the tools, as an
    agent handing off to another does and the API documents; only a dropped or rewritten item of the
    conversation breaks append-only. Our own loop keeps its system prompt."""
    found = []
    previous: list[ChatMessage] = []
    for number, request in enumerate(requests, 1):
        messages = list(request.messages)
        try:
            validate_pairing(messages)
        except MessageContractError as error:
            found.append(Violation("pairing", f"request {number}: {error}"))
        mine, before = (_dialogue(messages), _dialogue(previous)) if handoffs else (messages, previous)
        if number > 1 and mine[: len(before)] != before:
            found.append(Violation("append_only", f"request {number} does not extend request {number - 1}"))
        changed = (
            messages and previous and isinstance(previous[0], SystemMessage) and messages[0] != previous[0]
        )
        if changed and not handoffs:
            found.append(Violation("append_only", f"request {number} changed the system prompt"))
        previous = messages
    return found


def _dialogue(messages: list[ChatMessage]) -> list[ChatMessage]:
    """The messages after a leading system prompt."""
    return messages[1:] if messages and isinstance(messages[0], SystemMessage) else messages


def broken_invariants(
    scenario: Scenario,
    expected: Expected,
    requests: Sequence[ModelRequest],
    ending: RunEnding,
    *,
    commands_run: Sequence[str],
    approvals_asked: Sequence[str],
) -> list[Violation]:
    """Every invariant the run broke."""
    found = check_requests(requests)
    if not ending.turns == len(requests) <= scenario.max_turns:
        found.append(
            Violation(
                "turns", f"{ending.turns} turns, {len(requests)} requests, max_turns={scenario.max_turns}"
            )
        )
    if ending.outcome != expected.outcome:
        because = f" ({ending.error})" if ending.error else ""
        found.append(Violation("outcome", f"expected {expected.outcome}, got {ending.outcome}{because}"))
    history = ending.history
    found += _history_on_error(ending.error, history, scenario.require_prompt())
    if (
        requests
        and ending.outcome in ("incomplete", "content_filter")
        and len(history) != len(requests[-1].messages) - 1
    ):
        found.append(Violation("reply_not_stored", f"the {ending.outcome} reply was stored in the history"))
    found += _one_result_per_call(history)
    found += _results(expected, history)
    valid = set(expected.valid_calls)
    if invalid := [call_id for call_id in approvals_asked if call_id not in valid]:
        found.append(Violation("validation_first", f"approval asked for invalid calls {invalid}"))
    if list(commands_run) != expected.runs[: len(commands_run)] or len(commands_run) > len(expected.runs):
        found.append(
            Violation("validation_first", f"commands run {list(commands_run)}, expected {expected.runs}")
        )
    for number, (request, offered) in enumerate(zip(requests, expected.offered, strict=False), 1):
        names = [spec.name for spec in request.tools]
        if names != offered:
            found.append(Violation("fresh_snapshot", f"request {number} offered {names}, expected {offered}"))
    return found


def _history_on_error(
    error: AgentError | None, history: Sequence[ChatMessage], prompt: str
) -> list[Violation]:
    if error is None:
        return []
    if not history or history[0] != UserMessage(content=prompt):
        return [Violation("history_on_error", f"{type(error).__name__} carries no history from the prompt")]
    return []


def _one_result_per_call(history: Sequence[ChatMessage]) -> list[Violation]:
    found = []
    for index, message in enumerate(history):
        if isinstance(message, AssistantMessage) and message.tool_calls:
            ids = [call.id for call in message.tool_calls]
            answers = []
            for following in history[index + 1 : index + 1 + len(ids)]:
                if not isinstance(following, ToolMessage):
                    break
                answers.append(following.tool_call_id)
            if answers != ids and len(set(ids)) == len(ids):
                found.append(Violation("one_result_per_call", f"calls {ids} answered by {answers}"))
    return found


def _results(expected: Expected, history: Sequence[ChatMessage]) -> list[Violation]:
    found = []
    seen = results_in_history(history)
    for (call_id, turn), wanted in expected.results.items():
        content = seen.get((call_id, turn))
        name = f"{call_id} (turn {turn})"
        if content is None:
            continue  # a missing result is one_result_per_call's to report
        if wanted.content is not None and content != wanted.content:
            found.append(Violation("results", f"{name}: expected {wanted.content!r}, got {content!r}"))
        elif (
            wanted.content is None
            and wanted.error_code
            and not content.startswith(f"Error [{wanted.error_code}]")
        ):
            found.append(Violation("results", f"{name}: expected error {wanted.error_code}, got {content!r}"))
    return found
