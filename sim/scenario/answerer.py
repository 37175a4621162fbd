"""A scenario's script as an answerer (`ScriptAnswerer`): each request gets the next scripted reply, in
order, like the real API; the script's retries, its end and its `expect_request` checks are judged here,
and what went wrong is kept as `Problem` values.

Both APIs share one script: a conversation may even change API between requests. `scripted_answer` is how
one scripted reply answers one request (an expectation failure, a contradiction of its `tool_choice`, an
error, a malformed body, the reply), for any answerer that has `ScriptedReplySpec`s to send.
`scenario_host(scenario)` is the script behind the HTTP host, as `sim serve SCENARIO` serves it and as a
scenario is played in process; its `.app` is an ASGI app to mount anywhere.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, MutableSequence
from dataclasses import dataclass
from typing import Any

from sim.core.model import ModelReply, ModelRequest
from sim.core.problems import Problem, ProblemKind
from sim.host.access_log import Answered
from sim.host.answers import Answer, ApiError, ModelAnswer, Pacing, Received, Refusal
from sim.host.app import Host
from sim.host.faults import STALL_SECONDS, Fault, FaultKind, Where
from sim.host.rate_limit import RateLimit
from sim.scenario.expectations import check_request
from sim.scenario.outline import summary
from sim.scenario.schema import Latency, Scenario, ScriptedReplySpec
from sim.scenario.world import scripted_reply
from sim.wire import STORE_LIMIT_BYTES
from sim.wire.guarantees import broken_guarantee
from sim.wire.requests import Asked

__all__ = ["ScriptAnswerer", "scenario_host", "scripted_answer", "scripted_fault"]

_NO_RETRY = (("x-should-retry", "false"),)


def scripted_answer(
    spec: ScriptedReplySpec,
    reply: ModelReply,
    asked: Asked,
    *,
    index: int,
    latency: Latency,
    said: str,
    judged: bool = True,
    faulted: bool = True,
) -> tuple[Answer, list[Problem]]:
    """How scripted reply `index` (`spec`, standing for `reply`) answers `asked`, and the problems that
    shows: the request differs from its `expect_request`, or the reply breaks a guarantee the request sets
    (`sim.wire.guarantees`: its `tool_choice`, a strict schema); otherwise its error, its malformed body
    or the reply, at its latency. `said` is what the access log says of it. Without `judged`, the reply is
    sent whatever the request guarantees (the fuzzer's hostile profile sends what the API never would).
    Without `faulted`, it is sent whole, without its network fault (the attempt after its `drops`)."""
    number = asked.number
    if spec.expect_request is not None:
        differences = check_request(f"replies[{index}].expect_request", spec.expect_request, asked.decoded)
        if differences:
            problems = [Problem(ProblemKind.expectation_failed, number, d, code="sim_expectation_failed")
                        for d in differences]  # fmt: skip
            error = ApiError(400, "; ".join(differences), code="sim_expectation_failed")
            return _said_if(error, spec, said), problems
    if judged and spec.error is None and not spec.malformed:
        refused = spec.refusal is not None
        contradiction = broken_guarantee(asked, reply, name=f"replies[{index}]", refusal=refused)
        if contradiction is not None:
            message = f"request {number}: script and request disagree: {contradiction}"
            problem = Problem(ProblemKind.script_mismatch, number, message, code="sim_script_mismatch")
            return problem, [problem]
    latency = spec.latency or latency
    pacing = Pacing(latency.first_byte, latency.between_chunks)
    scripted = spec.error
    fault = scripted_fault(spec) if faulted else None
    if scripted is not None and scripted.in_stream and asked.body.get("stream"):
        failure = ApiError(scripted.status, scripted.message, type=scripted.type,
                           code=scripted.code, param=scripted.param, in_stream=True, pacing=pacing, said=said,
                           fault=fault)  # fmt: skip
        return failure, []
    if scripted is not None:
        retry_after = () if scripted.retry_after is None else (("retry-after", f"{scripted.retry_after:g}"),)
        error = ApiError(scripted.status, scripted.message, type=scripted.type,
                         code=scripted.code, param=scripted.param, headers=retry_after, pacing=pacing,
                         said=said,
                         fault=fault)  # fmt: skip
        return error, []
    refusal = spec.refusal is not None
    cut = spec.cut_after_chunks if faulted else None
    answer = ModelAnswer(reply, refusal=refusal, cut_after_chunks=cut, malformed=spec.malformed,
                         pacing=pacing, said=said, fault=fault)  # fmt: skip
    return answer, []


def scripted_fault(spec: ScriptedReplySpec) -> Fault | None:
    """The network fault a scripted reply meets (`fault`, `fault_at`, `cut_after_chunks`, `stall_seconds`)."""
    if spec.fault is None and spec.cut_after_chunks is None:
        return None
    kind = FaultKind(spec.fault or "drop")
    mid_body = spec.fault_at == "mid_body" or spec.cut_after_chunks is not None
    where = Where.mid_body if mid_body else Where.before_headers
    seconds = spec.stall_seconds if spec.stall_seconds is not None else STALL_SECONDS
    return Fault(kind, where, spec.cut_after_chunks, seconds)


def _said_if(error: ApiError, spec: ScriptedReplySpec, said: str) -> ApiError:
    """An expectation failure is logged as the reply only when the reply is an error of the same status."""
    if spec.error is not None and spec.error.status == error.status:
        return ApiError(error.status, error.message, code=error.code, said=said)
    return error


def _retries(count: int) -> str:
    return "no retry" if count == 0 else "1 retry" if count == 1 else f"{count} retries"


@dataclass(slots=True)
class _ErrorServed:
    """A request answered with a scripted error that expects `expected` retries (each answered by the next
    scripted reply): its body (a retry sends the same), its number, the reply's index, and how many
    retries are still expected."""

    body: bytes
    number: int
    index: int
    expected: int
    left: int

    def too_few(self) -> Problem:
        made = self.expected - self.left
        message = (
            f"replies[{self.index}] expects {_retries(self.expected)} of request {self.number},"
            f" but the client made {made}"
        )
        return Problem(ProblemKind.expectation_failed, self.number, message, code="sim_expectation_failed")


@dataclass(slots=True)
class _Dropping:
    """A request whose scripted reply meets its fault `drops` times before it is sent whole: its body (each
    retry sends the same), its number, the reply's index, and the attempts faulted so far."""

    body: bytes
    number: int
    index: int
    drops: int
    made: int = 0

    def gave_up(self, number: int | None) -> Problem:
        """The client stopped retrying before the reply was sent whole (`number`: the request it sent
        instead, if any)."""
        instead = f"; request {number} is another request" if number is not None else ""
        attempts = "1 attempt" if self.made == 1 else f"{self.made} attempts"
        message = (
            f"replies[{self.index}] drops request {self.number} {_times(self.drops)} before its reply, but"
            f" the client gave up after {attempts}{instead} (a dropped connection is retried: the SDK does"
            " with `max_retries`)"
        )
        return Problem(ProblemKind.expectation_failed, number, message, code="sim_expectation_failed")


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


class ScriptAnswerer:
    """One scenario's script being answered: what comes next, what was asked, and what went wrong."""

    def __init__(
        self, scenario: Scenario, *, cycle: bool = False, keep_requests: bool = True, ends: bool = False
    ) -> None:
        self.scenario = scenario
        self.cycle = cycle
        """Start the script again when it ends (load tests): it never finishes unless something fails."""
        self.ends = ends
        """Whether a request after the scenario finished gets `sim_scenario_finished` rather than an answer
        from the script (what `sim serve --once` does in its grace period)."""
        self.steps: list[tuple[ScriptedReplySpec, ModelReply]] = [
            (spec, scripted_reply(spec, ids))
            for spec, ids in zip(scenario.replies, scenario.call_ids(), strict=True)
        ]
        self.requests: MutableSequence[ModelRequest] = (
            [] if keep_requests and not cycle else deque(maxlen=len(self.steps) if keep_requests else 0)
        )
        """The requests answered, for the checks of a run in process (in cycle mode only the latest round,
        and none without `keep_requests`, so that a long session served stays bounded)."""
        self.problems: list[Problem] = []
        self.answered = 0
        """Scripted replies sent."""
        self.served: MutableSequence[tuple[int, ScriptedReplySpec]] = (
            deque(maxlen=len(self.steps)) if cycle else []
        )
        """Each request answered from the script (by its number) with the reply it got."""
        self._erred: _ErrorServed | None = None
        """The last request answered with a scripted error that says how many retries it expects."""
        self._dropping: _Dropping | None = None
        """The request whose reply meets its fault `drops` times first, while it does."""

    @property
    def consumed(self) -> bool:
        """Whether every scripted reply has been sent."""
        return self.answered >= len(self.steps)

    @property
    def finished(self) -> bool:
        """Whether the scenario is over: every reply sent (and every retry it expects made), or it failed."""
        if self.cycle:
            return bool(self.problems)
        waiting = self._erred is not None and self._erred.left > 0
        return bool(self.problems) or (self.consumed and not waiting)

    def unused(self) -> list[Problem]:
        """Replies never requested, and retries a scripted error expected and never got."""
        left = len(self.steps) - self.answered
        problems = []
        if left > 0 and not self.cycle:
            message = (
                f"simulator for {self.scenario.name} has {left} unused of {len(self.steps)} scripted replies"
            )
            problems.append(Problem(ProblemKind.unused, None, message))
        if self._erred is not None and self._erred.left > 0:
            problems.append(self._erred.too_few())
        if self._dropping is not None:
            problems.append(self._dropping.gave_up(None))
        return problems

    async def answer(self, request: Received) -> Answer:
        """The next scripted reply, or the error the API (or the script) answers instead."""
        if self.ends and self.finished:
            return self._after_the_end(request)
        number = request.number
        dropping = self._dropping
        if dropping is not None and not request.retries(dropping.body):  # the client gave up
            self._dropping = None
            gave_up = dropping.gave_up(number)
            self.problems.append(gave_up)
            return gave_up
        if dropping is None and (retried := self._retried(self._is_retry(request), number)) is not None:
            return retried
        asked = request.parsed
        if isinstance(asked, Refusal):
            if asked.problem is not None:
                self.problems.append(asked.problem)
            return asked.error
        if self.consumed and not self.cycle:
            message = (
                f"scenario {self.scenario.name} has no reply left for request {number}"
                f" (it scripts {len(self.steps)})"
            )
            exhausted = Problem(ProblemKind.script_exhausted, number, message, code="sim_script_exhausted")
            self.problems.append(exhausted)
            return exhausted
        index = self.answered % len(self.steps)
        spec, reply = self.steps[index]
        whole = spec.drops is not None
        if spec.drops is not None and (dropped := self._drop(request, asked, index)) is not None:
            return dropped
        self.requests.append(asked.decoded)
        self.served.append((number, spec))
        self.answered += 1
        scripted = spec.error
        retrying = self._erred is not None and self._erred.left > 0  # this answers a retry it expects
        if scripted is not None and scripted.retries is not None and not retrying:
            self._erred = _ErrorServed(request.body, number, index, scripted.retries, scripted.retries)
        said = f"reply {index + 1} of {len(self.steps)}: {summary(spec)}"
        answer, problems = scripted_answer(
            spec, reply, asked, index=index, latency=self.scenario.latency, said=said, faulted=not whole
        )
        self.problems += problems
        return answer

    def _drop(self, request: Received, asked: Asked, index: int) -> Answer | None:
        """The faulted answer to an attempt at a request whose reply meets its fault `drops` times first;
        None once they were all made (the reply is then sent whole)."""
        spec, reply = self.steps[index]
        drops = spec.drops or 0
        dropping = self._dropping
        if dropping is None:
            dropping = self._dropping = _Dropping(request.body, request.number, index, drops)
        if dropping.made >= drops:
            self._dropping = None
            return None
        dropping.made += 1
        said = f"reply {index + 1} of {len(self.steps)}: attempt {dropping.made} of {drops + 1}"
        answer, problems = scripted_answer(
            spec, reply, asked, index=index, latency=self.scenario.latency, said=said, judged=False
        )
        if problems:  # the request is not the one expected: no attempt of it is worth retrying
            self._dropping = None
            self.problems += problems
        return answer

    def _is_retry(self, request: Received) -> bool:
        """Whether `request` retries the last one a scripted error with `retries` answered: as the SDKs say
        (`x-stainless-retry-count` above 0), or for a client that does not say, by sending the same body."""
        return self._erred is not None and request.retries(self._erred.body)

    def _after_the_end(self, request: Received) -> Answer:
        """A request after the scenario finished: never answered from the script, never worth retrying (a
        retry of a scripted error that expects no more is said to be one)."""
        number = request.number
        again = self._is_retry(request)
        erred = self._erred
        if not self.problems and erred is not None and erred.left == 0 and again:
            retried = self._retried(again, number)  # one retry more than it expects: said as that
            if retried is not None:
                return retried
        name = self.scenario.name
        if self.problems:
            why = f"it failed: {self.problems[0].message}"
        else:
            why = f"its {len(self.steps)} replies were sent"
            late = (
                f"request {number} came after scenario {name} finished (a retry it did not expect? a scripted"
                " error says how many it expects with `retries: N`)"
            )
            end = Problem(
                ProblemKind.after_the_end, number, late, code="sim_scenario_finished", headers=_NO_RETRY
            )
            self.problems.append(end)
        message = f"sim: scenario {name} is finished ({why}); request {number} gets no reply"
        return ApiError(400, message, code="sim_scenario_finished", headers=_NO_RETRY)

    def _retried(self, again: bool, number: int) -> Problem | None:
        """Whether this request is the retry the last scripted error with `retries: N` expects: a retry past
        them, or another request while one is expected, is an expectation failure; None otherwise (a retry
        it expects takes the next scripted reply)."""
        erred = self._erred
        if erred is None:
            return None
        if not again:
            self._erred = None
            if erred.left == 0:
                return None
            too_few = erred.too_few()
            self.problems.append(too_few)
            return too_few
        if erred.left == 0:
            message = (
                f"request {number} retries request {erred.number}, but replies[{erred.index}] expects"
                f" {_retries(erred.expected)}"
            )
            retry = Problem(ProblemKind.unexpected_retry, number, message, code="sim_unexpected_retry",
                            headers=_NO_RETRY)  # fmt: skip
            self.problems.append(retry)
            return retry
        erred.left -= 1
        return None


def scenario_host(
    scenario: Scenario,
    *,
    cycle: bool = False,
    keep_requests: bool = True,
    store_limit: int = STORE_LIMIT_BYTES,
    on_finished: Callable[[], Any] | None = None,
    on_answered: Callable[[Answered], None] | None = None,
    rate_limit: RateLimit | None = None,
) -> Host[ScriptAnswerer]:
    """`scenario`'s script served (see `ScriptAnswerer` and `Host`); with `on_finished`, called once after
    the answer that finishes the scenario, every request after it is answered `sim_scenario_finished`.
    `rate_limit` (else the scenario's `rate_limit:`) is simulated as `Host` says."""
    answerer = ScriptAnswerer(
        scenario, cycle=cycle, keep_requests=keep_requests, ends=on_finished is not None
    )
    return Host(
        answerer,
        model=scenario.model,
        store_limit=store_limit,
        on_finished=on_finished,
        on_answered=on_answered,
        rate_limit=rate_limit if rate_limit is not None else scenario.rate_limits,
    )
