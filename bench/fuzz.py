"""Fuzzing speed: examples/s of `sim fuzz-loop --via direct` and `--via sdk`, next to a bare 30-line loop
fuzzed with the same hypothesis settings and the same drawn scenarios, in the same run (medians of
`--repeats` campaigns).

All campaigns draw the same scenarios (same strategy, same seed); the bare one runs a dict-based loop
on the drawn replies with no checks, the sim ones run `AgentRunner` against the scenario's script and
world and check every invariant: `direct`, the loop asking the script's answerer in process
(`AnswererModel`); `sdk`, the real adapter and SDK over the in-process transport to the host. The
difference is what sim's loop and invariants (and, with `sdk`, the SDK and HTTP) cost on top of drawing
the examples.

Then the target rows: `sim fuzz --target examples.openai_loop:run_agent` (a raw SDK loop over real HTTP
to the drawing simulator on 127.0.0.1) in this process, and the same campaign as two `fuzz_test` tests
run by pytest in one process and under `-n 2` (wall time of the whole pytest run, start-up included).

With `--where`, instead: where a campaign's time goes, one campaign of each kind under cProfile, its own
(self) time summed by the part of the stack that spent it (hypothesis, sim's loop, the drawer and checks,
the simulator and codecs, the SDK and httpx, the event loop and threads waiting, the rest).

With `--command`, instead: the milliseconds an example adds to the `sim fuzz --target` command.

With `--cpu`, the campaign rows count this process's CPU time rather than the wall clock.

Run: python bench/fuzz.py [--examples 300] [--repeats 5] [--pytest-examples 600] [--cpu] [--where | --command]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import seed as hypothesis_seed

from sim.fuzz.campaign import campaign_settings, fuzz
from sim.fuzz.strategies import scenarios
from sim.fuzz.target import fuzz_target, load_target
from sim.player import Via
from sim.scenario.schema import Scenario

ROOT = Path(__file__).resolve().parents[1]

clock = time.perf_counter
"""What the campaign rows time: the wall clock, or with `--cpu` this process's CPU time (steadier when
other work shares the machine)."""


def bare_loop(scenario: Scenario) -> str | None:
    """The reference: thirty lines of dicts, no validation, no approval, no checks."""
    history: list[dict[str, Any]] = [{"role": "user", "content": scenario.require_prompt()}]
    replies = iter(scenario.replies)
    for _ in range(scenario.max_turns):
        reply = next(replies, None)
        if reply is None or reply.error is not None:
            return None
        message = {"role": "assistant", "content": reply.content,
                   "tool_calls": [c.model_dump() for c in reply.tool_calls]}  # fmt: skip
        history.append(message)
        if not reply.tool_calls:
            return reply.content
        for call in reply.tool_calls:
            try:
                arguments = json.loads(call.raw_arguments())
                content = f"ran {arguments['command']}" if call.name == "shell" else "ok"
            except Exception as error:
                content = f"Error: {error}"
            history.append({"role": "tool", "tool_call_id": call.id, "content": content})
    return None


def bare_campaign(examples: int, seed: int) -> float:
    @campaign_settings(examples)
    @hypothesis_seed(seed)
    @given(scenarios())
    def campaign(scenario: Scenario) -> None:
        bare_loop(scenario)

    started = clock()
    campaign()
    return examples / (clock() - started)


def sim_campaign(examples: int, seed: int, via: Via = "direct") -> float:
    started = clock()
    report = fuzz(examples=examples, seed=seed, via=via)
    assert report.failure is None and report.runs == examples
    return examples / (clock() - started)


def target_campaign(examples: int, seed: int) -> float:
    started = clock()
    campaign = fuzz_target(load_target("examples.openai_loop:run_agent"), examples=examples, seed=seed)
    assert campaign.failure is None and campaign.runs == examples and campaign.requests > examples
    return examples / (clock() - started)


def command_campaign(examples: int) -> tuple[float, float]:
    """Milliseconds an example adds to `sim fuzz --target examples.openai_loop:run_agent` as users run it
    (the whole command, its worker process included): the wall time, and the CPU time of sim and its worker
    (which a busy machine disturbs less), of `examples` examples less those of one, over the examples
    between."""

    def spent(count: int) -> tuple[float, float]:
        command = [sys.executable, "-m", "sim.cli", "fuzz", "--target", "examples.openai_loop:run_agent",
                   "--examples", str(count), "--json"]  # fmt: skip
        before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        after, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter() - started
        assert done.returncode == 0, done.stdout + done.stderr
        return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime

    (many_wall, many_cpu), (one_wall, one_cpu) = spent(examples), spent(1)
    return (many_wall - one_wall) * 1000 / (examples - 1), (many_cpu - one_cpu) * 1000 / (examples - 1)


SUITE = """
from examples.openai_loop import run_agent
from sim.fuzz import fuzz_test

test_first = fuzz_test(run_agent, examples={half})
test_second = fuzz_test(run_agent, examples={half})
"""


def pytest_campaign(examples: int, workers: list[str]) -> tuple[float, float]:
    """examples/s over the whole pytest run (start-up included), and over the campaigns alone (from
    pytest's call durations: their sum in one process, the longer one when two workers run them)."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "test_fuzzing.py").write_text(SUITE.format(half=examples // 2))
        command = [sys.executable, "-m", "pytest", "test_fuzzing.py", "-q", "-p", "no:cacheprovider",
                   "--durations=0", "--durations-min=0", *workers]  # fmt: skip
        environment = {**os.environ, "PYTHONPATH": str(ROOT)}
        started = time.perf_counter()
        done = subprocess.run(
            command, cwd=folder, env=environment, capture_output=True, text=True, check=False
        )
        wall = time.perf_counter() - started
        assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout + done.stderr
        calls = [float(line.split("s ", 1)[0]) for line in done.stdout.splitlines() if " call " in line]
        assert len(calls) == 2, done.stdout
        return examples / wall, examples / (max(calls) if workers else sum(calls))


PARTS = [  # (the part of the stack, what its files' paths contain), the first that matches wins
    ("hypothesis: drawing, shrinking, the database", ("/hypothesis/",)),
    ("sim: the drawer, strategies, invariants, findings", ("/sim/fuzz/", "/sim/scenario/")),
    ("sim: the loop, messages, tools", ("/sim/core/",)),
    ("sim: the host, the simulator and the wire codecs", ("/sim/host/", "/sim/wire/",
                                                           "/sim/adapters/", "/sim/cassette/")),
    ("pydantic, the openai SDK, httpx", ("/openai/", "/httpx", "/httpcore", "/pydantic", "/h11/",
                                                  "/anyio/", "/starlette/", "/uvicorn/", "/examples/")),
    ("waiting: event loop, threads, sockets", ("asyncio", "threading", "selectors", "socket", "queue",
                                               "'acquire'", "method select", "'poll'")),
]  # fmt: skip


def _part(key: tuple[str, int, str]) -> str | None:
    place = f"{key[0]} {key[2]}"
    return next((name for name, marks in PARTS if any(mark in place for mark in marks)), None)


def where_the_time_goes(run: Any, label: str) -> None:
    """Print the self time of one campaign under cProfile (the thread that runs it), summed by part of the
    stack; a builtin's time (`len`, `isinstance`, dict methods) goes to the parts that called it, in
    proportion to the time each call took."""
    profile = cProfile.Profile()
    profile.enable()
    run()
    profile.disable()
    totals: dict[str, float] = {}
    stats: dict[Any, Any] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    for key, (_calls, _primitive, own, _cumulative, callers) in stats.items():
        part = _part(key)
        if part is None and callers:
            shares = {caller: numbers[3] for caller, numbers in callers.items()}
            called = sum(shares.values()) or 1.0
            for caller, share in shares.items():
                called_from = _part(caller) or "the rest"
                totals[called_from] = totals.get(called_from, 0.0) + own * share / called
            continue
        totals[part or "the rest"] = totals.get(part or "the rest", 0.0) + own
    whole = sum(totals.values())
    print(f"\n{label}: {whole:.1f} s of self time under cProfile")
    print("| part of the stack | share |")
    print("|---|---:|")
    for part, spent in sorted(totals.items(), key=lambda pair: -pair[1]):
        print(f"| {part} | {spent / whole:.0%} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pytest-examples", type=int, default=4000)
    parser.add_argument("--where", action="store_true", help="profile one campaign of each kind instead")
    parser.add_argument("--command", action="store_true", help="time the `sim fuzz --target` command instead")
    parser.add_argument("--cpu", action="store_true", help="campaign rows in this process's CPU time")
    options = parser.parse_args()
    if options.cpu:
        global clock
        clock = time.process_time
    if options.command:
        walls, cpus = zip(*(command_campaign(options.examples) for _ in range(options.repeats)), strict=True)
        print(f"sim fuzz --target examples.openai_loop:run_agent, {options.examples} examples, medians of"
              f" {options.repeats}: {statistics.median(walls):.2f} ms an example (wall),"
              f" {statistics.median(cpus):.2f} ms (CPU)")  # fmt: skip
        return
    if options.where:
        where_the_time_goes(lambda: bare_campaign(options.examples, 0), "bare 30-line loop")
        where_the_time_goes(lambda: sim_campaign(options.examples, 0), "sim fuzz-loop --via direct")
        where_the_time_goes(lambda: target_campaign(options.examples, 0), "sim fuzz --target, in process")
        return
    bare, ours, sdk = [], [], []
    for repeat in range(options.repeats):
        bare.append(bare_campaign(options.examples, seed=repeat))
        ours.append(sim_campaign(options.examples, seed=repeat))
        sdk.append(sim_campaign(options.examples, seed=repeat, via="sdk"))
    bare_rate, our_rate, sdk_rate = statistics.median(bare), statistics.median(ours), statistics.median(sdk)
    timed = "CPU time" if options.cpu else "wall time"
    print(f"{options.examples} examples a campaign, medians of {options.repeats} campaigns, {timed}")
    print("| campaign | examples/s | vs bare loop |")
    print("|---|---:|---:|")
    print(f"| bare 30-line loop (reference) | {bare_rate:,.0f} | 100% |")
    print(f"| sim fuzz-loop --via direct | {our_rate:,.0f} | {our_rate / bare_rate:.0%} |")
    print(f"| sim fuzz-loop --via sdk | {sdk_rate:,.0f} | {sdk_rate / bare_rate:.0%} |")
    targets = [target_campaign(options.examples, seed=repeat) for repeat in range(options.repeats)]
    single = [pytest_campaign(options.pytest_examples, []) for _ in range(3)]
    spread = [pytest_campaign(options.pytest_examples, ["-n", "2"]) for _ in range(3)]
    target_rate = statistics.median(targets)
    single_wall, single_calls = (statistics.median(rates) for rates in zip(*single, strict=True))
    spread_wall, spread_calls = (statistics.median(rates) for rates in zip(*spread, strict=True))
    print(f"\ntarget rows: examples.openai_loop:run_agent over HTTP; pytest rows: {options.pytest_examples}"
          " examples in two fuzz_test tests, medians of 3 runs")  # fmt: skip
    print(
        "| campaign | examples/s, whole run | vs one process | examples/s, campaigns only | vs one process |"
    )
    print("|---|---:|---:|---:|---:|")
    print(f"| sim fuzz --target, in process | | | {target_rate:,.0f} | |")
    print(f"| pytest, one process | {single_wall:,.0f} | 100% | {single_calls:,.0f} | 100% |")
    print(f"| pytest -n 2 | {spread_wall:,.0f} | {spread_wall / single_wall:.2f}x | {spread_calls:,.0f} |"
          f" {spread_calls / single_calls:.2f}x |")  # fmt: skip


if __name__ == "__main__":
    main()
