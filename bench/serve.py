"""Simulator throughput on 127.0.0.1: `sim serve --cycle` under a bounded load loop, next to a bare
Starlette app on the same uvicorn that returns one fixed completion (the reference), in the same run.

Each server is a separate process; the load comes from this process (asyncio, an httpx2 client, a fixed
number of requests at a fixed concurrency), so both share the machine's 2 cores with the client, as the
servers would in a test suite. Chat Completions and the Responses API, non-streamed and streamed (SSE)
replies; requests/s and p50/p99 latency, medians of `--repeats` rounds.

Two more tables: `sim serve CASSETTE` against `sim serve SCENARIO` answering the same 100-turn session
(recorded through `sim proxy`; a fresh server each round, the requests sent in order as the conversation
sends them), and the latency `sim proxy` adds per request over a local upstream (the same request sent
directly and through the proxy, one at a time).

With `--against DIR`, each table is measured for the sim of DIR too (say the release before: its servers
and its proxy started through `PYTHONPATH`), its rounds alternating with this checkout's in the same run,
and a table beside each prints both and the median of the rounds' now/before ratios. The recorded session
and the proxy's upstream are the same for both (recorded and served by DIR's sim, which both can read).

With `--rate-limit [LIMIT]`, this checkout's `sim serve` simulates rate limits (LIMIT left out: one high
enough never to throttle), so that `--rate-limit --against .` measures what the limiter costs (the same
checkout beside itself, without a limit).

Run: python bench/serve.py [--requests 2000] [--concurrency 16] [--repeats 3] [--tables ...] [--against DIR]
     [--rate-limit [requests=N/min,tokens=N/min]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2

# this script's folder is on the path
from checkouts import checked, cpu_seconds, in_turn, launch, paired_ratio

SIM = [sys.executable, "-m", "sim.cli"]
NEVER_THROTTLES = "requests=1000000000000/min,tokens=1000000000000/min"
"""A rate limit no bench comes near: every answer carries the x-ratelimit-* headers, none is a 429."""

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


def start(command: list[str], checkout: Path | None = None) -> tuple[subprocess.Popen[str], str]:
    """A server started with `command` (by `checkout`'s sim if given), and the base URL it announced."""
    started = launch(checkout) if checkout is not None else {}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, **started
    )
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


LONG_SESSION_TURNS = 100


def long_scenario(turns: int) -> str:
    """A scenario of `turns` replies: a weather call each turn, then the answer."""
    calls = "".join(
        f"  - tool_calls: [{{id: call_{n}, name: get_weather, arguments: {{city: City {n}}}}}]\n"
        for n in range(turns - 1)
    )
    return f"name: long\nprompt: Weather everywhere?\nreplies:\n{calls}  - content: Sunny everywhere.\n"


def record_long_session(folder: Path, checkout: Path | None = None) -> tuple[Path, Path]:
    """The long scenario, and a cassette of a raw SDK loop playing it through `sim proxy` (`checkout`'s)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from openai import OpenAI

    from examples.frameworks.raw_sdk_weather import run_chat

    scenario, cassette = folder / "long.yaml", folder / "long.cassette.yaml"
    scenario.write_text(long_scenario(LONG_SESSION_TURNS))
    upstream, upstream_url = start([*SIM, "serve", str(scenario), "--port", "0", "--once"], checkout)
    started: dict[str, Any] = launch(checkout) if checkout is not None else {"env": os.environ}
    environment = {**started["env"], "OPENAI_API_KEY": "sk-bench-upstream-key"}
    proxy = subprocess.Popen(
        [*SIM, "proxy", str(cassette), "--upstream", upstream_url, "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=environment, cwd=started.get("cwd"),
    )  # fmt: skip
    assert proxy.stdout is not None
    proxy_url = proxy.stdout.readline().strip().split("=", 1)[1]
    with OpenAI(base_url=proxy_url, api_key="sk-bench", max_retries=0) as client:
        assert run_chat(client, "Weather everywhere?", max_turns=LONG_SESSION_TURNS) == "Sunny everywhere."
    proxy.send_signal(signal.SIGINT)
    proxy.wait(timeout=30)
    upstream.wait(timeout=30)
    return scenario, cassette


async def conversation(base_url: str, bodies: list[bytes]) -> float:
    """Seconds to send `bodies` in order, each after the answer to the one before."""
    async with httpx2.AsyncClient(base_url=base_url, timeout=30) as client:
        began = time.perf_counter()
        for body in bodies:
            response = await client.post(
                "/chat/completions", content=body, headers={"content-type": "application/json"}
            )
            assert response.status_code == 200, response.text
        return time.perf_counter() - began


def serve_cassette_rows(folder: Path, repeats: int, against: Path | None = None) -> None:
    # recorded by the other checkout when there is one: both read its files (not always the other way round)
    scenario, cassette = record_long_session(folder, against)
    from sim.cassette.reader import read_cassette
    from sim.cassette.writer import without_layout

    # what the program sent: the SDK's compact JSON (the cassette lays it out for reading)
    bodies = [
        without_layout((i.request.body or b"").decode()).encode()
        for i in read_cassette(cassette).interactions
    ]
    print(f"\n{len(bodies)}-turn session, requests in conversation order; medians of {repeats} fresh servers")
    print("| served from | requests/s | ratio |")
    print("|---|---:|---:|")
    names = {"sim serve SCENARIO": scenario, "sim serve CASSETTE": cassette}
    rounds: dict[tuple[str, str], list[float]] = {
        (name, side): [] for name in names for side in ("now", "before")
    }
    cpu: dict[tuple[str, str], list[float]] = {key: [] for key in rounds}
    for round_number in range(repeats):
        for name, served in names.items():
            for side in in_turn(round_number) if against is not None else ("now",):
                checkout = against if side == "before" else None
                process, base_url = start([*SIM, "serve", str(served), "--port", "0", "--once"], checkout)
                used = cpu_seconds(process.pid)
                try:
                    rounds[(name, side)].append(len(bodies) / asyncio.run(conversation(base_url, bodies)))
                finally:
                    # not reaped yet, so readable even if the server has just exited after the session
                    cpu[(name, side)].append((cpu_seconds(process.pid) - used) / len(bodies) * 1e6)
                    process.wait(timeout=30)
    rates = {name: statistics.median(rounds[(name, "now")]) for name in names}
    reference = rates["sim serve SCENARIO"]
    for name, rate in rates.items():
        print(f"| {name} | {rate:,.0f} | {rate / reference:.0%} |")
    if against is not None:
        print(
            f"\nbeside {against}, the same rounds alternating; now/before: the median of the rounds' ratios"
        )
        print("CPU: the server process's own (user and system) a request, over the session")
        print("| served from | before requests/s | now requests/s | now/before | before CPU µs | now CPU µs"
              " | CPU now/before |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name in names:
            now, before = rounds[(name, "now")], rounds[(name, "before")]
            now_cpu, before_cpu = cpu[(name, "now")], cpu[(name, "before")]
            print(f"| {name} | {statistics.median(before):,.0f} | {statistics.median(now):,.0f}"
                  f" | {paired_ratio(now, before):.2f}x | {statistics.median(before_cpu):,.0f}"
                  f" | {statistics.median(now_cpu):,.0f}"
                  f" | {paired_ratio(now_cpu, before_cpu):.2f}x |")  # fmt: skip


async def one_at_a_time(base_url: str, total: int, stream: bool) -> list[float]:
    body = request_body("chat", stream)
    latencies = []
    async with httpx2.AsyncClient(base_url=base_url, timeout=30) as client:
        for _ in range(total):
            started = time.perf_counter()
            response = await client.post(
                "/chat/completions", content=body, headers={"content-type": "application/json"}
            )
            await response.aread()
            assert response.status_code == 200, response.text
            latencies.append(time.perf_counter() - started)
    return latencies


def start_proxy(
    cassette: Path, upstream_url: str, checkout: Path | None = None
) -> tuple[subprocess.Popen[str], str]:
    """`sim proxy` (`checkout`'s, if given) recording to `cassette`, and the base URL it announced."""
    started: dict[str, Any] = launch(checkout) if checkout is not None else {"env": os.environ}
    environment = {**started["env"], "OPENAI_API_KEY": "sk-bench-upstream-key"}
    command = [*SIM, "proxy", str(cassette), "--upstream", upstream_url, "--port", "0"]
    proxy = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=environment,
        cwd=started.get("cwd"),
    )  # fmt: skip
    assert proxy.stdout is not None
    return proxy, proxy.stdout.readline().strip().split("=", 1)[1]


def proxy_rows(folder: Path, requests: int, repeats: int, against: Path | None = None) -> None:
    scenario = folder / "bench.yaml"
    upstream, upstream_url = start([*SIM, "serve", str(scenario), "--port", "0", "--cycle"])
    proxies = {"now": start_proxy(folder / "proxied.yaml", upstream_url)}
    if against is not None:
        proxies["before"] = start_proxy(folder / "proxied-before.yaml", upstream_url, against)
    print(f"\nlatency sim proxy adds, local upstream: {requests} requests one by one, medians of {repeats}")
    print("| reply | direct p50 ms | proxied p50 ms | added p50 ms | added p99 ms |")
    print("|---|---:|---:|---:|---:|")
    beside = []
    try:
        for stream in (False, True):
            for _, proxy_url in proxies.values():
                asyncio.run(one_at_a_time(proxy_url, 100, stream))  # warm up
            direct: list[list[float]] = []
            proxied: dict[str, list[list[float]]] = {side: [] for side in proxies}
            cpu: dict[str, list[float]] = {side: [] for side in proxies}
            for round_number in range(repeats):
                direct.append(asyncio.run(one_at_a_time(upstream_url, requests, stream)))
                for side in in_turn(round_number) if against is not None else ("now",):
                    proxy, proxy_url = proxies[side]
                    used = cpu_seconds(proxy.pid)
                    proxied[side].append(asyncio.run(one_at_a_time(proxy_url, requests, stream)))
                    cpu[side].append((cpu_seconds(proxy.pid) - used) / requests * 1e6)
            p50 = [
                statistics.median(percentile(lat, 0.5) for lat in runs) * 1000
                for runs in (direct, proxied["now"])
            ]
            p99 = [
                statistics.median(percentile(lat, 0.99) for lat in runs) * 1000
                for runs in (direct, proxied["now"])
            ]
            kind = "SSE" if stream else "JSON"
            print(f"| {kind} | {p50[0]:.2f} | {p50[1]:.2f} | {p50[1] - p50[0]:.2f} | {p99[1] - p99[0]:.2f} |")
            if against is not None:
                before = statistics.median(percentile(lat, 0.5) for lat in proxied["before"]) * 1000
                beside.append((kind, p50[0], before - p50[0], p50[1] - p50[0], cpu["before"], cpu["now"]))
    finally:
        for proxy, _ in proxies.values():
            proxy.send_signal(signal.SIGINT)
        for proxy, _ in proxies.values():
            proxy.wait(timeout=60)
        upstream.terminate()
        upstream.wait(timeout=10)
    if beside:
        print(f"\nbeside {against}, the same rounds alternating: p50 added to the direct request's, medians")
        print("CPU: the proxy process's own (user and system) a request, over the round")
        print("| reply | direct p50 ms | before added p50 ms | now added p50 ms | now/before | before CPU µs"
              " | now CPU µs | CPU now/before |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for kind, direct_p50, before_added, now_added, before_cpu, now_cpu in beside:
            print(f"| {kind} | {direct_p50:.2f} | {before_added:.2f} | {now_added:.2f}"
                  f" | {now_added / before_added:.2f}x | {statistics.median(before_cpu):,.0f}"
                  f" | {statistics.median(now_cpu):,.0f}"
                  f" | {paired_ratio(now_cpu, before_cpu):.2f}x |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    tables = ["throughput", "cassette", "proxy"]
    parser.add_argument("--tables", nargs="+", choices=tables, default=tables, help="which tables to measure")
    parser.add_argument("--against", type=Path, help="Another checkout of sim, measured beside this one.")
    parser.add_argument(
        "--rate-limit",
        nargs="?",
        const=NEVER_THROTTLES,
        help="This checkout's sim serve simulates this rate limit (left out: one that never throttles).",
    )
    options = parser.parse_args()
    against = checked(options.against) if options.against is not None else None
    with tempfile.TemporaryDirectory() as folder:
        scenario = Path(folder) / "bench.yaml"
        scenario.write_text(SCENARIO)
        if "throughput" in options.tables:
            throughput(options, against)
        if "cassette" in options.tables:
            serve_cassette_rows(Path(folder), options.repeats, against)
        if "proxy" in options.tables:
            proxy_rows(Path(folder), min(options.requests, 1000), options.repeats, against)


def throughput(options: argparse.Namespace, against: Path | None = None) -> None:
    """The first table: sim serve against the bare app under load, each API, JSON and SSE."""
    with tempfile.TemporaryDirectory() as folder:
        scenario = Path(folder) / "bench.yaml"
        scenario.write_text(SCENARIO)
        limited = [] if options.rate_limit is None else ["--rate-limit", options.rate_limit]
        servers = {"now": start([*SIM, "serve", str(scenario), "--port", "0", "--cycle", *limited])}
        if against is not None:
            servers["before"] = start([*SIM, "serve", str(scenario), "--port", "0", "--cycle"], against)
        bare, bare_url = start([sys.executable, "-c", REFERENCE, json.dumps(FIXED_REPLY)])
        rounds_said = f"{options.requests} requests a round, concurrency {options.concurrency}"
        if options.rate_limit is not None:
            rounds_said = f"sim serve --rate-limit {options.rate_limit}; {rounds_said}"
        print(
            f"{rounds_said}, medians of {options.repeats} rounds; each round of sim is paired with a round of"
        )
        print(
            "the bare app run right before it, so the ratio compares the two under the same load on the box"
        )
        print("| server | API | reply | requests/s | p50 ms | p99 ms | vs bare app |")
        print("|---|---|---|---:|---:|---:|---:|")
        kinds = [(api, stream) for api in ("chat", "responses") for stream in (False, True)]
        beside = []
        try:
            asyncio.run(load(bare_url, 200, options.concurrency, False, "chat"))  # warm up
            references = []
            for api, stream in kinds:
                for _, url in servers.values():
                    asyncio.run(load(url, 200, options.concurrency, stream, api))  # warm up
                rounds: dict[str, list[tuple[float, list[float]]]] = {side: [] for side in servers}
                ratios: dict[str, list[float]] = {side: [] for side in servers}
                cpu: dict[str, list[float]] = {side: [] for side in servers}
                for round_number in range(options.repeats):
                    reference, _ = asyncio.run(
                        load(bare_url, options.requests, options.concurrency, False, "chat")
                    )
                    references.append(reference)
                    for side in in_turn(round_number) if against is not None else ("now",):
                        server, url = servers[side]
                        used = cpu_seconds(server.pid)
                        rounds[side].append(
                            asyncio.run(load(url, options.requests, options.concurrency, stream, api))
                        )
                        cpu[side].append((cpu_seconds(server.pid) - used) / options.requests * 1e6)
                        ratios[side].append(rounds[side][-1][0] / reference)
                rate = statistics.median(r for r, _ in rounds["now"])
                p50 = statistics.median(percentile(lat, 0.50) for _, lat in rounds["now"]) * 1000
                p99 = statistics.median(percentile(lat, 0.99) for _, lat in rounds["now"]) * 1000
                kind = "SSE" if stream else "JSON"
                print(f"| sim serve | {api} | {kind} | {rate:,.0f} | {p50:.1f} | {p99:.1f} |"
                      f" {statistics.median(ratios['now']):.0%} |")  # fmt: skip
                if against is not None:
                    now, before = ([r for r, _ in rounds[side]] for side in ("now", "before"))
                    beside.append((api, kind, now, before, ratios["now"], ratios["before"], cpu))
            reference_rate = statistics.median(references)
            print(f"| bare Starlette (reference) | chat | JSON | {reference_rate:,.0f} | | | 100% |")
        finally:
            for process in [bare, *(process for process, _ in servers.values())]:
                process.terminate()
                process.wait(timeout=10)
    if beside:
        print(f"\nbeside {against}, the same rounds alternating; now/before: the median of the rounds'")
        print("ratios; CPU: the server process's own (user and system) a request, over the round")
        print("| API | reply | before requests/s | now requests/s | before vs bare | now vs bare | now/before"
              " | before CPU µs | now CPU µs | CPU now/before |")  # fmt: skip
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for api, kind, now, before, now_bare, before_bare, cpu in beside:
            print(f"| {api} | {kind} | {statistics.median(before):,.0f} | {statistics.median(now):,.0f}"
                  f" | {statistics.median(before_bare):.0%} | {statistics.median(now_bare):.0%}"
                  f" | {paired_ratio(now, before):.2f}x | {statistics.median(cpu['before']):,.0f}"
                  f" | {statistics.median(cpu['now']):,.0f}"
                  f" | {paired_ratio(cpu['now'], cpu['before']):.2f}x |")  # fmt: skip


if __name__ == "__main__":
    main()
