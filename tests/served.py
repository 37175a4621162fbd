"""One real server on 127.0.0.1 for a test module, started once: it serves whichever host a test gives it
(`Served.host`), so that every test of the module talks over a real socket without starting its own."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from sim.host.app import Host
from sim.host.serve import AppServer, base_url, listen


class Served:
    """The module's one server, serving `host`; `url` is its base URL (with `path`, `/v1` by default)."""

    def __init__(self, path: str = "/v1") -> None:
        self.host: Host[Any] | None = None
        self.server = AppServer(self, listen("127.0.0.1", 0))
        self.url = base_url(self.server.sock, path)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert self.host is not None, "the test gave the server no host to serve"
        await self.host.app(scope, receive, send)


def serving(path: str = "/v1") -> Iterator[Served]:
    """A started server (for a module fixture to yield from), stopped when the module is done."""
    one = Served(path)
    one.thread.start()
    while not one.server.server.started:
        assert one.thread.is_alive(), "the server did not start"
        threading.Event().wait(0.01)
    yield one
    one.server.stop()
    one.thread.join(timeout=10)
