"""Serving an ASGI app (the host over any answerer) on a TCP port with uvicorn, until
Ctrl-C, SIGTERM or `stop()`; optionally while a command runs against it, ending when the command does."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import uvicorn
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from sim.host.parent_death import die_with_parent


def listen(host: str, port: int) -> socket.socket:
    """A bound, listening socket; port 0 picks a free one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP, not 0: asyncio only turns Nagle off (TCP_NODELAY) on sockets that say they are TCP
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    return sock


def base_url(sock: socket.socket, path: str = "/v1") -> str:
    """The `OPENAI_BASE_URL` for a client of the socket's server."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"


class CommandNotFound(Exception):
    """The command to run beside the server does not exist or cannot be run; `status` is the exit status a
    shell gives for it (127 not found, 126 found but not runnable)."""

    def __init__(self, message: str, status: int = 127) -> None:
        super().__init__(message)
        self.status = status


class IdleClock:
    """An ASGI app's requests watched: how long no request has been answered (`idle_for`), so that a run
    nobody talks to can be ended. A request is being answered once its whole body has come (or its answer
    has begun): one whose client stalls while sending it holds nothing up."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.in_flight = 0
        """Requests being answered."""
        self.since = time.monotonic()
        """When the last request began or ended (or the watch began)."""
        self.armed = True
        """Whether idleness still ends the run (`disarm` when the run ends another way)."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        answering = False

        def answer() -> None:
            nonlocal answering
            if not answering:
                answering = True
                self.in_flight += 1

        async def received() -> Any:
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                answer()
            return message

        async def sent(message: Any) -> None:
            answer()
            await send(message)

        self.since = time.monotonic()
        try:
            await self.app(scope, received, sent)
        finally:
            if answering:
                self.in_flight -= 1
            self.since = time.monotonic()

    def idle_for(self) -> float:
        """Seconds since the last request began or ended, 0 while one is being answered."""
        return 0.0 if self.in_flight else time.monotonic() - self.since

    def disarm(self) -> None:
        """Idleness no longer ends the run."""
        self.armed = False


class ConnectionAborted(Exception):
    """Raised by an app into the server to abort the client's connection on purpose: not logged."""


CONNECTION = "sim.connection"
"""The key of a request's scope that holds its connection (an `asyncio.Transport`) on sim's servers: what an
answer that drops or resets the connection on purpose acts on (`sim.host.faults`)."""


def _with_connection(base: type[asyncio.Protocol]) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol `base`, putting each request's connection in its scope (`CONNECTION`): an ASGI
    app cannot otherwise drop a connection before its headers (uvicorn answers 500)."""

    class ConnectionInScope(base):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            app: Any = self.app  # type: ignore[has-type]  # set by uvicorn's protocol

            async def with_connection(scope: Any, receive: Any, send: Any) -> None:
                scope[CONNECTION] = self.transport
                await app(scope, receive, send)

            self.app = with_connection

    return ConnectionInScope


HTTP_PROTOCOL = _with_connection(AutoHTTPProtocol)
"""The HTTP protocol sim's servers speak: uvicorn's own, with each request's connection in its scope."""


class _QuietAborts(logging.Filter):
    """What a stop or an intended abort leaves in uvicorn's log is not an error to show: the tasks it
    cancels after `SHUTDOWN_SECONDS`, and `ConnectionAborted`."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, ConnectionAborted | asyncio.CancelledError):
            return False
        return "timeout graceful shutdown exceeded" not in record.getMessage()


logging.getLogger("uvicorn.error").addFilter(_QuietAborts())

SHUTDOWN_SECONDS = 3
"""How long a stop waits for responses in flight before closing their connections (a stalled upstream or
client must not keep Ctrl-C from working), and for a command it terminated to exit before it is killed."""


class AppServer:
    """An ASGI app served on a socket: `run()` serves until Ctrl-C, SIGTERM or `stop()`; responses in flight
    get `SHUTDOWN_SECONDS` to finish."""

    def __init__(self, app: Any, sock: socket.socket) -> None:
        self.sock = sock
        config = uvicorn.Config(
            app=app, log_level="warning", access_log=False, lifespan="off",
            timeout_graceful_shutdown=SHUTDOWN_SECONDS, http=HTTP_PROTOCOL,
        )  # fmt: skip
        self.server = uvicorn.Server(config)
        self.terminated = False
        """Whether serving ended on SIGTERM."""
        self.idle: IdleClock | None = None
        """With an idle timeout, the clock of the requests served (`run`)."""
        self.idled = False
        """Whether serving ended because no request came for the idle timeout."""
        self.command_stopped = False
        """Whether the command run beside the server was stopped by the server's end, not ended by itself."""

    def stop(self) -> None:
        """End the serving (gracefully: responses in flight finish first)."""
        self.server.should_exit = True

    def run(
        self,
        *,
        on_ready: Callable[[], None] | None = None,
        command: Sequence[str] = (),
        environment: Mapping[str, str] | None = None,
        idle_timeout: float | None = None,
    ) -> int | None:
        """Serve; with a `command`, run it (in `environment`) once serving, stop when it exits and return
        its exit code (negative: the signal that ended it; `CommandNotFound` when it cannot be started). A
        command still running when the server is stopped otherwise is terminated (killed if it has not
        exited `SHUTDOWN_SECONDS` later). With an `idle_timeout`, serving stops when no request has been in
        flight for that many seconds (`idled`), unless the clock (`idle`) was disarmed."""
        code: int | None = None
        if idle_timeout is not None:
            self.idle = IdleClock(self.server.config.app)
            self.server.config.app = self.idle

        async def run_command() -> None:
            nonlocal code
            try:
                child = await asyncio.create_subprocess_exec(
                    *command, env=dict(environment or os.environ), preexec_fn=die_with_parent
                )  # killed with sim, even by SIGKILL (Linux): the loop's thread lives as long as sim
            except OSError as error:
                self.stop()
                status = 126 if isinstance(error, PermissionError | IsADirectoryError) else 127
                said = f"cannot run {command[0]}: {error.strerror or error}"
                raise CommandNotFound(said, status) from None
            try:
                code = await child.wait()
            finally:
                if child.returncode is None:
                    self.command_stopped = True
                    child.terminate()
                    try:
                        code = await asyncio.wait_for(child.wait(), SHUTDOWN_SECONDS)
                    except TimeoutError:
                        child.kill()
                        code = await child.wait()
                self.stop()

        async def watch_idleness(clock: IdleClock, seconds: float) -> None:
            while clock.armed:
                idle = clock.idle_for()
                if idle >= seconds:
                    self.idled = True
                    self.stop()
                    return
                await asyncio.sleep(max(seconds - idle, 0.01))

        async def serve() -> None:
            serving = asyncio.create_task(self.server.serve(sockets=[self.sock]))
            while not self.server.started and not serving.done():
                await asyncio.sleep(0.005)
            if not self.server.started:
                await serving
                return
            if on_ready is not None:
                on_ready()  # only now: Ctrl-C is handled from here on
            running = asyncio.create_task(run_command()) if command else None
            watching = None
            if self.idle is not None and idle_timeout is not None:
                self.idle.since = time.monotonic()  # from the moment it listens
                watching = asyncio.create_task(watch_idleness(self.idle, idle_timeout))
            await serving
            if watching is not None:
                watching.cancel()
            if running is not None:
                if not running.done():
                    running.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await running

        # uvicorn shuts down gracefully on Ctrl-C and SIGTERM, then raises the signal again once its own
        # handlers are gone: Ctrl-C as KeyboardInterrupt, SIGTERM to this handler, so the caller still
        # finishes its work (the proxy writes its cassette) instead of dying
        terminating = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, self._terminated) if terminating else None
        try:
            with contextlib.suppress(KeyboardInterrupt):
                asyncio.run(serve())
        finally:
            if terminating:
                signal.signal(signal.SIGTERM, previous)
        return code

    def _terminated(self, number: int, frame: object) -> None:
        self.terminated = True


class SteppedServer:
    """An ASGI app served on a socket by an event loop of the caller's thread, which serves only while the
    caller runs `loop` (the fuzzer's endpoint: requests are answered, and replies drawn, in the thread that
    runs the hypothesis example)."""

    def __init__(self, app: Any, sock: socket.socket) -> None:
        self.loop = asyncio.new_event_loop()
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, lifespan="off", http=HTTP_PROTOCOL
        )
        config.load()
        self.server = uvicorn.Server(config)
        self.server.lifespan = config.lifespan_class(config)
        self.loop.run_until_complete(self.server.startup(sockets=[sock]))

    def close(self) -> None:
        """Stop serving, without waiting for connections a client left open."""
        self.server.should_exit = self.server.force_exit = True
        self.loop.run_until_complete(self.server.shutdown())
        self.loop.close()
