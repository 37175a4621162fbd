"""`sim fuzz`: a hypothesis campaign over our own loop's invariants, or over anyone's loop (`--target`)
with replies drawn from the tools it offers; `--replay` plays a saved failing run to the target again."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress, TaskID
from rich.text import Text

from sim.cli.pages import fuzzed, fuzzed_target
from sim.cli.terminal import (
    JsonFlag,
    PlayVia,
    ReportFile,
    err,
    open_one,
    out,
    print_json,
    usage_error,
    write_report_if_asked,
)
from sim.core.errors import ConfigurationError
from sim.core.transcript import counted
from sim.core.untrusted import visible
from sim.scenario.loader import load_scenario
from sim.fuzz.campaign import fuzz as fuzz_campaign
from sim.fuzz.campaign import save_counterexample, save_scenario
from sim.fuzz.databases import Guarded, example_database
from sim.fuzz.invariants import Violation
from sim.fuzz.replies import Profile
from sim.fuzz.target import BOUND, MAX_RUN_SECONDS, RUN_SECONDS, TargetCampaign
from sim.fuzz.worker import fuzz_target_in_worker, replay_target_in_worker


def counts(counter: Counter[str]) -> str:
    """`name count, ...`, most common first, or `none`."""
    return ", ".join(f"{name} {count}" for name, count in counter.most_common()) or "none"


def fuzz(
    examples: Annotated[int, typer.Option(help="Examples to draw (more run while a failure shrinks).")] = 200,
    seed: Annotated[int, typer.Option(help="The campaign's seed: the same seed draws the same runs.")] = 0,
    via: Annotated[
        PlayVia,
        typer.Option(help="Our own loop: direct, scripted model; sdk, real SDK against the simulator."),
    ] = PlayVia.direct,
    save: Annotated[Path, typer.Option(help="Where a failing scenario is written.")] = Path("fuzz-failures"),
    target: Annotated[
        str | None,
        typer.Option(
            help="Fuzz your loop instead: MODULE:FUNC, called as FUNC(client) or FUNC(client, prompt)."
        ),
    ] = None,
    profile: Annotated[
        Profile | None,
        typer.Option(
            help="api: only what the real API sends (the default for --target); hostile: everything."
        ),
    ] = None,
    replay: Annotated[
        Path | None, typer.Option(help="With --target: play this saved failing run to it, once.")
    ] = None,
    bound: Annotated[int, typer.Option(help="With --target: requests a run may make.")] = BOUND,
    run_seconds: Annotated[
        float, typer.Option(help="With --target: seconds a run may take before it is a runaway.")
    ] = RUN_SECONDS,
    allow: Annotated[
        list[str] | None,
        typer.Option(help="With --target: an exception type it may raise (by name; repeat for more)."),
    ] = None,
    database: Annotated[
        str | None,
        typer.Option(
            help="Keep failing runs here and run them first next time: a folder, redis://HOST:PORT (shared"
            " by CI workers and HypoFuzz nodes), or github:OWNER/REPO (read-only, CI's artifact)."
        ),
    ] = None,
    as_json: JsonFlag = False,
    html_report: ReportFile = None,
) -> None:
    """Fuzz a loop's invariants with hostile model behaviour; save the smallest failing scenario."""
    if examples < 1:
        raise usage_error("--examples must be at least 1")
    try:
        kept = None if database is None else example_database(database)
    except ConfigurationError as error:
        raise usage_error(str(error)) from None
    if target is None:
        if replay is not None:
            raise usage_error("--replay needs --target (our own loop's failures replay with `sim play FILE`)")
        if profile is Profile.api:
            raise usage_error(
                "our own loop is fuzzed with the hostile profile: its contract covers everything"
            )
        _own_loop(examples, seed, via, save, as_json, html_report, kept)
        return
    if bound < 1:
        raise usage_error("--bound must be at least 1")
    if not 0 < run_seconds <= MAX_RUN_SECONDS:
        raise usage_error(f"--run-seconds must be above 0 and at most {MAX_RUN_SECONDS:g}")
    if replay is not None:
        _replay(target, replay, tuple(allow or ()), run_seconds, as_json)
        return
    chosen = profile or Profile.api
    # no refresh thread, no redirection of the streams: the campaign's worker is forked under it
    with _progress(as_json) as bar:
        advance = partial(_advance, bar, bar.add_task("fuzzing", total=examples))
        try:
            campaign = fuzz_target_in_worker(
                target,
                examples=examples,
                seed=seed,
                profile=chosen,
                bound=bound,
                allow=tuple(allow or ()),
                seconds=run_seconds,
                on_run=advance,
                database=kept,
            )
        except ConfigurationError as error:
            raise usage_error(str(error)) from None
    _database_problem(kept)
    if campaign.failure is not None:
        campaign.saved = _kept(partial(_save, campaign, save, seed), save)
    vacuous = None if campaign.violations else campaign.vacuous()
    if as_json:
        summary = {
            "runs": campaign.runs,
            "requests": campaign.requests,
            "round_trips": campaign.round_trips,
            "raised": dict(campaign.raised),
            "not_simulated": campaign.unsimulated,
            "unhonoured_tools": sorted(campaign.unhonoured),
            "violations": _as_json(campaign.violations),
            "saved": str(campaign.saved) if campaign.saved else None,
            "nothing_tested": vacuous,
        }
        print_json(summary)
    else:
        asked = counted(campaign.requests, "request")
        said = f"{counted(campaign.runs, 'run')} of {target} ({chosen} profile): {asked},"
        out.print(f"{said} {counted(campaign.round_trips, 'tool call')} answered", markup=False)
        out.print(f"raised: {counts(campaign.raised)}", markup=False)
        if campaign.unsimulated:
            why = visible(campaign.unsimulated_example or "")
            out.print(
                f"not simulated: {counted(campaign.unsimulated, 'run')} (for instance {why})", markup=False
            )
        if note := campaign.unhonoured_note():
            out.print(visible(note), markup=False)
        _say(campaign.violations)
        if campaign.saved is not None:
            again = f"sim fuzz --target {target} --replay {campaign.saved}"
            out.print(f"smallest failing run: {campaign.saved} (to reproduce it: {again})", markup=False)
        if vacuous:
            out.print(Text(f"! nothing was tested: {vacuous}", style="red"))
        elif not campaign.violations:
            out.print(Text("every invariant held", style="green"))
    write_report_if_asked(html_report, lambda: fuzzed_target(campaign))
    if campaign.violations or vacuous:
        raise typer.Exit(1)


def _database_problem(database: Guarded | None) -> None:
    """The database's problem in one line on standard error, if it had one (the verdict follows as ever)."""
    if database is not None and database.problem:
        err.print(f"warning: {visible(database.problem)}", markup=False)


def _kept(write: Callable[[], Path], folder: Path) -> Path | None:
    """The file `write` wrote, or None when it could not: said in one line on standard error (the verdict
    follows as ever)."""
    try:
        return write()
    except OSError as error:
        why = error.strerror or str(error)
        err.print(f"warning: cannot save the failing run in {visible(str(folder))}: {why}", markup=False)
        return None


def _say(violations: list[Violation]) -> None:
    for violation in violations:
        out.print(Text(f"! {visible(str(violation))}", style="red"))


def _save(campaign: TargetCampaign, folder: Path, seed: int) -> Path:
    """The failing run's replies as a scenario (its findings in the description)."""
    assert campaign.failure is not None
    broke = "; ".join(map(str, campaign.violations))
    drawn = f"sim fuzz --target {campaign.target} ({campaign.profile} profile, seed {seed})"
    name, description = f"fuzz-target-seed-{seed}", f"Drawn by {drawn}. It found: {broke}"
    return save_scenario(campaign.failure.scenario, folder, name, description)


def _as_json(violations: list[Violation]) -> list[dict[str, str]]:
    return [{"invariant": v.invariant, "detail": v.detail} for v in violations]


def _progress(as_json: bool) -> Progress:
    """The progress bar on a terminal, drawn when a run ends (no thread of its own, the streams left as
    they are: the campaign's worker process is forked under it)."""
    disable = as_json or not err.is_terminal
    return Progress(console=err, transient=True, disable=disable, auto_refresh=False,
                    redirect_stdout=False, redirect_stderr=False)  # fmt: skip


def _advance(bar: Progress, task: TaskID) -> None:
    bar.advance(task)
    bar.refresh()


def _replay(target: str, file: Path, allow: tuple[str, ...], seconds: float, as_json: bool) -> None:
    scenario = open_one(file, load_scenario)
    try:
        replayed = replay_target_in_worker(target, scenario, seconds, allow)
    except ConfigurationError as error:
        raise usage_error(str(error)) from None
    found, raised = replayed.violations, replayed.raised
    if as_json:
        summary = {"requests": replayed.requests, "raised": raised, "violations": _as_json(found)}
        print_json(summary)
    else:
        requests = counted(replayed.requests, "request")
        out.print(f"replayed {file} to {target}: {requests}; raised: {raised or 'nothing'}", markup=False)
        _say(found)
        if not found:
            out.print(Text("every invariant held", style="green"))
    if found:
        raise typer.Exit(1)


def _own_loop(
    examples: int,
    seed: int,
    via: PlayVia,
    save: Path,
    as_json: bool,
    html_report: Path | None,
    database: Guarded | None,
) -> None:
    with Progress(console=err, transient=True, disable=as_json or not err.is_terminal) as bar:
        advance = partial(bar.advance, bar.add_task("fuzzing", total=examples))
        report = fuzz_campaign(examples=examples, seed=seed, via=via.value, on_run=advance, database=database)
    _database_problem(database)
    if report.failure is not None:
        report.saved = _kept(partial(save_counterexample, report.failure, save, seed), save)
    violations = report.failure.violations if report.failure else []
    if as_json:
        summary = {
            "runs": report.runs,
            "outcomes": dict(report.outcomes),
            "tool_results": dict(report.error_codes),
            "violations": _as_json(violations),
            "saved": str(report.saved) if report.saved else None,
        }
        print_json(summary)
    else:
        out.print(f"{counted(report.runs, 'run')}; outcomes: {counts(report.outcomes)}", markup=False)
        out.print(f"tool results: {counts(report.error_codes)}", markup=False)
    if violations and not as_json:
        _say(violations)
        if report.saved is not None:
            out.print(f"smallest failing scenario: {report.saved} (to reproduce it: sim play {report.saved})",
                      markup=False)  # fmt: skip
    elif not as_json:
        out.print(Text("every invariant held", style="green"))
    write_report_if_asked(html_report, lambda: fuzzed(report, None))
    if violations:
        raise typer.Exit(1)
