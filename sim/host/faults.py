"""Network faults an answer can carry, and their writing: a connection dropped before the headers, a body
dropped midway (its whole `Content-Length` announced), a stream dropped after N events, a stall past the
client's timeout, and a reset (RST).

A fault is a value (`Fault`) on an answer; the host writes the answer as it would without it, and `faulted`
turns that response into a `Faulted` one: its chunks with the fault standing where it strikes. It is sent
the way sim serves:

- on a real server (`sim.host.serve`, uvicorn), the socket itself is closed (FIN), aborted with a reset, or
  left silent, through the connection the server puts in the request's scope (`serve.CONNECTION`): the
  client's HTTP library sees what the network would show it;
- in process (`sim.host.transport`), as the exception httpx raises for that fault (`network_error`):
  `RemoteProtocolError` for a drop, `ReadError` for a reset, `ReadTimeout` for a stall past the request's
  read timeout, raised before the response (a fault before the headers, any fault of a body that is not
  streamed: the SDK reads it whole) or while its stream is read;
- under an ASGI server that gives no connection (httpx's `ASGITransport`), as the same exception raised by
  the app, which that transport hands to the client as it is.

The SDK retries a fault it meets before it returns (`max_retries`, `x-stainless-retry-count`) and finally
raises `openai.APIConnectionError` (`APITimeoutError` for a stall); a stream that breaks raises while it is
iterated, as live.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from enum import Enum
from typing import Any

import httpx2
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from sim.host.serve import CONNECTION, ConnectionAborted

__all__ = [
    "STALL_SECONDS",
    "Dropped",
    "Fault",
    "FaultKind",
    "Faulted",
    "Where",
    "faulted",
    "json_error",
    "network_error",
]

STALL_SECONDS = 600.0
"""How long a stall lasts unless told: the SDK's own default timeout, so past any client's."""


class FaultKind(Enum):
    """What happens to the connection."""

    drop = "drop"
    """Closed (FIN): the client reads the end of the connection where more was due."""
    reset = "reset"
    """Reset (RST): the client's read fails with "connection reset by peer"."""
    stall = "stall"
    """Silent for a while (`Fault.seconds`), then the answer goes on: a client that gives up times out."""


class Where(Enum):
    """Where in the answer the fault strikes."""

    before_headers = "before_headers"
    mid_body = "mid_body"
    """Half a body that is not streamed (its whole `Content-Length` announced), or a stream after
    `Fault.after_chunks` events (half of them when None)."""


@dataclass(frozen=True, slots=True)
class Fault:
    """A network fault on an answer: what (`kind`), where, and for a stall how long."""

    kind: FaultKind
    where: Where = Where.before_headers
    after_chunks: int | None = None
    """In a stream, the events sent before the fault (None: half of them); a body that is not streamed is
    cut in half whatever it says."""
    seconds: float = STALL_SECONDS
    """How long a stall lasts."""

    @classmethod
    def cut(cls, after_chunks: int) -> Fault:
        """The connection dropped mid-answer: a stream after `after_chunks` events, a body in half."""
        return cls(FaultKind.drop, Where.mid_body, after_chunks)

    def said(self) -> str:
        """What happened, for people (`connection dropped after 2 events`)."""
        what = {
            FaultKind.drop: "connection dropped",
            FaultKind.reset: "connection reset",
            FaultKind.stall: f"stalled {self.seconds:g} s",
        }[self.kind]
        if self.where is Where.before_headers:
            return f"{what} before the headers"
        if self.after_chunks is not None:
            return f"{what} after {self.after_chunks} events (a body: halfway)"
        return f"{what} halfway through the body"


class Dropped(ConnectionAborted):
    """Raised into the server once a connection was dropped or reset on purpose (not logged as an error)."""


def network_error(fault: Fault, *, started: bool, sent: int = 0, announced: int | None = None) -> Exception:
    """The exception httpx raises for `fault` met by a client, worded as httpx words it over a socket:
    `started` once the headers came, `sent` bytes of a body that announced `announced` (None: chunked)."""
    if fault.kind is FaultKind.stall:
        return httpx2.ReadTimeout("")
    if fault.kind is FaultKind.reset:
        return httpx2.ReadError("")
    if not started:
        return httpx2.RemoteProtocolError("Server disconnected without sending a response.")
    if announced is not None:
        return httpx2.RemoteProtocolError(
            "peer closed connection without sending complete message body"
            f" (received {sent} bytes, expected {announced})"
        )
    return httpx2.RemoteProtocolError(
        "peer closed connection without sending complete message body (incomplete chunked read)"
    )


def json_error(fault: Fault, content: Any) -> Exception:
    """What a client meets where `fault` strikes a JSON body (`content`, written as the host writes it)."""
    body = JSONResponse(content).body
    started = fault.where is Where.mid_body
    return network_error(fault, started=started, sent=len(body) // 2 if started else 0, announced=len(body))


Chunk = bytes | Fault
"""A piece of a faulted answer: bytes to send, or the fault where it strikes."""


class Faulted(StreamingResponse):
    """A response that meets `fault`: its chunks, the fault among them where it strikes (nothing after a
    drop or a reset). Its headers are sent first unless the fault comes before them."""

    def __init__(
        self, chunks: AsyncIterable[Chunk], fault: Fault, status_code: int, headers: list[tuple[bytes, bytes]]
    ) -> None:
        super().__init__(chunks, status_code=status_code)  # type: ignore[arg-type]  # a Fault is a chunk too
        self.raw_headers = headers
        self.fault = fault

    @property
    def announced(self) -> int | None:
        """The body's length as its headers announce it (None: chunked)."""
        for name, value in self.raw_headers:
            if name == b"content-length":
                return int(value)
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        connection = scope.get(CONNECTION)
        started = False
        sent = 0
        struck: Fault | None = None
        chunk: Any
        async for chunk in self.body_iterator:
            if isinstance(chunk, Fault):
                if chunk.kind is FaultKind.stall:
                    if await _stalled(chunk.seconds, receive):  # the client gave up: nothing more to send
                        aclose = getattr(self.body_iterator, "aclose", None)
                        if aclose is not None:  # ended now: the access log is told at its end
                            await aclose()
                        if self.background is not None:  # it was answered all the same (`--once` ends)
                            await self.background()
                        return
                    continue
                struck = chunk
                continue
            if not started:
                await send(
                    {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
                )
                started = True
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            sent += len(chunk)
        if struck is None:
            if not started:
                await send(
                    {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
                )
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            if self.background is not None:
                await self.background()
            return
        if self.background is not None:
            await self.background()
        if not isinstance(connection, asyncio.Transport):  # no socket to act on: raise what the client sees
            raise network_error(struck, started=started, sent=sent, announced=self.announced)
        if struck.kind is FaultKind.reset:
            with contextlib.suppress(OSError):  # linger 0: the close sends RST, not FIN
                connection.get_extra_info("socket").setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
            connection.abort()
        else:
            connection.close()
        raise Dropped(struck.said())


async def _stalled(seconds: float, receive: Receive) -> bool:
    """Wait `seconds`, or until the client leaves: whether it left."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            while (await receive())["type"] != "http.disconnect":
                pass
            return True
    return False


def faulted(response: Response, fault: Fault) -> Faulted:
    """`response` (a whole body, or a stream's events) meeting `fault` where it strikes."""
    headers = list(response.raw_headers)
    status = response.status_code
    if isinstance(response, StreamingResponse):
        return Faulted(_in_stream(response.body_iterator, fault), fault, status, headers)
    return Faulted(_in_body(bytes(response.body), fault), fault, status, headers)


async def _in_body(body: bytes, fault: Fault) -> AsyncIterator[Chunk]:
    half = len(body) // 2 if fault.where is Where.mid_body else 0
    if half:
        yield body[:half]
    yield fault
    if fault.kind is FaultKind.stall:
        yield body[half:]


async def _in_stream(chunks: AsyncIterable[Any], fault: Fault) -> AsyncIterator[Chunk]:
    if fault.where is Where.before_headers:
        yield fault
        if fault.kind is not FaultKind.stall:
            return
        async for chunk in chunks:
            yield chunk
        return
    held: list[bytes] | None = None
    if fault.after_chunks is None:  # half the events: they must be counted first
        held = [_bytes(chunk) async for chunk in chunks]
    at = len(held) // 2 if held is not None else fault.after_chunks or 0
    number = 0
    source: AsyncIterable[Any] = _listed(held) if held is not None else chunks
    async for chunk in source:
        if number == at:
            yield fault
            if fault.kind is not FaultKind.stall:
                return
        yield _bytes(chunk)
        number += 1
    if number <= at:
        yield fault


def _bytes(chunk: str | bytes | memoryview) -> bytes:
    return chunk.encode() if isinstance(chunk, str) else bytes(chunk)


async def _listed(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk
