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
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
from hypothesis import given
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.database import ExampleDatabase

from sim.cassette.writer import to_yaml
from sim.core.calls import results_in_history
from sim.core.counts import counted
from sim.core.errors import ConfigurationError
from sim.core.model import ModelRequest
from sim.core.problems import Problem, ProblemKind
from sim.fuzz.campaign import campaign_settings
from sim.fuzz.databases import Namespaced
from sim.fuzz.drawn import BOUND, DrawnAnswerer
from sim.fuzz.invariants import Violation, check_requests
from sim.fuzz.replies import COUNTED, ReplyDrawer, kind_of
from sim.fuzz.terms import Profile
from sim.host.app import Host, api_error
from sim.host.serve import SteppedServer, base_url, listen
from sim.scenario.answerer import ScriptAnswerer
from sim.scenario.schema import Scenario, ScriptedReplySpec
from sim.wire.requests import Asked

PROMPT = "Please help me with this."
"""The prompt a `function(client, prompt)` target gets."""
RUN_SECONDS = 60.0
"""How long a run may take before it is called a runaway."""
MAX_RUN_SECONDS = 3600.0
"""The longest bound a run may be given."""


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
        """One run of a coroutine function, with an `AsyncOpenAI` client closed afterwards."""
        import openai  # here: importing the SDK takes half a second, which no other `sim` command pays

        # plain HTTP on 127.0.0.1: no TLS context to build (loading CA files is most of a client's cost)
        async with openai.AsyncOpenAI(
            base_url=url, api_key="sim-fuzz", http_client=httpx2.AsyncClient(verify=False)
        ) as client:
            await self.function(client, *self._arguments())

    def run_sync(self, url: str) -> None:
        """One run of a plain function, with an `OpenAI` client closed afterwards."""
        import openai

        with openai.OpenAI(
            base_url=url, api_key="sim-fuzz", http_client=httpx2.Client(verify=False)
        ) as client:
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


def _raised(error: BaseException) -> str:
    return f"{type(error).__name__}: {_one_line(error)}" if str(error) else type(error).__name__


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


Answering = DrawnAnswerer | ScriptAnswerer
"""What answers a run: replies drawn as it goes, or a saved run's replies played again."""


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


class _Worker:
    """One run of a target in a thread of its own (a coroutine function on an event loop of that thread),
    so the run's bound holds whatever the target does: a thread that blocks, or swallows cancellation, is
    abandoned (its run's prefix answers nobody any more). An exit (`SystemExit`, `KeyboardInterrupt`) is
    kept on the run, never raised in the campaign."""

    def __init__(self, target: Target, url: str, run: TargetRun, done: Callable[[], None]) -> None:
        self.target, self.url, self.run, self.done = target, url, run, done
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the run; `done` is called (from the worker thread) when it ends."""
        threading.Thread(target=self._main, daemon=True, name="sim-fuzz-target").start()

    def cancel(self) -> None:
        """Ask a coroutine target to stop (it may not listen: it is abandoned either way)."""
        if self.loop is not None and self.task is not None:
            with contextlib.suppress(RuntimeError):  # its loop is closed: it has stopped already
                self.loop.call_soon_threadsafe(self.task.cancel)

    def _main(self) -> None:
        try:
            if self.target.is_async:
                self._run_async()
            else:
                self.target.run_sync(self.url)
        except (SystemExit, KeyboardInterrupt) as error:  # the target's own exit: a finding
            self.run.exited = error
        except BaseException as error:  # what the target raised is judged, never lost
            self.run.raised = error
        finally:
            self.done()

    def _run_async(self) -> None:
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
    target: Target, endpoint: Endpoint, answerer: Answering, seconds: float = RUN_SECONDS
) -> TargetRun:
    """Run `target` once against `answerer`, in a worker thread while the endpoint's loop serves it, for
    at most `seconds`. Raises what a drawn answerer's `draw` raised."""
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
    finally:
        del endpoint.board.hosts[prefix]
        if isinstance(answerer, DrawnAnswerer):
            answerer.closed = True
    run.served, run.received = list(answerer.served), host.received
    run.requests, run.problems = list(answerer.requests), list(answerer.problems)
    if isinstance(answerer, DrawnAnswerer) and answerer.stopped is not None:
        raise answerer.stopped
    return run


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
            raised = f"{type(run.raised).__name__}: {_one_line(run.raised)}"
            found.append(
                Violation("crash", f"request {number} got {describe(last)}; the target raised {raised}")
            )
    if run.exited is not None:
        found.append(Violation("crash", f"{last_reply(run)}; the target {_exit(run.exited)}"))
    return found


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


def _one_line(error: BaseException) -> str:
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
            self.raised[type(run.raised).__name__] += 1
        found = findings(run, self.allow)
        if found:
            self.failure, self.violations = run, found
        return found

    def vacuous(self) -> str | None:
        """Why the campaign tested nothing, if so: not one request, or the same exception every run."""
        every = len(self.raised) == 1 and sum(self.raised.values()) == self.runs
        name = next(iter(self.raised), "")
        if self.runs and not self.requests:
            if every:
                return f"the target raised {name} in every run ({self.runs}) before sending a request"
            return (
                f"the target never sent a request in {self.runs} runs, so nothing was tested"
                " (does it use the client it is given?)"
            )
        if self.runs and self.unsimulated == self.runs:
            return f"every run asked for what sim cannot simulate ({self.unsimulated_example})"
        if every and self.runs > 1:
            return f"the target raised {name} in every one of {self.runs} runs, so nothing else was tested"
        return None


def example_failed(found: list[Violation], run: TargetRun) -> AssertionError:
    """The failure of a run: its findings, then its replies as a scenario `sim serve` plays."""
    scenario = run.scenario.model_dump(mode="json", exclude_defaults=True)
    lines = [str(violation) for violation in found]
    return AssertionError(
        "\n".join([*lines, "the replies, as a scenario `sim serve` plays:", to_yaml(scenario)])
    )


def fuzz_target(
    target: Target | Callable[..., Any],
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
) -> TargetCampaign:
    """A campaign against `target`: every run counted, and the smallest failing run with its findings;
    with a `database`, the failures it keeps for this target are run first and new ones kept there.
    `on_run` is told when a run ends, `on_draw` of each reply drawn (the request's number, the reply)."""

    def draw(drawer: ReplyDrawer, asked: Asked) -> ScriptedReplySpec:
        spec = drawer.draw(asked.decoded, asked.terms)
        if on_draw is not None:
            on_draw(asked.number, spec)
        return spec

    target = target if isinstance(target, Target) else target_of(target)
    endpoint = Endpoint()
    campaign = TargetCampaign(target.name, profile, allow)
    kept = None if database is None else Namespaced(database, f"sim fuzz --target {target.name} {profile}")

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
        if found:
            raise example_failed(found, run)

    try:
        example()
    except Exception:  # the failure (or hypothesis's word that it was flaky) is on the campaign
        if campaign.failure is None:
            raise
    finally:
        endpoint.close()
    return campaign


REPLAY_ENDS = "(the saved run ends here)"
"""The text answer a replay sends once the saved replies are used up, so that a target whose fix makes it
ask once more than the failing run did can finish; one more request after it is a runaway."""


def replay_target(target: Target, scenario: Scenario, seconds: float = RUN_SECONDS) -> TargetRun:
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
