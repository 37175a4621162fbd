"""A hostile "live" API on 127.0.0.1, a real socket: a reply that never stops growing and one that trickles a
byte at a time forever. Each is an error for its turn within the reply's bounds (made small here, so the
test stays fast and light), never a crash, a hang or a memory blow-up; the first conversation's error does
not stop the next file from being asked."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

from sim.drift.compare import Drift
from sim.drift.session import FileDrift, UpstreamConnection, drift_file

ROOT = Path(__file__).resolve().parents[2]
CASSETTE = ROOT / "cassettes" / "echo-42.yaml"
LIMIT = 64 * 1024
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"

Body = Callable[[asyncio.StreamWriter], Awaitable[None]]


async def endless(writer: asyncio.StreamWriter) -> None:
    """A JSON reply whose content never ends, 16 KiB a chunk, as fast as it is read."""
    piece = b'{"choices": [{"message": {"content": "' + b"a" * 16 * 1024
    while True:
        writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        await writer.drain()
        piece = b"a" * 16 * 1024


async def trickle(writer: asyncio.StreamWriter) -> None:
    """A reply a byte every 50 ms, forever: no read ever waits long enough to time out."""
    while True:
        writer.write(b"1\r\n \r\n")
        await writer.drain()
        await asyncio.sleep(0.05)


@asynccontextmanager
async def hostile(body: Body) -> AsyncIterator[str]:
    """A server on 127.0.0.1 answering every request with `body`; its base URL."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            ),
            0,
        )
        await reader.readexactly(length)
        writer.write(HEAD)
        try:
            await body(writer)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.close()


def asked(body: Body, **bounds: Any) -> list[FileDrift]:
    async def run() -> list[FileDrift]:
        async with hostile(body) as base_url, httpx2.AsyncClient(timeout=5) as client:
            upstream = UpstreamConnection(base_url, {"authorization": "Bearer k"}, client, **bounds)
            return [await drift_file(CASSETTE, upstream) for _ in range(2)]

    return asyncio.run(asyncio.wait_for(run(), timeout=30))  # a bound on a hang, not a measure


@pytest.mark.parametrize(
    ("body", "bounds", "said"),
    [
        (endless, {"max_reply_bytes": LIMIT}, "no reply: the reply holds more than 65536 bytes"),
        (trickle, {"deadline": 0.5}, "no reply: no whole reply within 0.5 s"),
    ],
    ids=["endless", "trickle"],
)
def test_a_reply_past_its_bounds_is_an_error_for_its_turn(
    body: Body, bounds: dict[str, Any], said: str
) -> None:
    for result in asked(body, **bounds):
        (conversation,) = result.conversations
        (turn,) = conversation.turns
        assert (turn.compared.drift, turn.compared.why, turn.live) == (Drift.breaking, said, "(no reply)")
        assert conversation.unanswered == f"turn 1: {said.removeprefix('no reply: ')}"
        assert (
            conversation.stopped
            == "stopped at turn 1 of 2: the recorded results no longer answer the live reply"
        )
        assert conversation.exchanges == [] and result.requests == 1
