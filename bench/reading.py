"""Reading long compact chains: µs per interaction of `sim show`, `check`, `convert` and `drift
--max-requests 5` on compact cassettes of 1,000, 4,000 and 16,000 interactions, each request the one
before with one more user message (no reply carried, so no request is taken at once for the continuation
of the one before: the case that had grown with the square of the chain). Goal: flat, the time per
interaction at 16,000 within 1.5 times that at 1,000.

Each command runs in this process as a user runs it (typer's runner, its output captured); drift asks an
upstream that answers at once (an httpx2 mock transport), so what is timed is reading the file and the
requests it makes. Medians of `--repeats` runs. Run another checkout's `sim` with `PYTHONPATH=DIR`.

Run: python bench/reading.py [--sizes 1000 4000 16000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx2
import yaml
from typer.testing import CliRunner

from sim.cli import app
from sim.drift.session import UpstreamConnection, drift_file

ANSWER = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
          "choices": [{"index": 0, "finish_reason": "stop",
                       "message": {"role": "assistant", "content": "ok"}}]}  # fmt: skip


def chain(count: int) -> str:
    """A compact cassette of `count` requests, each the one before with one more user message, written as
    `sim compact` writes an appended item."""
    base = '{\n  "model":"m",\n  "messages":[\n    ' + json.dumps({"role": "user", "content": "hi 0"})
    base += "\n  ]\n}"
    at = len(base) - len("\n  ]\n}")

    def one(body: object) -> dict[str, object]:
        return {"request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                            "headers": {}, "body": body},
                "response": {"status": {"code": 200, "message": "OK"}, "headers": {},
                             "body": {"string": json.dumps(ANSWER)}}}  # fmt: skip

    interactions = [one(base)]
    for number in range(1, count):
        add = ",\n    " + json.dumps({"role": "user", "content": f"hi {number}"})
        interactions.append(one({"extends": number - 1, "at": at, "add": add}))
        at += len(add)
    data = {"interactions": interactions, "version": 1, "sim": {"compact": True}}
    return yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), width=10**9)


def command(*args: str) -> Callable[[], None]:
    def run() -> None:
        result = CliRunner().invoke(app, list(args))
        assert result.exit_code == 0, result.output[-500:]

    return run


def drift(path: Path) -> Callable[[], None]:
    async def ask() -> None:
        transport = httpx2.MockTransport(lambda request: httpx2.Response(200, json=ANSWER))
        async with httpx2.AsyncClient(transport=transport) as http:
            result = await drift_file(
                path, UpstreamConnection("http://upstream.test/v1", {}, http), max_requests=5
            )
        assert result.problem is None, result.problem

    return lambda: asyncio.run(ask())


def timed(work: Callable[[], None], repeats: int) -> float:
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000, 16000])
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    print("| interactions | MB | command | seconds | µs per interaction | vs the smallest |")
    print("|---:|---:|---|---:|---:|---:|")
    first: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for size in options.sizes:
            path = folder / f"chain-{size}.yaml"
            path.write_text(chain(size))
            works = {
                "show": command("show", str(path)),
                "check": command("check", str(path)),
                "convert": command("convert", str(path), "-o", str(folder / "out.yaml"), "--force"),
                "drift --max-requests 5": drift(path),
            }
            for label, work in works.items():
                seconds = timed(work, options.repeats)
                per = seconds / size * 1e6
                ratio = per / first.setdefault(label, per)
                megabytes = path.stat().st_size / 1e6
                print(
                    f"| {size:,} | {megabytes:.1f} | {label} | {seconds:.2f} | {per:,.0f} | {ratio:.2f}x |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
