"""Fuzzing someone else's loop: it talks over real HTTP to a simulator that draws each reply when the
request arrives, from the tools that request offers.

The target is `module:function`, called as `function(client)` or `function(client, prompt)` with an
`openai.OpenAI` client (an `AsyncOpenAI` one for a coroutine function) pointed at a simulator on 127.0.0.1
that serves Chat Completions and the Responses API. The client is closed after each run. Only what the
requests and the target's own exceptions show is judged (see `findings`); what it returns is its business.

Replies are drawn in the thread running the hypothesis example (the endpoint's event loop runs there while
a run does), so hypothesis shrinks a failing run to its simplest replies. The target itself runs in a worker
thread (a coroutine function on an event loop of its own), so a run's time bound holds whatever it does.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
from hypothesis import given
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.database import ExampleDatabase

from sim.core.errors import ConfigurationError
from sim.fuzz.campaign import campaign_settings
from sim.fuzz.databases import Namespaced
from sim.fuzz.drawn import DrawnAnswerer
from sim.fuzz.findings import TargetCampaign, TargetRun, example_failed, one_line
from sim.fuzz.invariants import Violation
from sim.fuzz.program import ProgramRun, ProgramTarget, TargetSpec, program_target
from sim.fuzz.replies import ReplyDrawer
from sim.fuzz.terms import BOUND, PROMPT, RUN_SECONDS, Profile
from sim.host.app import Host, api_error
from sim.host.serve import SteppedServer, base_url, listen
from sim.scenario.answerer import ScriptAnswerer
from sim.scenario.schema import Scenario, ScriptedReplySpec
from sim.wire.requests import Asked


@dataclass(frozen=True, slots=True)
class Target:
    """A loop to fuzz: the function, and how it is called."""

    name: str
    function: Callable[..., Any]
    takes_prompt: bool
    is_async: bool

    def _arguments(self) -> tuple[str, ...]:
        return (PROMPT,) if self.takes_prompt else ()

    async def run_async(self, url: str) -> None:
        """One run of a coroutine function, with an `AsyncOpenAI` client closed afterwards (its backoff
        between retries shortened: `sim.fuzz.clients`)."""
        # here: importing the SDK takes half a second, which no other `sim` command pays
        from sim.fuzz.clients import QuickAsyncOpenAI

        # plain HTTP on 127.0.0.1: no TLS context to build (loading CA files is most of a client's cost)
        async with QuickAsyncOpenAI(
            base_url=url, api_key="sim-fuzz", http_client=httpx2.AsyncClient(verify=False)
        ) as client:
            await self.function(client, *self._arguments())

    def run_sync(self, url: str) -> None:
        """One run of a plain function, with an `OpenAI` client closed afterwards."""
        from sim.fuzz.clients import QuickOpenAI

        with QuickOpenAI(base_url=url, api_key="sim-fuzz", http_client=httpx2.Client(verify=False)) as client:
            self.function(client, *self._arguments())


def target_of(function: Callable[..., Any], name: str | None = None) -> Target:
    """`function` as a target; `ConfigurationError` unless it takes `(client)` or `(client, prompt)`."""
    shown = name or str(getattr(function, "__qualname__", repr(function)))
    if not callable(function):
        raise ConfigurationError(f"the target {shown} is not a function")
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        raise ConfigurationError(f"the target {shown} has no signature to check") from None
    for takes_prompt, arguments in ((True, ("client", PROMPT)), (False, ("client",))):
        try:
            signature.bind(*arguments)
        except TypeError:
            continue
        is_async = inspect.iscoroutinefunction(function)
        return Target(shown, function, takes_prompt, is_async)
    raise ConfigurationError(
        f"the target {shown}{signature} must take (client) or (client, prompt), sync or async"
    )


def load_target(spec: str) -> Target:
    """The function named `module:function` (the current folder is importable), checked as a target."""
    module_name, _, function_name = spec.partition(":")
    if not module_name or not function_name:
        raise ConfigurationError(f"a target is module:function, not {spec!r}")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigurationError(f"cannot load the target {spec}: {error}") from None
    except (Exception, SystemExit) as error:  # the module's own code failed as it was imported
        raise ConfigurationError(
            f"cannot load the target {spec}: importing it raised {_raised(error)}"
        ) from None
    try:
        function = getattr(module, function_name)
    except AttributeError as error:
        raise ConfigurationError(f"cannot load the target {spec}: {error}") from None
    return target_of(function, spec)


def loaded(spec: TargetSpec) -> Target | ProgramTarget:
    """What `spec` names, checked as a target: a function (`load_target`) or a program (`program_target`)."""
    return load_target(spec) if isinstance(spec, str) else program_target(spec)


def _raised(error: BaseException) -> str:
    return f"{type(error).__name__}: {one_line(error)}" if str(error) else type(error).__name__


class _Switchboard:
    """An ASGI app that hands each request to its run's host, by the run's prefix (`/run-7/v1/...`): a run
    that outlives its turn (a target still retrying) reaches nobody else's answerer."""

    def __init__(self) -> None:
        self.hosts: dict[str, Host[Answering]] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = str(scope.get("path", ""))
        prefix = "/" + path.split("/")[1] if path.count("/") > 1 else ""
        host = self.hosts.get(prefix)
        if host is None:
            await api_error(404, "sim fuzz: this run is over")(scope, receive, send)
            return
        await host.app({**scope, "path": path.removeprefix(prefix), "raw_path": None}, receive, send)


class Endpoint:
    """The switchboard served on 127.0.0.1 by an event loop of this thread, which runs only while a run
    does: requests are answered (and replies drawn) in the thread running the hypothesis example."""

    def __init__(self) -> None:
        sock = listen("127.0.0.1", 0)
        self.host = base_url(sock, "")
        self.runs = 0
        self.board = _Switchboard()
        self.server = SteppedServer(self.board, sock)
        self.loop = self.server.loop

    def open_run(self, host: Host[Answering]) -> tuple[str, str]:
        """A fresh prefix for a run `host` answers, and the base URL its client uses."""
        self.runs += 1
        prefix = f"/run-{self.runs}"
        self.board.hosts[prefix] = host
        return prefix, f"{self.host}{prefix}/v1"

    def close(self) -> None:
        """Stop serving, without waiting for connections a target left open (every run is over)."""
        self.server.close()


KILLED_SECONDS = 5.0
"""How long a run waits for a program it killed to be reaped (a process in uninterruptible sleep)."""

Answering = DrawnAnswerer | ScriptAnswerer
"""What answers a run: replies drawn as it goes, or a saved run's replies played again."""


class _Worker:
    """One run of a target in a thread of its own (a coroutine function on an event loop of that thread),
    so the run's bound holds whatever the target does: a thread that blocks, or swallows cancellation, is
    abandoned (its run's prefix answers nobody any more). An exit (`SystemExit`, `KeyboardInterrupt`) is
    kept on the run, never raised in the campaign."""

    def __init__(
        self, target: Target | ProgramTarget, url: str, run: TargetRun, done: Callable[[], None]
    ) -> None:
        self.target, self.url, self.run, self.done = target, url, run, done
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task[None] | None = None
        self.program: ProgramRun | None = target.start(url) if isinstance(target, ProgramTarget) else None

    def start(self) -> None:
        """Start the run; `done` is called (from the worker thread) when it ends."""
        threading.Thread(target=self._main, daemon=True, name="sim-fuzz-target").start()

    def cancel(self) -> None:
        """Ask a coroutine target to stop (it may not listen: it is abandoned either way); kill a program."""
        if self.program is not None:
            self.program.stop()
        if self.loop is not None and self.task is not None:
            with contextlib.suppress(RuntimeError):  # its loop is closed: it has stopped already
                self.loop.call_soon_threadsafe(self.task.cancel)

    def _main(self) -> None:
        try:
            if self.program is not None:
                self.program.run()
            elif isinstance(self.target, Target) and self.target.is_async:
                self._run_async()
            elif isinstance(self.target, Target):
                self.target.run_sync(self.url)
        except (SystemExit, KeyboardInterrupt) as error:  # the target's own exit: a finding
            self.run.exited = error
        except BaseException as error:  # what the target raised is judged, never lost
            self.run.raised = error
        finally:
            self.done()

    def _run_async(self) -> None:
        assert isinstance(self.target, Target)
        self.loop = loop = asyncio.new_event_loop()
        self.task = task = loop.create_task(self.target.run_async(self.url))
        try:
            loop.run_until_complete(task)
        finally:
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: an exit raised through the loop is not logged again
            with contextlib.suppress(BaseException):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()


def run_once(
    target: Target | ProgramTarget, endpoint: Endpoint, answerer: Answering, seconds: float = RUN_SECONDS
) -> TargetRun:
    """Run `target` once against `answerer`, in a worker thread while the endpoint's loop serves it, for
    at most `seconds` (a program still running then is killed, and its end awaited). Raises what a drawn
    answerer's `draw` raised."""
    model = answerer.scenario.model if isinstance(answerer, ScriptAnswerer) else "sim-model"
    host = Host(answerer, model=model)
    prefix, url = endpoint.open_run(host)
    run = TargetRun(seconds=seconds)
    loop = endpoint.loop
    finished: asyncio.Future[None] = loop.create_future()

    def settle() -> None:
        if not finished.done():
            finished.set_result(None)

    def done() -> None:
        with contextlib.suppress(RuntimeError):  # the loop was closed: nobody waits any more
            loop.call_soon_threadsafe(settle)

    worker = _Worker(target, url, run, done)
    try:
        worker.start()
        loop.run_until_complete(asyncio.wait({finished}, timeout=seconds))
        if not finished.done():
            run.finished = False
            worker.cancel()
            if worker.program is not None:  # killed: its thread ends as soon as it has reaped it
                loop.run_until_complete(asyncio.wait({finished}, timeout=KILLED_SECONDS))
    except BaseException:  # the campaign ends here (its worker told to end): its program ends with it
        worker.cancel()
        raise
    finally:
        del endpoint.board.hosts[prefix]
        if isinstance(answerer, DrawnAnswerer):
            answerer.closed = True
    run.served, run.received = list(answerer.served), host.received
    run.requests, run.problems = list(answerer.requests), list(answerer.problems)
    if isinstance(answerer, DrawnAnswerer) and answerer.stopped is not None:
        raise answerer.stopped
    return run


def fuzz_target(
    target: Target | ProgramTarget | Callable[..., Any],
    *,
    examples: int = 100,
    seed: int = 0,
    profile: Profile = Profile.api,
    bound: int = BOUND,
    allow: tuple[str, ...] = (),
    seconds: float = RUN_SECONDS,
    on_run: Callable[[], None] | None = None,
    database: ExampleDatabase | None = None,
    on_draw: Callable[[int, ScriptedReplySpec], None] | None = None,
    go_on: Callable[[list[Violation]], bool] | None = None,
) -> TargetCampaign:
    """A campaign against `target`: every run counted, and the smallest failing run with its findings;
    with a `database`, the failures it keeps for this target are run first and new ones kept there.
    `on_run` is told when a run ends, `on_draw` of each reply drawn (the request's number, the reply);
    `go_on` is given each run's findings after it, and ends the campaign with the runs so far when it
    returns False (another worker found a failure first)."""

    def draw(drawer: ReplyDrawer, asked: Asked) -> ScriptedReplySpec:
        spec = drawer.draw(asked.decoded, asked.terms, asked.body)
        if on_draw is not None:
            on_draw(asked.number, spec)
        return spec

    target = target if isinstance(target, Target | ProgramTarget) else target_of(target)
    endpoint = Endpoint()
    program = isinstance(target, ProgramTarget)
    campaign = TargetCampaign(target.name, profile, allow, program=program)
    fuzzed = f"-- {target.name}" if program else f"--target {target.name}"
    kept = None if database is None else Namespaced(database, f"sim fuzz {fuzzed} {profile}")

    @campaign_settings(examples, kept)
    @hypothesis_seed(seed)
    @given(st.data())
    def example(data: st.DataObject) -> None:
        drawer = ReplyDrawer(data, profile)
        answerer = DrawnAnswerer(partial(draw, drawer), bound, judged=profile is Profile.api)
        run = run_once(target, endpoint, answerer, seconds)
        campaign.unhonoured |= drawer.unhonoured
        found = campaign.keep(run)
        if on_run is not None:
            on_run()
        if go_on is not None and not go_on(found):
            raise _Stopped
        if found:
            raise example_failed(found, run)

    try:
        example()
    except _Stopped:  # not a failure: hypothesis lets it through as it does KeyboardInterrupt
        pass
    except Exception:  # the failure (or hypothesis's word that it was flaky) is on the campaign
        if campaign.failure is None:
            raise
    finally:
        endpoint.close()
    return campaign


class _Stopped(BaseException):
    """A campaign's `go_on` said to stop: its runs so far stand."""


REPLAY_ENDS = "(the saved run ends here)"
"""The text answer a replay sends once the saved replies are used up, so that a target whose fix makes it
ask once more than the failing run did can finish; one more request after it is a runaway."""


def replay_target(
    target: Target | ProgramTarget, scenario: Scenario, seconds: float = RUN_SECONDS
) -> TargetRun:
    """Play a saved run's replies, in order, to `target` once, then one final text answer (what
    `sim fuzz --replay` does)."""
    ending = scenario.model_copy(
        update={"replies": [*scenario.replies, ScriptedReplySpec(content=REPLAY_ENDS)]}
    )
    endpoint = Endpoint()
    try:
        return run_once(target, endpoint, ScriptAnswerer(ending), seconds)
    finally:
        endpoint.close()
