"""A scenario served: its script (`ScriptAnswerer`) behind the HTTP host, as `sim serve SCENARIO` serves it
and as a scenario is played in process. `scenario_host(scenario).app` is an ASGI app to mount anywhere;
what the script was asked and what went wrong are on its `answerer`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sim.host.access_log import Answered
from sim.host.app import Host
from sim.scenario.answerer import ScriptAnswerer
from sim.scenario.schema import Scenario
from sim.wire.response_store import STORE_LIMIT_BYTES

__all__ = ["scenario_host"]


def scenario_host(
    scenario: Scenario,
    *,
    cycle: bool = False,
    keep_requests: bool = True,
    store_limit: int = STORE_LIMIT_BYTES,
    on_finished: Callable[[], Any] | None = None,
    on_answered: Callable[[Answered], None] | None = None,
) -> Host[ScriptAnswerer]:
    """`scenario`'s script served (see `ScriptAnswerer` and `Host`); with `on_finished`, called once after
    the answer that finishes the scenario, every request after it is answered `sim_scenario_finished`."""
    answerer = ScriptAnswerer(
        scenario, cycle=cycle, keep_requests=keep_requests, ends=on_finished is not None
    )
    return Host(
        answerer,
        model=scenario.model,
        store_limit=store_limit,
        on_finished=on_finished,
        on_answered=on_answered,
    )
