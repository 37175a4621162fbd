"""The host in process: an httpx transport that hands each request, as plain values, to a host's `respond`,
no socket and no ASGI between (what `sim play`, replay and the pytest plugin use to have the real SDK talk to
an answerer).

It answers as the host's ASGI app would through `httpx2.ASGITransport`: a streamed reply is read to its end
(pacing, cut streams and the access log as served) before the response is handed back, `on_finished` runs
once the body is sent, a HEAD response has no body, and an exception in the answer is raised, or with
`raise_app_exceptions` off becomes the 500 Starlette sends (or what was sent before it, for a stream).
An answer that meets a network fault (`sim.host.faults`) raises what httpx raises for it on a real socket:
before the response is handed back when the fault comes before the headers, else while its body is read
(which httpx does before handing back a response that is not streamed); a stall past the request's read
timeout is waited for that long and then times out.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from starlette.datastructures import Headers
from starlette.responses import StreamingResponse

from sim.host.app import Host
from sim.host.faults import Fault, Faulted, FaultKind, Where, network_error

__all__ = ["InProcess", "transport"]

_SERVER_ERROR = (
    500,
    [(b"content-length", b"21"), (b"content-type", b"text/plain; charset=utf-8")],
    b"Internal Server Error",
)
"""What Starlette sends for an exception before the response started."""


class InProcess(httpx2.AsyncBaseTransport):
    """An async transport whose requests `host` answers, in process."""

    def __init__(self, host: Host[Any], *, raise_app_exceptions: bool = True) -> None:
        self.host = host
        self.raise_app_exceptions = raise_app_exceptions
        """False: an exception in the answer is a 500 response instead of raised."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """`request` answered by the host, its body whole."""
        url = request.url
        headers = Headers(raw=[(name.lower(), value) for name, value in request.headers.raw])
        status: int | None = None
        sent: list[tuple[bytes, bytes]] = []
        parts: list[bytes] = []
        try:
            response = await self.host.respond(
                request.method, url.path, url.query.decode("latin-1"), headers, await request.aread()
            )
            status, sent = response.status_code, response.raw_headers
            if isinstance(response, Faulted):
                return await _faulted(response, request)
            if isinstance(response, StreamingResponse):
                async for chunk in response.body_iterator:
                    parts.append(chunk if isinstance(chunk, bytes) else _encoded(chunk, response.charset))
            else:
                parts.append(bytes(response.body))
            if response.background is not None:
                await response.background()
        except httpx2.TransportError:  # a network fault the answer met: what a client sees, always
            raise
        except Exception:
            if self.raise_app_exceptions:
                raise
            if status is None:
                status, sent, body = _SERVER_ERROR
                parts = [body]
        body = b"" if request.method == "HEAD" else b"".join(parts)
        return httpx2.Response(status, headers=sent, stream=httpx2.ByteStream(body))


async def _faulted(response: Faulted, request: httpx2.Request) -> httpx2.Response:
    """`response` as a client reads it over a socket: its bytes, until its fault strikes."""
    timeouts = request.extensions.get("timeout", {})
    waits: float | None = timeouts.get("read") if isinstance(timeouts, dict) else None
    parts: list[bytes] = []
    started = response.fault.where is not Where.before_headers
    struck: Fault | None = None
    async for chunk in response.body_iterator:
        if isinstance(chunk, Fault) and chunk.kind is FaultKind.stall:
            if waits is not None and waits < chunk.seconds:
                await asyncio.sleep(waits)
                struck = chunk
                aclose = getattr(response.body_iterator, "aclose", None)
                if aclose is not None:  # given up on: ended now, so the access log is told now
                    await aclose()
                break
            await asyncio.sleep(chunk.seconds)
        elif isinstance(chunk, Fault):
            struck = chunk
        else:
            parts.append(chunk if isinstance(chunk, bytes) else _encoded(chunk, response.charset))
            started = True
    if response.background is not None:
        await response.background()
    if struck is None:
        body = b"" if request.method == "HEAD" else b"".join(parts)
        whole = httpx2.ByteStream(body)
        return httpx2.Response(response.status_code, headers=response.raw_headers, stream=whole)
    error = network_error(struck, started=started, sent=sum(map(len, parts)), announced=response.announced)
    if not started:
        raise error
    return httpx2.Response(response.status_code, headers=response.raw_headers, stream=_Broken(parts, error))


class _Broken(httpx2.AsyncByteStream):
    """A body read up to where the connection broke, then the error that broke it."""

    def __init__(self, parts: list[bytes], error: Exception) -> None:
        self.parts = parts
        self.error = error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self.parts:
            yield part
        raise self.error


def _encoded(chunk: str | memoryview, charset: str) -> bytes:
    return chunk.encode(charset) if isinstance(chunk, str) else bytes(chunk)


def transport(host: Host[Any], *, raise_app_exceptions: bool = True) -> httpx2.AsyncBaseTransport:
    """An async transport whose requests `host` answers, in process."""
    return InProcess(host, raise_app_exceptions=raise_app_exceptions)
