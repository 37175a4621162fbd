"""The Responses store under long sessions: `sim serve` in its own process answering a long Responses
session from this process over 127.0.0.1, its peak resident memory (the kernel's high-water mark) and the
time a request takes at the start and at the end of the session.

Two shapes, as the hostile tester ran them: a stateless session (each request sends the whole input so
far, as a client with `store: false` semantics does, and every response is stored) and a chain through
`previous_response_id` (each request sends only the call's output). Memory and time per request should
not grow with the square of the session.

`--source DIR` runs another checkout's `sim` (e.g. the previous release) for a reference row.

Run: python bench/store.py [--stateless 1200] [--chain 6000] [--source DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2

sys.path.insert(0, str(Path(__file__).parent))
from replay import scenario


def peak_rss_mb(pid: int) -> float:
    """The process's resident-memory high-water mark, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def session(url: str, turns: int, chained: bool) -> list[float]:
    """Seconds per request of one session of `turns` requests."""
    tools = [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]
    items: list[Any] = [{"role": "user", "content": "Count for me."}]
    body: dict[str, Any] = {"model": "m", "input": items, "tools": tools}
    took = []
    with httpx2.Client(base_url=url, timeout=120) as client:
        for _ in range(turns):
            started = time.perf_counter()
            response = client.post("/responses", json=body)
            took.append(time.perf_counter() - started)
            assert response.status_code == 200, response.text
            output = response.json()["output"]
            results = [
                {"type": "function_call_output", "call_id": item["call_id"], "output": "42"}
                for item in output
                if item["type"] == "function_call"
            ]
            if chained:
                body = {
                    "model": "m",
                    "input": results,
                    "tools": tools,
                    "previous_response_id": response.json()["id"],
                }
            else:
                items += [*output, *results]
                body = {"model": "m", "input": items, "tools": tools}
    return took


def measure(turns: int, chained: bool, folder: Path, source: Path | None) -> tuple[float, float, float]:
    """The server's peak RSS in MB, and the median ms of the first and the last 100 requests."""
    environment = dict(os.environ)
    if source is not None:
        environment["PYTHONPATH"] = str(source)
    script = folder / f"long-{turns}.yaml"
    script.write_text(scenario(turns))
    server = subprocess.Popen(
        [sys.executable, "-m", "sim.cli", "serve", str(script), "--port", "0", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=environment, cwd=folder,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip().removeprefix("OPENAI_BASE_URL=")
        took = session(url, turns, chained)
        rss = peak_rss_mb(server.pid)
    finally:
        server.kill()
        server.wait(timeout=30)
    first, last = (statistics.median(part) * 1000 for part in (took[:100], took[-100:]))
    return rss, first, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--stateless", type=int, default=1200)
    parser.add_argument("--chain", type=int, default=6000)
    parser.add_argument("--source", type=Path, help="another checkout whose `sim` to run")
    options = parser.parse_args()
    print("| session | requests | server peak RSS | ms a request, first 100 | ms a request, last 100 |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        for label, turns, chained in (
            ("stateless", options.stateless, False),
            ("chain", options.chain, True),
        ):
            rss, first, last = measure(turns, chained, Path(folder), options.source)
            print(f"| {label} | {turns:,} | {rss:.0f} MB | {first:.1f} | {last:.1f} |", flush=True)


if __name__ == "__main__":
    main()
