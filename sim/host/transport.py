"""The host in process: an httpx transport that hands each request to a host's ASGI app, no socket between
(what `sim play` and the pytest plugin use to have the real SDK talk to an answerer)."""

from __future__ import annotations

from typing import Any

import httpx2

from sim.host.app import Host


def transport(host: Host[Any], *, raise_app_exceptions: bool = True) -> httpx2.AsyncBaseTransport:
    """An async transport whose requests `host` answers."""
    return httpx2.ASGITransport(app=host.app, raise_app_exceptions=raise_app_exceptions)
