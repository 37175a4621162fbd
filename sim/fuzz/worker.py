"""Campaigns against a target in a worker process of their own, so that nothing the target does reaches sim.

`sim fuzz --target` forks a worker per campaign (or replay): its own session and process group, standard
input from /dev/null and standard output sent to standard error (machine output is only ever sim's), the
folder it started in fixed for sim (a target's `os.chdir` moves only the worker). The worker loads the
target, runs the campaign and reports over a pipe, a JSON line per event; the parent prints the verdict,
then ends the worker's whole process group: threads the target left running, and children it started,
end with it. A worker that ends before it reports (`os._exit`, a signal) is a `crash` finding, never a pass.

A fork costs no start-up (the worker has every module the parent imported); it needs `os.fork` (POSIX),
and the worker's death with sim when sim is killed outright is Linux's (`PR_SET_PDEATHSIG`).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import sys
import threading
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sim.core.errors import ConfigurationError
from sim.fuzz.databases import Guarded
from sim.fuzz.findings import TargetCampaign, TargetRun, failure_name, findings, last_reply
from sim.fuzz.invariants import Violation
from sim.fuzz.program import Command, TargetSpec, target_name
from sim.fuzz.target import fuzz_target, loaded, replay_target
from sim.fuzz.terms import Profile
from sim.scenario.schema import Scenario, ScriptedReplySpec

Send = Callable[[dict[str, Any]], None]
"""How the worker reports an event to the parent."""


@dataclass(frozen=True, slots=True)
class Ended:
    """The worker ended before it reported its result: how (`exit code 0`, `signal SIGKILL`)."""

    how: str


class WorkerError(RuntimeError):
    """sim's own code failed in the worker (never the target: what it raises is judged)."""


def in_worker(work: Callable[[Send], dict[str, Any]], on_event: Callable[[dict[str, Any]], None]) -> Any:
    """Run `work(send)` in a forked worker; each event it sends is given to `on_event`; its result (what
    `work` returned), or `Ended` when the worker ended first. The worker's process group is ended before
    this returns. `ConfigurationError` or `WorkerError` when `work` raised one."""
    sys.stdout.flush()
    sys.stderr.flush()
    reading, writing = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the worker: never returns into the caller's code
        os.close(reading)
        _work(work, writing, parent)
    os.close(writing)
    # the worker has a session of its own, so a signal to sim's process group no longer reaches it: sim
    # ends it on SIGTERM as on Ctrl-C (and, where it is killed outright, the worker dies with it)
    terminate = threading.current_thread() is threading.main_thread()
    before = signal.signal(signal.SIGTERM, _terminated) if terminate else None
    try:
        return _listen(pid, reading, on_event)
    finally:
        if terminate:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if before is None else before)
        os.close(reading)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # the worker, threads and children its target left running
        os.waitpid(pid, 0)


def _terminated(number: int, frame: object) -> None:
    raise SystemExit(128 + number)


def _die_with(parent: int) -> None:
    """Have the kernel kill this process when `parent` ends (Linux; elsewhere the worker ends its run)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it ended before that was asked
        os._exit(0)


def _work(work: Callable[[Send], dict[str, Any]], writing: int, parent: int) -> None:
    def send(event: dict[str, Any]) -> None:
        data = memoryview(json.dumps(event).encode() + b"\n")
        while data:
            data = data[os.write(writing, data) :]

    try:
        os.setsid()
        _die_with(parent)
        nothing = os.open(os.devnull, os.O_RDONLY)
        os.dup2(nothing, 0)
        os.dup2(2, 1)  # what the target prints goes to standard error, never into sim's output
        send({"result": work(send)})
    except ConfigurationError as error:
        send({"usage": str(error)})
    except BaseException:
        with contextlib.suppress(BaseException):
            send({"error": traceback.format_exc()})
    finally:
        os._exit(0)


def _listen(pid: int, reading: int, on_event: Callable[[dict[str, Any]], None]) -> Any:
    pending = b""
    while True:
        ready, _, _ = select.select([reading], [], [], 0.25)
        chunk = os.read(reading, 1 << 16) if ready else b""
        if not chunk and (ready or _ended(pid)):  # the pipe closed, or the worker is gone
            chunk = _drain(reading)
            if not chunk:
                return Ended(_how(pid))
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            event = json.loads(line)
            if "result" in event:
                return event["result"]
            if "usage" in event:
                raise ConfigurationError(event["usage"])
            if "error" in event:
                raise WorkerError(f"the campaign's worker failed:\n{event['error']}")
            on_event(event)


def _ended(pid: int) -> bool:
    """Whether the worker has ended (without reaping it: its process group is ended first)."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _drain(reading: int) -> bytes:
    """What is left in the pipe, without waiting for a child of the target that holds it open."""
    left = b""
    while select.select([reading], [], [], 0)[0] and (chunk := os.read(reading, 1 << 16)):
        left += chunk
    return left


def _how(pid: int) -> str:
    status = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    if status is None:
        return "an unknown way"
    if status.si_code == os.CLD_EXITED:
        return f"exit code {status.si_status}"
    return f"signal {signal.Signals(status.si_status).name}"


def fuzz_target_in_worker(
    spec: TargetSpec,
    *,
    examples: int,
    seed: int,
    profile: Profile,
    bound: int,
    allow: tuple[str, ...],
    seconds: float,
    on_run: Callable[[], None] | None = None,
    database: Guarded | None = None,
) -> TargetCampaign:
    """`fuzz_target` on the target `spec` names (`module:function`, loaded in the worker, or a program's
    command), in a worker process; a worker that ends before it reports is a `crash` finding. The
    database's problem, if any, is set on `database`."""

    def work(send: Send) -> dict[str, Any]:
        campaign = fuzz_target(
            loaded(spec),
            examples=examples,
            seed=seed,
            profile=profile,
            bound=bound,
            allow=allow,
            seconds=seconds,
            on_run=lambda: send({"run": 1}),
            database=database,
            on_draw=lambda number, reply: send({"reply": [number, reply.model_dump(mode="json")]}),
        )
        return {**_campaign_json(campaign), "database": None if database is None else database.problem}

    runs, drawn = 0, 0
    replies: list[Any] = []  # the replies of the run going on, saved if the worker ends in it

    def heard(event: dict[str, Any]) -> None:
        nonlocal runs, drawn
        if "reply" in event:
            drawn += 1
            replies.append(event["reply"])
            return
        runs, replies[:] = runs + 1, []
        if on_run is not None:
            on_run()

    result = in_worker(work, heard)
    if isinstance(result, Ended):
        program = isinstance(spec, Command)
        campaign = TargetCampaign(
            target_name(spec), profile, allow, runs=runs + 1, requests=drawn, program=program
        )
        run = _run_of({"received": len(replies), "served": replies})
        after = f"after {last_reply(run)}" if replies else "before any reply"
        said = f"run {runs + 1}: the target {_ended_the_process(result)} ({after})"
        campaign.failure, campaign.violations = run, [Violation("crash", said)]
        return campaign
    if database is not None:
        database.problem = result["database"]
    return _campaign_of(spec, profile, allow, result)


def _ended_the_process(ended: Ended) -> str:
    return f"ended sim's worker process ({ended.how}): a loop must not end its caller's process"


def _run_of(failure: dict[str, Any]) -> TargetRun:
    """A run as the worker reported it: the replies it was served, by request number."""
    served = [(number, ScriptedReplySpec.model_validate(reply)) for number, reply in failure["served"]]
    return TargetRun(served=served, received=failure["received"])


@dataclass(frozen=True, slots=True)
class Replayed:
    """A saved run replayed to a target in a worker: what it was asked, what it raised, what it broke."""

    requests: int
    raised: str | None
    violations: list[Violation]


def replay_target_in_worker(
    spec: TargetSpec, scenario: Scenario, seconds: float, allow: tuple[str, ...]
) -> Replayed:
    """`replay_target` on the target `spec` names, in a worker process, judged; a worker that ends before
    it reports is a `crash` finding."""

    def work(send: Send) -> dict[str, Any]:
        run = replay_target(loaded(spec), scenario, seconds)
        raised = None if run.raised is None else failure_name(run.raised)
        violations = [[v.invariant, v.detail] for v in findings(run, allow)]
        return {"requests": run.received, "raised": raised, "violations": violations}

    result = in_worker(work, lambda event: None)
    if isinstance(result, Ended):
        return Replayed(0, None, [Violation("crash", f"the target {_ended_the_process(result)}")])
    found = [Violation(invariant, detail) for invariant, detail in result["violations"]]
    return Replayed(result["requests"], result["raised"], found)


def _campaign_json(campaign: TargetCampaign) -> dict[str, Any]:
    failure = campaign.failure
    return {
        "runs": campaign.runs,
        "requests": campaign.requests,
        "round_trips": campaign.round_trips,
        "raised": dict(campaign.raised),
        "violations": [[v.invariant, v.detail] for v in campaign.violations],
        "unsimulated": campaign.unsimulated,
        "unsimulated_example": campaign.unsimulated_example,
        "unhonoured": sorted(campaign.unhonoured),
        "calling_runs": campaign.calling_runs,
        "failure": None
        if failure is None
        else {
            "received": failure.received,
            "served": [[number, spec.model_dump(mode="json")] for number, spec in failure.served],
        },
    }


def _campaign_of(
    spec: TargetSpec, profile: Profile, allow: tuple[str, ...], data: dict[str, Any]
) -> TargetCampaign:
    campaign = TargetCampaign(
        target_name(spec),
        profile,
        allow,
        runs=data["runs"],
        requests=data["requests"],
        round_trips=data["round_trips"],
        raised=Counter(data["raised"]),
        violations=[Violation(invariant, detail) for invariant, detail in data["violations"]],
        unsimulated=data["unsimulated"],
        unsimulated_example=data["unsimulated_example"],
        unhonoured=set(data["unhonoured"]),
        calling_runs=data["calling_runs"],
        program=isinstance(spec, Command),
    )
    if (failure := data["failure"]) is not None:
        campaign.failure = _run_of(failure)
    return campaign
