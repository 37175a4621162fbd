"""Fuzzing a program (`sim fuzz -- COMMAND`): what sim adds per example beyond the program's own run, and
what `--workers 2` gains over `--workers 1`, in the same run (medians).

(a) Per example: a trivial program (one Chat Completions request with the standard library, then exit; or
with `--node`, the same in Node with `fetch`) is fuzzed with `--examples N` and `--examples 2N`; one more
run of a campaign costs the difference of the two campaigns over the difference of their runs (so that
sim's start-up cancels out). The program's own run is measured by running it N times directly from this
process against `sim serve SCENARIO --cycle` (a server answering every request). What sim adds is the one
less the other, in wall time and in CPU time (sim's processes and the programs', from this process's
ended children: steadier than the wall clock on a shared box); each repeat measures the two campaigns and
the direct runs one after the other, and the figures are medians of the repeats. Goal: at most 20 ms.

(b) Workers: `sim fuzz --workers 1` and `--workers 2` with the same examples, alternating, `--repeats`
campaigns each; the ratio of their median wall times (start-up included, as a user waits for it). Goal:
at least 1.7x on 2 cores. The program here makes a short tool loop's worth of work: the trivial one.

Every campaign runs with the `api` profile and seed 0, its verdict ignored (a program that exits 1 after
an error reply the API can send is counted, not a finding). The box's other load moves the figures: run it
on a quiet machine.

Run: python bench/fuzz_program.py [--examples 100] [--repeats 5] [--workers-examples 200] [--node]
Short check: python bench/fuzz_program.py --examples 20 --repeats 2 --workers-examples 40
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

SIM = [sys.executable, "-m", "sim.cli"]
ROOT = Path(__file__).resolve().parents[1]

PYTHON_PROGRAM = """
import json, os, urllib.request
body = {"model": "m", "messages": [{"role": "user", "content": "Say hello."}]}
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps(body).encode(),
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"},
)
try:
    urllib.request.urlopen(request, timeout=30).read()
except Exception:
    raise SystemExit(1)
"""

NODE_PROGRAM = """
const body = {model: "m", messages: [{role: "user", content: "Say hello."}]};
const response = await fetch(process.env.OPENAI_BASE_URL + "/chat/completions", {
  method: "POST",
  headers: {authorization: "Bearer " + process.env.OPENAI_API_KEY, "content-type": "application/json"},
  body: JSON.stringify(body),
});
await response.text();
process.exit(response.ok ? 0 : 1);
"""

SCENARIO = """
name: bench-program
prompt: Say hello.
replies:
  - content: Hello.
"""


def program(folder: Path, node: bool) -> list[str]:
    """The trivial program's command line, its file written in `folder`."""
    if node:
        path = folder / "program.mjs"
        path.write_text(NODE_PROGRAM)
        found = shutil.which("node")
        if found is None:
            raise SystemExit("--node: node is not on PATH")
        return [found, str(path)]
    path = folder / "program.py"
    path.write_text(PYTHON_PROGRAM)
    return [sys.executable, str(path)]


def children_cpu() -> float:
    """The CPU time (user and system) of this process's children that have ended, their own children's
    included."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def campaign(command: list[str], examples: int, workers: int, folder: Path) -> tuple[float, float, int]:
    """One `sim fuzz` campaign against `command`: its wall time, the CPU time of sim and of the programs
    it ran, and the runs it made."""
    started, cpu = time.perf_counter(), children_cpu()
    done = subprocess.run(
        [*SIM, "fuzz", "--examples", str(examples), "--workers", str(workers), "--json",
         "--save", str(folder / "failures"), "--", *command],
        capture_output=True, text=True, cwd=folder, check=False,
    )  # fmt: skip
    took, used = time.perf_counter() - started, children_cpu() - cpu
    if done.returncode not in (0, 1) or not done.stdout.strip():
        raise SystemExit(f"sim fuzz failed (exit code {done.returncode}):\n{done.stderr[-2000:]}")
    return took, used, int(json.loads(done.stdout)["runs"])


@contextlib.contextmanager
def served(folder: Path) -> Iterator[dict[str, str]]:
    """`sim serve SCENARIO --cycle` (answering every request) while the block runs: the environment a
    program is run in against it."""
    scenario = folder / "scenario.yaml"
    scenario.write_text(SCENARIO)
    server = subprocess.Popen(
        [*SIM, "serve", str(scenario), "--cycle", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=folder,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        line = server.stdout.readline().strip()
        if not line.startswith("OPENAI_BASE_URL="):
            raise SystemExit(f"sim serve did not start: {line!r}")
        yield {**os.environ, "OPENAI_BASE_URL": line.split("=", 1)[1], "OPENAI_API_KEY": "sim-bench"}
    finally:
        server.terminate()
        server.wait(timeout=10)


def direct_runs(command: list[str], runs: int, environment: dict[str, str]) -> tuple[float, float]:
    """The program run `runs` times from this process against a server: the wall and CPU time of a run,
    on average."""
    started, cpu = time.perf_counter(), children_cpu()
    for _ in range(runs):
        ran = subprocess.run(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             check=False)  # fmt: skip
        if ran.returncode != 0:
            raise SystemExit(f"the program failed against sim serve: {ran.stderr.decode()[-500:]}")
    return (time.perf_counter() - started) / runs, (children_cpu() - cpu) / runs


def per_example(command: list[str], examples: int, repeats: int, folder: Path) -> None:
    """(a): what sim adds to each run of the program, in wall time and in CPU time; each repeat measures
    both campaigns and the direct runs one after the other, so that they meet the same load."""
    wall: list[float] = []
    cpu: list[float] = []
    own_wall: list[float] = []
    own_cpu: list[float] = []
    campaign(command, examples, 1, folder)  # not counted: the first campaign in a folder is slower
    with served(folder) as environment:
        for _ in range(repeats):
            small_wall, small_cpu, small_runs = campaign(command, examples, 1, folder)
            large_wall, large_cpu, large_runs = campaign(command, 2 * examples, 1, folder)
            one_wall, one_cpu = direct_runs(command, examples, environment)
            extra = large_runs - small_runs
            wall.append((large_wall - small_wall) / extra)
            cpu.append((large_cpu - small_cpu) / extra)
            own_wall.append(one_wall)
            own_cpu.append(one_cpu)
    added_wall = statistics.median(w - o for w, o in zip(wall, own_wall, strict=True))
    added_cpu = statistics.median(c - o for c, o in zip(cpu, own_cpu, strict=True))
    print(f"(a) per example: campaigns of {examples} and {2 * examples} examples against {examples} direct"
          f" runs, medians of {repeats} repeats (ms)")  # fmt: skip
    print(f"    one more run of a campaign: {ms(wall)} wall, {ms(cpu)} CPU (sim and the program)")
    print(f"    the program's own run (direct, against sim serve): {ms(own_wall)} wall, {ms(own_cpu)} CPU")
    print(f"    what sim adds per example: {added_wall * 1000:.1f} wall, {added_cpu * 1000:.1f} CPU"
          " (goal: at most 20 ms)")  # fmt: skip


def ms(seconds: list[float]) -> str:
    """The median of `seconds`, in milliseconds."""
    return f"{statistics.median(seconds) * 1000:.1f}"


def workers_ratio(command: list[str], examples: int, repeats: int, folder: Path) -> None:
    """(b): `--workers 2` against `--workers 1`, alternating."""
    times: dict[int, list[float]] = {1: [], 2: []}
    for round_number in range(repeats):
        for workers in (1, 2) if round_number % 2 == 0 else (2, 1):
            took, _, _ = campaign(command, examples, workers, folder)
            times[workers].append(took)
    one, two = statistics.median(times[1]), statistics.median(times[2])
    print(f"(b) workers, {examples} examples, medians of {repeats} campaigns each (alternating)")
    print(f"    --workers 1: {one:.2f} s; --workers 2: {two:.2f} s; {one / two:.2f}x (goal: at least 1.7x"
          f" on 2 cores; this box has {os.cpu_count()})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=100, help="(a): campaigns of N and 2N examples")
    parser.add_argument("--repeats", type=int, default=5, help="campaigns of each kind")
    parser.add_argument("--workers-examples", type=int, default=200, help="(b): examples per campaign")
    parser.add_argument("--node", action="store_true", help="the trivial program in Node instead of Python")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sim-bench-fuzz-program-") as temporary:
        folder = Path(temporary)
        command = program(folder, arguments.node)
        print(f"program: {'node' if arguments.node else 'python'} (one request, then exit)")
        per_example(command, arguments.examples, arguments.repeats, folder)
        workers_ratio(command, arguments.workers_examples, arguments.repeats, folder)


if __name__ == "__main__":
    main()
