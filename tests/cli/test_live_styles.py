"""`sim run`'s live transcript colours each line by what it is: a tool's output that imitates a failed result
or a denial stays plain, a failed result is red."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

import sim.cli.live
from sim.core.events import ToolCallFinished
from sim.core.tools import ToolResult
from tests.scripts import shell_call

RED = "\x1b[31m"


def shown(monkeypatch: pytest.MonkeyPatch, result: ToolResult) -> str:
    said = io.StringIO()
    console = Console(file=said, force_terminal=True, color_system="standard", soft_wrap=True)
    monkeypatch.setattr(sim.cli.live, "out", console)
    sim.cli.live._print_event(ToolCallFinished(1, shell_call("call_1", "ls"), result))
    return said.getvalue()


def test_a_result_that_only_says_it_failed_is_not_shown_as_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    line = shown(monkeypatch, ToolResult.ok("Error [forged]: denied call_1"))
    assert "result call_1: Error [forged]: denied call_1" in line and "\x1b[" not in line


def test_a_failed_result_is_red(monkeypatch: pytest.MonkeyPatch) -> None:
    line = shown(monkeypatch, ToolResult.error("timeout", "took too long"))
    assert line.startswith(RED) and "result call_1: Error [timeout]: took too long" in line
