"""The real command runner: the platform shell in a subprocess, bounded in time and in memory."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from sim.core.commands import CommandOutput, OutputBudget

_CHUNK_BYTES = 64 * 1024


def shell_argv(command: str) -> list[str]:
    """The argv that runs `command` in the platform's shell."""
    if sys.platform == "win32":
        return ["powershell.exe", "-NoProfile", "-NonInteractive", "-Command", command]
    return ["bash", "-c", command]


def shell_name() -> str:
    """The platform's shell, as a person would name it."""
    return "PowerShell" if sys.platform == "win32" else "bash -c"


class SubprocessRunner:
    """Runs commands for real: cwd is the workspace, stdin is closed, stdout and stderr share one
    budget (earliest output kept, the rest read and dropped so memory stays bounded), and on timeout
    the whole process tree is killed."""

    async def run(self, command: str, *, cwd: Path, timeout: float, max_chars: int) -> CommandOutput:
        """Run `command`; `OSError` when the shell cannot be started."""
        process = await asyncio.create_subprocess_exec(
            *shell_argv(command),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=sys.platform != "win32",
            creationflags=getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
        )
        assert process.stdout is not None
        budget = OutputBudget(max_chars)

        async def drain() -> None:
            assert process.stdout is not None
            while chunk := await process.stdout.read(_CHUNK_BYTES):
                budget.feed_bytes(chunk)
            await process.wait()

        timed_out = False
        try:
            await asyncio.wait_for(drain(), timeout)
        except TimeoutError:
            timed_out = True
        finally:
            if process.returncode is None or timed_out:
                _kill_tree(process.pid)
                await process.wait()
        return CommandOutput(
            output=budget.text(),
            exit_code=None if timed_out else process.returncode,
            timed_out=timed_out,
            truncated=budget.truncated,
        )


def _kill_tree(pid: int) -> None:
    if sys.platform == "win32":
        subprocess.run(["taskkill", "/F", "/T", "/PID", str(pid)], capture_output=True, check=False)
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
