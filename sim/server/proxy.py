"""`RecordingProxy`: `sim proxy`, an OpenAI-compatible endpoint that forwards every request to the real
upstream with the upstream key, streams each response back chunk by chunk as it arrives, and keeps each
finished exchange for the cassette (written by `sim record`'s writer: readable, scrubbed, atomic)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import httpx2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from sim.cassette.secrets import SECRET_HEADERS
from sim.cassette.writer import Exchange, write_cassette
from sim.server.simulator import api_error

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
# not forwarded: hop-by-hop headers, what httpx sets itself, and what the body no longer is once decoded
_REQUEST_DROPPED = frozenset({"host", "content-length", "connection", "keep-alive", "transfer-encoding",
                              "accept-encoding", *SECRET_HEADERS})  # fmt: skip
_RESPONSE_DROPPED = frozenset({"content-length", "content-encoding", "connection", "keep-alive",
                               "transfer-encoding"})  # fmt: skip


class RecordingProxy:
    """Forwards to `upstream` (a base URL such as `https://api.openai.com/v1`) and records what passed.

    Clients use the proxy's `/v1` as their base URL; `/v1/chat/completions` goes to
    `{upstream}/chat/completions`. Exchanges are kept in the order their requests arrived; one whose
    response did not finish (the client went away, the upstream failed) is not kept.
    """

    def __init__(self, upstream: str, credentials: Mapping[str, str], *, prefix: str = "/v1") -> None:
        self.upstream = upstream.rstrip("/")
        self.credentials = dict(credentials)
        """Headers sent upstream in place of the client's (`authorization`, account ids)."""
        self.prefix = prefix
        self.exchanges: list[Exchange | None] = []
        self.failures: list[str] = []
        self.client = httpx2.AsyncClient(timeout=httpx2.Timeout(600, connect=15), follow_redirects=False)
        self.app = Starlette(routes=[Route("/{path:path}", self._forward, methods=_METHODS)])

    def recorded(self) -> list[Exchange]:
        """The finished exchanges, in the order their requests arrived."""
        return [exchange for exchange in self.exchanges if exchange is not None]

    def write(self, path: Path, secrets: tuple[str, ...]) -> int:
        """Write the finished exchanges into `path`, atomically; how many."""
        exchanges = self.recorded()
        write_cassette(path, exchanges, sim=None, secrets=secrets)
        return len(exchanges)

    async def _forward(self, request: Request) -> Response:
        path = request.url.path
        tail = path[len(self.prefix) :] if path.startswith(self.prefix + "/") else path
        target = self.upstream + tail + (f"?{request.url.query}" if request.url.query else "")
        body = await request.body()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _REQUEST_DROPPED}
        headers.update(self.credentials)
        slot = len(self.exchanges)
        self.exchanges.append(None)
        outgoing = self.client.build_request(request.method, target, headers=headers, content=body)
        try:
            upstream = await self.client.send(outgoing, stream=True)
        except httpx2.HTTPError as error:
            self.failures.append(f"{request.method} {tail}: upstream unreachable: {type(error).__name__}")
            message = f"sim proxy: cannot reach the upstream {self.upstream}: {type(error).__name__}"
            return api_error(502, message, error_type="sim_upstream_error", code="sim_upstream_error")
        response_headers = {k: v for k, v in upstream.headers.items() if k.lower() not in _RESPONSE_DROPPED}

        async def relay() -> AsyncIterator[bytes]:
            pieces: list[bytes] = []
            try:
                async for piece in upstream.aiter_bytes():
                    pieces.append(piece)
                    yield piece
            except httpx2.HTTPError as error:
                self.failures.append(f"{request.method} {tail}: upstream broke off: {type(error).__name__}")
                return
            finally:
                await upstream.aclose()
            self.exchanges[slot] = Exchange(
                method=request.method,
                uri=target,
                request_headers={k: [v] for k, v in headers.items()},
                request_body=body if body or request.method != "GET" else None,
                status=upstream.status_code,
                reason=upstream.reason_phrase,
                response_headers={k: [v] for k, v in response_headers.items()},
                response_body=b"".join(pieces),
            )

        return StreamingResponse(relay(), status_code=upstream.status_code, headers=response_headers)


def timed(started: float) -> float:
    """Seconds since `started` (a `time.perf_counter()` reading)."""
    return time.perf_counter() - started
