"""Each command's results as a report page (the plain data `sim.reports.html` renders): scenarios played,
cassettes replayed, files checked, a fuzz campaign, a file shown. The command line and the pytest plugin
build their pages here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.core.counts import counted, turns
from sim.core.transcript import Line, LineKind, prompt_line
from sim.reports.html import Report, Tally, divergence, render, section

if TYPE_CHECKING:
    from sim.cassette.replay import ReplayReport
    from sim.fuzz.campaign import FuzzReport
    from sim.fuzz.findings import TargetCampaign
    from sim.player import PlayReport


def played(reports: Sequence[PlayReport], title: str = "sim play") -> Report:
    """Scenario runs: each conversation, and each expectation that differed."""
    page = Report(title, seconds=sum(r.load_seconds + r.run_seconds for r in reports))
    for r in reports:
        headline = f"{r.outcome}, {turns(r.turns)}" if r.outcome else "did not load"
        page.add(section(r.path, r.passed, headline, r.problems, r.transcript), r.outcome)
    return page


def replayed(reports: Sequence[ReplayReport], title: str = "sim replay") -> Report:
    """Replays: each conversation, and where a request first differed from the recording, side by side."""
    page = Report(title, seconds=sum(r.seconds for r in reports))
    for r in reports:
        headline = (
            f"{r.outcome}, {turns(r.turns)}, {counted(r.interactions, 'interaction')}"
            if r.outcome
            else "not replayed"
        )
        diverged = divergence(*r.divergence) if r.divergence else None
        page.add(section(r.path, r.passed, headline, r.problems, r.transcript, diverged), r.outcome)
    return page


def checked(results: Sequence[dict[str, Any]]) -> Report:
    """`sim check`'s verdict per file, and its findings."""
    page = Report("sim check")
    for result in results:
        headline = f"{result['kind']}, {counted(len(result['findings']), 'finding')}"
        page.add(section(result["path"], result["valid"], headline, result["findings"], ()))
    return page


def fuzzed(report: FuzzReport, target: str | None) -> Report:
    """A campaign: its tally, and the smallest failing script with what it broke and how to run it again."""
    from sim.fuzz.strategies import script_steps  # hypothesis: loaded for a fuzz page only

    page = Report(f"sim fuzz --target {target}" if target else "sim fuzz-loop")
    page.outcomes.update(report.outcomes)
    page.error_codes.update(report.error_codes)
    failure = report.failure
    findings = len(failure.violations) if failure is not None else 0
    verdict = "every invariant held" if failure is None else counted(findings, "finding")
    page.tally = Tally((("runs", report.runs), ("findings", findings)), verdict, failure is None)
    if failure is None:
        return page
    again = f"sim serve {report.saved}, then your loop" if target else f"sim play {report.saved}"
    page.notes.append(f"smallest failing scenario: {report.saved}; to reproduce it: {again}")
    script = [
        prompt_line(str(failure.scenario.prompt)),
        *(Line(LineKind.note, step) for step in script_steps(failure.scenario)),
    ]
    broken = tuple(str(violation) for violation in failure.violations)
    page.sections.append(
        section(str(report.saved or "counterexample"), False, "counterexample", broken, script)
    )
    return page


def fuzzed_target(campaign: TargetCampaign) -> Report:
    """A campaign against someone's loop: its tally, what the target raised, and the smallest failing run
    with what it found and how to replay it."""
    from sim.fuzz.findings import describe as describe_reply  # hypothesis: loaded for a fuzz page only

    fuzzed = f"-- {campaign.target}" if campaign.program else f"--target {campaign.target}"
    page = Report(f"sim fuzz {fuzzed} ({campaign.profile} profile)")
    vacuous = None if campaign.violations else campaign.vacuous()
    found = len(campaign.violations)
    verdict = (
        counted(found, "finding")
        if found
        else f"nothing was tested: {vacuous}"
        if vacuous
        else "every invariant held"
    )
    figures: tuple[tuple[str, int], ...] = (
        ("runs", campaign.runs),
        ("requests", campaign.requests),
        ("tool calls answered", campaign.round_trips),
        ("findings", found),
    )
    if campaign.unsimulated:
        figures += (("runs not simulated", campaign.unsimulated),)
    page.tally = Tally(figures, verdict, None if vacuous else not found)
    how = "ended with" if campaign.program else "raised"  # a program's runs end by an exit or a signal
    page.outcomes.update({f"{how} {name}": count for name, count in campaign.raised.items()})
    if note := campaign.unhonoured_note():
        page.notes.append(note)
    failure = campaign.failure
    if failure is None:
        return page
    page.notes.append(f"smallest failing run: {campaign.saved}; to reproduce it: {campaign.replay_command()}")
    script = [
        Line(LineKind.note, f"request {number}: {describe_reply(spec)}") for number, spec in failure.served
    ]
    broken = tuple(str(violation) for violation in campaign.violations)
    page.sections.append(section(str(campaign.saved or "failing run"), False, "failing run", broken, script))
    return page


def shown(path: str, lines: Sequence[Line]) -> Report:
    """A scenario's scripted conversation, or a cassette's recorded ones (either API), each as an open
    timeline: turns, calls with their arguments, results, reasoning, usage; what comes before the first
    conversation is the page's note."""
    page = Report(f"sim show {path}")
    starts = [n for n, line in enumerate(lines) if line.kind is LineKind.conversation]
    if not starts:
        page.add(replace(section(path, True, counted(len(lines), "line"), (), lines), opened=True))
        return page
    page.notes += [line.text for line in lines[: starts[0]]]
    for start, end in zip(starts, [*starts[1:], len(lines)], strict=True):
        told = lines[start + 1 : end]
        count = sum(line.kind is LineKind.turn for line in told)
        headline = f"{lines[start].text}: {turns(count)}"
        page.add(replace(section(path, True, headline, (), told), opened=True))
    return page


def write_page(path: Path, report: Report) -> None:
    """Write the report's page at `path` atomically (a half-written page is never left behind)."""
    from sim.cassette.writer import write_atomically

    write_atomically(path, render(report))
