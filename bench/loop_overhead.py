"""Per-turn cost of `AgentRunner` against a bare dict-based loop, at growing history lengths.

Both loops run N turns in the same process: N-1 replies that call one trivial in-memory tool, then a
final answer. sim's loop validates pairing, snapshots the registry, validates the arguments against the
tool's pydantic model and asks an approver every call. Medians of `--repeats` runs; µs per turn.

The scripts are built before timing. By default they are then frozen out of the garbage collector's
sight (`gc.freeze()`, for both loops): they are fixtures, and a long run would otherwise make every
full collection walk all of them. `--no-freeze` shows the figures without that.

Run: python bench/loop_overhead.py [--repeats 7] [--no-freeze]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import time
from collections.abc import Callable, Coroutine
from typing import Any

from pydantic import BaseModel

from sim import (
    AgentRunner,
    AllowAllApprover,
    ModelReply,
    ScriptedModel,
    ToolCall,
    ToolContext,
    ToolDefinition,
    ToolRegistry,
    ToolResult,
)

SIZES = (10, 100, 1_000, 10_000)


async def bare_loop(replies: list[dict[str, Any]], tools: dict[str, Callable[..., str]], prompt: str) -> str:
    """The reference: thirty lines of dicts, no validation, no approval."""
    history: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    script = iter(replies)

    async def model(messages: list[dict[str, Any]]) -> dict[str, Any]:
        return next(script)

    for _ in range(len(replies)):
        reply = await model(history)
        history.append(reply)
        if not reply.get("tool_calls"):
            return str(reply["content"])
        for call in reply["tool_calls"]:
            function = tools.get(call["function"]["name"])
            try:
                arguments = json.loads(call["function"]["arguments"])
                content = function(**arguments) if function else "Error: unknown tool"
            except Exception as error:
                content = f"Error: {error}"
            history.append({"role": "tool", "tool_call_id": call["id"], "content": content})
    raise RuntimeError("max turns")


class Echo(BaseModel):
    text: str


def echo(arguments: Echo, context: ToolContext) -> ToolResult:
    return ToolResult.ok(arguments.text)


def sim_script(turns: int) -> list[ModelReply | Exception]:
    calls: list[ModelReply | Exception] = [
        ModelReply.calling(ToolCall(id=f"call_{i}", name="echo", arguments=json.dumps({"text": f"t{i}"})))
        for i in range(turns - 1)
    ]
    return [*calls, ModelReply.final("done")]


def bare_script(turns: int) -> list[dict[str, Any]]:
    calls = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"call_{i}", "function": {"name": "echo", "arguments": json.dumps({"text": f"t{i}"})}}
            ],
        }
        for i in range(turns - 1)
    ]
    return [*calls, {"role": "assistant", "content": "done"}]


FREEZE_FIXTURES = True


def timed(work: Callable[[], Coroutine[Any, Any, None]], turns: int) -> float:
    """µs per turn of `work`; prebuilt scripts are frozen out of the collector's sight (both loops)."""
    gc.collect()
    if FREEZE_FIXTURES:
        gc.freeze()
    try:
        started = time.perf_counter()
        asyncio.run(work())
        return (time.perf_counter() - started) / turns * 1e6
    finally:
        gc.unfreeze()


def time_sim(turns: int, runs: int) -> float:
    scripts = [sim_script(turns) for _ in range(runs)]
    tools = ToolRegistry([ToolDefinition("echo", "Echoes text.", Echo, "read", echo)])

    async def all_runs() -> None:
        for script in scripts:
            runner = AgentRunner(ScriptedModel(script), tools, AllowAllApprover(), max_turns=turns)
            await runner.run("go")

    return timed(all_runs, runs * turns)


def time_bare(turns: int, runs: int) -> float:
    scripts = [bare_script(turns) for _ in range(runs)]
    tools = {"echo": lambda text: text}

    async def all_runs() -> None:
        for script in scripts:
            await bare_loop(script, tools, "go")

    return timed(all_runs, runs * turns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--no-freeze", action="store_true", help="leave the prebuilt scripts to the garbage collector"
    )
    options = parser.parse_args()
    global FREEZE_FIXTURES
    FREEZE_FIXTURES = not options.no_freeze
    rows = []
    for turns in SIZES:
        runs = max(1, 20_000 // turns)
        sim_times, bare_times = [], []
        for _ in range(options.repeats):
            sim_times.append(time_sim(turns, runs))
            bare_times.append(time_bare(turns, runs))
        rows.append((turns, statistics.median(sim_times), statistics.median(bare_times)))
    base = rows[0][1]
    print("| turns N | sim µs/turn | bare loop µs/turn | sim / bare | sim vs N=10 |")
    print("|---:|---:|---:|---:|---:|")
    for turns, sim_us, bare_us in rows:
        print(
            f"| {turns:,} | {sim_us:.1f} | {bare_us:.1f} | {sim_us / bare_us:.1f}x | {sim_us / base:.2f}x |"
        )


if __name__ == "__main__":
    main()
