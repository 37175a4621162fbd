"""`sim serve FILE -- COMMAND`: the server listens first, then runs a real program (the real OpenAI SDK)
pointed at itself, and exits with both verdicts; `--idle-timeout` ends a run nobody talks to; signals to
sim end the command. Every `sim` and every program is a real process on 127.0.0.1, its time bounded."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from openai import OpenAI

from examples.frameworks.raw_sdk_weather import run_chat
from sim.cli.serving import SERVED_KEY
from tests.commands import in_process
from tests.host.processes import ROOT, SIM, served
from tests.process_table import alive

FRAMEWORKS = ROOT / "examples" / "frameworks"
WEATHER = FRAMEWORKS / "weather.yaml"
RAW_SDK = FRAMEWORKS / "raw_sdk_weather.py"
CASSETTES = FRAMEWORKS / "cassettes" / "test_weather"
ANSWER = "It is sunny in Paris.\n"
AGENT = """
import sys, time
from openai import OpenAI
from examples.frameworks.raw_sdk_weather import run_chat

turns, code, pause = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
print(run_chat(OpenAI(), "What is the weather in Paris?", max_turns=turns), flush=True)
time.sleep(pause)
sys.exit(code)
"""
"""The weather agent on the real SDK for TURNS requests at most, then a pause, then an exit code."""
ENVIRONMENT = """
import json, os
names = ["OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"]
print(json.dumps({name: os.environ.get(name) for name in names}))
"""
PID_THEN_SLEEP = """
import os, signal, sys, time
if sys.argv[2] == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[1], "w") as file:
    file.write(str(os.getpid()))
time.sleep(60)
"""
SLOW = """name: slow
description: One answer whose first byte comes after 2 s, twice the idle timeout of the test.
latency: {first_byte: 2}
replies:
  - content: Slow but there.
"""

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses POSIX signals")


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of this module's programs (and a scenario), written once."""
    folder = tmp_path_factory.mktemp("programs")
    for name, text in {"agent.py": AGENT, "environment.py": ENVIRONMENT, "sleeper.py": PID_THEN_SLEEP,
                       "slow.yaml": SLOW}.items():  # fmt: skip
        (folder / name).write_text(text)
    return folder


def serve(
    file: Path, *command: str, options: tuple[str, ...] = (), env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`sim serve FILE --port 0 OPTIONS -- COMMAND` run to its end from the checkout (so that the agent
    imports `examples`)."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    environment.pop("OPENAI_BASE_URL", None)
    return subprocess.run(
        [*SIM, "serve", str(file), "--port", "0", *options, "--", *command],
        capture_output=True, text=True, timeout=90, check=False, env=environment, cwd=ROOT,
    )  # fmt: skip


def agent(programs: Path, turns: int = 6, code: int = 0, pause: float = 0) -> list[str]:
    return [sys.executable, str(programs / "agent.py"), str(turns), str(code), str(pause)]


def test_a_scenario_served_to_a_program_on_the_real_sdk(programs: Path) -> None:
    done = serve(WEATHER, *agent(programs), options=("--once",))
    assert (done.returncode, done.stdout) == (0, ANSWER), done.stderr  # the program's output alone
    assert done.stderr.startswith("OPENAI_BASE_URL=http://127.0.0.1:"), done.stderr
    assert "served 2 requests (chat 2); 2 replies sent" in done.stderr
    assert "exited with 0; the served file's verdict: passed" in done.stderr


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_cassette_served_to_a_program_on_the_real_sdk(api: str) -> None:
    options = ["--responses"] if api == "responses" else []
    done = serve(CASSETTES / f"test_raw_sdk[{api}].yaml", sys.executable, str(RAW_SDK), *options,
                 options=("--once",))  # fmt: skip
    assert (done.returncode, done.stdout) == (0, ANSWER), done.stderr
    assert f"served 2 requests ({api} 2); 2 of 2 interactions played" in done.stderr


def test_a_cassette_a_program_stops_short_of_fails_naming_what_was_not_played(programs: Path) -> None:
    done = serve(CASSETTES / "test_raw_sdk[chat].yaml", *agent(programs, turns=1))
    assert done.returncode == 1, done.stderr
    assert "! interaction 2 never requested: POST /v1/chat/completions" in done.stderr
    assert "exited with 0; the served file's verdict: failed" in done.stderr


@pytest.mark.parametrize(
    ("turns", "code", "exit_code", "verdict"),
    [(6, 3, 3, "passed"), (1, 0, 1, "failed"), (1, 4, 4, "failed")],
    ids=["the-command-fails", "the-verdict-fails", "both-fail"],
)
def test_the_exit_is_the_commands_status_if_it_failed_else_the_verdict(
    programs: Path, turns: int, code: int, exit_code: int, verdict: str
) -> None:
    done = serve(WEATHER, *agent(programs, turns, code), options=("--once",))
    assert done.returncode == exit_code, done.stderr
    assert f"exited with {code}; the served file's verdict: {verdict}" in done.stderr  # both said


def test_a_command_that_never_makes_a_request_fails_the_verdict(programs: Path) -> None:
    done = serve(WEATHER, sys.executable, "-c", "pass")
    assert done.returncode == 1, done.stderr
    assert "! simulator for weather has 2 unused of 2 scripted replies" in done.stderr


def test_a_command_that_cannot_be_run_exits_as_a_shell_would(tmp_path: Path) -> None:
    hostile = "\x1b[31mno-such-program\x1b]0;title\x07"
    missing = serve(WEATHER, hostile)
    assert missing.returncode == 127, missing.stderr
    assert "error: cannot run \\x1b[31mno-such-program" in missing.stderr
    assert "\x1b" not in missing.stderr and missing.stdout == ""  # a name is shown, never acted on
    (tmp_path / "script").write_text("#!/bin/sh\n")  # not executable
    assert serve(WEATHER, str(tmp_path / "script")).returncode == 126


def test_the_command_gets_the_servers_url_a_key_and_no_account_settings(programs: Path) -> None:
    account = {"OPENAI_ORG_ID": "org-user", "OPENAI_PROJECT_ID": "proj-user"}
    command = (sys.executable, str(programs / "environment.py"))
    unset = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    done = subprocess.run(
        [*SIM, "serve", str(WEATHER), "--port", "0", "--json", "--", *command],
        capture_output=True, text=True, timeout=60, check=False, env={**unset, **account},
    )  # fmt: skip
    seen = json.loads(done.stdout)  # sim wrote nothing else on standard output, its JSON log neither
    assert seen["OPENAI_BASE_URL"].startswith("http://127.0.0.1:") and seen["OPENAI_BASE_URL"].endswith("/v1")
    assert f"OPENAI_BASE_URL={seen['OPENAI_BASE_URL']}" in done.stderr
    assert (seen["OPENAI_API_KEY"], seen["OPENAI_ORG_ID"], seen["OPENAI_PROJECT_ID"]) == (
        SERVED_KEY,
        None,
        None,
    )
    kept = serve(WEATHER, *command, env={"OPENAI_API_KEY": "sk-users-own"})
    assert json.loads(kept.stdout)["OPENAI_API_KEY"] == "sk-users-own"


def test_huge_output_of_the_command_passes_through_untouched() -> None:
    write = "import sys; sys.stdout.write('o' * 10_000_000); sys.stderr.write('e' * 10_000_000)"
    done = serve(WEATHER, sys.executable, "-c", write)
    assert done.stdout == "o" * 10_000_000
    assert done.stderr.count("e" * 1000) >= 9_999 and "served 0 requests" in done.stderr


def test_once_with_a_command_lets_it_finish_after_the_last_reply(programs: Path) -> None:
    """The command's end ends the run, not the grace after the scenario's end (which would cut off a
    program that works on after its last request)."""
    done = serve(WEATHER, *agent(programs, pause=1), options=("--once", "--grace", "0"))
    assert (done.returncode, done.stdout) == (0, ANSWER), done.stderr


def test_idle_timeout_ends_a_command_that_never_talks(programs: Path, tmp_path: Path) -> None:
    started = time.monotonic()
    done = serve(WEATHER, sys.executable, str(programs / "sleeper.py"), str(tmp_path / "pid"), "mind",
                 options=("--once", "--idle-timeout", "0.5"))  # fmt: skip
    assert time.monotonic() - started < 15
    assert done.returncode != 0
    assert (
        "! no request for 0.5 s (--idle-timeout): the run was ended; the command was stopped" in done.stderr
    )
    assert "was stopped when the run ended: it was ended by SIGTERM (143)" in done.stderr


def test_idle_timeout_ends_a_server_nobody_talks_to() -> None:
    done = in_process("serve", WEATHER, "--port", "0", "--once", "--idle-timeout", "0.3")
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("OPENAI_BASE_URL=http://127.0.0.1:")  # no command: where to connect
    assert "! no request for 0.3 s (--idle-timeout): the run was ended" in done.stderr


def test_a_request_in_flight_is_not_idleness(programs: Path) -> None:
    """The client is this process (a program's start-up counts as idleness: the clock starts as sim
    listens), its request answered after 2 s, twice the idle timeout."""
    with served(programs / "slow.yaml", "--once", "--idle-timeout", "1", "--grace", "0") as (
        server,
        base_url,
    ):
        client = OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
        assert client.responses.create(model="m", input="hi").output_text == "Slow but there."
        assert server.wait(timeout=20) == 0


def test_once_without_a_command_ends_passed_when_the_grace_outlasts_the_idle_timeout() -> None:
    """Once the scenario is over, `--once` ends it after the grace: idleness is no failure then."""
    with served(WEATHER, "--once", "--idle-timeout", "1", "--grace", "2") as (server, base_url):
        client = OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
        assert run_chat(client, "What is the weather in Paris?") == ANSWER.strip()
        assert server.wait(timeout=20) == 0


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "601"])
def test_an_idle_timeout_out_of_range_is_a_usage_error(value: str) -> None:
    done = in_process("serve", WEATHER, "--idle-timeout", value, "--", "true")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: --idle-timeout must be from 0.1 to 600 seconds, not {float(value)}"
    ]


def command_pid(sim: subprocess.Popen[str], pid_file: Path) -> int:
    """The process id the command `sim` runs wrote to `pid_file`, once it has."""
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()):
        assert sim.poll() is None and time.monotonic() < deadline, "the command never started"
        time.sleep(0.02)
    return int(pid_file.read_text())


@pytest.mark.parametrize(
    ("number", "minds"), [(signal.SIGTERM, "mind"), (signal.SIGINT, "mind"), (signal.SIGTERM, "ignore")]
)
def test_a_signal_to_sim_ends_the_command(programs: Path, tmp_path: Path, number: int, minds: str) -> None:
    """A command that ignores SIGTERM is killed after the shutdown's seconds."""
    pid_file = tmp_path / "pid"
    command = [sys.executable, str(programs / "sleeper.py"), str(pid_file), minds]
    sim = subprocess.Popen(
        [*SIM, "serve", str(WEATHER), "--port", "0", "--", *command],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        pid = command_pid(sim, pid_file)
        sim.send_signal(number)
        _, stderr = sim.communicate(timeout=20)
    finally:
        if sim.poll() is None:
            sim.kill()
            sim.wait()
    ended = "SIGKILL (137)" if minds == "ignore" else "SIGTERM (143)"
    assert sim.returncode == int(ended[-4:-1]), stderr
    assert f"was stopped when the run ended: it was ended by {ended}" in stderr
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_sim_killed_outright_takes_the_command_with_it(programs: Path, tmp_path: Path) -> None:
    """SIGKILL leaves sim no time to end its command: the kernel ends it (the command ignores SIGTERM)."""
    pid_file = tmp_path / "pid"
    command = [sys.executable, str(programs / "sleeper.py"), str(pid_file), "ignore"]
    sim = subprocess.Popen(
        [*SIM, "serve", str(WEATHER), "--port", "0", "--", *command],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    pid = None
    try:
        pid = command_pid(sim, pid_file)
        sim.kill()
        sim.wait(timeout=20)
        deadline = time.monotonic() + 5
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not alive(pid), "the command outlived sim"
    finally:
        if sim.poll() is None:
            sim.kill()
        if pid is not None and alive(pid):  # the bug this test is for: clean up after it
            os.kill(pid, signal.SIGKILL)


def documented_commands() -> list[tuple[str, str]]:
    """Each `sim serve ... -- COMMAND` line of the README and the serving guide whose files are bundled."""
    found = []
    for page in ("README.md", "docs/serving.md"):
        text = (ROOT / page).read_text()
        for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
            for line in block.replace("\\\n", " ").splitlines():
                words = line.split("#")[0].split()
                at = words.index("sim") if "sim" in words else -1
                if words[at + 1 : at + 2] == ["serve"] and "--" in words and (ROOT / words[at + 2]).exists():
                    found.append((page, line.split("  #")[0].strip()))
    return found


DOCUMENTED = documented_commands()


def test_the_docs_show_commands_served_to() -> None:
    assert {page for page, _ in DOCUMENTED} == {"README.md", "docs/serving.md"}


@pytest.mark.parametrize(("page", "line"), DOCUMENTED, ids=[f"{p}:{line[:50]}" for p, line in DOCUMENTED])
def test_each_documented_command_served_to_runs_as_written(page: str, line: str, tmp_path: Path) -> None:
    """By the shell, in a folder holding the bundled files, on a free port; `python` and `sim` are this
    checkout's. It exits 0 with the program's output alone on standard output."""
    for bundled in ("examples", "scenarios"):
        (tmp_path / bundled).symlink_to(ROOT / bundled)
    shell = line if "--port" in line else re.sub(r"(sim serve \S+)", r"\1 --port 0", line, count=1)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(
        ["bash", "-c", shell], cwd=tmp_path, env={**environment, "PATH": path, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"{page}: {line}: {done.stderr}"
    assert "OPENAI_BASE_URL" not in done.stdout and done.stdout.strip(), done.stdout
    assert "the served file's verdict: passed" in done.stderr
