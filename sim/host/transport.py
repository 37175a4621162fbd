"""The host in process: an httpx transport that hands each request, as plain values, to a host's `respond`,
no socket and no ASGI between (what `sim play`, replay and the pytest plugin use to have the real SDK talk to
an answerer).

It answers as the host's ASGI app would through `httpx2.ASGITransport`: a streamed reply is read to its end
(pacing, cut streams and the access log as served) before the response is handed back, `on_finished` runs
once the body is sent, a HEAD response has no body, and an exception in the answer is raised, or with
`raise_app_exceptions` off becomes the 500 Starlette sends (or what was sent before it, for a stream).
"""

from __future__ import annotations

from typing import Any

import httpx2
from starlette.datastructures import Headers
from starlette.responses import StreamingResponse

from sim.host.app import Host

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
            if isinstance(response, StreamingResponse):
                async for chunk in response.body_iterator:
                    parts.append(chunk if isinstance(chunk, bytes) else _encoded(chunk, response.charset))
            else:
                parts.append(bytes(response.body))
            if response.background is not None:
                await response.background()
        except Exception:
            if self.raise_app_exceptions:
                raise
            if status is None:
                status, sent, body = _SERVER_ERROR
                parts = [body]
        body = b"" if request.method == "HEAD" else b"".join(parts)
        return httpx2.Response(status, headers=sent, stream=httpx2.ByteStream(body))


def _encoded(chunk: str | memoryview, charset: str) -> bytes:
    return chunk.encode(charset) if isinstance(chunk, str) else bytes(chunk)


def transport(host: Host[Any], *, raise_app_exceptions: bool = True) -> httpx2.AsyncBaseTransport:
    """An async transport whose requests `host` answers, in process."""
    return InProcess(host, raise_app_exceptions=raise_app_exceptions)
