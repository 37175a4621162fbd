"""Fuzzing a program, in any language: each run starts the command afresh with `OPENAI_BASE_URL` pointed at
the run's simulator, and its exit is judged beside its requests.

A run's program has a session (and so a process group) of its own, standard input from /dev/null, standard
output discarded (sim's output stays sim's), and standard error read as it comes with only its tail kept,
so that memory stays bounded whatever the program writes. When the program ends, or its run is stopped,
its whole process group is killed: children it left behind end with it. On Linux the program is also
killed if the process that started it dies (`PR_SET_PDEATHSIG`), so that killing sim outright leaves no
program running: set by util-linux's `setpriv` where it is installed (an exec, under a millisecond), else
by a function run in the forked child (which makes Python fork the whole worker, a few milliseconds).
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sim.cassette.command_line import SECRET_VARIABLES, known_secrets, shown_command
from sim.cassette.secrets import scrub_text
from sim.core.errors import ConfigurationError
from sim.host.parent_death import die_with_parent, dying_with_parent
from sim.wire.azure_paths import AZURE_API_KEY, azure_environment, module_client_type

API_KEY = "sim-fuzz"
"""The placeholder key a program is given (never a real one: nothing it sends leaves the machine)."""
WITHHELD = SECRET_VARIABLES
"""Variables of sim's environment a program never sees: a real key or token, or ids the SDKs send as
headers."""
TAIL_LINES, TAIL_CHARACTERS = 10, 1000
"""How much of the end of a program's standard error a finding keeps: its last lines, at most so long."""
_TAIL_BYTES = 8 * TAIL_CHARACTERS  # room for multi-byte characters; cut to characters once decoded
_DRAINED_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Command:
    """A program to fuzz: its command line, run afresh for each example, and the non-zero exit codes it
    documents (an exit with one of them is no crash)."""

    argv: tuple[str, ...]
    allow_exit: tuple[int, ...] = ()

    @property
    def name(self) -> str:
        """The command line as a shell reads it back (each argument quoted where it needs to be), any
        credential in it replaced (`shown_command`): what is shown, saved and keyed by, never run."""
        return shown_command(self.argv)


TargetSpec = str | Command
"""What a campaign's worker loads: a function named `module:function`, or a program's command."""


def target_name(spec: TargetSpec) -> str:
    """How a campaign names what it fuzzes: `module:function`, or the quoted command line."""
    return spec if isinstance(spec, str) else spec.name


class ProgramFailed(Exception):
    """A run's program ended badly: how (`exit code 1`, `signal SIGSEGV`), and the end of its standard
    error (untrusted text: show it through `sim.core.untrusted`)."""

    def __init__(self, how: str, tail: str) -> None:
        super().__init__(how)
        self.how, self.tail = how, tail


def program_environment(base: Mapping[str, str]) -> dict[str, str]:
    """`base` without what a program must not see (`WITHHELD`), with the placeholder key (for `OpenAI()`
    and `AzureOpenAI()`) and a module-level client type (`module_client_type`); each run adds where its
    simulator is (`run_environment`)."""
    kept = {name: value for name, value in base.items() if name not in WITHHELD}
    return {**kept, "OPENAI_API_KEY": API_KEY, AZURE_API_KEY: API_KEY, **module_client_type(kept)}


def run_environment(url: str) -> dict[str, str]:
    """Where a run's client finds its simulator at the base URL `url`: `OPENAI_BASE_URL`, and the
    `AZURE_OPENAI_ENDPOINT` an `AzureOpenAI()` client reads (a real one in sim's environment is replaced)."""
    return {"OPENAI_BASE_URL": url, **azure_environment(url)}


def check_runnable(command: Command) -> None:
    """`ConfigurationError` (one line) unless the command names a program that can be run."""
    if not command.argv or not command.argv[0]:
        raise ConfigurationError("give the command to fuzz after --")
    program = command.argv[0]
    if os.sep in program:
        path = Path(program)
        if not path.is_file() or not os.access(path, os.X_OK):
            why = "no such file" if not path.exists() else "not an executable file"
            raise ConfigurationError(f"cannot run the command {program}: {why}")
    elif shutil.which(program) is None:
        raise ConfigurationError(f"cannot run the command {program}: not found on PATH")


@dataclass(frozen=True, slots=True)
class ProgramTarget:
    """A program as a campaign's target: each run starts its command with the run's base URL."""

    command: Command
    environment: Mapping[str, str]
    """The environment every run starts from (see `program_environment`)."""

    @property
    def name(self) -> str:
        """The quoted command line."""
        return self.command.name

    def start(self, url: str) -> ProgramRun:
        """A run of the program against the base URL `url`, not started yet."""
        return ProgramRun(self, url)


def program_target(command: Command, environment: Mapping[str, str] | None = None) -> ProgramTarget:
    """The program `command` runs, checked as a target, in `environment` (sim's own by default)."""
    check_runnable(command)
    return ProgramTarget(command, program_environment(os.environ if environment is None else environment))


_RUNNING: set[int] = set()
"""The process ids of the programs this process has running (each its process group's id)."""


def kill_every_program() -> None:
    """Kill every program this process is running, with its process group: in a signal handler too (it
    takes no lock)."""
    for pid in list(_RUNNING):
        _kill_group(pid)


class ProgramRun:
    """One run of a program: `run()` blocks (in a worker thread) until the program ends, and raises
    `ProgramFailed` when it failed; `stop()`, from any thread, kills its process group, after which the run
    ends quietly (the caller judges a stopped run)."""

    def __init__(self, target: ProgramTarget, url: str) -> None:
        self.target, self.url = target, url
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._stopped = False

    def stop(self) -> None:
        """Kill the program and everything in its process group (or keep it from starting)."""
        with self._lock:
            self._stopped = True
            if self._process is not None and self._process.returncode is None:
                _kill_group(self._process.pid)

    def run(self) -> None:
        """Run the program to its end; `ProgramFailed` for an exit that is not 0 (or allowed) or a signal."""
        environment = {**self.target.environment, **run_environment(self.url)}
        wrapper = dying_with_parent()
        with self._lock:
            if self._stopped:
                return
            self._process = process = subprocess.Popen(
                (*wrapper, *self.target.command.argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=environment,
                start_new_session=True,
                preexec_fn=None if wrapper else die_with_parent,  # the worker thread lives as long as the run
            )
            _RUNNING.add(process.pid)
        assert process.stderr is not None
        try:
            tail = _tail_until_exit(process, process.stderr.fileno())
        finally:
            with self._lock:
                _kill_group(process.pid)  # before it is reaped: its group id cannot be anyone else's yet
                _RUNNING.discard(process.pid)
                process.wait()
                process.stderr.close()
        if self._stopped:
            return
        code = process.returncode
        if code < 0:
            raise ProgramFailed(f"signal {_signal_name(-code)}", tail)
        if code != 0 and code not in self.target.command.allow_exit:
            raise ProgramFailed(f"exit code {code}", tail)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _tail_until_exit(process: subprocess.Popen[bytes], stderr: int) -> str:
    """Read the program's standard error until it exits, keeping only its end, as text."""
    tail = bytearray()
    try:
        exited = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # no pidfd (not Linux): ask every few milliseconds instead
        exited = None
    poller = select.poll()
    poller.register(stderr, select.POLLIN)
    if exited is not None:
        poller.register(exited, select.POLLIN)
    reading = True
    try:
        while True:
            events = poller.poll(None if exited is not None else 5)
            if exited is None and process.poll() is not None:
                break
            if any(fd == exited for fd, _ in events):
                break
            if reading and events:
                chunk = os.read(stderr, 1 << 16)
                if chunk:
                    tail += chunk
                    del tail[:-_TAIL_BYTES]
                else:  # it closed its standard error, and runs on
                    poller.unregister(stderr)
                    reading = False
        if exited is not None:
            poller.unregister(exited)
        drained = 0  # what it wrote just before it ended; bounded, as a process that escaped its group
        while reading and drained < _DRAINED_BYTES and poller.poll(0) and (chunk := os.read(stderr, 1 << 16)):
            drained += len(chunk)  # (a session of its own) may hold the pipe and write on forever
            tail += chunk
            del tail[:-_TAIL_BYTES]
    finally:
        if exited is not None:
            os.close(exited)
    said = scrub_text(tail.decode(errors="replace"), known_secrets())  # before it is cut: no key half kept
    return "\n".join(said.splitlines()[-TAIL_LINES:])[-TAIL_CHARACTERS:]
