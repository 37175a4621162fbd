"""`sim --help` and every command's help, rendered at 80 columns as a terminal shows them: sentences wrap
where the line is full (not where a docstring's line ended), usage lines name arguments as click does,
types read plainly, every word of a help text is shown, and counts agree with their nouns."""

from __future__ import annotations

import itertools
import re

import pytest
from typer.core import TyperGroup
from typer.main import get_command
from typer.testing import CliRunner

from sim.cli import COMMANDS, app

WIDTH = 80
GROUP = get_command(app)
assert isinstance(GROUP, TyperGroup)
NAMES = [command.__name__.replace("_", "-") for command in COMMANDS]


def rendered(*args: str) -> str:
    done = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": str(WIDTH), "TERMINAL_WIDTH": None})
    assert done.exit_code == 0, done.output
    return done.output


def broken_mid_line(lines: list[str], start: int, width: int) -> list[str]:
    """The lines of one column (text from `start`, `width` wide) that end although the next line's first
    word would have fitted on them: a line break kept from the source, not one the wrapping made."""
    found = []
    for line, after in itertools.pairwise(lines):
        told, next_words = line[start:].rstrip(), after[start:].split()
        continues = told and next_words and not after[:start].strip()
        if continues and len(told) + 1 + len(next_words[0]) <= width:
            found.append(f"{told!r} then {next_words[0]!r}")
    return found


def panel(output: str, title: str) -> list[str]:
    """The inside of a panel's lines (its borders taken off)."""
    lines = output.splitlines()
    first = next(n for n, line in enumerate(lines) if line.startswith(f"╭─ {title} "))
    last = next(n for n, line in enumerate(lines) if n > first and line.startswith("╰"))
    return [line[1:-1] for line in lines[first + 1 : last]]


def description(output: str) -> list[str]:
    """The lines between the usage line and the first panel: the command's docstring."""
    lines = output.splitlines()
    usage = next(n for n, line in enumerate(lines) if "Usage:" in line)
    end = next(n for n, line in enumerate(lines) if line.startswith("╭"))
    return lines[usage + 1 : end]


def test_the_command_list_wraps_each_summary_where_the_line_is_full() -> None:
    listed = panel(rendered(), "Commands")
    start = listed[0].index(listed[0].split()[1])  # where the summaries begin
    assert broken_mid_line(listed, start, len(listed[0]) - start - 1) == []
    assert [line.split()[0] for line in listed if line[:start].strip()] == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_a_commands_help_reads_at_80_columns(name: str) -> None:
    shown = rendered(name)
    assert max(map(len, shown.splitlines())) <= WIDTH
    assert broken_mid_line(description(shown), 1, WIDTH - 2) == []
    usage = next(line for line in shown.splitlines() if "Usage:" in line)
    for unclear in ("{", "}", "[[", "]]"):
        assert unclear not in usage, usage
    assert "<list[" not in shown
    command = GROUP.commands[name]
    said = " ".join([command.help or "", *(getattr(p, "help", None) or "" for p in command.params)])
    flat = re.split(r"[\s│]+", shown)
    words = set(flat)
    assert [word for word in said.replace("\\[", "[").split() if word not in words] == []  # none eaten
    named = {word for p in command.params for text in (p.metavar or "", *p.opts) for word in
             re.findall(r"[A-Za-z]+", text.upper())}  # fmt: skip
    assert set(re.findall(r"\b[A-Z]{3,}\b", command.help or "")) - named <= {"API", "SIGTERM"}
    assert re.findall(r"(?<![\w.])(?<!exit )1 [a-z]+s\b", " ".join(flat)) == []


def test_the_program_help_reads_at_80_columns() -> None:
    shown = rendered()
    assert max(map(len, shown.splitlines())) <= WIDTH
    assert "Usage: sim [OPTIONS] COMMAND [ARGS]..." in shown
