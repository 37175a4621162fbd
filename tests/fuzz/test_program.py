"""`sim fuzz -- COMMAND`: real programs, each run started afresh against its run's simulator, judged on the
wire and by how they exit. The careful loops (the real OpenAI SDK, their own `OpenAI()` client, over Chat
and Responses) pass; each seeded bug is found, shrunk and saved, and the saved run replays the failure with
`sim serve FILE --once -- COMMAND`. Programs without the SDK (tests/fuzz/programs/raw_client.py, quick to
start) show what sim does with their exits, their output and their processes.

Campaigns are small and their seeds fixed (each finds its bug within a few dozen runs): a run of an SDK
program costs the SDK's import, half a second."""

from __future__ import annotations

import contextlib
import json
import os
import re
import runpy
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis.database import InMemoryExampleDatabase

from sim.fuzz.program import API_KEY, Command, program_target
from sim.fuzz.target import fuzz_target
from tests.commands import in_a_process, in_process
from tests.host.processes import SIM
from tests.process_table import alive

PROGRAMS = Path(__file__).parent / "programs"
CHAT = [sys.executable, str(PROGRAMS / "chat_loop.py")]
RESPONSES = [sys.executable, str(PROGRAMS / "responses_loop.py")]
RAW = [sys.executable, "-S", str(PROGRAMS / "raw_client.py")]
_RAW_NAMES = runpy.run_path(str(PROGRAMS / "raw_client.py"))
MARKER, ESCAPES = str(_RAW_NAMES["MARKER"]), str(_RAW_NAMES["ESCAPES"])

SAVED = re.compile(r"^smallest failing run: (?P<file>\S+) \(to reproduce it: (?P<again>.+)\)$", re.M)


def fuzz(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`sim fuzz ARGS` as a process of its own in `cwd`."""
    return in_a_process("fuzz", *args, cwd=cwd, env=env, timeout=240)


def campaign_json(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """What `sim fuzz --json` printed: nothing but the JSON document."""
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def gone(pids: list[int], seconds: float = 5) -> bool:
    """Whether every process of `pids` has ended within `seconds`."""
    deadline = time.monotonic() + seconds
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def pids_in(file: Path, seconds: float = 60) -> list[int]:
    """The process ids a `hangs` program wrote to `file`, once it has."""
    deadline = time.monotonic() + seconds
    while not (file.exists() and file.read_text().endswith("\n")):
        assert time.monotonic() < deadline, "the program never started"
        time.sleep(0.02)
    return [int(pid) for pid in file.read_text().split()]


@pytest.mark.parametrize("program", [CHAT, RESPONSES], ids=["chat", "responses"])
def test_a_careful_program_passes_over_each_api(program: list[str], tmp_path: Path) -> None:
    done = fuzz("--json", "--examples", "3", "--", *program, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    data = campaign_json(done)
    assert data["violations"] == [] and data["nothing_tested"] is None
    assert data["runs"] == 3 and data["requests"] >= 3 and data["round_trips"] > 0
    assert not (tmp_path / "fuzz-failures").exists()


BUGS = {  # taking a `length` reply as done is found in a Node loop (tests/nodejs), judged the same way
    # bug: (seed, examples, invariant, what the finding says, replies the shrunk run keeps at most)
    "forgets-a-result": (1, 30, "pairing", "missing tool results", 2),
    "crashes-on-null": (0, 30, "crash", "AttributeError", 1),
    "never-stops": (0, 30, "runaway", "past the bound of 20 requests", 20),
}


@pytest.mark.parametrize("bug", list(BUGS))
def test_each_bug_of_a_program_is_found_shrunk_saved_and_replayed_by_sim_serve(
    bug: str, tmp_path: Path
) -> None:
    seed, examples, invariant, said, most = BUGS[bug]
    done = fuzz("--seed", str(seed), "--examples", str(examples), "--", *CHAT, bug, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    findings = [line for line in done.stdout.splitlines() if line.startswith("! ")]
    assert any(line.startswith(f"! {invariant}: ") and said in line for line in findings), done.stdout
    saved = SAVED.search(done.stdout)
    assert saved is not None, done.stdout
    file = tmp_path / saved["file"]
    scenario = yaml.safe_load(file.read_text())
    assert 1 <= len(scenario["replies"]) <= most, scenario
    assert f"sim fuzz -- {shlex.join(CHAT)} {bug} (api profile, seed {seed})" in scenario["description"]
    again = shlex.split(saved["again"])
    assert again == ["sim", "serve", saved["file"], "--once", "--", *CHAT, bug]
    replayed = subprocess.run(
        [*SIM, *again[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )
    assert replayed.returncode != 0, replayed.stdout + replayed.stderr
    if invariant == "crash":  # the program fails again as it did: the same words on its standard error
        assert said.split("'")[0].split(":")[0] in replayed.stderr or "Error" in replayed.stderr


def test_a_crash_carries_the_end_of_a_huge_hostile_standard_error_shown_safely(tmp_path: Path) -> None:
    done = fuzz("--examples", "3", "--", *RAW, "noisy-crash", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    (crash,) = [line for line in done.stdout.splitlines() if line.startswith("! crash: ")]
    assert "the program ended with exit code 1" in crash and "fatal: the end" in crash
    assert "\\x1b]0;pwned\\x07" in crash  # the escapes written out, never acted on
    assert len(crash) < 1500  # the tail of 10 MB, not the 10 MB
    for text in (done.stdout, done.stderr):
        assert "\x1b" not in text and "\x07" not in text and "\r" not in text
        assert MARKER not in text  # the program's output is its own
    saved = SAVED.search(done.stdout)
    assert saved is not None
    assert "\x1b" not in (tmp_path / saved["file"]).read_text()


def test_json_holds_the_campaign_and_never_the_programs_output(tmp_path: Path) -> None:
    done = fuzz("--json", "--examples", "3", "--", *RAW, "noisy-crash", cwd=tmp_path)
    assert done.returncode == 1
    data = campaign_json(done)  # nothing but the document: the program's output went elsewhere
    assert MARKER not in done.stdout and ESCAPES not in done.stdout
    (violation,) = data["violations"]
    assert violation["invariant"] == "crash" and "fatal: the end" in violation["detail"]
    assert data["raised"] == {"exit code 1": data["runs"]}


def test_the_hostile_profile_fuzzes_a_program_and_counts_exits_after_what_the_api_never_sends(
    tmp_path: Path,
) -> None:
    data = campaign_json(
        fuzz("--json", "--profile", "hostile", "--examples", "15", "--", *RAW, "answers", cwd=tmp_path)
    )
    # its exit 1 after a body that is not JSON, an error or a cut stream is counted, not a crash
    assert data["violations"] == [] and data["nothing_tested"] is None
    assert data["runs"] == 15 and 0 < data["raised"]["exit code 1"] < 15


def test_a_signal_is_a_crash(tmp_path: Path) -> None:
    data = campaign_json(fuzz("--json", "--examples", "3", "--", *RAW, "segfaults", cwd=tmp_path))
    assert [v["invariant"] for v in data["violations"]] == ["crash"]
    assert "the program ended with signal SIGSEGV" in data["violations"][0]["detail"]


def test_an_allowed_exit_is_no_crash(tmp_path: Path) -> None:
    refused = campaign_json(fuzz("--json", "--examples", "3", "--", *RAW, "exits-3", cwd=tmp_path))
    assert "the program ended with exit code 3" in refused["violations"][0]["detail"]
    done = fuzz(
        "--allow-exit", "3", "--allow-exit", "4", "--examples", "3", "--", *RAW, "exits-3", cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every invariant held" in done.stdout


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("never-calls", "the program never sent a request in 1 run, so nothing was tested"),
        (
            "fails-at-once",
            "the program ended with exit code 1 in every run (1) before sending a request; the end of its"
            " standard error: 'error: no configuration file'",
        ),
    ],
)
def test_a_campaign_that_tested_nothing_fails_saying_why(mode: str, said: str, tmp_path: Path) -> None:
    done = fuzz("--examples", "5", "--", *RAW, mode, cwd=tmp_path)
    assert done.returncode == 1
    assert f"! nothing was tested: {said}" in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["--", "no-such-program-of-sim"],
            "error: cannot run the command no-such-program-of-sim: not found on PATH",
        ),
        (["--", "./no/such/file"], "error: cannot run the command ./no/such/file: no such file"),
        (
            ["--target", "m:f", "--", "true"],
            "error: give either --target MODULE:FUNC or -- COMMAND ARGS..., not both",
        ),
        (["--target", "m:f", "--allow-exit", "3"], "error: --allow-exit is for a program's exit codes"),
        (["--allow", "ValueError", "--", "true"], "error: --allow names a function's exceptions"),
        (["--allow-exit", "0", "--", "true"], "error: --allow-exit takes exit codes from 1 to 255"),
    ],
)
def test_what_cannot_be_fuzzed_is_a_one_line_usage_error(args: list[str], said: str) -> None:
    done = in_process("fuzz", *args)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(said), line


def test_a_file_that_is_not_executable_is_a_one_line_usage_error(tmp_path: Path) -> None:
    script = tmp_path / "loop.py"
    script.write_text("print('hello')\n")
    done = in_process("fuzz", "--", str(script))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"error: cannot run the command {script}: not an executable file"]


def test_a_program_that_never_ends_is_a_runaway_killed_with_its_children(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    data = campaign_json(
        fuzz("--json", "--examples", "2", "--run-seconds", "1", "--", *RAW, "hangs", pids, cwd=tmp_path)
    )
    assert data["violations"][0] == {
        "invariant": "runaway",
        "detail": "the run did not return within 1 s",
    }
    started = [int(pid) for pid in pids.read_text().split()]
    assert len(started) >= 2 and gone(started)  # each run's program and the child it started


def test_a_child_that_escaped_the_programs_group_and_writes_on_does_not_hold_the_run(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    try:
        done = fuzz("--json", "--examples", "2", "--", *RAW, "escapes", pids, cwd=tmp_path)
        data = campaign_json(done)
        assert [v["invariant"] for v in data["violations"]] == ["crash"]
        assert "escaped escaped" in data["violations"][0]["detail"]
    finally:
        for pid in map(int, pids.read_text().split() if pids.exists() else []):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_ending_sim_ends_the_program_it_runs(how: signal.Signals, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    sim = subprocess.Popen(
        [*SIM, "fuzz", "--examples", "3", "--", *RAW, "hangs", str(pids)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started: list[int] = []
    try:
        program, child = started = pids_in(pids)
        sim.send_signal(how)
        sim.wait(timeout=20)
        # killed outright, sim cannot end the program's group: the kernel ends the program (its children
        # are its own); on SIGTERM, the program's whole group ends
        assert gone([program] if how is signal.SIGKILL else [program, child])
    finally:
        sim.kill()
        for pid in started:  # whatever outlived the test
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


AZURE_SECRETS = {
    "AZURE_OPENAI_ENDPOINT": "https://mine.openai.azure.invalid",  # never resolves: no network if it leaks
    "AZURE_OPENAI_API_KEY": "azure-real-secret-0123456789",
    "AZURE_OPENAI_AD_TOKEN": "eyJreal.token.secret",
}


def test_a_program_gets_a_placeholder_key_and_no_account_of_the_user(tmp_path: Path) -> None:
    secret = "sk-real-secret-0123456789"
    environment = tmp_path / "environment.json"
    env = {"OPENAI_API_KEY": secret, "OPENAI_ORG_ID": "org-mine", "OPENAI_PROJECT_ID": "proj_mine"}
    env |= AZURE_SECRETS
    done = fuzz("--examples", "2", "--", *RAW, "tells-environment", environment, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads(environment.read_text())
    run = seen["OPENAI_BASE_URL"].removesuffix("/v1")
    assert seen["AZURE_OPENAI_ENDPOINT"] == run and seen["AZURE_OPENAI_API_KEY"] == API_KEY
    assert "AZURE_OPENAI_AD_TOKEN" not in seen
    assert seen["OPENAI_API_KEY"] == API_KEY and re.fullmatch(
        r"http://127\.0\.0\.1:\d+/run-\d+/v1", seen["OPENAI_BASE_URL"]
    )
    assert "OPENAI_ORG_ID" not in seen and "OPENAI_PROJECT_ID" not in seen
    assert secret not in done.stdout + done.stderr


def test_an_azure_openai_program_built_from_its_environment_is_fuzzed_never_reaching_azure(
    tmp_path: Path,
) -> None:
    program = [sys.executable, str(PROGRAMS / "azure_chat.py")]
    data = campaign_json(fuzz("--json", "--examples", "3", "--", *program, cwd=tmp_path, env=AZURE_SECRETS))
    assert data["violations"] == [] and data["nothing_tested"] is None
    assert data["runs"] == 3 and data["requests"] == 3  # every run's request reached its simulator


def test_replay_plays_the_saved_run_to_the_program_once(tmp_path: Path) -> None:
    done = fuzz("--examples", "3", "--", *RAW, "segfaults", cwd=tmp_path)
    saved = SAVED.search(done.stdout)
    assert saved is not None, done.stdout
    replayed = fuzz("--replay", saved["file"], "--", *RAW, "segfaults", cwd=tmp_path)
    assert replayed.returncode == 1
    assert "1 request; raised: signal SIGSEGV" in replayed.stdout
    (crash,) = [line for line in replayed.stdout.splitlines() if line.startswith("! crash: ")]
    assert crash.startswith("! crash: request 1 got ") and crash.endswith(
        "the program ended with signal SIGSEGV"
    )


def test_a_database_keeps_a_programs_failures_under_its_command(tmp_path: Path) -> None:
    database = InMemoryExampleDatabase()
    command = Command((*RAW, "segfaults"))
    first = fuzz_target(program_target(command), examples=3, database=database)
    assert [v.invariant for v in first.violations] == ["crash"] and first.program
    namespace = f"sim fuzz -- {command.name} api".encode() + b"\x00"
    assert database.data and all(key.startswith(namespace) for key in database.data)
    again = fuzz_target(program_target(command), examples=3, database=database)
    assert again.violations == first.violations and again.runs <= first.runs


def test_an_admin_key_is_withheld_from_a_program_as_the_api_key_is() -> None:
    """Both SDKs read OPENAI_ADMIN_KEY (the organization's admin key): a real key a program never gets."""
    from sim.fuzz.program import program_environment

    given = program_environment({"OPENAI_ADMIN_KEY": "sk-admin-real-0123456789", "PATH": "/bin"})
    assert given == {"PATH": "/bin", "OPENAI_API_KEY": API_KEY, "AZURE_OPENAI_API_KEY": API_KEY,
                     "OPENAI_API_TYPE": "openai"}  # fmt: skip
