"""The fuzz commands: `sim fuzz --target MODULE:FUNC` or `sim fuzz -- COMMAND`, a hypothesis campaign over
anyone's loop (a function, or a program in any language) with replies drawn from the tools it offers
(`--replay` plays a saved failing run to it again), and `sim fuzz-loop`, one
over our own loop's invariants. Hypothesis and the campaigns are imported when a command runs, so that the
help is built without them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import Progress, TaskID
from rich.text import Text

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
from sim.core.counts import counted
from sim.core.errors import ConfigurationError
from sim.core.untrusted import visible
from sim.fuzz.terms import BOUND, MAX_RUN_SECONDS, MAX_WORKERS, RUN_SECONDS, Profile

if TYPE_CHECKING:
    from sim.fuzz.databases import Guarded
    from sim.fuzz.findings import TargetCampaign
    from sim.fuzz.invariants import Violation
    from sim.fuzz.program import TargetSpec
    from sim.fuzz.worker import Replayed

NO_TARGET = (
    "give --target MODULE:FUNC (a Python function) or -- COMMAND ARGS... (a program in any language, its"
    " client built from OPENAI_BASE_URL), the loop to fuzz (sim's own loop is fuzzed by `sim fuzz-loop`)"
)
"""What `sim fuzz` says when it is given no loop."""

Examples = Annotated[int, typer.Option(help="Examples to draw (more run while a failure shrinks).")]
Seed = Annotated[int, typer.Option(help="The campaign's seed: the same seed draws the same runs.")]
Database = Annotated[
    str | None,
    typer.Option(
        help="Keep failing runs here and run them first next time: a folder, redis://HOST:PORT (shared"
        " by CI workers and HypoFuzz nodes), or github:OWNER/REPO (read-only, CI's artifact)."
    ),
]


def counts(counter: Counter[str]) -> str:
    """`name count, ...`, most common first, or `none`."""
    return ", ".join(f"{name} {count}" for name, count in counter.most_common()) or "none"


def fuzz(
    target: Annotated[
        str | None,
        typer.Option(
            metavar="MODULE:FUNC",
            help="The loop to fuzz, called as FUNC(client) or FUNC(client, prompt) (sim's own loop: sim"
            " fuzz-loop).",
        ),
    ] = None,
    command: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[-- COMMAND ARGS...]",
            help="A program to fuzz instead, in any language: each run starts it afresh with OPENAI_BASE_URL"
            " pointing at a simulator (and a placeholder OPENAI_API_KEY); its exit is judged too.",
        ),
    ] = None,
    profile: Annotated[
        Profile, typer.Option(help="api: only what the real API sends; hostile: everything.")
    ] = Profile.api,
    examples: Examples = 200,
    seed: Seed = 0,
    bound: Annotated[int, typer.Option(help="Requests a run may make.")] = BOUND,
    run_seconds: Annotated[
        float, typer.Option(help="Seconds a run may take before it is a runaway.")
    ] = RUN_SECONDS,
    allow: Annotated[
        list[str] | None,
        typer.Option(help="An exception type the loop may raise (by name; repeat for more)."),
    ] = None,
    allow_exit: Annotated[
        list[int] | None,
        typer.Option(
            "--allow-exit",
            metavar="CODE",
            help="A non-zero exit code the program documents: no crash (repeat for more).",
        ),
    ] = None,
    replay: Annotated[
        Path | None, typer.Option(help="Play this saved failing run to the loop, once, instead.")
    ] = None,
    save: Annotated[Path, typer.Option(help="Where a failing run is written.")] = Path("fuzz-failures"),
    database: Database = None,
    workers: Annotated[
        int,
        typer.Option(
            help="Campaigns to run at once, each in a process of its own with its share of the examples"
            " (one per core); the first to find a failure shrinks it."
        ),
    ] = 1,
    as_json: JsonFlag = False,
    html_report: ReportFile = None,
) -> None:
    """Fuzz your loop with replies drawn from the tools it offers, each run calling it with an OpenAI client
    pointed at a simulator (or starting your program with OPENAI_BASE_URL pointing at one); save the
    smallest failing run."""
    spec = _spec(target, command or [], allow or [], allow_exit or [])
    if examples < 1:
        raise usage_error("--examples must be at least 1")
    if workers < 1:
        raise usage_error("--workers must be at least 1")
    if workers > MAX_WORKERS:
        raise usage_error(f"--workers is at most {MAX_WORKERS} (a process each; one per core is the point)")
    kept = _database(database)
    if bound < 1:
        raise usage_error("--bound must be at least 1")
    if not 0 < run_seconds <= MAX_RUN_SECONDS:
        raise usage_error(f"--run-seconds must be above 0 and at most {MAX_RUN_SECONDS:g}")
    allowed = tuple(allow or ())
    if replay is not None:
        if workers != 1:
            raise usage_error("--workers is for a campaign; --replay plays one run")
        _replay(spec, replay, allowed, run_seconds, as_json)
        return
    from sim.fuzz.worker import fuzz_target_in_worker
    from sim.pages import fuzzed_target

    # no refresh thread, no redirection of the streams: the campaign's worker is forked under it
    with _progress(as_json) as bar:
        advance = partial(_advance, bar, bar.add_task("fuzzing", total=examples))
        try:
            campaign = fuzz_target_in_worker(
                spec,
                examples=examples,
                seed=seed,
                profile=profile,
                bound=bound,
                allow=allowed,
                seconds=run_seconds,
                on_run=advance,
                database=kept,
                workers=workers,
            )
        except ConfigurationError as error:
            raise usage_error(str(error)) from None
    _database_problem(kept)
    if campaign.failure is not None:
        campaign.saved = _kept(partial(_save, campaign, save, seed), save)
    vacuous = None if campaign.violations else campaign.vacuous()
    if as_json:
        print_json(_campaign_json(campaign, vacuous))
    else:
        asked = counted(campaign.requests, "request")
        said = f"{counted(campaign.runs, 'run')} of {visible(campaign.target)} ({profile} profile): {asked},"
        out.print(f"{said} {counted(campaign.round_trips, 'tool call')} answered", markup=False)
        out.print(_raised(campaign), markup=False)
        if campaign.unsimulated:
            why = visible(campaign.unsimulated_example or "")
            out.print(
                f"not simulated: {counted(campaign.unsimulated, 'run')} (for instance {why})", markup=False
            )
        if note := campaign.unhonoured_note():
            out.print(visible(note), markup=False)
        if note := campaign.unanswered_note():
            out.print(Text(f"! {note}", style="yellow"))
        _say(campaign.violations)
        if campaign.saved is not None:
            again = visible(campaign.replay_command() or "")
            out.print(f"smallest failing run: {campaign.saved} (to reproduce it: {again})", markup=False)
        if vacuous:
            out.print(Text(f"! nothing was tested: {vacuous}", style="red"))
        elif not campaign.violations:
            out.print(Text("every invariant held", style="green"))
    write_report_if_asked(html_report, lambda: fuzzed_target(campaign))
    if campaign.violations or vacuous:
        raise typer.Exit(1)


def fuzz_loop(
    examples: Examples = 200,
    seed: Seed = 0,
    via: Annotated[
        PlayVia,
        typer.Option(
            help="direct: the loop asks the script itself; sdk: through the real adapter, SDK and HTTP."
        ),
    ] = PlayVia.direct,
    save: Annotated[Path, typer.Option(help="Where a failing scenario is written.")] = Path("fuzz-failures"),
    database: Database = None,
    as_json: JsonFlag = False,
    html_report: ReportFile = None,
) -> None:
    """Fuzz sim's own loop's invariants with hostile model behaviour; save the smallest failing scenario."""
    if examples < 1:
        raise usage_error("--examples must be at least 1")
    kept = _database(database)
    from sim.fuzz.campaign import fuzz as fuzz_campaign
    from sim.fuzz.campaign import save_counterexample
    from sim.pages import fuzzed

    with Progress(console=err, transient=True, disable=as_json or not err.is_terminal) as bar:
        advance = partial(bar.advance, bar.add_task("fuzzing", total=examples))
        report = fuzz_campaign(examples=examples, seed=seed, via=via.value, on_run=advance, database=kept)
    _database_problem(kept)
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


def _raised(campaign: TargetCampaign) -> str:
    """What the target raised (`raised: ValueError 2`), or how a program's runs ended badly."""
    if not campaign.program:
        return f"raised: {counts(campaign.raised)}"
    ended = [f"{how} in {counted(runs, 'run')}" for how, runs in campaign.raised.most_common()]
    return f"ended badly: {', '.join(ended) or 'never'}"


def _spec(target: str | None, command: list[str], allow: list[str], allow_exit: list[int]) -> TargetSpec:
    """What `sim fuzz` fuzzes: `--target`'s function or the command after `--`, or exit 2 saying why
    neither can be."""
    from sim.fuzz.program import Command, check_runnable

    if target is not None and command:
        raise usage_error("give either --target MODULE:FUNC or -- COMMAND ARGS..., not both")
    if target is None and not command:
        raise usage_error(NO_TARGET)
    if target is not None:
        if allow_exit:
            raise usage_error("--allow-exit is for a program's exit codes; a function's exceptions: --allow")
        return target
    if allow:
        raise usage_error("--allow names a function's exceptions; a program's exit codes: --allow-exit CODE")
    if any(not 0 < code < 256 for code in allow_exit):
        raise usage_error("--allow-exit takes exit codes from 1 to 255")
    spec = Command(tuple(command), tuple(allow_exit))
    try:
        check_runnable(spec)
    except ConfigurationError as error:
        raise usage_error(str(error)) from None
    return spec


def _database(where: str | None) -> Guarded | None:
    """The example database `--database` names, or exit 2 saying why it cannot be used."""
    if where is None:
        return None
    from sim.fuzz.databases import example_database

    try:
        return example_database(where)
    except ConfigurationError as error:
        raise usage_error(str(error)) from None


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
    from sim.fuzz.campaign import save_scenario

    assert campaign.failure is not None
    broke = "; ".join(map(str, campaign.violations))
    fuzzed = f"-- {campaign.target}" if campaign.program else f"--target {campaign.target}"
    drawn = f"sim fuzz {fuzzed} ({campaign.profile} profile, seed {seed})"
    # the command's words and the findings are untrusted: a bidi override must not turn the file around
    name, description = f"fuzz-target-seed-{seed}", visible(f"Drawn by {drawn}. It found: {broke}")
    return save_scenario(campaign.failure.scenario, folder, name, description)


def _as_json(violations: list[Violation]) -> list[dict[str, str]]:
    return [{"invariant": v.invariant, "detail": v.detail} for v in violations]


def _campaign_json(campaign: TargetCampaign, vacuous: str | None) -> dict[str, Any]:
    """`sim fuzz --json`: a campaign's figures and findings."""
    return {
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


def _replayed_json(replayed: Replayed) -> dict[str, Any]:
    """`sim fuzz --replay --json`: the campaign's fields for its one run; what a replay does not count is
    null."""
    return {
        "runs": 1,
        "requests": replayed.requests,
        "round_trips": None,
        "raised": {} if replayed.raised is None else {replayed.raised: 1},
        "not_simulated": None,
        "unhonoured_tools": None,
        "violations": _as_json(replayed.violations),
        "saved": None,
        "nothing_tested": None,
    }


def _progress(as_json: bool) -> Progress:
    """The progress bar on a terminal, drawn when a run ends (no thread of its own, the streams left as
    they are: the campaign's worker process is forked under it)."""
    disable = as_json or not err.is_terminal
    return Progress(console=err, transient=True, disable=disable, auto_refresh=False,
                    redirect_stdout=False, redirect_stderr=False)  # fmt: skip


def _advance(bar: Progress, task: TaskID) -> None:
    bar.advance(task)
    bar.refresh()


def _replay(spec: TargetSpec, file: Path, allow: tuple[str, ...], seconds: float, as_json: bool) -> None:
    from sim.fuzz.program import target_name
    from sim.fuzz.worker import replay_target_in_worker
    from sim.scenario.loader import load_scenario

    scenario = open_one(file, load_scenario)
    try:
        replayed = replay_target_in_worker(spec, scenario, seconds, allow)
    except ConfigurationError as error:
        raise usage_error(str(error)) from None
    found, raised = replayed.violations, replayed.raised
    if as_json:
        print_json(_replayed_json(replayed))
    else:
        requests = counted(replayed.requests, "request")
        shown = visible(target_name(spec))
        out.print(f"replayed {file} to {shown}: {requests}; raised: {raised or 'nothing'}", markup=False)
        _say(found)
        if not found:
            out.print(Text("every invariant held", style="green"))
    if found:
        raise typer.Exit(1)
