from __future__ import annotations

import asyncio
import io
import os
import pty
from collections.abc import Iterator

import pytest

from sim import AllowAllApprover, DenyAllApprover, TerminalApprover, ToolCall
from sim.core.approval import NO_TTY_REASON, USER_DENIED_REASON, ApprovalDecision, ApprovalRequest
from sim.tools.shell import ShellArguments

REQUEST = ApprovalRequest(
    ToolCall(id="c1", name="shell", arguments='{"command": "rm -rf build"}'),
    "execute",
    ShellArguments(command="rm -rf build"),
)


@pytest.fixture
def terminal() -> Iterator[tuple[int, io.TextIOWrapper]]:
    """A real pseudo-terminal: the approver reads the slave side, the test types on the master."""
    master, slave = pty.openpty()
    tty = open(slave, encoding="utf-8", closefd=True)  # noqa: SIM115
    try:
        yield master, tty
    finally:
        tty.close()
        os.close(master)


def ask(approver: TerminalApprover) -> ApprovalDecision:
    return asyncio.run(approver.approve(REQUEST))


@pytest.mark.parametrize("answer", ["y", "yes", "Y", "YES", "  yes  "])
def test_yes_allows(terminal: tuple[int, io.TextIOWrapper], answer: str) -> None:
    master, tty = terminal
    os.write(master, f"{answer}\n".encode())
    stderr = io.StringIO()
    assert ask(TerminalApprover(stdin=tty, stderr=stderr)) == ApprovalDecision.allow()


@pytest.mark.parametrize("answer", ["", "n", "no", "maybe", "yess"])
def test_anything_else_denies(terminal: tuple[int, io.TextIOWrapper], answer: str) -> None:
    master, tty = terminal
    os.write(master, f"{answer}\n".encode())
    decision = ask(TerminalApprover(stdin=tty, stderr=io.StringIO()))
    assert decision == ApprovalDecision.deny(USER_DENIED_REASON)


def test_prompt_shows_tool_reason_and_arguments_on_stderr(terminal: tuple[int, io.TextIOWrapper]) -> None:
    master, tty = terminal
    os.write(master, b"n\n")
    stderr = io.StringIO()
    ask(TerminalApprover(stdin=tty, stderr=stderr))
    shown = stderr.getvalue()
    assert "shell" in shown
    assert REQUEST.reason in shown
    assert '{"command": "rm -rf build"}' in shown
    assert shown.endswith("Allow this call? [y/N] ")


def test_without_a_tty_it_denies_without_asking() -> None:
    stderr = io.StringIO()
    decision = ask(TerminalApprover(stdin=io.StringIO("yes\n"), stderr=stderr))
    assert decision == ApprovalDecision.deny(NO_TTY_REASON)
    assert NO_TTY_REASON == "No interactive approval input was available"
    assert stderr.getvalue() == ""


def test_allow_and_deny_all() -> None:
    assert asyncio.run(AllowAllApprover().approve(REQUEST)).allowed
    denied = asyncio.run(DenyAllApprover("nope").approve(REQUEST))
    assert (denied.allowed, denied.reason) == (False, "nope")
