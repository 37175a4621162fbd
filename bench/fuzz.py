"""Fuzzing speed: examples/s of `sim fuzz --via direct`, next to a bare 30-line loop fuzzed with the same
hypothesis settings and the same drawn scenarios, in the same run (medians of `--repeats` campaigns).

Both campaigns draw the same scenarios (same strategy, same seed); the bare one runs a dict-based loop
on the drawn replies with no checks, the sim one runs `AgentRunner` against the strict fakes and checks
every invariant. The difference is what sim's loop and invariants cost on top of drawing the examples.

Run: python bench/fuzz.py [--examples 300] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from hypothesis import given
from hypothesis import seed as hypothesis_seed

from sim.scenario.schema import Scenario
from sim.testing.campaign import campaign_settings, fuzz
from sim.testing.strategies import scenarios


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

    started = time.perf_counter()
    campaign()
    return examples / (time.perf_counter() - started)


def sim_campaign(examples: int, seed: int) -> float:
    started = time.perf_counter()
    report = fuzz(examples=examples, seed=seed)
    assert report.failure is None and report.runs == examples
    return examples / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    bare, ours = [], []
    for repeat in range(options.repeats):
        bare.append(bare_campaign(options.examples, seed=repeat))
        ours.append(sim_campaign(options.examples, seed=repeat))
    bare_rate, our_rate = statistics.median(bare), statistics.median(ours)
    print(f"{options.examples} examples a campaign, medians of {options.repeats} campaigns")
    print("| campaign | examples/s | vs bare loop |")
    print("|---|---:|---:|")
    print(f"| bare 30-line loop (reference) | {bare_rate:,.0f} | 100% |")
    print(f"| sim fuzz --via direct | {our_rate:,.0f} | {our_rate / bare_rate:.0%} |")


if __name__ == "__main__":
    main()
