from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sim import CommandOutput, SubprocessRunner

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the commands are written for bash on Linux")


def run(command: str, cwd: Path, timeout: float = 10, max_chars: int = 50_000) -> CommandOutput:
    return asyncio.run(SubprocessRunner().run(command, cwd=cwd, timeout=timeout, max_chars=max_chars))


def alive(pid: int) -> bool:
    """A process that exited but was not reaped yet (a zombie) counts as gone."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_runs_in_the_workspace(tmp_path: Path) -> None:
    assert run("pwd", tmp_path).output.strip() == str(tmp_path.resolve())


def test_stdin_is_closed(tmp_path: Path) -> None:
    result = run("read line; echo status=$?", tmp_path, timeout=5)
    assert (result.output.strip(), result.timed_out) == ("status=1", False)


def test_utf8_on_stdout_and_stderr_share_one_stream(tmp_path: Path) -> None:
    result = run("echo 中文; echo 错误 >&2; echo 完", tmp_path)
    assert result.output == "中文\n错误\n完\n"
    assert result.exit_code == 0


def test_undecodable_bytes_are_replaced(tmp_path: Path) -> None:
    result = run(r"printf 'a\377\376b'", tmp_path)
    assert result.output == "a\ufffd\ufffdb"


@pytest.mark.parametrize("code", [0, 1, 3, 255])
def test_exit_codes(tmp_path: Path, code: int) -> None:
    assert run(f"exit {code}", tmp_path).exit_code == code


def test_character_cap_keeps_the_earliest_output(tmp_path: Path) -> None:
    result = run("echo first; for i in $(seq 1 2000); do echo line$i; done", tmp_path, max_chars=100)
    assert result.truncated
    assert len(result.output) == 100
    assert result.output.startswith("first\nline1\n")
    exact = run("printf abcd", tmp_path, max_chars=4)
    assert (exact.output, exact.truncated) == ("abcd", False)


def test_timeout_kills_the_whole_tree_including_a_grandchild(tmp_path: Path) -> None:
    started = time.monotonic()
    result = run("bash -c 'sleep 97.31 & echo $!; wait'; echo never", tmp_path, timeout=0.1)
    assert time.monotonic() - started < 5
    assert result.timed_out
    assert result.exit_code is None
    match = re.search(r"\d+", result.output)
    assert match, f"the grandchild's pid was not printed in time: {result.output!r}"
    grandchild = int(match.group())
    deadline = time.monotonic() + 5
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(grandchild)
    assert "never" not in result.output


def test_two_hundred_megabytes_of_output_with_bounded_memory(tmp_path: Path) -> None:
    """Runs in a fresh interpreter and reads its own peak (VmHWM): `ru_maxrss` would also count the memory
    of the process it was forked from, which a long test session makes large."""
    probe = """
import asyncio, json, sys
from pathlib import Path
from sim import SubprocessRunner

def peak_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

before = peak_kib()
result = asyncio.run(SubprocessRunner().run(
    "yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 200000000; echo; echo done >&2",
    cwd=Path(sys.argv[1]), timeout=120, max_chars=50_000))
print(json.dumps({"before_kib": before, "peak_kib": peak_kib(),
                  "chars": len(result.output), "truncated": result.truncated, "exit": result.exit_code}))
"""
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, timeout=180, check=True
    )
    report = json.loads(done.stdout)
    assert report["exit"] == 0
    assert report["truncated"] is True
    assert report["chars"] == 50_000
    assert report["peak_kib"] - report["before_kib"] < 64 * 1024, report  # 200 MB went through


def test_missing_workspace_cannot_start(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        run("echo hi", tmp_path / "nope")


def test_environment_is_inherited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIM_TEST_MARKER", "present")
    assert run("echo $SIM_TEST_MARKER", tmp_path).output == "present\n"
    assert os.environ["SIM_TEST_MARKER"] == "present"


def test_a_background_child_holding_the_output_does_not_hold_the_call(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    result = run(f"sleep 151 & echo $! > {pid_file}; echo started", tmp_path, timeout=30)
    elapsed = time.monotonic() - started
    child = int(pid_file.read_text())
    try:
        assert (result.output.strip(), result.exit_code, result.timed_out) == ("started", 0, False)
        assert elapsed < 5, f"waited {elapsed:.1f} s for a child the shell left running"
        assert alive(child)  # left running, as a terminal would leave it
    finally:
        os.kill(child, 9)


def test_output_written_just_before_the_shell_exits_is_kept(tmp_path: Path) -> None:
    result = run("(sleep 0.05; echo late) & sleep 0.01; echo early; wait", tmp_path)
    assert result.output.splitlines() == ["early", "late"]
