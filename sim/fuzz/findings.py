"""What a run of someone else's loop shows (`findings`), and a campaign's counts over its runs
(`TargetCampaign`): the verdicts of `sim fuzz --target`, judged from the requests the target sent, the
replies it got and what it raised; how a run is made is `sim.fuzz.target`'s."""

from __future__ import annotations

import shlex
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sim.cassette.writer import to_yaml
from sim.core.calls import results_in_history
from sim.core.counts import counted
from sim.core.model import ModelRequest
from sim.core.problems import Problem, ProblemKind
from sim.fuzz.invariants import Violation, check_requests
from sim.fuzz.program import ProgramFailed
from sim.fuzz.replies import COUNTED, kind_of
from sim.fuzz.terms import PROMPT, RUN_SECONDS, Profile
from sim.scenario.schema import Scenario, ScriptedReplySpec


@dataclass
class TargetRun:
    """One run of a target: what it was asked and answered, what went wrong, and what the target raised."""

    served: list[tuple[int, ScriptedReplySpec]] = field(default_factory=list)
    """Each request answered (by its number) with the reply it got."""
    received: int = 0
    """Requests received, answered or not."""
    requests: list[ModelRequest] = field(default_factory=list)
    """The requests answered with a reply."""
    problems: list[Problem] = field(default_factory=list)
    raised: BaseException | None = None
    exited: SystemExit | KeyboardInterrupt | None = None
    """How the target ended the process (or pretended to), if it did: always a finding."""
    finished: bool = True
    seconds: float = RUN_SECONDS
    """How long the run was allowed."""

    @property
    def scenario(self) -> Scenario:
        """The replies as they were served, as a scenario that `sim serve` plays to the target again."""
        replies = [spec for _, spec in self.served] or [ScriptedReplySpec(content="(none)")]
        return Scenario(name="fuzzed", prompt=PROMPT, replies=replies)


def allowed(error: BaseException, names: tuple[str, ...]) -> bool:
    """Whether `error` is of a type named in `names` (its class or any base, by name or qualified name)."""
    kinds = type(error).__mro__
    return any(
        name in (kind.__name__, f"{kind.__module__}.{kind.__qualname__}") for kind in kinds for name in names
    )


def findings(run: TargetRun, allow: tuple[str, ...] = ()) -> list[Violation]:
    """What a run shows about the target, each naming the request and the reply that led to it:

    - `pairing` / `append_only`: a request that breaks the API's pairing rules, or drops or rewrites an
      item of the conversation before it (Responses chains rebuilt through `previous_response_id`; a
      handoff that changes the instructions or the tools is no finding);
    - `request_after_final`: a request after a final answer (text, no calls, `stop`);
    - `runaway`: more requests than the bound, or a run that never returned;
    - `crash`: the target raised after a reply the real API can send (an exception after a scripted HTTP
      error, a body that is not JSON or a cut stream is counted, not a finding; so is one of a type named
      in `allow`, the exceptions the target is documented to raise); and, after any reply, an exit
      (`sys.exit`, `KeyboardInterrupt`): a loop must not end its caller's process.
    """
    if unsimulated(run):
        return []  # the run asked for what sim cannot serve: nothing after it tells about the target
    found = check_requests(run.requests, handoffs=True)
    for problem in run.problems:
        invariant = "pairing" if problem.kind is ProblemKind.invalid_request else "runaway"
        found.append(Violation(invariant, problem.message))
    if not run.finished:
        found.append(Violation("runaway", f"the run did not return within {run.seconds:g} s"))
    finals = [number for number, spec in run.served if kind_of(spec) == "final"]
    if finals and run.received > finals[0]:
        found.append(
            Violation(
                "request_after_final",
                f"request {finals[0] + 1} came after the final answer to request {finals[0]}"
                f" ({describe(_reply_to(run, finals[0]))})",
            )
        )
    if run.raised is not None and not found and run.served and not allowed(run.raised, allow):
        number, last = run.served[-1]
        if kind_of(last) not in COUNTED:
            found.append(Violation("crash", f"request {number} got {describe(last)}; {_failed(run.raised)}"))
    if run.exited is not None:
        found.append(Violation("crash", f"{last_reply(run)}; the target {_exit(run.exited)}"))
    return found


def _failed(error: BaseException) -> str:
    """How a run failed, in words: what the target raised, or how the program ended and what it said."""
    if isinstance(error, ProgramFailed):
        said = f"; the end of its standard error: {_said(error.tail)}" if error.tail.strip() else ""
        return f"the program ended with {error.how}{said}"
    return f"the target raised {type(error).__name__}: {one_line(error)}"


def _said(tail: str) -> str:
    """A program's untrusted words, quoted on one line, every character that acts or hides written out."""
    return repr(tail.strip())


def failure_name(error: BaseException) -> str:
    """How a campaign counts a failed run: the exception's type, or how the program ended."""
    return error.how if isinstance(error, ProgramFailed) else type(error).__name__


def last_reply(run: TargetRun) -> str:
    """The last reply `run` was served, and to which request, in words (or `before any reply`)."""
    if not run.served:
        return "before any reply"
    number, last = run.served[-1]
    return f"request {number} got {describe(last)}"


def _exit(error: SystemExit | KeyboardInterrupt) -> str:
    if isinstance(error, SystemExit):
        return f"called sys.exit({error.code!r})"
    return f"raised {type(error).__name__}"


def _reply_to(run: TargetRun, number: int) -> ScriptedReplySpec | None:
    return next((spec for served, spec in run.served if served == number), None)


def one_line(error: BaseException) -> str:
    """What `error` says, on one line and at most 300 characters."""
    text = " ".join(str(error).split())
    return text[:300] + ("..." if len(text) > 300 else "")


def describe(spec: ScriptedReplySpec | None) -> str:
    """A reply in one line, as the saved scenario writes it."""
    if spec is None:
        return "no reply"
    shown = spec.model_dump(mode="json", exclude_defaults=True, exclude_none=True)
    return " ".join(str(shown).split())[:300]


def unsimulated(run: TargetRun) -> str | None:
    """What the run asked for that sim cannot simulate (a parameter the API would honour), if anything."""
    return next((p.message for p in run.problems if p.kind is ProblemKind.not_simulated), None)


def round_trips(run: TargetRun) -> int:
    """How many drawn calls had their result sent back in a later request: real calls that reached the
    target's tools."""
    called = {call.id for _, spec in run.served for call in spec.tool_calls}
    if not run.requests:
        return 0
    answered = {call_id for call_id, _ in results_in_history(run.requests[-1].messages)}
    return len(called & answered)


@dataclass
class TargetCampaign:
    """What a campaign against a target found, over every run it made (shrinking included)."""

    target: str
    profile: Profile
    allow: tuple[str, ...] = ()
    """Exception types the target may raise (counted, not crashes)."""
    runs: int = 0
    requests: int = 0
    round_trips: int = 0
    raised: Counter[str] = field(default_factory=Counter)
    """What the target raised, by exception type."""
    failure: TargetRun | None = None
    violations: list[Violation] = field(default_factory=list)
    saved: Path | None = None
    unsimulated: int = 0
    """Runs that asked for what sim cannot simulate, and ended there (no finding)."""
    unsimulated_example: str | None = None
    unhonoured: set[str] = field(default_factory=set)
    """Tools whose valid arguments could not always be drawn (see `unhonoured_note`)."""
    calling_runs: int = 0
    """Runs served at least one reply that called a tool and finished (see `unanswered_note`)."""
    program: bool = False
    """Whether the target is a program (`raised` then counts how its runs ended: `exit code 1`)."""
    said: str | None = None
    """The end of the standard error of a program's run that ended badly (untrusted text)."""

    def unanswered_note(self) -> str | None:
        """What the summary says when calls were served but not one result ever came back: no invariant is
        broken (a target may end on a call, as an extractor does), but a loop meant to run tools never saw
        a call, as a loop reading `tool_calls` does when it offers the deprecated `functions`."""
        if not self.calling_runs or self.round_trips:
            return None
        return (
            f"{counted(self.calling_runs, 'run')} got tool calls, and the target never sent one result back:"
            " if it means to run tools, it does not see their calls (for the deprecated `functions`, a call"
            " is in `message.function_call`)"
        )

    def replay_command(self) -> str | None:
        """The command line that plays the saved failing run to the loop again, if one was saved: `sim fuzz
        --target ... --replay FILE`, or for a program `sim serve FILE --once -- COMMAND` (a credential in the
        command replaced: the user puts theirs back)."""
        if self.saved is None:
            return None
        if self.program:
            return f"{shlex.join(['sim', 'serve', str(self.saved), '--once', '--'])} {self.target}"
        return f"sim fuzz --target {self.target} --replay {shlex.quote(str(self.saved))}"

    def unhonoured_note(self) -> str | None:
        """What the summary says of tools whose schemas the generator could not always meet, if any."""
        if not self.unhonoured:
            return None
        names = ", ".join(sorted(self.unhonoured))
        return (
            f"valid arguments could not always be drawn for {names}: the schema asks for what sim's generator"
            " cannot meet, so those calls were sent off the schema (cut at the token limit where the"
            " function is strict)"
        )

    def keep(self, run: TargetRun) -> list[Violation]:
        """Count a run in; its findings."""
        self.runs += 1
        self.requests += run.received
        self.round_trips += round_trips(run)
        calling = any(kind_of(spec) == "calls" and spec.finish() == "tool_calls" for _, spec in run.served)
        self.calling_runs += calling and unsimulated(run) is None
        if (why := unsimulated(run)) is not None:
            self.unsimulated += 1
            self.unsimulated_example = self.unsimulated_example or why
        elif run.raised is not None:
            self.raised[failure_name(run.raised)] += 1
            if isinstance(run.raised, ProgramFailed):
                self.said = run.raised.tail
        found = findings(run, self.allow)
        if found:
            self.failure, self.violations = run, found
        return found

    def vacuous(self) -> str | None:
        """Why the campaign tested nothing, if so: not one request, or the same exception every run."""
        every = len(self.raised) == 1 and sum(self.raised.values()) == self.runs
        name = next(iter(self.raised), "")
        failed = f"the program ended with {name}" if self.program else f"the target raised {name}"
        said = f"; the end of its standard error: {_said(self.said)}" if self.said else ""
        if self.runs and not self.requests:
            if every:
                return f"{failed} in every run ({self.runs}) before sending a request{said}"
            if self.program:
                return (
                    f"the program never sent a request in {counted(self.runs, 'run')}, so nothing was tested"
                    " (does it build its client from OPENAI_BASE_URL?)"
                )
            return (
                f"the target never sent a request in {self.runs} runs, so nothing was tested"
                " (does it use the client it is given?)"
            )
        if self.runs and self.unsimulated == self.runs:
            return f"every run asked for what sim cannot simulate ({self.unsimulated_example})"
        if every and self.runs > 1:
            return f"{failed} in every one of {self.runs} runs, so nothing else was tested{said}"
        return None


def example_failed(found: list[Violation], run: TargetRun) -> AssertionError:
    """The failure of a run: its findings, then its replies as a scenario `sim serve` plays."""
    scenario = run.scenario.model_dump(mode="json", exclude_defaults=True)
    lines = [str(violation) for violation in found]
    return AssertionError(
        "\n".join([*lines, "the replies, as a scenario `sim serve` plays:", to_yaml(scenario)])
    )
