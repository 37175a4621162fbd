"""`sim fuzz --workers N`: N campaigns at once, each in a process of its own against a host of its own,
told as one campaign; the first failure found stops the others and is reported and saved once; a database
is shared by every worker; ending sim ends every worker and the programs they run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sim.fuzz.findings import TargetCampaign, TargetRun
from sim.fuzz.invariants import Violation
from sim.fuzz.terms import Profile
from sim.fuzz.worker import merged, share, worker_seed
from tests.commands import in_a_process, in_process
from tests.host.processes import SIM
from tests.process_table import alive, children

ROOT = Path(__file__).resolve().parents[2]
MARKER = "WORKER-PROGRAM-STDOUT-MARKER"
PROGRAM = f'''"""One Chat Completions request with the standard library, after a line `PID PORT` is added to
FOLDER/notes; then MODE: `answers` exits 0; `claims`: the first worker whose run gets here claims the
program, and its runs exit 1 after an answer; `long-text` exits 1 when the answer is longer than one
character; `hangs` starts a child, adds both ids to FOLDER/pids and sleeps. An error answer exits 1."""
import json, os, subprocess, sys, time, urllib.request
from urllib.parse import urlsplit

mode, folder = sys.argv[1], sys.argv[2]
port = str(urlsplit(os.environ["OPENAI_BASE_URL"]).port)
with open(os.path.join(folder, "notes"), "a") as notes:
    notes.write(f"{{os.getpid()}} {{port}}\\n")
print("{MARKER}", flush=True)
body = {{"model": "m", "messages": [{{"role": "user", "content": "Say hello."}}]}}
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps(body).encode(),
    headers={{"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"}},
)
try:
    with urllib.request.urlopen(request, timeout=30) as response:
        text = json.loads(response.read())["choices"][0]["message"]["content"] or ""
except Exception as error:
    print(f"the request failed: {{type(error).__name__}}", file=sys.stderr)
    sys.exit(1)
if mode == "claims":
    mine = os.path.join(folder, f"claim-{{port}}")
    with open(mine, "w") as claim:
        claim.write(port)
    try:
        os.link(mine, os.path.join(folder, "claimed"))  # one worker's claim wins, whole
    except FileExistsError:
        pass
    with open(os.path.join(folder, "claimed")) as claimed:
        if claimed.read() == port:
            sys.exit("this worker's runs crash")
if mode == "long-text" and len(text) > 1:
    sys.exit("cannot handle a long answer")
if mode == "hangs":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.path.join(folder, "pids"), "a") as pids:
        pids.write(f"{{os.getpid()}} {{child.pid}}\\n")
    time.sleep(600)
'''


@pytest.fixture
def program(tmp_path: Path) -> list[str]:
    """The command that runs the test program (its MODE and FOLDER follow)."""
    path = tmp_path / "program.py"
    path.write_text(PROGRAM)
    return [sys.executable, str(path)]


def notes(folder: Path) -> list[tuple[int, str]]:
    """Each run of the program: its process id and the port of the host it was given."""
    lines = (folder / "notes").read_text().split("\n")
    return [(int(pid), port) for pid, port in (line.split() for line in lines if line)]


def fuzz(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return in_a_process("fuzz", *args, cwd=cwd, env=env, timeout=120)


def test_the_shares_add_up_and_each_worker_has_a_seed_of_its_own() -> None:
    for examples, workers in ((200, 2), (7, 3), (2, 2)):
        assert sum(share(examples, workers, index) for index in range(workers)) == examples
    assert [share(7, 3, index) for index in range(3)] == [3, 2, 2]
    assert worker_seed(5, 0) == 5  # one worker draws what --seed always drew
    assert len({worker_seed(seed, index) for seed in range(3) for index in range(4)}) == 12


def test_campaigns_side_by_side_are_told_as_one() -> None:
    failing = TargetRun(received=2)
    first = TargetCampaign("t", Profile.api, runs=3, requests=5, raised=Counter(x=1), unhonoured={"a"})
    second = TargetCampaign("t", Profile.api, runs=4, requests=6, raised=Counter(x=2, y=1), calling_runs=1)
    second.failure, second.violations = failing, [Violation("crash", "it broke")]
    first.failure, first.violations = TargetRun(), [Violation("runaway", "found later, while stopping")]
    whole = merged([first, second], finder=1)
    assert (whole.runs, whole.requests, whole.calling_runs) == (7, 11, 1)
    assert whole.raised == Counter(x=3, y=1) and whole.unhonoured == {"a"}
    assert whole.failure is failing and whole.violations == [Violation("crash", "it broke")]


@pytest.mark.parametrize(("examples", "workers", "processes"), [(24, 2, 2), (1, 3, 1)])
def test_a_functions_campaign_is_split_between_worker_processes_and_counted_once(
    examples: int, workers: int, processes: int, tmp_path: Path
) -> None:
    noted = tmp_path / "notes"
    target = "tests.fuzz.worker_targets:notes_its_process"
    done = in_process(
        "fuzz", "--target", target, "--examples", str(examples), "--workers", str(workers), "--json",
        env={"SIM_TEST_NOTES": str(noted)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    pids = [int(line) for line in noted.read_text().split()]
    assert data["runs"] == examples and data["violations"] == []
    assert len(pids) >= examples  # and a few more: a run whose drawing hypothesis cuts short is not counted
    assert len(set(pids)) == processes and os.getpid() not in pids


def test_a_programs_campaign_runs_each_worker_against_its_own_host(
    program: list[str], tmp_path: Path
) -> None:
    done = fuzz(
        "--examples", "10", "--workers", "2", "--json", "--", *program, "answers", tmp_path, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)  # the programs' own output never mixes into it
    assert MARKER not in done.stdout + done.stderr
    runs = notes(tmp_path)
    assert data["runs"] == len(runs) == 10 and data["violations"] == [] and data["requests"] == 10
    ports = Counter(port for _, port in runs)
    assert sorted(ports.values()) == [5, 5], ports  # two hosts, five examples each


def test_the_first_failure_stops_the_other_worker_and_is_reported_and_saved_once(
    program: list[str], tmp_path: Path
) -> None:
    saved = tmp_path / "failures"
    done = fuzz("--examples", "200", "--workers", "2", "--save", saved, "--", *program, "claims", tmp_path,
                cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    crashes = [line for line in done.stdout.splitlines() if line.startswith("! crash: ")]
    assert len(crashes) == 1 and "this worker's runs crash" in crashes[0], done.stdout
    assert len([line for line in done.stdout.splitlines() if line.startswith("smallest failing run")]) == 1
    assert [path.name for path in saved.iterdir()] == ["fuzz-target-seed-0.yaml"]
    claimed = (tmp_path / "claimed").read_text()
    others = [pid for pid, port in notes(tmp_path) if port != claimed]
    assert len(others) < 50, f"the other worker ran {len(others)} of its 100 examples: it was not stopped"


def test_a_database_is_shared_by_every_worker(program: list[str], tmp_path: Path) -> None:
    """A failure one campaign's workers keep is found by the next one's at once (two examples each, the
    database's first); without the database, two examples each (the simplest answers) find nothing."""
    database, command = tmp_path / "examples", [*program, "long-text", str(tmp_path)]
    quick = ("--examples", "4", "--workers", "2", "--json")
    assert fuzz(*quick, "--", *command, cwd=tmp_path).returncode == 0
    first = fuzz("--examples", "100", "--workers", "2", "--database", database, "--", *command, cwd=tmp_path)
    assert first.returncode == 1 and "cannot handle a long answer" in first.stdout, (
        first.stdout + first.stderr
    )
    again = fuzz(*quick, "--database", database, "--", *command, cwd=tmp_path)
    assert again.returncode == 1, again.stdout + again.stderr
    data = json.loads(again.stdout)
    assert [v["invariant"] for v in data["violations"]] == ["crash"]
    assert "cannot handle a long answer" in data["violations"][0]["detail"]


@pytest.mark.parametrize(
    ("how", "returncode", "grandchildren"),
    [(signal.SIGTERM, 143, True), (signal.SIGINT, 130, True), (signal.SIGKILL, -9, False)],
    ids=["SIGTERM", "Ctrl-C", "SIGKILL"],
)
def test_ending_sim_ends_every_worker_and_their_programs(
    how: signal.Signals, returncode: int, grandchildren: bool, program: list[str], tmp_path: Path
) -> None:
    """SIGTERM and Ctrl-C: each worker kills its program's process group (children included) before it
    ends; killed outright, sim takes its workers with it, and they their programs (the kernel's
    `PR_SET_PDEATHSIG`; a program's own children then outlive it)."""
    command = [*SIM, "fuzz", "--workers", "2", "--run-seconds", "600", "--", *program, "hangs", str(tmp_path)]
    sim = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    started: list[int] = []
    try:
        deadline = time.monotonic() + 60
        pids = tmp_path / "pids"
        while (not pids.exists() or len(pids.read_text().split()) < 4) and time.monotonic() < deadline:
            time.sleep(0.05)
        programs = [int(pid) for pid in pids.read_text().split()]
        workers = children(sim.pid)
        started = workers + programs
        assert len(workers) == 2 and len(programs) == 4, (workers, programs)
        os.kill(sim.pid, how)
        assert sim.wait(timeout=30) == returncode
        expected_gone = started if grandchildren else workers + programs[0::2]
        deadline = time.monotonic() + 10
        while any(map(alive, expected_gone)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(map(alive, expected_gone)), {pid: alive(pid) for pid in started}
        assert sim.stderr is not None and "Traceback" not in sim.stderr.read().decode()
    finally:
        sim.kill()
        sim.wait()
        for pid in filter(alive, started):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--workers", "0"], "--workers must be at least 1"),
        (["--workers", "-3"], "--workers must be at least 1"),
        (["--workers", "2", "--replay", "saved.yaml"], "--workers is for a campaign; --replay plays one run"),
    ],
)
def test_workers_below_one_or_with_a_replay_are_a_usage_error(args: list[str], said: str) -> None:
    done = in_process("fuzz", "--target", "tests.fuzz.targets:careful", *args)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and said in done.stderr, done.stderr


def test_one_worker_is_the_campaign_it_always_was() -> None:
    """`--workers 1` (the default) draws the same runs from the same seed: the same figures."""
    args = ("fuzz", "--target", "tests.fuzz.targets:careful", "--examples", "15", "--seed", "3", "--json")
    plain, one = in_process(*args), in_process(*args, "--workers", "1")
    assert plain.returncode == one.returncode == 0, plain.stdout + plain.stderr
    figures: list[dict[str, Any]] = [json.loads(done.stdout) for done in (plain, one)]
    assert figures[0] == figures[1] and figures[0]["runs"] == 15


def test_a_target_that_cannot_be_loaded_is_one_usage_line_however_many_workers_load_it() -> None:
    done = in_process("fuzz", "--target", "tests.fuzz.targets:missing", "--workers", "2")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "cannot load the target tests.fuzz.targets:missing" in done.stderr


def test_a_worker_ended_by_its_target_is_one_crash_finding_saved_once(tmp_path: Path) -> None:
    """Both workers' targets end their process: the first to end is the failure, reported and saved once."""
    saved = tmp_path / "failures"
    target = "tests.fuzz.targets:ends_the_process"
    done = in_process("fuzz", "--target", target, "--workers", "2", "--examples", "20", "--save", str(saved))
    assert done.returncode == 1, done.stdout + done.stderr
    crashes = [line for line in done.stdout.splitlines() if line.startswith("! crash: ")]
    assert len(crashes) == 1 and "ended sim's worker process (exit code" in crashes[0], done.stdout
    assert [path.name for path in saved.iterdir()] == ["fuzz-target-seed-0.yaml"]
