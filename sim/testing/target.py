"""Fuzzing someone else's loop: it talks over real HTTP to a simulator serving each drawn script.

The target is `module:function`, called as `function(client, prompt)` with an `openai.OpenAI` client (an
`AsyncOpenAI` one for a coroutine function) pointed at the simulator on 127.0.0.1. Only what the requests
show is judged: pairing, an append-only history, no more requests than the script holds, and no request
after a final answer. What the function returns or raises is its own business.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import uvicorn
from hypothesis import given
from hypothesis import seed as hypothesis_seed

from sim.core.errors import ConfigurationError
from sim.scenario.schema import Scenario
from sim.server.serve import base_url, listen
from sim.server.simulator import Simulator
from sim.testing.campaign import campaign_settings
from sim.testing.invariants import Violation, check_requests
from sim.testing.strategies import scenarios


def load_target(spec: str) -> Callable[..., Any]:
    """The function named `module:function` (the current folder is importable)."""
    module_name, _, function_name = spec.partition(":")
    if not module_name or not function_name:
        raise ConfigurationError(f"a target is module:function, not {spec!r}")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        target = getattr(importlib.import_module(module_name), function_name)
    except (ImportError, AttributeError) as error:
        raise ConfigurationError(f"cannot load the target {spec}: {error}") from None
    if not callable(target):
        raise ConfigurationError(f"the target {spec} is not a function")
    return target  # type: ignore[no-any-return]


class _Switchboard:
    """An ASGI app that hands each request to the simulator of the current example."""

    def __init__(self) -> None:
        self.simulator: Simulator | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        assert self.simulator is not None
        await self.simulator.app(scope, receive, send)


class _Background:
    """uvicorn serving an app on 127.0.0.1 from a thread, for a loop that calls it synchronously."""

    def __init__(self, app: Any) -> None:
        sock = listen("127.0.0.1", 0)
        self.url = base_url(sock)
        self.server = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        )
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.01)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def observed_violations(scenario: Scenario, simulator: Simulator) -> list[Violation]:
    """What the requests the simulator received show about the loop."""
    found = check_requests(simulator.requests)
    for problem in simulator.problems:
        name = "pairing" if "invalid request" in problem else "requests"
        found.append(Violation(name, problem))
    refused = sum("has no reply left" in problem for problem in simulator.problems)
    for number in range(2, len(simulator.requests) + refused + 1):
        reply = scenario.replies[number - 2]
        final = not reply.tool_calls and reply.content is not None and reply.finish() == "stop"
        if final and reply.error is None and not reply.malformed and reply.cut_after_chunks is None:
            found.append(Violation("request_after_final", f"request {number} came after the final answer"))
            break
    return found


def fuzz_target(
    target: Callable[..., Any],
    *,
    examples: int = 100,
    seed: int = 0,
    on_run: Callable[[], None] | None = None,
) -> tuple[int, Scenario | None, list[Violation]]:
    """A campaign against `target`: the runs made, and the smallest failing script with what it broke."""
    board = _Switchboard()
    server = _Background(board)
    runs = 0
    failure: list[Any] = []

    @campaign_settings(examples)
    @hypothesis_seed(seed)
    @given(scenarios(ends_with_reply=True))
    def campaign(scenario: Scenario) -> None:
        nonlocal runs
        runs += 1
        board.simulator = simulator = Simulator(scenario)
        try:
            if inspect.iscoroutinefunction(target):
                client: Any = openai.AsyncOpenAI(base_url=server.url, api_key="sim-fuzz", max_retries=0)
                asyncio.run(target(client, scenario.require_prompt()))
            else:
                target(
                    openai.OpenAI(base_url=server.url, api_key="sim-fuzz", max_retries=0),
                    scenario.require_prompt(),
                )
        except Exception:  # the loop may raise on a scripted error; only its requests are judged
            pass
        if on_run is not None:
            on_run()
        if violations := observed_violations(scenario, simulator):
            failure[:] = [scenario, violations]
            raise AssertionError("; ".join(map(str, violations)))

    try:
        campaign()
    except AssertionError:
        pass
    finally:
        server.close()
    return (runs, failure[0], failure[1]) if failure else (runs, None, [])
