"""`RecordingProxy`: `sim proxy` as an answerer (`sim.host.answers`), served by the host on every path. It
forwards each request to the real upstream with the upstream key, relays the response chunk by chunk as it
arrives, and appends each finished exchange to the recording's journal (scrubbed, fsynced), from which the
cassette is written at the end, as `sim record` writes it. A stop lets the answers in flight finish, and
records them, for `STOP_GRACE` seconds; what is still going then is cut off, said so, and not recorded.

It writes no access log line: it tells the host how each relayed answer ended (`Received.tell`: recorded
whole, broken off by the upstream, cut off by a stop), and the host's access log says it once it ends."""

from __future__ import annotations

import asyncio
import itertools
import posixpath
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote, unquote

import httpx2

from sim.cassette.journal import Journal
from sim.cassette.proxy_terms import STOP_GRACE, UPSTREAM_TIMEOUT
from sim.cassette.secrets import SECRET_HEADERS
from sim.cassette.upstream import UpstreamUrl
from sim.cassette.writer import HttpExchange
from sim.host.answers import Answer, ApiError, Ended, Ending, RawReply, Received
from sim.host.app import Host
from sim.host.serve import ConnectionAborted
from sim.wire.registry import api_asked

# not forwarded: hop-by-hop headers, what httpx sets itself, and what the body no longer is once decoded
_REQUEST_DROPPED = frozenset({"host", "content-length", "connection", "keep-alive", "transfer-encoding",
                              "accept-encoding", *SECRET_HEADERS})  # fmt: skip
_RESPONSE_DROPPED = frozenset({"content-length", "content-encoding", "connection", "keep-alive",
                               "transfer-encoding"})  # fmt: skip


def contained(tail: str) -> str | None:
    """`tail` (a request path below the proxy's base) normalised, or None when it would leave the base
    (`..`, also percent-encoded, or a path that is not below it)."""
    decoded = unquote(unquote(tail))
    if "\\" in decoded or any(part in (".", "..") for part in decoded.split("/")):
        return None
    normal = posixpath.normpath("/" + decoded.lstrip("/")) + (
        "/" if decoded.endswith("/") and decoded != "/" else ""
    )
    return quote(normal, safe="/:@!$&'()*+,;=-._~")


def api_of(tail: str) -> str:
    """The API a forwarded path asks (`chat`, `responses`: a stored response's too), or the path itself."""
    path = tail.split("?", 1)[0].rstrip("/")
    api = api_asked(path)
    return api.value if api is not None else path or "/"


class UpstreamBrokeOff(ConnectionAborted):
    """The upstream broke off mid-answer: raised into the server so that it aborts the client's connection
    as the upstream aborted the proxy's (reported once, in `failures`)."""


class RecordingProxy:
    """Forwards to `upstream` (a base URL such as `https://api.openai.com/v1`) and records what passed.

    Clients use the proxy's `/v1` as their base URL; `/v1/chat/completions` goes to
    `{upstream}/chat/completions`. Each exchange is written to `journal` as it finishes (by one writer
    thread, so that no client waits for the disk), numbered in the order its request arrived, which the
    cassette keeps; one whose response did not finish (the client went away, the upstream failed) is not.
    """

    def __init__(
        self,
        upstream: UpstreamUrl,
        credentials: Mapping[str, str],
        journal: Journal,
        *,
        prefix: str = "/v1",
        timeout: float = UPSTREAM_TIMEOUT,
        grace: float = STOP_GRACE,
    ) -> None:
        self.upstream = upstream
        self.credentials = upstream.credentials(credentials)
        """Headers sent upstream in place of the client's (`authorization`, account ids)."""
        self.prefix = prefix
        self.grace = grace
        """Seconds the server serving it gives answers in flight at a stop (it says so when it cuts one)."""
        self.journal = journal
        self._arrived = itertools.count()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sim-journal")
        self.failures: list[str] = []
        self.client = httpx2.AsyncClient(timeout=httpx2.Timeout(timeout, connect=15), follow_redirects=False)

    @property
    def finished(self) -> bool:
        """Never: the proxy forwards until it is stopped."""
        return False

    def finish(self, *, compact: bool = False) -> int:
        """Wait for the exchanges being written, then write the cassette from the journal; how many
        exchanges it holds (0: nothing finished, and nothing is written)."""
        self._writer.shutdown(wait=True)
        return self.journal.finish(compact=compact)

    def tail(self, path: str) -> str | None:
        """`path` below the proxy's base, normalised (see `contained`), or None when it would leave it."""
        return contained(path[len(self.prefix) :] if path.startswith(self.prefix + "/") else path)

    def api_asked(self, request: Received) -> str:
        """The API the access log names for `request` (see `api_of`): by its path below the base."""
        tail = self.tail(request.path)
        return api_of(request.path if tail is None else tail)

    def _cut(self, request: Received, tail: str) -> None:
        """An answer cut off by a stop whose grace ran out: said in `failures`, and told to the host."""
        said = f"{request.method} {tail}: cut off by the stop after {self.grace:g} s (--grace); not recorded"
        self.failures.append(said)
        request.tell(Ended(Ending.cut, said))

    async def answer(self, request: Received) -> Answer:
        """The upstream's answer to `request`, relayed as it comes and recorded once whole; an error in the
        API's shape when the path leaves the upstream's base or the upstream cannot be reached."""
        method = request.method
        tail = self.tail(request.path)
        if tail is None:
            message = "sim proxy: the request path leaves the upstream's base path; it was not forwarded"
            return ApiError(400, message, code="sim_path_refused")
        target = self.upstream.target(tail, request.query)
        shown = self.upstream.target(tail, request.query, shown=True)
        body = request.body
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _REQUEST_DROPPED}
        headers.update(self.credentials)
        seq = next(self._arrived)
        outgoing = self.client.build_request(method, target, headers=headers, content=body)
        try:
            upstream = await self.client.send(outgoing, stream=True)
        except asyncio.CancelledError:
            self._cut(request, tail)
            raise
        except httpx2.HTTPError as error:
            self.failures.append(f"{method} {tail}: upstream unreachable: {type(error).__name__}")
            message = f"sim proxy: cannot reach the upstream {shown}: {type(error).__name__}"
            return ApiError(502, message, code="sim_upstream_error")
        response_headers = {k: v for k, v in upstream.headers.items() if k.lower() not in _RESPONSE_DROPPED}

        async def relay() -> AsyncIterator[bytes]:
            pieces: list[bytes] = []
            try:
                async for piece in upstream.aiter_bytes():
                    pieces.append(piece)
                    yield piece
            except httpx2.HTTPError as error:
                self.failures.append(f"{method} {tail}: upstream broke off: {type(error).__name__}")
                request.tell(Ended(Ending.broken_off, f"the upstream broke off: {type(error).__name__}"))
                # the client's connection is aborted too (no final chunk): a cut answer must not read as whole
                raise UpstreamBrokeOff(str(error)) from None
            except asyncio.CancelledError:
                self._cut(request, tail)
                raise
            finally:
                await upstream.aclose()
            exchange = HttpExchange(
                method=method,
                uri=shown,
                request_headers={k: [v] for k, v in headers.items()},
                request_body=body if body or method != "GET" else None,
                status=upstream.status_code,
                reason=upstream.reason_phrase,
                response_headers={k: [v] for k, v in response_headers.items()},
                response_body=b"".join(pieces),
            )
            del pieces
            self._writer.submit(self.journal.append, seq, exchange)
            size = len(exchange.response_body or b"")
            request.tell(Ended(Ending.whole, f"{method} {tail}: recorded ({size} bytes)"))

        return RawReply(upstream.status_code, tuple(response_headers.items()), relay())


def proxy_host(proxy: RecordingProxy, **options: Any) -> Host[RecordingProxy]:
    """The host serving `proxy` on every path and method (`options` are `Host`'s); its access log names
    the API a forwarded path asks (`RecordingProxy.api_asked`)."""
    return Host(proxy, every_path=True, api_of=proxy.api_asked, **options)
