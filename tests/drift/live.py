"""`sim drift` run in process against a "live" model that is a scenario's host: the command's transport is
swapped for an ASGI one, so no network and no port are involved."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from typer.testing import Result

from sim.cli import drifting
from sim.host.app import Host
from sim.scenario.answerer import ScriptAnswerer, scenario_host
from sim.scenario.schema import Scenario
from tests.commands import invoke

UPSTREAM = "http://sim.test/v1"
"""The upstream drift is pointed at; the swapped transport answers whatever host it names."""


def live_model(
    monkeypatch: pytest.MonkeyPatch, scenario: Scenario, *, cycle: bool = False
) -> Host[ScriptAnswerer]:
    """One host of `scenario` answers every client drift makes (in rounds with `cycle`)."""
    host = scenario_host(scenario, cycle=cycle)
    monkeypatch.setattr(drifting, "transport_factory", lambda: httpx2.ASGITransport(app=host.app))
    return host


def live_model_afresh(monkeypatch: pytest.MonkeyPatch, scenario: Scenario) -> None:
    """Each client drift makes is answered by a fresh host of `scenario`, from its first reply."""
    monkeypatch.setattr(
        drifting, "transport_factory", lambda: httpx2.ASGITransport(app=scenario_host(scenario).app)
    )


def drift(*args: str | Path, upstream: str = UPSTREAM, concurrency: int | None = 1) -> Result:
    """`sim drift ARGS --upstream UPSTREAM [--concurrency N]` in this process."""
    options = ["--upstream", upstream]
    if concurrency is not None:
        options += ["--concurrency", str(concurrency)]
    return invoke("drift", *args, *options)
