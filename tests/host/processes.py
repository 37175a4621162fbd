"""`sim serve` and `sim proxy` as real processes on ephemeral 127.0.0.1 ports, for the tests: each waits for
the printed `OPENAI_BASE_URL`, is bounded by timeouts, and is stopped by the test that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

SIM = [sys.executable, "-m", "sim.cli"]
ROOT = Path(__file__).resolve().parents[2]
MARKED_KEY = "sk-marked-proxy-key-0123456789abcdef"
"""The upstream key a recording is run with: it must appear in no file."""


@contextmanager
def sim_process(
    *args: str, environment: Mapping[str, str] | None = None, cwd: Path | None = None, graceful: bool = False
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`sim ARGS... --port 0` started; yields the process and the base URL it printed. Stopped at the end
    by a kill, or with `graceful` by an interrupt (it finishes the replies in flight) and a kill after 3 s."""
    process = subprocess.Popen(
        [*SIM, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(environment or os.environ),
        cwd=cwd,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("OPENAI_BASE_URL=http://127.0.0.1:"), line + (
            process.stderr.read() if process.stderr else ""
        )
        yield process, line.strip().split("=", 1)[1]
    finally:
        if graceful and process.poll() is None:
            process.send_signal(signal.SIGINT)
            with suppress(subprocess.TimeoutExpired):
                process.wait(timeout=3)
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


@contextmanager
def served(file: Path, *options: str, graceful: bool = False) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`sim serve FILE --port 0 OPTIONS...`, stopped as `sim_process` says."""
    with sim_process("serve", str(file), "--port", "0", *options, graceful=graceful) as started:
        yield started


def program(base_url: str, *command: str, key: str = "sk-program-0123") -> subprocess.CompletedProcess[str]:
    """A program run to its end against `base_url`, as its user would start it."""
    environment = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": key}
    return subprocess.run(
        list(command), env=environment, capture_output=True, text=True, timeout=120, check=False, cwd=ROOT
    )


def served_to(
    file: Path,
    *command: str,
    options: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    cwd: Path = ROOT,
) -> subprocess.CompletedProcess[str]:
    """`sim serve FILE --port 0 OPTIONS -- COMMAND` run to its end in `cwd` (programs import `examples` of
    the checkout), `env` added to this environment (without its OPENAI_BASE_URL): what a user runs in CI."""
    environment = {k: v for k, v in os.environ.items() if k != "OPENAI_BASE_URL"}
    environment.update(PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run(
        [*SIM, "serve", str(file), "--port", "0", *options, "--", *command],
        capture_output=True, text=True, timeout=timeout, check=False, env=environment, cwd=cwd,
    )  # fmt: skip
