"""What went wrong in a run, as typed values: a `Problem` has a kind (`ProblemKind`), the number of the
request it is about, a message for people, and the HTTP error the request was answered with. Code that
judges a run (the fuzzer's verdicts, the player's result) reads the kind; only people read the message."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ProblemKind(StrEnum):
    """What kind of thing went wrong."""

    invalid_request = "invalid_request"
    """The request breaks the API's rules (the API answers 400): a finding against the client."""
    not_simulated = "not_simulated"
    """The request asks for what the API would honour and sim does not simulate (one choice for `n: 2`)."""
    expectation_failed = "expectation_failed"
    """A request differs from what the script expects of it (`expect_request`, or too few retries)."""
    script_exhausted = "script_exhausted"
    """A request came when the script had no reply left."""
    unexpected_retry = "unexpected_retry"
    """A retry past the ones a scripted error expects."""
    after_the_end = "after_the_end"
    """A request after the scenario finished."""
    script_mismatch = "script_mismatch"
    """The scripted reply cannot answer the request (it contradicts its `tool_choice`)."""
    unused = "unused"
    """Scripted replies (or expected retries) never asked for: about the run, no request's."""
    replay_mismatch = "replay_mismatch"
    """A request a recording has no recorded answer for."""
    runaway = "runaway"
    """More requests than a run is allowed."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing that went wrong, and the API-shaped error the request was answered with."""

    kind: ProblemKind
    number: int | None
    """The request's number, counted from 1 as requests came (None: about the run, no one request)."""
    message: str
    """For people: what went wrong, whole (`request 3: invalid request: tools[0]...`)."""
    status: int = 400
    """The HTTP status of the error the request got."""
    code: str | None = None
    """The error's `code` (`sim_expectation_failed`, the API's own for a request it refuses)."""
    param: str | None = None
    """The error's `param`: the request field it is about."""
    said: str | None = None
    """The error's `message` when it is not `message` (a refusal in the API's own words)."""
    headers: tuple[tuple[str, str], ...] = ()
    """Headers the error carries (`x-should-retry: false`)."""

    def __str__(self) -> str:
        return self.message

    @property
    def error_message(self) -> str:
        """The message of the HTTP error the request got."""
        return self.message if self.said is None else self.said
