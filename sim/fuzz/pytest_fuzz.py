"""`fuzz_test`: a campaign against a target as a hypothesis test in your own suite.

pytest collects it like any test, so `pytest -n auto` spreads several campaigns over every core, and
HypoFuzz's `hypothesis fuzz` runs one for as long as you let it; hypothesis's example database keeps each
failing run and replays it first next time.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.database import ExampleDatabase

from sim.fuzz.databases import Namespaced, example_database
from sim.fuzz.drawn import DrawnAnswerer
from sim.fuzz.findings import example_failed, findings
from sim.fuzz.replies import ReplyDrawer
from sim.fuzz.target import Endpoint, Target, run_once, target_of
from sim.fuzz.terms import BOUND, RUN_SECONDS, Profile

_endpoint: list[Endpoint] = []


def _shared_endpoint() -> Endpoint:
    """One endpoint per process, started on first use (runs never share an answerer)."""
    if not _endpoint:
        _endpoint.append(Endpoint())
    return _endpoint[0]


def fuzz_test(
    target: Callable[..., Any] | Target,
    *,
    profile: Profile | str = Profile.api,
    examples: int = 100,
    bound: int = BOUND,
    allow: tuple[str, ...] = (),
    seconds: float = RUN_SECONDS,
    database: ExampleDatabase | str | Path | None = None,
) -> Callable[..., None]:
    """A hypothesis test that fuzzes `target` (`FUNC(client)` or `FUNC(client, prompt)`, sync or async):

        test_my_agent = fuzz_test(my_agent.run, profile="api", examples=200)

    Each example is one run with replies drawn from the tools the target offers; it fails with the
    findings and the drawn replies as a scenario `sim serve` plays. A run that sends no request fails
    too: it tested nothing. `allow` names the exception types the target is documented to raise (counted,
    not crashes); a run taking over `seconds` is a runaway. Failing runs are kept in `database` (a
    hypothesis `ExampleDatabase`, or what `sim fuzz --database` takes: a folder, `redis://HOST:PORT`,
    `github:OWNER/REPO`; the settings profile's database when None) under the target's name, and run
    first next time. `ConfigurationError` here, at collection, when the signature does not fit.
    """
    checked = target if isinstance(target, Target) else target_of(target)
    chosen = Profile(profile)
    given_database = example_database(database) if isinstance(database, str | Path) else database
    kept = given_database if given_database is not None else settings().database
    namespaced = None if kept is None else Namespaced(kept, f"fuzz_test {checked.name} {chosen}")

    @settings(
        max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=namespaced
    )
    @given(st.data())
    def test(data: st.DataObject) -> None:
        drawer = ReplyDrawer(data, chosen)
        drawn = DrawnAnswerer(
            lambda asked: drawer.draw(asked.decoded, asked.terms, asked.body),
            bound,
            judged=chosen is Profile.api,
        )
        run = run_once(checked, _shared_endpoint(), drawn, seconds)
        for name in sorted(drawer.unhonoured):
            event(f"valid arguments could not always be drawn for {name}")
        if run.received == 0:
            because = f" (it raised {type(run.raised).__name__}: {run.raised})" if run.raised else ""
            raise AssertionError(
                f"{checked.name} returned without sending a request: nothing was tested{because}"
            )
        if found := findings(run, allow):
            raise example_failed(found, run)

    test.__name__ = test.__qualname__ = f"test_fuzz_{checked.name.replace(':', '_').replace('.', '_')}"
    return test
