"""Serving a `Simulator` on a TCP port with uvicorn, until Ctrl-C or (`once`) until its script is used."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable

import uvicorn

from sim.scenario.schema import Scenario
from sim.server.simulator import Simulator


def listen(host: str, port: int) -> socket.socket:
    """A bound, listening socket; port 0 picks a free one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP, not 0: asyncio only turns Nagle off (TCP_NODELAY) on sockets that say they are TCP
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    return sock


def base_url(sock: socket.socket) -> str:
    """The `OPENAI_BASE_URL` for a client of the socket's server."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/v1"


def serve(
    scenario: Scenario,
    sock: socket.socket,
    *,
    once: bool = False,
    cycle: bool = False,
    on_ready: Callable[[], None] | None = None,
) -> Simulator:
    """Serve until interrupted, or until the script is used when `once`; the simulator tells how it went."""
    config = uvicorn.Config(app=None, log_level="warning", access_log=False, lifespan="off")  # type: ignore[arg-type]
    server = uvicorn.Server(config)

    def stop() -> None:
        server.should_exit = True

    simulator = Simulator(scenario, cycle=cycle, on_consumed=stop if once else None)
    config.app = simulator.app

    async def run() -> None:
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.005)
        if server.started and on_ready is not None:
            on_ready()  # only now: Ctrl-C is handled from here on
        await serving

    with contextlib.suppress(KeyboardInterrupt):  # uvicorn shuts down gracefully, then re-raises Ctrl-C
        asyncio.run(run())
    return simulator
