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
OUTPUT_GRACE_SECONDS = 0.25
"""How long output may still arrive after the shell has exited (children it started may hold the pipe)."""


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
        """Run `command`; `OSError` when the shell cannot be started.

        Returns once the shell itself has exited and its output has had `OUTPUT_GRACE_SECONDS` to
        arrive: a child it left in the background (`server &`) keeps running, and what it prints
        afterwards is not read."""
        read_end, write_end = os.pipe()  # ours, so that waiting for the shell never waits for the pipe
        try:
            process = await asyncio.create_subprocess_exec(
                *shell_argv(command),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=write_end,
                stderr=subprocess.STDOUT,
                start_new_session=sys.platform != "win32",
                creationflags=getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
            )
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        budget = OutputBudget(max_chars)
        output = asyncio.StreamReader()
        pipe, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(output), os.fdopen(read_end, "rb", buffering=0)
        )

        async def drain() -> None:
            while chunk := await output.read(_CHUNK_BYTES):
                budget.feed_bytes(chunk)

        reading = asyncio.ensure_future(drain())
        timed_out = False
        try:
            await asyncio.wait_for(process.wait(), timeout)
        except TimeoutError:
            timed_out = True
        finally:
            if process.returncode is None or timed_out:
                _kill_tree(process.pid)
                await process.wait()
            await asyncio.wait([reading], timeout=OUTPUT_GRACE_SECONDS)
            reading.cancel()
            pipe.close()
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
