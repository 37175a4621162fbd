"""Campaigns against a target in a worker process of their own, so that nothing the target does reaches sim.

`sim fuzz --target` forks a worker per campaign (or replay): its own session and process group, standard
input from /dev/null and standard output sent to standard error (machine output is only ever sim's), the
folder it started in fixed for sim (a target's `os.chdir` moves only the worker). The worker loads the
target, runs the campaign and reports over a pipe, a JSON line per event; the parent prints the verdict,
then ends the worker's whole process group: threads the target left running, and children it started,
end with it. A worker that ends before it reports (`os._exit`, a signal) is a `crash` finding, never a pass.

`--workers N` forks N such workers at once, each running a campaign of its own against a simulator of its
own, with its share of the examples; the parent listens to them all with one `select`, and tells them as
one campaign (`merged`). On SIGTERM or Ctrl-C each worker is asked to end its run first (SIGTERM: it kills
the program its run started, a session of its own), then every worker's process group is killed.

A fork costs no start-up (the worker has every module the parent imported); it needs `os.fork` (POSIX),
and the worker's death with sim when sim is killed outright is Linux's (`PR_SET_PDEATHSIG`).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import mmap
import os
import select
import signal
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sim.core.errors import ConfigurationError
from sim.fuzz.databases import Guarded
from sim.fuzz.findings import TargetCampaign, TargetRun, failure_name, findings, last_reply
from sim.fuzz.invariants import Violation
from sim.fuzz.program import Command, TargetSpec, kill_every_program, target_name
from sim.fuzz.target import fuzz_target, loaded, replay_target
from sim.fuzz.terms import Profile
from sim.scenario.schema import Scenario, ScriptedReplySpec

Send = Callable[[dict[str, Any]], None]
"""How the worker reports an event to the parent."""
ENDING_SECONDS = 3.0
"""How long workers asked to end (sim told to end, or another worker failed) have to end their runs
before their process groups are killed."""


@dataclass(frozen=True, slots=True)
class Ended:
    """The worker ended before it reported its result: how (`exit code 0`, `signal SIGKILL`)."""

    how: str


class WorkerError(RuntimeError):
    """sim's own code failed in the worker (never the target: what it raises is judged)."""


Work = Callable[[Send], dict[str, Any]]
"""What a worker does, sending events as it goes: its result."""


def in_worker(work: Work, on_event: Callable[[dict[str, Any]], None]) -> Any:
    """Run `work(send)` in a forked worker; each event it sends is given to `on_event`; its result (what
    `work` returned), or `Ended` when the worker ended first. The worker's process group is ended before
    this returns. `ConfigurationError` or `WorkerError` when `work` raised one."""
    return in_workers([work], lambda index, event: on_event(event))[0]


def in_workers(
    works: Sequence[Work],
    on_event: Callable[[int, dict[str, Any]], None],
    on_done: Callable[[int, Any], None] | None = None,
) -> list[Any]:
    """Run each `work(send)` in a forked worker of its own, all at once: each event a worker sends is given
    to `on_event` with the worker's index, and its result (what `work` returned, or `Ended` when the worker
    ended first) to `on_done` as soon as it comes; the results, in order. Every worker's process group is
    ended before this returns. `ConfigurationError` or `WorkerError` as soon as any `work` raised one."""
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    running: list[_Running] = []
    # a worker has a session of its own, so a signal to sim's process group no longer reaches it: sim
    # ends every worker on SIGTERM as on Ctrl-C (and, where it is killed outright, they die with it)
    terminate = threading.current_thread() is threading.main_thread()
    before = signal.signal(signal.SIGTERM, _terminated) if terminate else None
    try:
        for index, work in enumerate(works):
            running.append(_fork(index, work, parent, [worker.reading for worker in running]))
        return _listen(running, on_event, on_done)
    except BaseException:  # sim was told to end, or a worker failed: the others end their runs first
        _ask_to_end(running)
        raise
    finally:
        if terminate:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if before is None else before)
        for worker in running:
            os.close(worker.reading)
            _end_group(worker.pid)  # the worker, threads and children its target left running
        for worker in running:
            os.waitpid(worker.pid, 0)


@dataclass(slots=True)
class _Running:
    """A forked worker as its parent listens to it: the end of its pipe, and the part of a line read."""

    index: int
    pid: int
    reading: int
    pending: bytes = b""


def _fork(index: int, work: Work, parent: int, inherited: list[int]) -> _Running:
    """Worker `index`, forked; `inherited` are the pipes of the workers forked before it (closed in it)."""
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: never returns into the caller's code
        for descriptor in (reading, *inherited):
            os.close(descriptor)
        _work(work, writing, parent)
    os.close(writing)
    return _Running(index, pid, reading)


def _ask_to_end(running: list[_Running]) -> None:
    """Ask every worker to end (SIGTERM), so that it kills the program its run started (a session of its
    own, out of reach of the worker's process group), and wait up to `ENDING_SECONDS` for them all."""
    for worker in running:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(worker.pid, signal.SIGTERM)
    deadline = time.monotonic() + ENDING_SECONDS
    for worker in running:
        while not _ended(worker.pid) and time.monotonic() < deadline:
            time.sleep(0.005)


def _end_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _terminated(number: int, frame: object) -> None:
    raise SystemExit(128 + number)


def _told_to_end(number: int, frame: object) -> None:
    """In a worker, on SIGTERM (sim asked it to end): kill the programs its runs started (each a session
    of its own, out of reach of the worker's process group, with their children) and end at once. Not by
    raising: an exception raised here, in whatever the main thread runs, is caught and logged by the
    asyncio callback serving a request, and the campaign would go on starting programs."""
    kill_every_program()
    os._exit(0)


def _die_with(parent: int) -> None:
    """Have the kernel kill this process when `parent` ends (Linux; elsewhere the worker ends its run)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it ended before that was asked
        os._exit(0)


def _work(work: Work, writing: int, parent: int) -> None:
    def send(event: dict[str, Any]) -> None:
        data = memoryview(json.dumps(event).encode() + b"\n")
        while data:
            data = data[os.write(writing, data) :]

    try:
        signal.signal(signal.SIGTERM, _told_to_end)
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


def _listen(
    running: list[_Running],
    on_event: Callable[[int, dict[str, Any]], None],
    on_done: Callable[[int, Any], None] | None,
) -> list[Any]:
    results: list[Any] = [None] * len(running)
    waiting = {worker.reading: worker for worker in running}

    def finish(worker: _Running, result: Any) -> None:
        results[worker.index] = result
        del waiting[worker.reading]
        _end_group(worker.pid)  # what its target left running ends now, not when the others are done
        if on_done is not None:
            on_done(worker.index, result)

    while waiting:
        ready, _, _ = select.select(list(waiting), [], [], 0.25)
        for worker in list(waiting.values()):
            readable = worker.reading in ready
            chunk = os.read(worker.reading, 1 << 16) if readable else b""
            if not chunk and (readable or _ended(worker.pid)):  # the pipe closed, or the worker is gone
                chunk = _drain(worker.reading)
                if not chunk:
                    finish(worker, Ended(_how(worker.pid)))
                    continue
            if not chunk:
                continue
            *lines, worker.pending = (worker.pending + chunk).split(b"\n")
            for line in lines:
                event = json.loads(line)
                if "result" in event:
                    finish(worker, event["result"])
                    break
                if "usage" in event:
                    raise ConfigurationError(event["usage"])
                if "error" in event:
                    raise WorkerError(f"the campaign's worker failed:\n{event['error']}")
                on_event(worker.index, event)
    return results


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
    workers: int = 1,
) -> TargetCampaign:
    """`fuzz_target` on the target `spec` names (`module:function`, loaded in the worker, or a program's
    command), in a worker process; a worker that ends before it reports is a `crash` finding. The
    database's problem, if any, is set on `database`.

    With `workers` above 1, that many campaigns run at once, each in a worker of its own with its share of
    the examples (`share`) and a seed of its own (`worker_seed`), and are told as one (`merged`): the first
    worker to find a failure shrinks it while the others stop after the run they are in. Which worker finds
    first depends on how the workers' runs interleave, so the failure found is not fixed by the seed."""
    count = max(1, min(workers, examples))
    stops = mmap.mmap(-1, count)  # shared with the forked workers: byte i set asks worker i to stop

    def work(index: int) -> Work:
        def campaign_in_worker(send: Send) -> dict[str, Any]:
            told = False

            def go_on(found: list[Violation]) -> bool:
                nonlocal told
                if found and not told:  # the parent stops the others on the first worker's word
                    told = True
                    send({"found": 1})
                return not stops[index]

            campaign = fuzz_target(
                loaded(spec),
                examples=share(examples, count, index),
                seed=worker_seed(seed, index),
                profile=profile,
                bound=bound,
                allow=allow,
                seconds=seconds,
                on_run=lambda: send({"run": 1}),
                database=database,
                on_draw=lambda number, reply: send({"reply": [number, reply.model_dump(mode="json")]}),
                go_on=go_on if count > 1 else None,
            )
            return {**_campaign_json(campaign), "database": None if database is None else database.problem}

        return campaign_in_worker

    heard = [_Heard() for _ in range(count)]
    finder: int | None = None

    def found_by(index: int) -> None:
        nonlocal finder
        if finder is None:
            finder = index
            for other in range(count):
                stops[other] = int(other != index)

    def on_event(index: int, event: dict[str, Any]) -> None:
        worker = heard[index]
        if "reply" in event:
            worker.drawn += 1
            worker.replies.append(event["reply"])
        elif "found" in event:
            found_by(index)
        else:
            worker.runs, worker.replies = worker.runs + 1, []
            if on_run is not None:
                on_run()

    def on_done(index: int, result: Any) -> None:
        if isinstance(result, Ended):
            found_by(index)

    try:
        results = in_workers([work(index) for index in range(count)], on_event, on_done)
    finally:
        stops.close()
    campaigns = []
    for worker, result in zip(heard, results, strict=True):
        if isinstance(result, Ended):
            campaigns.append(_ended_campaign(spec, profile, allow, worker, result))
            continue
        if database is not None and database.problem is None:
            database.problem = result["database"]
        campaigns.append(_campaign_of(spec, profile, allow, result))
    return campaigns[0] if count == 1 else merged(campaigns, finder)


def share(examples: int, workers: int, index: int) -> int:
    """The examples worker `index` of `workers` draws: an even share, the first ones one more while any
    are left over, so that the shares add up to `examples`."""
    return examples // workers + (index < examples % workers)


def worker_seed(seed: int, index: int) -> int:
    """The seed of worker `index`: `seed` itself for the first (one worker draws what `--seed` always
    drew), and for the others seeds no small `--seed` gives."""
    return seed + (index << 64)


def merged(campaigns: list[TargetCampaign], finder: int | None) -> TargetCampaign:
    """Campaigns run side by side against one target, as one: every count summed, and the failure of the
    worker that found one first (`finder`; the first failing campaign when none was told)."""
    first = campaigns[0]
    whole = TargetCampaign(first.target, first.profile, first.allow, program=first.program)
    for campaign in campaigns:
        whole.runs += campaign.runs
        whole.requests += campaign.requests
        whole.round_trips += campaign.round_trips
        whole.raised.update(campaign.raised)
        whole.unsimulated += campaign.unsimulated
        whole.unsimulated_example = whole.unsimulated_example or campaign.unsimulated_example
        whole.unhonoured |= campaign.unhonoured
        whole.calling_runs += campaign.calling_runs
        whole.said = whole.said or campaign.said
    if finder is None:
        finder = next((index for index, c in enumerate(campaigns) if c.failure is not None), None)
    if finder is not None:
        whole.failure, whole.violations = campaigns[finder].failure, list(campaigns[finder].violations)
    return whole


@dataclass(slots=True)
class _Heard:
    """What the parent heard of a worker's campaign: its runs, the replies drawn, and those of the run
    going on (saved if the worker ends in it)."""

    runs: int = 0
    drawn: int = 0
    replies: list[Any] = field(default_factory=list)


def _ended_campaign(
    spec: TargetSpec, profile: Profile, allow: tuple[str, ...], heard: _Heard, ended: Ended
) -> TargetCampaign:
    """The campaign of a worker that ended before it reported: a `crash` finding in the run it was in."""
    program = isinstance(spec, Command)
    campaign = TargetCampaign(
        target_name(spec), profile, allow, runs=heard.runs + 1, requests=heard.drawn, program=program
    )
    run = _run_of({"received": len(heard.replies), "served": heard.replies})
    after = f"after {last_reply(run)}" if heard.replies else "before any reply"
    said = f"run {heard.runs + 1}: the target {_ended_the_process(ended)} ({after})"
    campaign.failure, campaign.violations = run, [Violation("crash", said)]
    return campaign


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
        "said": campaign.said,
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
        said=data["said"],
    )
    if (failure := data["failure"]) is not None:
        campaign.failure = _run_of(failure)
    return campaign
