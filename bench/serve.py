"""Simulator throughput on 127.0.0.1: `sim serve --cycle` under a bounded load loop, next to a bare
Starlette app on the same uvicorn that returns one fixed completion (the reference), in the same run.

Each server is a separate process; the load comes from this process (asyncio, an httpx2 client, a fixed
number of requests at a fixed concurrency), so both share the machine's 2 cores with the client, as the
servers would in a test suite. Chat Completions and the Responses API, non-streamed and streamed (SSE)
replies; requests/s and p50/p99 latency, medians of `--repeats` rounds.

Run: python bench/serve.py [--requests 2000] [--concurrency 16] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

SCENARIO = """
name: bench
prompt: Run `echo 42`.
replies:
  - tool_calls: [{id: call_1, name: shell, arguments: {command: echo 42}}]
  - content: The command printed 42, which is the answer to the question you asked.
"""

REFERENCE = """
import json, socket, sys, uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
BODY = json.loads(sys.argv[1])
async def chat(request):
    await request.body()
    return JSONResponse(BODY)
app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
sock.bind(("127.0.0.1", 0))
sock.listen(2048)
print(f"OPENAI_BASE_URL=http://127.0.0.1:{sock.getsockname()[1]}/v1", flush=True)
uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False)).run(sockets=[sock])
"""

FIXED_REPLY = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}  # fmt: skip


def request_body(api: str, stream: bool) -> bytes:
    if api == "responses":
        tool = {"type": "function", "name": "shell", "description": "Runs.", "parameters": {"type": "object"}}
        body = {"model": "sim-model", "instructions": "You are a coding agent.", "input": "Run `echo 42`.",
                "tools": [tool], "store": False}  # fmt: skip
        if stream:
            body["stream"] = True
        return json.dumps(body).encode()
    body = {
        "model": "sim-model",
        "messages": [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Run `echo 42`."},
        ],
        "tools": [{"type": "function", "function": {"name": "shell", "description": "Runs.",
                                                    "parameters": {"type": "object"}}}],
    }  # fmt: skip
    if stream:
        body.update(stream=True, stream_options={"include_usage": True})
    return json.dumps(body).encode()


def start(command: list[str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    assert line.startswith("OPENAI_BASE_URL="), line
    return process, line.split("=", 1)[1]


async def load(
    base_url: str, total: int, concurrency: int, stream: bool, api: str = "chat"
) -> tuple[float, list[float]]:
    body = request_body(api, stream)
    path = "/responses" if api == "responses" else "/chat/completions"
    latencies: list[float] = []
    remaining = total
    limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx2.AsyncClient(base_url=base_url, limits=limits, timeout=30) as client:

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                started = time.perf_counter()
                response = await client.post(path, content=body, headers={"content-type": "application/json"})
                await response.aread()
                assert response.status_code == 200, response.text
                latencies.append(time.perf_counter() - started)

        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return total / (time.perf_counter() - began), latencies


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        scenario = Path(folder) / "bench.yaml"
        scenario.write_text(SCENARIO)
        servers = {
            "sim serve": [sys.executable, "-m", "sim.cli", "serve", str(scenario), "--port", "0", "--cycle"],
            "bare Starlette (reference)": [sys.executable, "-c", REFERENCE, json.dumps(FIXED_REPLY)],
        }
        rounds_said = f"{options.requests} requests a round, concurrency {options.concurrency}"
        print(f"{rounds_said}, medians of {options.repeats} rounds")
        print("| server | API | reply | requests/s | p50 ms | p99 ms |")
        print("|---|---|---|---:|---:|---:|")
        for name, command in servers.items():
            process, base_url = start(command)
            kinds = [(api, stream) for api in ("chat", "responses") for stream in (False, True)]
            try:
                for api, stream in kinds if name == "sim serve" else [("chat", False)]:
                    asyncio.run(load(base_url, 200, options.concurrency, stream, api))  # warm up
                    rounds = [
                        asyncio.run(load(base_url, options.requests, options.concurrency, stream, api))
                        for _ in range(options.repeats)
                    ]
                    rate = statistics.median(r for r, _ in rounds)
                    p50 = statistics.median(percentile(lat, 0.50) for _, lat in rounds) * 1000
                    p99 = statistics.median(percentile(lat, 0.99) for _, lat in rounds) * 1000
                    kind = "SSE" if stream else "JSON"
                    print(f"| {name} | {api} | {kind} | {rate:,.0f} | {p50:.1f} | {p99:.1f} |")
            finally:
                process.terminate()
                process.wait(timeout=10)


if __name__ == "__main__":
    main()
