"""One self-contained HTML page per run: a summary with small bar charts, then each file's conversation
as a timeline (open when it failed), a replay's divergence side by side with the differing line marked,
and a fuzz counterexample with the command that reproduces it.

Rendered by Jinja2 with autoescaping on: recorded text is untrusted, so it is only ever text, and every
value shown has its unseen characters written out first (`visible`: no zero-width space, bidi override or
line separator hides in a tool name). The page fetches nothing: styles are inline and there is no script.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jinja2 import Environment

from sim.core.counts import counted
from sim.core.json_text import loads
from sim.core.transcript import Line, LineKind
from sim.core.untrusted import visible

_ONE_LINE = 60
"""Arguments this short read well as they are; longer ones are laid out (the layout costs, in Python)."""


@dataclass(frozen=True, slots=True)
class Step:
    """One line of a conversation's timeline: what kind of line, its text, and pretty JSON when it has
    some (a call's arguments, when they are too long to read on one line); a failed tool result's error
    code."""

    kind: LineKind
    text: str
    detail: str | None = None
    error_code: str | None = None

    @property
    def style(self) -> str:
        """The page's class for the line: its kind's look."""
        return _STYLES[self.kind]


@dataclass(frozen=True, slots=True)
class Divergence:
    """A replayed request beside the recorded one: where they first differ, and each body's lines, the
    differing one marked."""

    where: str
    recorded: tuple[tuple[str, bool], ...]
    now: tuple[tuple[str, bool], ...]
    labels: tuple[str, str] = ("recorded request", "request now")


@dataclass(frozen=True, slots=True)
class Section:
    """One file of the run."""

    path: str
    passed: bool
    headline: str
    problems: tuple[str, ...] = ()
    steps: tuple[Step, ...] = ()
    divergence: Divergence | None = None
    opened: bool = False
    """Shown open even when it passed (a file shown, not judged)."""


@dataclass(frozen=True, slots=True)
class Tally:
    """What a page leads with in place of files passed and failed (a fuzz campaign's): its figures, as
    `(label, value)`, and its verdict: passed, failed, or None when nothing was tested."""

    figures: tuple[tuple[str, int], ...]
    verdict: str
    passed: bool | None


@dataclass(slots=True)
class Report:
    """A whole run, as the page shows it."""

    title: str
    sections: list[Section] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    error_codes: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    """Lines shown under the summary (how to reproduce a campaign's failure)."""
    tally: Tally | None = None

    def add(self, section: Section, outcome: str | None = None) -> None:
        """Add a file, counting its outcome and the tool error codes its timeline shows."""
        self.sections.append(section)
        if outcome is not None:
            self.outcomes[outcome] += 1
        for step in section.steps:
            if step.error_code is not None:
                self.error_codes[step.error_code] += 1


_STYLES = {
    LineKind.heading: "line", LineKind.note: "line", LineKind.conversation: "turn", LineKind.turn: "turn",
    LineKind.user: "user", LineKind.system: "system", LineKind.reasoning: "reasoning",
    LineKind.assistant: "assistant", LineKind.call: "call", LineKind.result: "result",
    LineKind.denied: "denied", LineKind.error: "error", LineKind.end: "end",
}  # fmt: skip
"""Each kind of line's class on the page (the template's styles)."""


def _laid_out(arguments: str | None) -> str | None:
    """A call's arguments as pretty JSON, when they are too long to read on one line and are JSON."""
    if arguments is None or len(arguments) <= _ONE_LINE:
        return None
    try:
        return json.dumps(loads(arguments), indent=2, ensure_ascii=False)
    except ValueError:
        return None


def steps(lines: Iterable[Line]) -> tuple[Step, ...]:
    """A transcript or outline (lines for people) as timeline steps, each of its line's kind; a call's JSON
    arguments pretty."""
    return tuple(
        Step(line.kind, line.text.strip(), _laid_out(line.arguments), line.error_code) for line in lines
    )


def divergence(
    where: str, recorded: str, now: str, labels: tuple[str, str] = ("recorded request", "request now")
) -> Divergence:
    """Two request bodies laid out side by side, the line holding the first difference marked in each."""

    def lines(body: str, path: str) -> tuple[tuple[str, bool], ...]:
        try:
            text = json.dumps(loads(body), indent=2, ensure_ascii=False)
        except ValueError:
            text = body
        key = path.rsplit(".", 1)[-1].split("[", 1)[0]
        shown = text.split("\n")
        marked = next((n for n, line in enumerate(shown) if key and f'"{key}"' in line), -1)
        return tuple((line, n == marked) for n, line in enumerate(shown))

    return Divergence(where, lines(recorded, where), lines(now, where), labels)


def bars(counts: Counter[str]) -> list[tuple[str, int, int]]:
    """`(label, count, percent of the largest)` for a small bar chart, most common first."""
    top = max(counts.values(), default=0) or 1
    return [(label, count, round(100 * count / top)) for label, count in counts.most_common()]


def _shown(value: Any) -> Any:
    """What a page shows of a value: text with its unseen characters written out (then escaped)."""
    return visible(value) if isinstance(value, str) else value


@functools.cache
def _environment() -> Environment:
    """Jinja2, set up once, when the first page is rendered (not when a command that may write one starts)."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    return Environment(
        loader=FileSystemLoader(Path(__file__).parent),
        autoescape=select_autoescape(default=True),
        finalize=_shown,
        auto_reload=False,
    )


def render(report: Report) -> str:
    """The page."""
    failed = sum(not section.passed for section in report.sections)
    template = _environment().get_template("report.html.j2")
    return template.render(
        report=report,
        passed=len(report.sections) - failed,
        failed=failed,
        files=counted(len(report.sections), "file"),
        outcome_bars=bars(report.outcomes),
        code_bars=bars(report.error_codes),
    )


def section(path: str, passed: bool, headline: str, problems: Sequence[str], lines: Sequence[Line],
            diverged: Divergence | None = None) -> Section:  # fmt: skip
    """A file's section from what the commands already hold: its problems and its transcript lines."""
    return Section(path, passed, headline, tuple(problems), steps(lines), diverged)
